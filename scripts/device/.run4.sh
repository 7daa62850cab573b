source scripts/device/env.sh
export HYPERLOOM_WORKSPACE="$PWD"
( while true; do echo "$(date +%s.%N | cut -c1-14) $(nvidia-smi --query-gpu=utilization.gpu,clocks.sm,power.draw,memory.used --format=csv,noheader) | $(nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader | tr '\n' ';')"; sleep 0.5; done ) > $OUT/smi.log 2>&1 &
smi=$!
started=$(date +%s)
python3 -m hyperloom.cli.main workload freeze --workload scripts/device/user_workloads/conv_resnet.py:build --name conv_resnet --overwrite --json > $OUT/conv_freeze.json 2>$OUT/conv_freeze.err
echo "freeze $? $(( $(date +%s) - started )) s"; date +%s
ro='["compile_reduce_overhead"]'
python3 scripts/device/leg_probe.py conv_resnet fresh "$ro" "$ro" '["compile"]' > $OUT/legs_fresh.jsonl 2>$OUT/legs_fresh.err
echo "fresh $? $(( $(date +%s) - started )) s"; date +%s
python3 scripts/device/leg_probe.py conv_resnet served "$ro" "$ro" '["compile"]' > $OUT/legs_served.jsonl 2>$OUT/legs_served.err
echo "served $? $(( $(date +%s) - started )) s"; date +%s
grep verdict $OUT/legs_*.jsonl; tail -3 $OUT/legs_*.err
ps -eo pid,ppid,pgid,etimes,pcpu,comm,args --sort=-pcpu | head -15
bash scripts/device/user_workloads.sh decoder_small '["compile"]' '["static_cache", "decode_loop"]' '["sdpa_math"]' 2>&1 | tail -30
echo "all $(( $(date +%s) - started )) s"
kill $smi
