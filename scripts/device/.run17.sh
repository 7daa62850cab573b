# Session 24's last device command (about 200 s): proof of work's raw-event weighing on the GPU against the Chrome JSON
# (raw_work_probe.py), the host's layout (is a worker's pace its NUMA node?), then the small decoder's bench (the
# gate's profile part, session 21: 2.9 s of a 7.5 s eager trial with the JSON).
source scripts/device/env.sh
python3 scripts/device/raw_work_probe.py 2>&1 | grep -v Warning | tail -6 | tee "$OUT/raw_work_probe.jsonl"
{ nproc; cat /sys/fs/cgroup/cpuset.cpus.effective 2>/dev/null; lscpu | grep -i "numa\|model name\|socket\|thread"
  bus=$(nvidia-smi --query-gpu=pci.bus_id --format=csv,noheader | head -1); echo "gpu $bus"
  cat /sys/bus/pci/devices/$(python3 -c "import sys; d, _, r = sys.argv[1].lower().partition(':'); print(f'{int(d, 16):04x}:{r}')" "$bus")/local_cpulist
  nvidia-smi topo -m 2>&1 | head -6; } > "$OUT/host_layout.txt" 2>&1; cat "$OUT/host_layout.txt"
bash scripts/device/user_workloads.sh decoder_small '["static_cache", "decode_loop"]' '["sdpa_math"]' 2>&1 | tail -12
cd "$OUT" && tar czf /tmp/run17.tgz . && rm -rf ./* && mv /tmp/run17.tgz .
