# Session 22 (about 380 s): by hand first on a quiet machine (compile, the reduce-overhead stacks against the
# baseline), then the conv campaign with the search's cut fixed, with every process's CPU and every GPU process
# sampled every 5 s throughout (what runs after a killed max-autotune worker?).
source scripts/device/env.sh
( while sleep 5; do echo "== $(date +%s)"; ps -eo pid,ppid,sid,stat,pcpu,etimes,comm --sort=-pcpu | head -8
  nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader; done ) > "$OUT/ps.log" 2>&1 &
sampler=$!
bash scripts/device/user_workloads.sh conv_resnet '["compile"]' '["compile_reduce_overhead", "cudagraph_step_begin"]' '["compile_reduce_overhead", "skip_guard_eval"]' 2>&1 | tail -10
DEADLINE_S=230 TIMEOUT_S=150 bash scripts/device/user_campaign.sh conv_resnet 2>&1 | tail -22
sleep 6; kill $sampler
echo "== after the campaign"; ps -eo pid,ppid,sid,stat,pcpu,etimes,args --sort=-pcpu | head -12 | cut -c1-200
cd "$OUT" && tar czf /tmp/run10.tgz . && rm -rf ./* && mv /tmp/run10.tgz .
