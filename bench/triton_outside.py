"""Benchmark: two Triton kernels written outside Hyperloom, through spec_check, bench and tune, beside their own
@triton.autotune choice and torch.compile of the torch reference, in one run.

The kernels are Liger-Kernel's (github.com/linkedin/Liger-Kernel, BSD-2-Clause), read from the installed
liger_kernel package at run time and copied beside our specs in a scratch workspace (nothing of them is committed):
  dyt     liger_kernel/ops/dyt.py                       _dyt_fwd_kernel, 18 autotune configs (BLOCK_N x num_stages x num_warps)
  int2mm  liger_kernel/ops/experimental/mm_int8int2.py  matmul_kernel, 15 autotune configs (block sizes, group, stages, warps)
Our specs, references and torch references are in bench/triton_outside/<name>/. For each kernel: spec_check for
the target; bench (gated on every input set, the same flush and statistics as every CUDA kernel) at every shape;
torch.compile of the torch reference at every shape, timed with the same flush, spin and stopping rule
(bench/triton_torch_timing.py); and at each --tune-shapes shape a tune session over the kernel's own autotune configs
(grid), in which the kernel's own autotuner is first run as its author would (kernel[grid](...) on torch tensors)
and its choice is queued as a candidate: gated and timed as every other, reported beside the winner.
The Triton tutorials' kernels are not used: the triton wheel does not ship python/tutorials, and their source may
not be committed here.

Run: python bench/triton_outside.py [--kernels dyt int2mm] [--tune-shapes 0] [--budget-s 900] [--out DIR] [--workspace DIR]
Needs a GPU, torch, triton and liger-kernel (pip install --no-deps liger_kernel-*.whl).
"""

from __future__ import annotations

import argparse
import importlib.metadata
import importlib.util
import json
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np
import torch

from hyperloom.core.workspace import Workspace
from hyperloom.tools.bench.models import BenchRequest
from hyperloom.tools.bench.api import run_bench
from hyperloom.tools.spec.models import SpecCheckRequest
from hyperloom.tools.spec.check import run_spec_check
from hyperloom.tools.kernelspec.load import load_spec, output_buffers
from hyperloom.tools.triton.loader import describe_kernel
from hyperloom.tools.tune.loop import run_tune
from hyperloom.tools.tune.models import TuneRequest
from triton_launch import device_target  # bench/ is on sys.path when this script runs
from triton_torch_timing import timed

HERE = Path(__file__).parent / "triton_outside"
UPSTREAM = {"dyt": ("ops", "dyt.py"), "int2mm": ("ops", "experimental", "mm_int8int2.py")}


def stage(name: str, root: Path) -> Path:
    """Our spec folder, with the kernel file copied from the installed liger_kernel package beside it."""
    found = importlib.util.find_spec("liger_kernel")
    if found is None or not found.submodule_search_locations:
        sys.exit("liger_kernel is not installed: pip install --no-deps liger_kernel-<version>-py3-none-any.whl")
    folder = root / name
    shutil.copytree(HERE / name, folder, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy2(Path(found.submodule_search_locations[0]).joinpath(*UPSTREAM[name]), folder / UPSTREAM[name][-1])
    return folder


def torch_compiled(folder: Path, inputs: Path, shape: dict[str, int], outputs: list[str]) -> dict[str, object]:
    """torch.compile of the torch reference on the bench run's seeded inputs: its time and its error against the reference."""
    spec = importlib.util.spec_from_file_location(f"torch_reference_{folder.name}", folder / "torch_reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    tensors = {p.name[3:-4]: torch.from_numpy(np.load(p)).cuda() for p in inputs.glob("in_*.npy")}
    function, args = module.make(tensors, shape)
    compiled = torch.compile(function)
    result = compiled(*args)
    torch.cuda.synchronize()
    reference = np.load(inputs / f"ref_{outputs[0]}.npy")
    error = float(np.abs(result.double().cpu().numpy() - reference.astype(np.float64)).max())
    stats = timed(lambda: compiled(*args))
    return {"median_us": stats.median_s * 1e6, "ci95_rel": stats.median_ci95_rel, "n": stats.n, "max_abs_err_vs_reference": error}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kernels", nargs="+", choices=sorted(UPSTREAM), default=sorted(UPSTREAM))
    parser.add_argument("--shapes", type=int, nargs="*", help="default: every shape of each spec")
    parser.add_argument("--tune-shapes", type=int, nargs="*", default=[0])
    parser.add_argument("--budget-s", type=float, default=900.0, help="device-seconds per tune session")
    parser.add_argument("--out", type=Path, default=Path("triton_outside"))
    parser.add_argument("--workspace", type=Path)
    args = parser.parse_args()
    root = args.workspace or Path(tempfile.mkdtemp(prefix="triton-outside-"))
    workspace = Workspace.at(root)
    target, _ = device_target()
    args.out.mkdir(parents=True, exist_ok=True)
    summary = {"target": target, "device": torch.cuda.get_device_name(0), "torch": torch.__version__,
               "liger_kernel": importlib.metadata.version("liger-kernel"), "kernels": {},
               "evidence": "MEASURED by bench/triton_outside.py on the device named; Triton's own autotune timings are its do_bench's"}
    for name in args.kernels:
        folder = stage(name, root)
        loaded = load_spec(folder, workspace)
        variant = next(iter(loaded.spec.variants.values()))
        info = describe_kernel(folder / loaded.spec.source, variant.entry, workspace)
        record: dict[str, object] = {"source": "/".join(("liger_kernel", *UPSTREAM[name])), "entry": variant.entry,
                                     "triton": info.triton_version, "autotune_configs": [c.label() for c in info.autotune or []]}
        check = run_spec_check(SpecCheckRequest(spec=name, targets=[target]), workspace)
        record["spec_check"] = {"ok": check.ok, "summary": check.summary, "problems": [p.model_dump() for p in check.problems]}
        rows = []
        for shape in args.shapes if args.shapes is not None else range(len(loaded.spec.shapes)):
            bench = run_bench(BenchRequest(spec=name, target=target, shape=shape), workspace)
            row: dict[str, object] = {"shape": loaded.shape(shape), "bench": {
                "ok": bench.ok, "summary": bench.summary, "gate": [v.model_dump() for v in bench.gate],
                "median_us": bench.kernel.median_s * 1e6 if bench.kernel else None,
                "ci95_rel": bench.kernel.median_ci95_rel if bench.kernel else None,
                "bandwidth_gbps": bench.bandwidth_gbps, "tflops": bench.tflops}}
            if bench.gate:
                row["torch_compile"] = torch_compiled(folder, workspace.root / bench.artifacts / "seeded", loaded.shape(shape),
                                                      [b.name for b in output_buffers(loaded.spec)])
            rows.append(row)
            print(json.dumps({"kernel": name, **row}, default=str)[:2000], flush=True)
        record["shapes"] = rows
        tunes = []
        for shape in args.tune_shapes:
            report = run_tune(TuneRequest(spec=name, target=target, shape=shape, strategy="grid",
                                          max_candidates=len(info.autotune or []) + 2,
                                          budget_device_s=args.budget_s, session=f"{name}-s{shape}"), workspace)
            best, baseline, choice = report.status.best, report.status.baseline, report.autotune
            torch_row = next((r for r in rows if r["shape"] == loaded.shape(shape)), None)
            compiled_us = torch_row["torch_compile"]["median_us"] if torch_row and "torch_compile" in torch_row else None  # type: ignore[index]
            tunes.append({
                "shape": loaded.shape(shape), "summary": report.status.summary, "stop_reason": report.status.stop_reason,
                "winner": best.model_dump() if best else None, "baseline": baseline.model_dump() if baseline else None,
                "autotune_choice": choice.model_dump() if choice else None,
                "winner_vs_autotune_choice": choice.winner_speedup if choice else None,
                "winner_vs_torch_compile": compiled_us / (best.median_s * 1e6) if best and best.median_s and compiled_us else None,
                "revalidation": report.revalidation.model_dump() if report.revalidation else None,
                "report_md": (workspace.root / report.report_md).read_text(),
            })
            print(json.dumps({"kernel": name, "tune": {k: v for k, v in tunes[-1].items() if k != "report_md"}}, default=str)[:3000],
                  flush=True)
        record["tune"] = tunes
        summary["kernels"][name] = record  # type: ignore[index]
        (args.out / f"{name}.json").write_text(json.dumps(record, indent=2, default=str) + "\n")
    (args.out / "summary.json").write_text(json.dumps(summary, indent=2, default=str) + "\n")
    print(render(summary))
    (args.out / "README.md").write_text(render(summary))


def render(summary: dict) -> str:  # type: ignore[type-arg]
    lines = [f"# Triton kernels written outside Hyperloom on {summary['device']} ({summary['target']})", "",
             f"torch {summary['torch']}, liger-kernel {summary['liger_kernel']}. MEASURED by bench/triton_outside.py.", ""]
    for name, record in summary["kernels"].items():
        lines += [f"## {name}: {record['source']} `{record['entry']}` (Triton {record['triton']})", "",
                  f"spec_check: {record['spec_check']['summary']}", "",
                  "| shape | gate | Hyperloom bench (us) | GB/s | TFLOP/s | torch.compile (us) |", "|---|---|---|---|---|---|"]
        for row in record["shapes"]:
            bench, compiled = row["bench"], row.get("torch_compile") or {}
            gate = "pass" if all(v["passed"] for v in bench["gate"]) else "FAIL"
            lines.append(f"| {row['shape']} | {gate} ({len(bench['gate'])} sets) | {_f(bench['median_us'])} | "
                         f"{_f(bench['bandwidth_gbps'])} | {_f(bench['tflops'], 3)} | {_f(compiled.get('median_us'))} |")
        for tune in record["tune"]:
            choice, winner = tune["autotune_choice"] or {}, tune["winner"] or {}
            lines += ["", f"Tune at {tune['shape']}: {tune['summary']}",
                      f"- winner {winner.get('params')}: {_f((winner.get('median_s') or 0) * 1e6)} us",
                      f"- the kernel's own @triton.autotune choice: config {choice.get('config_index')} ({choice.get('config')}): "
                      f"{_f((choice.get('median_s') or 0) * 1e6)} us as Hyperloom timed it; winner / choice speedup "
                      f"{_f(tune['winner_vs_autotune_choice'], 3)}"
                      + ("" if choice.get("determined", False) else f" (not determined: {choice.get('reason')})"),
                      f"- winner vs torch.compile: {_f(tune['winner_vs_torch_compile'], 3)}x"]
        lines.append("")
    return "\n".join(lines) + "\n"


def _f(value: object, digits: int = 1) -> str:
    return "–" if value in (None, 0, 0.0) else f"{value:.{digits}f}"


if __name__ == "__main__":
    main()
