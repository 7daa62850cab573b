# Issue 46 (about 400 s): decode_attention against SDPA (its splits now combined in the kernel); the GEMV's launch configurations against cuBLAS with cold weights (the graph's calls rotate
# over copies spanning 5x the L2), per decode shape of the 1.2B Llama; then roof_decode's A/B in one process:
# fused + decode_attention with its splits combined by a second kernel (session 26) and by the last split to arrive
# (now), + decode_gemv with the cold sweep's choice per shape (params, or cuBLAS where it won),
# and the same with the MLPs' activation folded into the down projection's GEMV; fused + attention with Inductor's combo kernels.
source scripts/device/env.sh
python3 scripts/device/decode_attention_check.py "$out/attention" 2>&1 | tail -8
python3 scripts/device/gemv_sweep.py "$out/gemv_cold" --shapes q+k+v,o,gate+up,down 2>&1 | grep -v Warning | tail -6
python3 scripts/device/roof_decode.py "$out/roof_b1" --batches 1 --attribute --gemv-params "$out/gemv_cold/gemv_sweep.json" \
  --stacks fused+attn-sep,fused+attn,fused+attn+gemv-nofold,fused+attn+gemv-act,fused+attn+combo 2>&1 | grep -v Warning | tail -14
cd "$out" && tar czf /tmp/run27.tgz . && rm -rf ./* && mv /tmp/run27.tgz .
