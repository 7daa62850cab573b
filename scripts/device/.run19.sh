# Issue 46 on the H200 (about 550 s): the 1.2B Llama-shaped decoder on decode_loop, per stack of model levers
# (none, fuse_projections, int8_weight_only, fp8_weight_only, fused + int8): ms a token, percent of the bytes roof
# (weights as stored + the mean KV cache at this process's copy bandwidth), tokens against the plain stack, and the
# replayed graph's attribution at batch 1; then the plain and fused + int8 stacks at batches 8 and 32.
source scripts/device/env.sh
python3 scripts/device/roof_decode.py "$out/roof_b1" --batches 1 --stacks plain,fused,int8,fp8,fused+int8,fused+int8+cd --attribute 2>&1 | grep -v '^\[transformers\]' | tail -30
python3 scripts/device/roof_decode.py "$out/roof_b8_32" --batches 8,32 --stacks plain,fused+int8 2>&1 | grep -v '^\[transformers\]' | tail -8
cd "$out" && tar czf /tmp/run19.tgz . && rm -rf ./* && mv /tmp/run19.tgz .
