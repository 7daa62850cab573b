# Session 24's first device command (about 580 s): (1) what torch 2.11's raw profiler events carry on a GPU
# (kineto_fields.py); (2) the 1.2B decoder's campaign with the freeze's two workers built at once and the A/A's worker
# built beside the baseline's (process.enter_together, Spare.beside), the tuners ordered last, the device time kept by
# part. Its ledger stays in .hyperloom/ on the warm machine: .run15.sh, run at once after, resumes it.
source scripts/device/env.sh
python3 scripts/device/kineto_fields.py > "$OUT/kineto_fields.jsonl" 2>&1; tail -2 "$OUT/kineto_fields.jsonl" | cut -c1-300
DEADLINE_S=515 TIMEOUT_S=150 bash scripts/device/user_campaign.sh decoder_llama 2>&1 | tail -30
python3 -c "import json; s = json.load(open('$OUT/decoder_llama.optimize.json'))['status']; print('by part', s.get('spent_by_part_s'))"
cd "$OUT" && tar czf /tmp/run14.tgz . && rm -rf ./* && mv /tmp/run14.tgz .
