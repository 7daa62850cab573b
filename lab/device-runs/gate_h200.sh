#!/usr/bin/env bash
# Run ON THE DEVICE (one H200, no network), after scripts/device/prepare.sh here, carrying .whl. Issue 29's GPU figures:
# the exploit corpus's GPU twins refused by the check each trick meets (tests/test_cheats_gpu.py, after a roofline read),
# the GPU tests of the runtime and tune with the new gate (guards, timed-launch checks), and what the checks cost per
# candidate in bench and tune (bench/gate_checks.py). Outputs in $OUT: env.txt, cheats_gpu.log, tests_gpu.log, gate_checks.log.
# Parts: `cheats`, `tests`, `cost`, or `all` (the default); the GPU tests alone take most of one 600 s device call.
set -uo pipefail
cd "$(dirname "$0")/../.."
source scripts/device/env.sh
part="${1:-all}"
pytest=(python3 -m pytest -q -o filterwarnings=default -p no:cacheprovider -rA)
case "$part" in cheats|all)
  timeout 200 "${pytest[@]}" -s tests/test_cheats_gpu.py 2>&1 | tee "$out/cheats_gpu.log" | tail -25 ;; esac
case "$part" in tests|all)
  # test_tune_gpu.py alone: one of its tests reads the device's free memory, which parallel test processes change
  { timeout "${TESTS_TIMEOUT_S:-420}" "${pytest[@]}" -n 6 --durations=15 tests/test_gpu.py
    timeout 120 "${pytest[@]}" tests/test_tune_gpu.py -k "not two_gpus"; } 2>&1 | tee "$out/tests_gpu.log" | tail -40 ;; esac
case "$part" in cost|all)
  timeout 150 python3 bench/gate_checks.py --target sm_90 --repeat 2 --candidates 12 2>&1 | tee "$out/gate_checks.log" | tail -6 ;; esac
