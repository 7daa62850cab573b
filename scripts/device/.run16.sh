# Session 24's third device command (about 540 s): the conv net by hand (compile; reduce-overhead with the step mark;
# with the guard skip), then its campaign; the encoder's campaign with outputs written off the clock (session 23 read its
# reference at 1.6-1.8x its solo pace in the pairs, from our own 12.6 MB write inside the clock).
source scripts/device/env.sh
bash scripts/device/user_workloads.sh conv_resnet '["compile"]' '["compile_reduce_overhead", "cudagraph_step_begin"]' '["compile_reduce_overhead", "skip_guard_eval"]' 2>&1 | tail -8
[ -s "$OUT/conv_resnet.bench.json" ] && DEADLINE_S=220 TIMEOUT_S=150 bash scripts/device/user_campaign.sh conv_resnet 2>&1 | tail -24
DEADLINE_S=120 TIMEOUT_S=100 bash scripts/device/user_campaign.sh encoder_bert 2>&1 | tail -20
cd "$OUT" && tar czf /tmp/run16.tgz . && rm -rf ./* && mv /tmp/run16.tgz .
