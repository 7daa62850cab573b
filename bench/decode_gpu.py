"""Benchmark: the decode GEMV's NVIDIA build at the five shapes beside torch, in one run.

For each shape (N x K, batch 1, group 128): Hyperloom's w4a16 and w4a8 through `bench` (gated on
every input set first, L2 flushed, device events), `torch._weight_int4pack_mm` (int4 weights,
group 128, bf16) and cuBLAS fp16 GEMV (`torch.nn.functional.linear` with M = 1), timed the same way.
Each as time, bandwidth (bytes of weights + scales + activations read) and percent of the read
bandwidth measured by Hyperloom's read microbenchmark in the same run. Prints a table and writes
JSON. Needs a CUDA GPU, torch, and the package importable.

Run: python bench/decode_gpu.py [--out decode_gpu.json] [--workspace DIR]
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
from importlib import resources
from pathlib import Path

import torch

from hyperloom.core.workspace import Workspace
from hyperloom.tools.bench.models import BenchRequest
from hyperloom.tools.bench.run import run_bench
from torch_baselines import timed  # bench/ is on sys.path when this script runs

SHAPES = [(4096, 4096), (14336, 4096), (4096, 14336), (28672, 8192), (128256, 4096)]
GROUP = 128


def torch_int4(n: int, k: int) -> tuple[float, int]:
    w = torch.randint(0, 256, (n, k // 2), dtype=torch.uint8, device="cuda")
    packed = torch._convert_weight_to_int4pack(w, 8)
    scales_and_zeros = torch.rand(k // GROUP, n, 2, dtype=torch.bfloat16, device="cuda")
    x = torch.randn(1, k, dtype=torch.bfloat16, device="cuda")
    seconds = timed(lambda: torch._weight_int4pack_mm(x, packed, GROUP, scales_and_zeros))
    return seconds, n * k // 2 + scales_and_zeros.numel() * 2 + x.numel() * 2


def cublas_fp16(n: int, k: int) -> tuple[float, int]:
    w = torch.randn(n, k, dtype=torch.float16, device="cuda")
    x = torch.randn(1, k, dtype=torch.float16, device="cuda")
    seconds = timed(lambda: torch.nn.functional.linear(x, w))
    return seconds, n * k * 2 + k * 2


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="decode_gpu.json")
    parser.add_argument("--workspace", default=None, help="where the kernels are staged (default: a temporary folder)")
    args = parser.parse_args()
    root = Path(args.workspace or tempfile.mkdtemp(prefix="hyperloom-decode-"))
    for name in ("decode", "microbench"):
        shutil.copytree(Path(str(resources.files("hyperloom") / "kernels" / name)), root / "kernels" / name, dirs_exist_ok=True)
    workspace = Workspace(root.resolve())
    read = run_bench(BenchRequest(spec="kernels/microbench/read", variant="gpu", shape=1, target="sm_90", adversarial=False), workspace)
    read_gbps = read.bandwidth_gbps
    rows = []
    for index, (n, k) in enumerate(SHAPES):
        for variant in ("w4a16", "w4a8"):
            r = run_bench(BenchRequest(spec=f"kernels/decode/{variant}", shape=index, target="sm_90", max_time_s=3.0), workspace)
            rows.append({"shape": f"{n}x{k}", "method": f"hyperloom {variant}", "gate": "pass" if r.ok else "FAIL",
                         "time_us": r.kernel.median_s * 1e6 if r.ok else None, "gbps": r.bandwidth_gbps, "evidence": r.evidence.model_dump(mode="json")})
        for method, measure in (("torch int4pack_mm", torch_int4), ("cuBLAS fp16 GEMV", cublas_fp16)):
            seconds, moved = measure(n, k)
            rows.append({"shape": f"{n}x{k}", "method": method, "gate": "-", "time_us": seconds * 1e6, "gbps": moved / seconds / 1e9})
    for row in rows:
        row["percent_of_read"] = 100 * row["gbps"] / read_gbps if row["gbps"] else None
    device = torch.cuda.get_device_name(0)
    print(f"decode GEMV, batch 1, group {GROUP}, on {device} (MEASURED, torch {torch.__version__}); read ceiling {read_gbps:.0f} GB/s measured in this run")
    print(f"{'shape':>12} {'method':<20} {'gate':>5} {'time_us':>9} {'GB/s':>8} {'% read':>7}")
    for row in rows:
        time = f"{row['time_us']:.2f}" if row["time_us"] else "-"
        gbps = f"{row['gbps']:.1f}" if row["gbps"] else "-"
        pct = f"{row['percent_of_read']:.1f}" if row["percent_of_read"] else "-"
        print(f"{row['shape']:>12} {row['method']:<20} {row['gate']:>5} {time:>9} {gbps:>8} {pct:>7}")
    for index, (n, k) in enumerate(SHAPES):
        ours = [r for r in rows if r["shape"] == f"{n}x{k}" and r["method"].startswith("hyperloom") and r["time_us"]]
        theirs = next(r for r in rows if r["shape"] == f"{n}x{k}" and r["method"] == "torch int4pack_mm")
        if ours:
            best = min(ours, key=lambda r: r["time_us"])
            print(f"{n}x{k}: best Hyperloom ({best['method']}) is {theirs['time_us'] / best['time_us']:.2f}x torch int4pack_mm")
    Path(args.out).write_text(json.dumps({"device": device, "torch": torch.__version__, "read_gbps": read_gbps, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
