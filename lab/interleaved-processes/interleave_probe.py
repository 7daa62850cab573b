"""Does interleaving two CUDA processes on one GPU slow the one that runs, and why? (run ON THE DEVICE, no Hyperloom)
Two workers each build torchvision's ResNet-50 (fp16, batch 64, eager) and time steps with CUDA events on command.
Worker A's steps are timed in phases: alone; B alive and idle; A and B alternating legs; alternating with the idle
one stopped (SIGSTOP, as the controller's pairs do); A alternating with 20 ms host-only gaps (no GPU work in B); alone
again. nvidia-smi samples the clocks, power and utilization every 100 ms, summarised per phase. One JSON line a phase.
    python3 lab/interleaved-processes/interleave_probe.py [legs] [steps_per_leg]"""

import json
import multiprocessing as mp
import os
import signal
import statistics
import subprocess
import sys
import time


def worker(conn):
    import torch
    import torchvision
    torch.manual_seed(0)
    model = torchvision.models.resnet50(weights=None).to(device="cuda", dtype=torch.float16).eval()
    images = torch.randn(64, 3, 224, 224, device="cuda", dtype=torch.float16)
    with torch.inference_mode():
        for _ in range(5):
            model(images)
    torch.cuda.synchronize()
    conn.send("ready")
    while True:
        command, steps = conn.recv()
        if command == "quit":
            return
        if command == "profile":  # as the worker's proof of work does (tools/workload/worker/profiled_step.py)
            from torch.profiler import ProfilerActivity, profile
            with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True) as prof:
                with torch.inference_mode():
                    for _ in range(steps):
                        model(images)
                torch.cuda.synchronize()
            conn.send(len(prof.events()))
            continue
        walls, devices = [], []
        for _ in range(steps):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            began = time.perf_counter()
            start.record()
            with torch.inference_mode():
                model(images)
            end.record()
            end.synchronize()
            walls.append((time.perf_counter() - began) * 1e3)
            devices.append(start.elapsed_time(end))
        conn.send((walls, devices))


def start():
    parent, child = mp.get_context("spawn").Pipe()
    process = mp.get_context("spawn").Process(target=worker, args=(child,), daemon=True)
    process.start()
    assert parent.recv() == "ready"
    return process, parent


def leg(conn, steps):
    conn.send(("leg", steps))
    return conn.recv()


def main():
    legs, steps = (int(a) for a in (sys.argv[1:3] if len(sys.argv) > 2 else (40, 3)))
    sampler = subprocess.Popen(["nvidia-smi",
                                "--query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,utilization.gpu,pstate,clocks_throttle_reasons.active",
                                "--format=csv,noheader,nounits", "-lms", "100"], stdout=subprocess.PIPE, text=True)
    marks = []
    a, a_conn = start()

    def phase(name, between):
        began = time.time()
        walls, devices = [], []
        for _ in range(legs):
            between()
            w, d = leg(a_conn, steps)
            walls += w
            devices += d
        marks.append((name, began, time.time()))
        print(json.dumps({"phase": name, "wall_ms": round(statistics.median(walls), 2), "device_ms": round(statistics.median(devices), 2),
                          "device_max_ms": round(max(devices), 2), "first_of_leg_device_ms": round(statistics.median(devices[::steps]), 2),
                          "device_steps_ms": [round(x, 2) for x in devices[:24]]}), flush=True)

    phase("alone", lambda: None)
    if os.environ.get("PROFILE_FIRST"):
        a_conn.send(("profile", 2))
        print(json.dumps({"profiled_events": a_conn.recv()}), flush=True)
        phase("alone_after_profile", lambda: None)
    b, b_conn = start()
    if os.environ.get("PROFILE_FIRST"):
        b_conn.send(("profile", 2))
        b_conn.recv()
    phase("b_idle", lambda: None)
    phase("alternating", lambda: leg(b_conn, steps))

    # the controller's way: the idle worker stopped while the other runs its leg
    def b_leg_a_stopped():
        os.kill(a.pid, signal.SIGSTOP)
        result = leg(b_conn, steps)
        os.kill(a.pid, signal.SIGCONT)
        os.kill(b.pid, signal.SIGSTOP)
        return result

    def a_leg_b_stopped_phase():
        began = time.time()
        walls, devices = [], []
        for _ in range(legs):
            b_leg_a_stopped()
            w, d = leg(a_conn, steps)
            os.kill(b.pid, signal.SIGCONT)
            walls += w
            devices += d
        marks.append(("alternating_stopped", began, time.time()))
        print(json.dumps({"phase": "alternating_stopped", "wall_ms": round(statistics.median(walls), 2),
                          "device_ms": round(statistics.median(devices), 2),
                          "device_max_ms": round(max(devices), 2), "first_of_leg_device_ms": round(statistics.median(devices[::steps]), 2),
                          "device_steps_ms": [round(x, 2) for x in devices[:24]]}), flush=True)

    a_leg_b_stopped_phase()
    phase("host_gaps_20ms", lambda: time.sleep(0.02))
    b_conn.send(("quit", 0))
    b.join(10)
    phase("alone_again", lambda: None)
    phase("alone_gaps_20ms", lambda: time.sleep(0.02))
    a_conn.send(("quit", 0))
    a.join(10)
    sampler.terminate()
    rows = [line.split(", ") for line in sampler.communicate()[0].splitlines() if line.count(",") >= 6]
    from datetime import datetime
    for name, began, ended in marks:
        inside = []
        for row in rows:
            try:
                stamp = datetime.strptime(row[0], "%Y/%m/%d %H:%M:%S.%f").timestamp()
            except ValueError:
                continue
            if began <= stamp <= ended:
                inside.append(row)
        if inside:
            print(json.dumps({"phase": name, "samples": len(inside), "sm_mhz": sorted({r[1] for r in inside}),
                              "mem_mhz": sorted({r[2] for r in inside}), "power_w": [r[3] for r in inside][:12],
                              "util": [r[4] for r in inside][:12], "pstate": sorted({r[5] for r in inside}),
                              "throttle": sorted({r[6] for r in inside})}), flush=True)


if __name__ == "__main__":
    main()
