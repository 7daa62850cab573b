# Issue 46 by the campaign itself, in one command (about 580 s): decoder_roof.py (the 1.2B decoder, plain generate of
# 64 tokens), no tolerance declared, `optimize start` with five levers listed (the static cache, decode_loop,
# fuse_projections, decode_attention, decode_gemv: the last two wait for a stack that replays graphs and are tried on the kept one),
# the kernel phase's profile of the kept stack (the replayed graph's attribution), under a deadline.
source scripts/device/env.sh
LEVER_ARGS="--lever static_cache --lever decode_loop --lever fuse_projections --lever decode_attention --lever decode_gemv" DEADLINE_S=${DEADLINE_S:-470} TIMEOUT_S=150 \
  bash scripts/device/user_campaign.sh decoder_roof 2>&1 | tail -40
python3 -c "import json; s = json.load(open('$out/decoder_roof.optimize.json'))['status']; print('by part', s.get('spent_by_part_s'))"
cd "$out" && tar czf /tmp/run25.tgz . && rm -rf ./* && mv /tmp/run25.tgz .
