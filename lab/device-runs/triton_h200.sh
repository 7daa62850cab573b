#!/usr/bin/env bash
# Run ON THE DEVICE (no network), after scripts/device/prepare.sh here, carrying .whl. Issue 19's figures:
#   bash lab/device-runs/triton_h200.sh launch    bench/triton_launch.py: Hyperloom's launch of kernels/triton/softmax against
#                                                Triton's own kernel[grid](...) (medians within 3 %, same binary, host time
#                                                per launch) at shapes 1 and 2, autotune configs 1, 3, 5 (~3 min)
#   bash lab/device-runs/triton_h200.sh outside   bench/triton_outside.py: Liger-Kernel's DyT forward and int8 x int2 matmul:
#                                                spec_check, bench gated on every input set at every shape, torch.compile of
#                                                the torch reference, tune over each kernel's autotune configs at shape 0
#                                                with the kernel's own autotune choice beside the winner (~10 min)
#   bash lab/device-runs/triton_h200.sh tests     tests/test_triton.py on the device (its CPU tests, with the device's Triton)
#   bash lab/device-runs/triton_h200.sh fusion    lab/device-runs/fusion_library.py: the fusion library's launchers against the
#                                                eager torch code they replace (bit-identical share, max diff, do_bench times)
#                                                in bf16, fp16, fp32 at the H200 Llama fixture's shapes (~1 min)
# Extra arguments go to the script of the phase. What comes back in $OUT: env.txt, and triton_launch.{log,json} |
# outside.log with outside/{summary.json,README.md,dyt.json,int2mm.json} | tests.log | fusion/fusion_library.{json,log}.
set -uo pipefail
cd "$(dirname "$0")/../.."
phase="${1:?usage: triton_h200.sh launch|outside|tests|fusion [script arguments]}"
shift
source scripts/device/env.sh
export HYPERLOOM_CACHE_DIR=/tmp/hyperloom-cache
case "$phase" in
  launch)
    python3 bench/triton_launch.py --workspace /tmp/triton-launch --out "$out/triton_launch.json" "$@" 2>&1 | tee "$out/triton_launch.log" ;;
  outside)
    python3 bench/triton_outside.py --workspace /tmp/triton-outside --out "$out/outside" "$@" 2>&1 | tee "$out/outside.log" ;;
  fusion)
    python3 lab/device-runs/fusion_library.py "$out/fusion" "$@" ;;
  tests)
    python3 -m pytest -q -o filterwarnings=default -p no:cacheprovider tests/test_triton.py "$@" 2>&1 | tee "$out/tests.log" ;;
  *) echo "unknown phase $phase" >&2; exit 2 ;;
esac
