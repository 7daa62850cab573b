# Issue 46's campaign on the H200, first of two commands (about 560 s): the 1.2B decoder as a user writes it
# (scripts/device/user_workloads/decoder_roof.py: plain generate of 64 tokens, batch knob, points at 8 and 32),
# frozen with a looser tolerance declared (k = 4: the lossy levers are tried on a compiled stack), then `optimize
# start` with no levers listed under a deadline. .run21.sh, issued at once after on the same warm machine, resumes it.
source scripts/device/env.sh
FREEZE_ARGS="--k 4" DEADLINE_S=${DEADLINE_S:-520} TIMEOUT_S=150 bash scripts/device/user_campaign.sh decoder_roof 2>&1 | tail -40
python3 -c "import json; s = json.load(open('$out/decoder_roof.optimize.json'))['status']; print('by part', s.get('spent_by_part_s'))"
cd "$out" && tar czf /tmp/run20.tgz . && rm -rf ./* && mv /tmp/run20.tgz .
