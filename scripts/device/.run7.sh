# Session 22's first device command (about 200 s): does the reference's own profile (CUPTI alive in the process
# stopped beside the candidate's legs) bring the reduce-overhead stall? Then the same with kineto's CUPTI teardown.
source scripts/device/env.sh
export HYPERLOOM_WORKSPACE="$PWD"
python3 -m hyperloom.cli.main workload freeze --workload scripts/device/user_workloads/conv_resnet.py:build --name conv_resnet --overwrite --json > /dev/null 2>&1
for teardown in 0 1; do
  echo "== TEARDOWN_CUPTI=$teardown"
  TEARDOWN_CUPTI=$teardown python3 scripts/device/worker_probe.py scripts/device/user_workloads/conv_resnet.py:build compile_reduce_overhead conv_resnet 2>&1 | grep -v Warn | cut -c1-260
done
