# Issue 46's campaign, second command, at once after .run20.sh on the same warm machine (about 540 s): resumed from
# its ledger (nothing measured twice), through the retry on the stack, the kernel phase's profile (the replayed graph's
# attribution against the weights' bytes) and the sweep at batch 8 and 32. A bare machine has no ledger: nothing runs.
source scripts/device/env.sh
ledger=.hyperloom/optimize/decoder_roof/ledger.sqlite
if [ ! -f "$ledger" ]; then echo "no ledger at $ledger: the machine is a fresh one, nothing resumed"; exit 3; fi
FREEZE_ARGS="--k 4" DEADLINE_S=${DEADLINE_S:-500} TIMEOUT_S=150 bash scripts/device/user_campaign.sh decoder_roof 2>&1 | tail -50
python3 -c "import json; s = json.load(open('$out/decoder_roof.optimize.json'))['status']; print('by part', s.get('spent_by_part_s'))"
cd "$out" && tar czf /tmp/run21.tgz . && rm -rf ./* && mv /tmp/run21.tgz .
