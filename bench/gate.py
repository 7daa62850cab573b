"""Benchmark: correctness_gate on two 100-million-element float32 arrays.

Target (issue 2): at most 1.5 s on the 2-core development machine, and peak extra memory at
most one array (400 MB). Each measurement runs in a fresh process, so its peak resident memory
(VmHWM) is its own. Beside the gate, the same comparison with numpy.load + numpy.isclose is
measured in the same run, for a side-by-side ratio on the same (shared, noisy) machine.

Run: .venv/bin/python bench/gate.py [--elements N] [--repeats R]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

CHUNK = 1 << 22

CHILD = r"""
import json, sys, time
from pathlib import Path

def vm(field):
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(field)

mode, folder, cand, ref = sys.argv[1:5]
import numpy as np
from hyperloom.core.workspace import Workspace
from hyperloom.tools.gate.api import run_gate
from hyperloom.tools.gate.models import GateRequest
before = vm("VmRSS")
start = time.perf_counter()
if mode == "gate":
    result = run_gate(GateRequest(candidates=[cand], references=[ref], atol=1e-5, rtol=1e-5), Workspace(Path(folder)))
    passed, mismatches = result.passed, result.cases[0].mismatches
else:
    c, r = np.load(Path(folder) / cand), np.load(Path(folder) / ref)
    mismatches = int(c.size - np.count_nonzero(np.isclose(c, r, atol=1e-5, rtol=1e-5)))
    passed = mismatches == 0
elapsed = time.perf_counter() - start
print(json.dumps({"elapsed_s": elapsed, "peak_extra_bytes": vm("VmHWM") - before, "passed": passed, "mismatches": mismatches}))
"""


def write_npy(path: Path, n: int, seed: int, *, noise_of: Path | None = None, bad_every: int = 0) -> None:
    """Write a float32 .npy in chunks, so the benchmark's own memory stays small."""
    rng = np.random.default_rng(seed)
    with path.open("wb") as out:
        np.lib.format.write_array_header_1_0(out, {"descr": "<f4", "fortran_order": False, "shape": (n,)})
        source = None
        if noise_of is not None:
            source = noise_of.open("rb")
            np.lib.format.read_magic(source)
            np.lib.format.read_array_header_1_0(source)
        for start in range(0, n, CHUNK):
            count = min(CHUNK, n - start)
            if source is None:
                chunk = rng.standard_normal(count, dtype=np.float32)
            else:
                chunk = np.frombuffer(source.read(count * 4), dtype=np.float32).copy()
                chunk += (rng.standard_normal(count, dtype=np.float32) * np.float32(1e-7)) * chunk
                if bad_every:
                    chunk[(-start) % bad_every :: bad_every] += 1.0
            chunk.tofile(out)
        if source is not None:
            source.close()


def run_child(mode: str, folder: Path, cand: str, ref: str) -> dict:
    proc = subprocess.run([sys.executable, "-c", CHILD, mode, str(folder), cand, ref], capture_output=True, text=True, check=True)
    return json.loads(proc.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--elements", type=int, default=100_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    n = args.elements
    array_bytes = 4 * n
    with tempfile.TemporaryDirectory(dir=Path.cwd()) as tmp:
        folder = Path(tmp)
        write_npy(folder / "ref.npy", n, 1)
        write_npy(folder / "close.npy", n, 2, noise_of=folder / "ref.npy")
        write_npy(folder / "bad.npy", n, 3, noise_of=folder / "ref.npy", bad_every=1000)
        rows = []
        for label, mode, cand in (
            ("gate, passing candidate", "gate", "close.npy"),
            ("gate, 0.1 % mismatches", "gate", "bad.npy"),
            ("numpy load + isclose", "numpy", "close.npy"),
        ):
            runs = [run_child(mode, folder, cand, "ref.npy") for _ in range(args.repeats)]
            elapsed = statistics.median(r["elapsed_s"] for r in runs)
            peak = max(r["peak_extra_bytes"] for r in runs)
            rows.append((label, elapsed, peak, runs[0]["mismatches"]))
    print(f"correctness_gate benchmark: two float32 arrays of {n:,} elements ({array_bytes / 1e6:.0f} MB each), "
          f"median of {args.repeats} fresh processes, MEASURED on this host")
    print(f"{'what':<26} {'time_s':>8} {'elements_per_s':>15} {'peak_extra_MB':>14} {'x one array':>12} {'mismatches':>11}")
    for label, elapsed, peak, mismatches in rows:
        print(f"{label:<26} {elapsed:8.3f} {n / elapsed:15.3e} {peak / 1e6:14.1f} {peak / array_bytes:12.2f} {mismatches:11,}")
    gate_s, gate_peak = rows[0][1], rows[0][2]
    print(f"gate vs numpy: {rows[2][1] / gate_s:.2f}x the speed, {gate_peak / max(rows[2][2], 1):.3f}x the memory")
    print(f"target: time <= 1.5 s: {'met' if gate_s <= 1.5 else 'MISSED'} ({gate_s:.3f} s); "
          f"peak extra memory <= 1x one array: {'met' if gate_peak <= array_bytes else 'MISSED'} ({gate_peak / array_bytes:.2f}x)")


if __name__ == "__main__":
    main()
