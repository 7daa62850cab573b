# Issue 46, the second command on the warm machine after `DEADLINE_S=430 bash scripts/device/.run30.sh`: the campaign
# resumed for its batch sweep (8 and 32, after the GEMV's few-row fix), then the kept stack by hand in one process
# (roof_decode.py: decode_loop + fuse_projections + decode_attention + decode_gemv with the MLP's activation folded and the
# norms not, as the lever does by default; with and without Inductor's combo kernels) per token as (T(64) - T(1)) / 63 at
# batch 1, against the weights-plus-KV roof at the copy bandwidth measured in that process, beside the plain decode_loop
# stack; its rows are written as each is measured (a cut keeps them).
#   DEADLINE_S=230 bash scripts/device/.run31.sh
source scripts/device/env.sh
DEADLINE_S=${DEADLINE_S:-230} bash scripts/device/.run30.sh
timeout ${ROOF_S:-250} python3 scripts/device/roof_decode.py "$out/roof_kept" --batches ${BATCHES:-1} --attribute \
  --stacks plain,fused+attn+gemv-act,fused+attn+gemv-act+combo 2>&1 | grep -v Warning | tee "$out/roof_kept.log"
