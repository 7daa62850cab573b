# Issue 46, this session's kernels on the H200 in one command (about 350 s): the decode_attention kernel against SDPA
# at decode shapes (error vs float32, time in a replayed graph), then roof_decode's A/B in one process: fused
# projections with the one-pass argmax (last session's stack), with the two-pass one, + decode_attention, + Inductor's
# coordinate descent; attributed.
source scripts/device/env.sh
python3 scripts/device/decode_attention_check.py "$out/attention" 2>&1 | tail -12
python3 scripts/device/roof_decode.py "$out/roof_b1" --batches 1 --attribute --stacks fused+argmax1,fused,fused+attn,fused+attn+cd 2>&1 | grep -v Warning | tail -16
cd "$out" && tar czf /tmp/run24.tgz . && rm -rf ./* && mv /tmp/run24.tgz .
