"""Benchmark: how long a `hyperloom` command takes, start to exit, in a fresh process.

Targets (issue 23, finding 1), on the 2-core development machine, median of 10 fresh processes:
  - `hyperloom --version`: ≤ 0.15 s
  - `hyperloom census gfx1201` served from the disk cache (filled before timing): ≤ 0.4 s
  - `hyperloom gate check` of two 1000-element .npy files: ≤ 0.5 s
Each figure is wall time around the installed `hyperloom` script, interpreter start included. Other work
on the machine slows every figure, so the load average is printed before and after, and beside each wall
time the CPU seconds the process used (user + system), which other work changes much less.

Run: .venv/bin/python bench/cli_startup.py [--repeats N]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

CLI = Path(sys.executable).parent / "hyperloom"
VERSION_S, CENSUS_S, GATE_S = 0.15, 0.4, 0.5


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(args: list[str], cwd: Path, env: dict[str, str], repeats: int) -> tuple[list[float], list[float]]:
    """Wall and CPU seconds of `hyperloom ARGS`, one fresh process per repeat; a failing command stops the benchmark."""
    wall_s, cpu_s = [], []
    for _ in range(repeats):
        cpu_before, start = _children_cpu_s(), time.perf_counter()
        proc = subprocess.run([str(CLI), *args], cwd=cwd, env=env, capture_output=True, text=True, check=False)
        wall_s.append(time.perf_counter() - start)
        cpu_s.append(_children_cpu_s() - cpu_before)
        if proc.returncode != 0:
            sys.exit(f"`hyperloom {' '.join(args)}` exited {proc.returncode}: {proc.stderr.strip()}")
    return wall_s, cpu_s


def load_average() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "unknown"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=10, help="fresh processes per figure (median reported)")
    args = parser.parse_args()
    print(f"{os.cpu_count()} CPUs, median of {args.repeats} fresh processes each; load average before: {load_average()}")
    with tempfile.TemporaryDirectory(prefix="cli-startup-") as tmp:
        root = Path(tmp)
        env = {**os.environ, "HYPERLOOM_CACHE_DIR": str(root / "cache"), "HYPERLOOM_WORKSPACE": str(root)}
        values = np.linspace(0.0, 1.0, 1000, dtype=np.float32)
        np.save(root / "candidate.npy", values)
        np.save(root / "reference.npy", values)
        timed(["census", "gfx1201"], root, env, 1)  # fills the cache
        commands = [
            ("--version", ["--version"], VERSION_S),
            ("census gfx1201 (cached)", ["census", "gfx1201"], CENSUS_S),
            ("gate check (1000 elements)",
             ["gate", "check", "--candidate", "candidate.npy", "--reference", "reference.npy", "--atol", "0", "--rtol", "0"], GATE_S),
        ]
        missed = []
        for label, command, limit_s in commands:
            wall_s, cpu_s = timed(command, root, env, args.repeats)
            median_s = statistics.median(wall_s)
            if median_s > limit_s:
                missed.append(label)
            print(
                f"{label:28s} median {median_s:5.3f} s  min {min(wall_s):5.3f} s  max {max(wall_s):5.3f} s  "
                f"(≤ {limit_s} s: {'met' if median_s <= limit_s else 'MISSED'});  CPU median {statistics.median(cpu_s):5.3f} s"
            )
    print("all targets met" if not missed else f"missed: {', '.join(missed)}")
    print(f"load average after: {load_average()}")


if __name__ == "__main__":
    main()
