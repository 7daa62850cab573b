# Session 22 (about 360 s): the conv campaign again with kineto's CUPTI teardown in every worker (profiled_step.
# PROFILER_ENVIRON), then by hand in the same session: compile and the reduce-overhead stack benched against the baseline.
source scripts/device/env.sh
DEADLINE_S=230 TIMEOUT_S=150 bash scripts/device/user_campaign.sh conv_resnet 2>&1 | tail -32
bash scripts/device/user_workloads.sh conv_resnet '["compile"]' '["compile_reduce_overhead", "cudagraph_step_begin"]' 2>&1 | tail -12
cd "$OUT" && tar czf /tmp/run9.tgz . && rm -rf ./* && mv /tmp/run9.tgz .  # one file back: more than 8 are left out
