# Issue 46, this session's kernels on the H200 in one command (about 500 s): the decode_attention kernel against SDPA
# at decode shapes (error vs float32, time in a replayed graph); the GEMV's launch configurations against cuBLAS at
# the decoder's shapes; then roof_decode's A/B in one process: fused projections with the one-pass argmax (last
# session's stack), with the two-pass one, + decode_attention, + decode_gemv (the sweep's winners), + Inductor's
# coordinate descent; attributed.
source scripts/device/env.sh
python3 scripts/device/decode_attention_check.py "$out/attention" 2>&1 | tail -8
python3 scripts/device/gemv_sweep.py "$out/gemv" 2>&1 | tail -6
python3 scripts/device/roof_decode.py "$out/roof_b1" --batches 1 --attribute --gemv-params "$out/gemv/gemv_sweep.json" \
  --stacks fused+argmax1,fused,fused+attn,fused+attn+gemv,fused+attn+cd 2>&1 | grep -v Warning | tail -16
cd "$out" && tar czf /tmp/run24.tgz . && rm -rf ./* && mv /tmp/run24.tgz .
