#!/usr/bin/env bash
# Run ON THE DEVICE (no network), after scripts/device/prepare.sh here, carrying .whl. Issue 21's figures:
#   bash lab/device-runs/tune_h200.sh throughput   one H200: bench/tune_throughput.py, the old loop against the new one on
#                                                 kernels/decode/w4a16_tiled (mma, mma_async, mma_async4) at shape 3,
#                                                 16 random candidates a leg, each leg with an empty cache (~5 min)
#   bash lab/device-runs/tune_h200.sh faults       one H200: tests/test_tune_gpu.py (an illegal address and a hang among
#                                                 good candidates; device memory freed after every warm trial) (~2 min)
#   bash lab/device-runs/tune_h200.sh two          two H200s: one GPU against two, the new loop, 48 candidates a leg, the
#                                                 whole space compiled first so both legs read the same cache; then the
#                                                 two-GPU test of tests/test_tune_gpu.py (~6 min)
#   bash lab/device-runs/tune_h200.sh all          two H200s: every test of tests/test_tune_gpu.py (faults, two GPUs), then
#                                                 the `two` bench with 144 candidates a leg, four rounds (legs alternating),
#                                                 in one call (~5 min)
#   bash lab/device-runs/tune_h200.sh visible      any H200s: nvidia-smi's idle query (tests' fixture) and the GPU a pinned
#                                                 worker reaches under a reversed CUDA_VISIBLE_DEVICES (visible_check.py)
#   bash lab/device-runs/tune_h200.sh profile      two H200s: the two-device bench under py-spy (--gil --threads), raw
#                                                 samples in spy_2gpu.txt, to see what holds the loop's GIL
# Extra arguments go to bench/tune_throughput.py (e.g. --strategy tpe --candidates 24).
# What comes back in $OUT: env.txt, and tune_throughput.{log,json} | tests_gpu.log | tune_throughput_2gpu.{log,json}
# and tests_2gpu.log.
set -uo pipefail
cd "$(dirname "$0")/../.."
phase="${1:?usage: tune_h200.sh throughput|faults|two|all|visible|profile [bench arguments]}"
shift
source scripts/device/env.sh
pytest_gpu=(python3 -m pytest -q -o filterwarnings=default -p no:cacheprovider tests/test_tune_gpu.py)
case "$phase" in
  throughput)
    python3 bench/tune_throughput.py --backend cuda --out "$out/tune_throughput.json" "$@" 2>&1 | tee "$out/tune_throughput.log" ;;
  faults)
    "${pytest_gpu[@]}" -k "not two_gpus" 2>&1 | tee "$out/tests_gpu.log" ;;
  two)
    python3 bench/tune_throughput.py --backend cuda --two-devices --devices 0 1 --candidates 48 --out "$out/tune_throughput_2gpu.json" "$@" 2>&1 \
      | tee "$out/tune_throughput_2gpu.log"
    "${pytest_gpu[@]}" -k two_gpus 2>&1 | tee "$out/tests_2gpu.log" ;;
  all)  # one machine start for what a session changing the loop must check first
    "${pytest_gpu[@]}" 2>&1 | tee "$out/tests_gpu_all.log"
    python3 bench/tune_throughput.py --backend cuda --two-devices --devices 0 1 --candidates 144 --repeat 4 --out "$out/tune_throughput_2gpu.json" "$@" 2>&1 \
      | tee "$out/tune_throughput_2gpu.log" ;;
  visible)
    nvidia-smi --query-gpu=index,uuid,utilization.gpu,memory.used --format=csv,noheader,nounits > "$out/nvidia-smi-idle-query.txt"
    python3 lab/device-runs/visible_check.py 2>&1 | tee "$out/visible.log" ;;
  profile)  # the two-GPU leg under py-spy (GIL-holding samples, per thread): where the loop's process spends its time
    /tmp/site/bin/py-spy record --gil --threads --nonblocking -r 200 -f raw -o "$out/spy_2gpu.txt" -- \
      python3 bench/tune_throughput.py --backend cuda --two-devices --devices 0 1 --candidates 96 "$@" 2>&1 | tee "$out/tune_profile_2gpu.log" ;;
  *) echo "unknown phase $phase" >&2; exit 2 ;;
esac
