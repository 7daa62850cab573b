# Session 24's second device command, run at once after .run14.sh on the same warm machine: the decoder's campaign
# resumed from its ledger (a resume repeats no measurement), so its levers phase gets about 15 device-minutes in all.
# A bare machine (the warm one was given back) has no ledger: nothing is started then.
source scripts/device/env.sh
ledger=.hyperloom/optimize/decoder_llama/ledger.sqlite
if [ ! -f "$ledger" ]; then echo "no ledger at $ledger: the machine is a fresh one, nothing resumed"; exit 3; fi
DEADLINE_S=${DEADLINE_S:-480} TIMEOUT_S=150 bash scripts/device/user_campaign.sh decoder_llama 2>&1 | tail -34
python3 -c "import json; s = json.load(open('$OUT/decoder_llama.optimize.json'))['status']; print('by part', s.get('spent_by_part_s'))"
cd "$OUT" && tar czf /tmp/run15.tgz . && rm -rf ./* && mv /tmp/run15.tgz .
