# Issue 46, the second command on the warm machine after `DEADLINE_S=440 bash scripts/device/.run30.sh`: the campaign
# resumed for its batch sweep (8 and 32, after the GEMV's few-row fix), then the kept stack by hand in one process
# (roof_decode.py: decode_loop + fuse_projections + decode_attention + decode_gemv, the MLP's activation folded as the
# lever does by default) per token as (T(64) - T(1)) / 63 at batch 1, 8 and 32, each against the weights-plus-KV roof at
# the copy bandwidth measured in that process, beside the plain decode_loop stack.
#   DEADLINE_S=270 bash scripts/device/.run31.sh
source scripts/device/env.sh
DEADLINE_S=${DEADLINE_S:-270} bash scripts/device/.run30.sh
python3 scripts/device/roof_decode.py "$out/roof_kept" --batches 1,8,32 --attribute --stacks plain,fused+attn+gemv 2>&1 | grep -v Warning | tail -14
