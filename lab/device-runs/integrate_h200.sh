#!/usr/bin/env bash
# Run ON THE DEVICE (one H200, no network), after scripts/device/prepare.sh here, carrying .whl. Issue 31's figures:
# the host cost of one decode-shaped call, eager beside the fusion library's launchers (launch_cost.json); the path
# profile -> hand-off draft -> spec_check -> tune -> integrate for RMSNorm and the gated MLP's SiLU-and-mul, stacked,
# in examples/workloads/decoder.py (bench/profile_to_keep.py, 64 greedy tokens after 256); the hand-off's calls with a
# gated bench (bench/handoff_calls.py). Outputs in $OUT: integrate/ (profile_to_keep.json, each kernel's overrides
# module, result.json and report.md), launch_cost.json, profile_to_keep.log, handoff_calls.log. KEEP_KNOBS (JSON) sets
# the decoder's knobs, e.g. KEEP_KNOBS='{"layers": "28", "new_tokens": "32"}' for Qwen2-1.5B's full depth.
set -uo pipefail
cd "$(dirname "$0")/../.."
source scripts/device/env.sh
timeout 60 python3 lab/device-runs/launch_cost.py > "$out/launch_cost.json" 2>&1
cat "$out/launch_cost.json"
knobs=${KEEP_KNOBS:-'{"new_tokens": "64"}'}
fallback=(--replace rmsnorm=transformers.models.qwen2.modeling_qwen2:Qwen2RMSNorm.forward --replace silu_and_mul=transformers.models.qwen2.modeling_qwen2:Qwen2MLP.forward)
timeout "${KEEP_TIMEOUT_S:-420}" python3 bench/profile_to_keep.py --target sm_90 --knobs "$knobs" --pairs 8 --steps-per-leg 2 \
  --tune-candidates 8 "${fallback[@]}" --out "$out/integrate" 2>&1 | tee "$out/profile_to_keep.log" | grep -v "^\s*$" | tail -12
timeout 80 python3 bench/handoff_calls.py --bench sm_90 > "$out/handoff_calls.log" 2>&1; tail -4 "$out/handoff_calls.log"
