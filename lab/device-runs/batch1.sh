#!/usr/bin/env bash
# Device batch 1 (H200): issue 17's onboarding (spec_check, gated bench and a tune over the launch of kernels written
# outside Hyperloom, drafted by spec_init on the preparing machine) and issue 20's profile of a Llama-style decoder.
# Carry .whl and .device (scripts/device/prepare.sh); outputs under $OUT (tarred: at most 8 files come back).
set -uo pipefail
source scripts/device/env.sh
timeout 330 python3 bench/onboarding.py --target sm_90 --shape 1 --tune 8 --drafted .device/onboarding --out "$OUT/onboarding.json" > "$OUT/onboarding.log" 2>&1
echo "onboarding exit $?" >> "$OUT/env.txt"
timeout 240 python3 lab/device-runs/profile_llama.py /tmp/profile_llama --steps 2 --warmup 1 > "$OUT/profile.log" 2>&1
echo "profile exit $?" >> "$OUT/env.txt"
tar czf "$OUT/profile_llama.tgz" -C /tmp profile_llama 2>/dev/null
ls -la "$OUT"
