# The next session's first device command (about 450 s): (1) does a kept worker flatter a compiled stack? The encoder
# benched twice, served (the default) and with --fresh-workers (session 24: compile + skip_guard_eval ran 6 ms legs
# served, 12 ms in the revalidation's fresh worker, the same 4.4 ms of device time); (2) the conv net's campaign with
# winners ranked by their own legs and a slowed reference named from 1.3x with its device time (session 24 kept compile
# by a ratio over a reference at 1.49x its solo pace).
source scripts/device/env.sh
bash scripts/device/user_workloads.sh encoder_bert '["compile", "skip_guard_eval"]' '["compile_reduce_overhead"]' 2>&1 | tail -6
BENCH_ARGS=--fresh-workers TAG=.fresh bash scripts/device/user_workloads.sh encoder_bert '["compile", "skip_guard_eval"]' '["compile_reduce_overhead"]' 2>&1 | tail -6
DEADLINE_S=230 TIMEOUT_S=150 bash scripts/device/user_campaign.sh conv_resnet 2>&1 | tail -24
cd "$OUT" && tar czf /tmp/run18.tgz . && rm -rf ./* && mv /tmp/run18.tgz .
