source scripts/device/env.sh
export HYPERLOOM_WORKSPACE="$PWD"
mkdir -p $OUT/d/gc; export GC_LOG_DIR=$OUT/d/gc PYTHONPATH=$PWD/scripts/device/gclog:$PYTHONPATH
( while true; do echo "$(date +%s.%N | cut -c1-14) $(nvidia-smi --query-gpu=utilization.gpu,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv,noheader)"; sleep 0.2; done ) > $OUT/d/smi.log 2>&1 &
smi=$!
python3 -c "import time; print('monotonic', time.monotonic(), 'epoch', time.time())" > $OUT/d/clock.txt
started=$(date +%s)
python3 -m hyperloom.cli.main workload freeze --workload scripts/device/user_workloads/conv_resnet.py:build --name conv_resnet --overwrite --json > $OUT/d/conv_freeze.json 2>&1
echo "freeze $? $(( $(date +%s) - started )) s"
ro='["compile_reduce_overhead"]'
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/siteB .whl_old/hyperloom-*.whl
for variant in old new; do
  pp=$PYTHONPATH; [ $variant = old ] && pp=$PWD/scripts/device/gclog:/tmp/siteB:/tmp/site
  PYTHONPATH=$pp TORCH_LOGS=recompiles,cudagraphs,perf_hints TORCH_LOGS_OUT=$OUT/d/torch_fresh_$variant.log python3 scripts/device/leg_probe.py conv_resnet fresh "$ro" "$ro" "$ro" > $OUT/d/legs_fresh_$variant.jsonl 2>$OUT/d/legs_fresh_$variant.err
  echo "fresh $variant $? $(( $(date +%s) - started )) s"
done
TORCH_LOGS=recompiles,cudagraphs,perf_hints TORCH_LOGS_OUT=$OUT/d/torch_served.log python3 scripts/device/leg_probe.py conv_resnet served "$ro" "$ro" '["compile"]' > $OUT/d/legs_served.jsonl 2>$OUT/d/legs_served.err
echo "served $? $(( $(date +%s) - started )) s"
kill $smi
grep -h verdict $OUT/d/legs_*.jsonl | cut -c1-200
cd $OUT && tar czf d.tgz d && rm -rf d
