"""Benchmark: allreduce_int6's numpy codec per core, then real ranks against the native bf16 all-reduce.

Target (issue 7): numpy pack + unpack at least 1 GB/s of fp32 input per core (numpy runs on one
core). The figure is the fp32 bytes the codes stand for (4 per element) over the time of
pack_int6 then unpack_int6 on int8 codes; quantize and dequantize are timed beside it, not in it.
Then `hyperloom allreduce bench` runs: int6 against the backend's native bf16 all-reduce, from
--min-mib to --max-mib of bf16 (on CPU with gloo, loopback is memory-speed, so compression cannot
win there: those rows show the codec's cost, not a link's saving).

Run: .venv/bin/python bench/allreduce.py [--elements N] [--repeats R] [--ranks 2] [--backend gloo|nccl] [--max-mib 64]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from hyperloom.tools.allreduce.bench import run_allreduce_bench
from hyperloom.tools.allreduce.models import AllreduceBenchRequest
from hyperloom.tools.allreduce.packing import pack_int6, unpack_int6
from hyperloom.tools.allreduce.quantize import block_amax, dequantize, quantize, shared_scales


def best_of(repeats: int, call) -> tuple[float, float]:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return min(times), statistics.median(times)


def codec(elements: int, repeats: int) -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal(elements, dtype=np.float32)
    scales = shared_scales(block_amax(x, 128), 15)
    codes = quantize(x, scales, 128, 15, "nearest", 0, 0)
    packed = pack_int6(codes)
    assert np.array_equal(unpack_int6(packed), codes)
    fp32_bytes = 4 * elements
    print(f"numpy codec, {elements} elements ({fp32_bytes / 1e6:.0f} MB of fp32), one core, best and median of {repeats}:")
    rows = [
        ("pack_int6", lambda: pack_int6(codes)),
        ("unpack_int6", lambda: unpack_int6(packed)),
        ("pack + unpack", lambda: unpack_int6(pack_int6(codes))),
        ("quantize (nearest)", lambda: quantize(x, scales, 128, 15, "nearest", 0, 0)),
        ("dequantize", lambda: dequantize(codes, scales, 128)),
    ]
    measured = {}
    for name, call in rows:
        best, median = measured[name] = best_of(repeats, call)
        print(f"  {name:<20} {best * 1e3:8.1f} ms  {fp32_bytes / best / 1e9:6.2f} GB/s (median {fp32_bytes / median / 1e9:.2f})")
    rate = fp32_bytes / measured["pack + unpack"][1] / 1e9
    print(f"  target: pack + unpack >= 1 GB/s of fp32 input per core: {'meets' if rate >= 1 else 'MISSES'} (median {rate:.2f} GB/s)\n")


def ranks(args: argparse.Namespace) -> None:
    result = run_allreduce_bench(AllreduceBenchRequest(ranks=args.ranks, backend=args.backend, min_mib=args.min_mib, max_mib=args.max_mib,
                                                       repeats=args.repeats))
    print(f"{result.summary} (MEASURED, torch {result.evidence.toolchain['torch']}); median of {args.repeats}, rank 0:")
    print(f"  {'size (bf16)':>11}  {'method':<11}  {'time ms':>9}  {'algbw GB/s':>10}  {'max rel err':>11}  {'wire B/rank':>11}")
    for row in result.rows:
        wire = "-" if row.wire_bytes_per_rank is None else str(row.wire_bytes_per_rank)
        print(f"  {row.size_bytes / 2**20:>7g} MiB  {row.method:<11}  {row.time_s * 1e3:9.2f}  {row.algbw_gbps:10.3f}  "
              f"{row.max_rel_error:11.3g}  {wire:>11}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--elements", type=int, default=1 << 25)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--backend", choices=["gloo", "nccl"], default="gloo")
    parser.add_argument("--min-mib", type=int, default=1)
    parser.add_argument("--max-mib", type=int, default=64,
                        help="1024 for the issue's full range (needs the memory: ~8 GB per rank at 1 GiB)")
    args = parser.parse_args()
    codec(args.elements, args.repeats)
    ranks(args)


if __name__ == "__main__":
    main()
