"""Where a reduce-overhead ResNet-50 step loses ~4 ms now and then (lab/reduce-overhead-stall/leg_probe.py found it in fresh and
served workers alike, in and out of the step's event window, never in a plain compile's steps, with no garbage
collection in the legs). Run ON THE DEVICE: one process, the model compiled once, 150 steps per variant, each step
as the worker times it (inputs(seed), step, outputs on the host, synchronized); the VM's steal time (/proc/stat)
read around each variant. Prints one JSON line per variant.
    python3 lab/reduce-overhead-stall/stall_probe.py"""

import json
import statistics
import sys
import threading
import time

import torch

sys.path.insert(0, "scripts/device/user_workloads")
import conv_resnet  # noqa: E402

STEPS = 150


def steal_jiffies():
    return int(open("/proc/stat").readline().split()[8])


def spin_sync():
    done = torch.cuda.Event()
    done.record()
    while not done.query():
        pass


def steps(workload, sync=torch.cuda.synchronize):
    times, device = [], []
    for seed in range(STEPS):
        sync()
        began = time.perf_counter()
        workload.inputs(seed)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        workload.step()
        end.record()
        {name: value.cpu().numpy() for name, value in workload.outputs().items()}
        sync()
        times.append((time.perf_counter() - began) * 1e3)
        device.append(start.elapsed_time(end))
    return times, device


def report(variant, run):
    stolen = steal_jiffies()
    began = time.perf_counter()
    times, device = run()
    median = statistics.median(times)
    print(json.dumps({"variant": variant, "median_ms": round(median, 2), "slow_steps": sum(t > 1.5 * median for t in times),
                      "device_median_ms": round(statistics.median(device), 2),
                      "device_slow": sum(d > 1.5 * statistics.median(device) for d in device),
                      "steal_ms": (steal_jiffies() - stolen) * 10, "wall_s": round(time.perf_counter() - began, 2),
                      "slowest_ms": sorted(round(t, 1) for t in times)[-8:]}), flush=True)


def watchdog_like(stop):
    while not stop.is_set():
        time.sleep(0.25)


def busy_python(stop):
    while not stop.is_set():
        sum(range(1000))


workload = conv_resnet.build()
workload.model.forward = torch.compile(workload.model.forward, mode="reduce-overhead")
for _ in range(3):
    workload.step()
report("plain", lambda: steps(workload))
report("spin_sync", lambda: steps(workload, spin_sync))
stop = threading.Event()
threading.Thread(target=watchdog_like, args=(stop,), daemon=True).start()
report("with_sleeping_thread", lambda: steps(workload))
stop.set()
time.sleep(0.3)
stop = threading.Event()
threading.Thread(target=busy_python, args=(stop,), daemon=True).start()
report("with_busy_thread", lambda: steps(workload))
stop.set()
time.sleep(0.1)
sys.setswitchinterval(1e-4)
report("plain_again_switch_0.1ms", lambda: steps(workload))
print(json.dumps({"threads": [t.name for t in threading.enumerate()], "cpus": len(__import__("os").sched_getaffinity(0))}))
