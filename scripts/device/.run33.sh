# Session 34's first device command (about 520 s): issue 44's acceptance in one session, the conv net first: by hand
# (compile; reduce-overhead with the step mark; with the guard skip), then its campaign (no levers listed, no tolerance
# declared) with the rankings since session 24 (winners by their own legs, a slowed reference named and measured
# again, a FASTER beside a slowed reference held to its solo pace); then the encoder's campaign.
source scripts/device/env.sh
bash scripts/device/user_workloads.sh conv_resnet '["compile"]' '["compile_reduce_overhead", "cudagraph_step_begin"]' '["compile_reduce_overhead", "skip_guard_eval"]' 2>&1 | tail -8
[ -s "$OUT/conv_resnet.bench.json" ] && DEADLINE_S=${DEADLINE_S:-220} TIMEOUT_S=150 bash scripts/device/user_campaign.sh conv_resnet 2>&1 | tail -26
[ "${ENCODER_S:-150}" -gt 0 ] && DEADLINE_S=${ENCODER_S:-150} TIMEOUT_S=100 bash scripts/device/user_campaign.sh encoder_bert 2>&1 | tail -22
cd "$OUT" && tar czf /tmp/run33.tgz . && rm -rf ./* && mv /tmp/run33.tgz .
