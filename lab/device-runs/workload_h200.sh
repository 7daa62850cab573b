#!/usr/bin/env bash
# Run ON THE DEVICE (one H200, no network), after scripts/device/prepare.sh here, carrying .whl. Issue 30's figures:
# a transformers decoder frozen and timed end to end beside levers through the MCP tools (workload_h200.py), and the
# harness's own cost per step (bench/workload_overhead.py). Outputs in $OUT/workload/ and $OUT/workload_overhead.log.
set -uo pipefail
cd "$(dirname "$0")/../.."
source scripts/device/env.sh
timeout "${WORKLOAD_TIMEOUT_S:-480}" python3 lab/device-runs/workload_h200.py "$@" 2>&1 | tee "$out/workload.log" | tail -30
timeout 60 python3 bench/workload_overhead.py --rounds 3 --legs 6 2>&1 | tee "$out/workload_overhead.log"
