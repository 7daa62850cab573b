#!/usr/bin/env bash
# Run ON THE DEVICE (one H200, no network), after scripts/device/prepare.sh here, carrying .whl. Issue 29's GPU figures:
# the exploit corpus's GPU twins refused by the check each trick meets (tests/test_cheats_gpu.py, after a roofline read),
# the GPU tests of the runtime and tune with the new gate (guards, timed-launch checks), and what the checks cost per
# candidate in bench and tune (bench/gate_checks.py). Outputs in $OUT: env.txt, cheats_gpu.log, tests_gpu.log, gate_checks.log.
set -uo pipefail
cd "$(dirname "$0")/../.."
source scripts/device/env.sh
pytest=(python3 -m pytest -q -o filterwarnings=default -p no:cacheprovider -rA)
timeout 200 "${pytest[@]}" -s tests/test_cheats_gpu.py 2>&1 | tee "$out/cheats_gpu.log" | tail -25
timeout 270 "${pytest[@]}" -n 4 tests/test_gpu.py tests/test_tune_gpu.py -k "not two_gpus" 2>&1 | tee "$out/tests_gpu.log" | tail -15
[ "${1:-}" = "--no-cost" ] || timeout 100 python3 bench/gate_checks.py --target sm_90 --repeat 2 --candidates 12 2>&1 | tee "$out/gate_checks.log" | tail -6
