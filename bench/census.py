"""Benchmark: isa_census, cold and cached.

Targets (issue 3), on the 2-core development machine:
  - one target cold, end to end (a fresh `hyperloom census TARGET` process, empty cache): ≤ 1.5 s
  - the default targets together, cold, end to end (one `hyperloom census T1 … T8`): ≤ 6 s
  - a repeat served from the cache (the server's second call, in-process): ≤ 50 ms
Cold runs each get an empty cache folder. Besides the targets it prints the first call of a
fresh process whose disk cache is warm (interpreter start and imports excluded), for reference.

Run: .venv/bin/python bench/census.py [--repeats R] [--targets gfx1201 …]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CLI = Path(sys.executable).parent / "hyperloom"
COLD_ONE_S, COLD_ALL_S, CACHED_S = 1.5, 6.0, 0.050

CHILD = r"""
import json, sys, time
from hyperloom.tools.isa.models import CensusRequest
from hyperloom.tools.isa.api import run_census
target, repeats = sys.argv[1], int(sys.argv[2])
start = time.perf_counter()
first = run_census(CensusRequest(target=target), None)
first_s = time.perf_counter() - start
times = []
for _ in range(repeats):
    start = time.perf_counter()
    again = run_census(CensusRequest(target=target), None)
    times.append(time.perf_counter() - start)
    assert again.from_cache
print(json.dumps({"first_s": first_s, "first_from_cache": first.from_cache, "repeat_s": times}))
"""


def timed_cli(args: list[str], cache: Path) -> float:
    env = {**os.environ, "HYPERLOOM_CACHE_DIR": str(cache)}
    start = time.perf_counter()
    subprocess.run([str(CLI), "census", *args, "--json"], check=True, env=env, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def cold(args: list[str], repeats: int) -> float:
    """Median wall time of `hyperloom census ARGS`, each run with a new, empty cache."""
    runs = []
    for _ in range(repeats):
        with tempfile.TemporaryDirectory(prefix="census-bench-") as cache:
            runs.append(timed_cli(args, Path(cache)))
    return statistics.median(runs)


def cached(target: str, repeats: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="census-bench-") as cache:
        timed_cli([target], Path(cache))  # fills the cache
        env = {**os.environ, "HYPERLOOM_CACHE_DIR": cache}
        proc = subprocess.run([sys.executable, "-c", CHILD, target, str(repeats)], check=True, env=env, capture_output=True, text=True)
    return json.loads(proc.stdout)


def verdict(value: float, limit: float) -> str:
    return "met" if value <= limit else "MISSED"


def main() -> None:
    from hyperloom.tools.isa.targets import DEFAULT_TARGETS, find_llvm_mc

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3, help="cold runs per figure (median reported)")
    parser.add_argument("--targets", nargs="+", default=list(DEFAULT_TARGETS))
    args = parser.parse_args()
    llvm = find_llvm_mc()
    print(f"llvm-mc {llvm.version} ({llvm.path}), {os.cpu_count()} CPUs, median of {args.repeats} cold runs each")
    print(f"load average before: {_load()} (other work on the machine slows every figure)")

    per_target = {target: cold([target], args.repeats) for target in args.targets}
    for target, seconds in per_target.items():
        print(f"cold, one target   {target:8s} {seconds:6.2f} s   (≤ {COLD_ONE_S} s: {verdict(seconds, COLD_ONE_S)})")
    together = cold(args.targets, args.repeats)
    print(f"cold, {len(args.targets)} targets together  {together:6.2f} s   (≤ {COLD_ALL_S} s: {verdict(together, COLD_ALL_S)})")
    repeat = cached(args.targets[0], 20)
    median = statistics.median(repeat["repeat_s"])
    print(f"cached repeat      {args.targets[0]:8s} {1000 * median:6.1f} ms  (≤ {1000 * CACHED_S:.0f} ms: {verdict(median, CACHED_S)}; "
          "median of 20 in one process)")
    print(f"first call of a fresh process, warm disk cache: {1000 * repeat['first_s']:.1f} ms (imports excluded)")
    slowest = max(per_target.values())
    missed = [name for name, ok in (("cold one target", slowest <= COLD_ONE_S), ("cold all", together <= COLD_ALL_S),
                                    ("cached", median <= CACHED_S)) if not ok]
    print("all targets met" if not missed else f"missed: {', '.join(missed)}")
    print(f"load average after: {_load()}")


def _load() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "unknown"


if __name__ == "__main__":
    main()
