#!/usr/bin/env bash
# Run ON THE DEVICE (no network), after scripts/device/prepare.sh here, carrying .whl. Issue 31, item 1: the shipped
# bfloat16 example (kernels/examples/rmsnorm_bf16: a CUDA kernel on __nv_bfloat16, a Triton kernel on tl.bfloat16) on
# the H200, its buffers declared bfloat16 and gated in bfloat16's own ULPs (tolerance max_ulp 1):
#   bash lab/device-runs/bf16_h200.sh bench   spec_check for sm_90, then bench of the cuda and triton variants at every
#                                            shape, gated on every input set (~3 min)
#   bash lab/device-runs/bf16_h200.sh tune    tune of the cuda variant's block at shape 1 (4096 x 1536) (~3 min)
#   bash lab/device-runs/bf16_h200.sh tests   tests/test_dtypes.py on the device (its CPU tests, with the device's numpy/ml_dtypes)
# What comes back in $OUT: env.txt, spec_check.json, bench_<variant>_shape<i>.json and bench.log | tune.json, tune.log | tests.log.
set -uo pipefail
cd "$(dirname "$0")/../.."
phase="${1:?usage: bf16_h200.sh bench|tune|tests}"
source scripts/device/env.sh
export HYPERLOOM_CACHE_DIR=/tmp/hyperloom-cache
ws=/tmp/bf16-ws
mkdir -p "$ws" && cd "$ws"
[ -d rmsnorm_bf16 ] || python3 -m hyperloom.cli.main spec example --name rmsnorm_bf16 --out rmsnorm_bf16 > /dev/null
case "$phase" in
  bench)
    python3 -m hyperloom.cli.main spec check --spec rmsnorm_bf16 --target sm_90 --json > "$out/spec_check.json" 2>> "$out/bench.log"
    for variant in cuda triton; do
      for shape in 0 1 2; do
        python3 -m hyperloom.cli.main bench --spec rmsnorm_bf16 --variant "$variant" --target sm_90 --shape "$shape" --json \
          > "$out/bench_${variant}_shape${shape}.json" 2>> "$out/bench.log"
        python3 -c 'import json, sys; r = json.load(open(sys.argv[1])); print(sys.argv[2], sys.argv[3], r["summary"])' \
          "$out/bench_${variant}_shape${shape}.json" "$variant" "$shape" | tee -a "$out/bench.log"
      done
    done ;;
  tune)
    python3 -m hyperloom.cli.main tune start --spec rmsnorm_bf16 --variant cuda --target sm_90 --shape 1 --strategy grid --json \
      > "$out/tune.json" 2> "$out/tune.log"
    tail -5 "$out/tune.log" ;;
  tests)
    cd - > /dev/null && python3 -m pytest -q -o filterwarnings=default -p no:cacheprovider tests/test_dtypes.py 2>&1 | tee "$out/tests.log" ;;
  *) echo "unknown phase $phase" >&2; exit 2 ;;
esac
