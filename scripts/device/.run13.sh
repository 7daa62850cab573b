# The next session's first device command (about 330 s): (1) what torch 2.11's raw profiler events carry on a GPU
# (kineto_fields.py: how a cpu_op is told from a cuda_runtime event without activity_type, and whether
# linked_correlation_id ties each kernel to its op, as torch's own _parse_kineto_results reads it); (2) the encoder's
# campaign again, outputs now written after the clock (runner.save_timed): its reference's paired legs should sit near
# its solo pace (session 23: 1.6-1.8x, from our own 12.6 MB write inside the clock).
source scripts/device/env.sh
python3 scripts/device/kineto_fields.py > "$OUT/kineto_fields.jsonl" 2>&1; tail -3 "$OUT/kineto_fields.jsonl"
DEADLINE_S=150 TIMEOUT_S=100 bash scripts/device/user_campaign.sh encoder_bert 2>&1 | tail -20
cd "$OUT" && tar czf /tmp/run13.tgz . && rm -rf ./* && mv /tmp/run13.tgz .
