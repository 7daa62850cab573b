# Session 23's first device command (about 400 s): does the controller's BLAS fix (twin.l2) end the compiled candidates'
# two paces? The hand bench, then the conv campaign, with every process AND every thread of the controller sampled
# each 2 s (per-thread CPU from /proc/PID/task/*/stat, thread names), so a spinning pool shows by name.
source scripts/device/env.sh
( while sleep 2; do echo "== $(date +%s)"; ps -eLo pid,tid,ppid,stat,pcpu,etimes,comm --sort=-pcpu | head -24
  nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader; done ) > "$OUT/threads.log" 2>&1 &
sampler=$!
bash scripts/device/user_workloads.sh conv_resnet '["compile"]' '["compile_reduce_overhead", "cudagraph_step_begin"]' '["compile_reduce_overhead", "skip_guard_eval"]' 2>&1 | tail -10
[ -s "$OUT/conv_resnet.bench.json" ] && DEADLINE_S=230 TIMEOUT_S=150 bash scripts/device/user_campaign.sh conv_resnet 2>&1 | tail -22
sleep 3; kill $sampler
cd "$OUT" && tar czf /tmp/run11.tgz . && rm -rf ./* && mv /tmp/run11.tgz .
