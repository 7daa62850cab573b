# Issue 46 by the campaign itself, in one command (about 560 s): decoder_roof.py (the 1.2B decoder, plain generate of
# 64 tokens, points at batch 8 and 32), no tolerance declared, `optimize start` with three levers listed (the
# static cache, decode_loop, fuse_projections: the stack the hand run found), the kernel phase's profile of the kept
# stack (the replayed graph's attribution) and the sweep, under a deadline.
source scripts/device/env.sh
LEVER_ARGS="--lever static_cache --lever decode_loop --lever fuse_projections" DEADLINE_S=${DEADLINE_S:-500} TIMEOUT_S=150 \
  bash scripts/device/user_campaign.sh decoder_roof 2>&1 | tail -40
python3 -c "import json; s = json.load(open('$out/decoder_roof.optimize.json'))['status']; print('by part', s.get('spent_by_part_s'))"
cd "$out" && tar czf /tmp/run23.tgz . && rm -rf ./* && mv /tmp/run23.tgz .
