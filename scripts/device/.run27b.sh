# Issue 46, session 27, second command: roof_decode's A/B in one process: fused + decode_attention; + decode_gemv with the shipped
# choice per shape for this device (kernels/triton/gemv/tuned.json); the same with the MLPs' activation folded into the
# down projection's GEMV; fused + attention with Inductor's combo kernels.
source scripts/device/env.sh
python3 scripts/device/roof_decode.py "$out/roof_b1" --batches 1 --attribute \
  --stacks fused+attn,fused+attn+gemv-nofold,fused+attn+gemv-act,fused+attn+combo 2>&1 | grep -v Warning | tail -12
cd "$out" && tar czf /tmp/run27b.tgz . && rm -rf ./* && mv /tmp/run27b.tgz .
