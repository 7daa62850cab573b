"""From a profiled model to kernels KEPT inside it: the tool calls and seconds, through the tool catalog (as the MCP
server and the CLI call it), with no edit in between. For each fusion library kernel the profile's hand-off drafts name
(RMSNorm, then the gated MLP's SiLU-and-mul): spec_check of the draft as written, tune at its recorded shapes, then
integrate with the tune's winner in place of the module forward the trace's Python stack names, on top of the kernels
already kept. The workload is frozen once (before the first integrate); the calls from profile to the first KEEP are
the onboarding figure (target <= 6).

    python bench/profile_to_keep.py --target sm_90                      # examples/workloads/decoder.py, its defaults
    python bench/profile_to_keep.py --target sm_90 --knobs '{"new_tokens": "64"}' --out results/
    python bench/profile_to_keep.py --target host --knobs '{"layers": "2", "hidden": "256", "prompt_tokens": "16", "new_tokens": "4"}'
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from onboarding import Calls  # noqa: E402 - the same counted catalog calls

REPO = Path(__file__).resolve().parent.parent
DECODER = REPO / "examples" / "workloads" / "decoder.py"
MAX_CALLS = 6
KERNELS = ("rmsnorm", "silu_and_mul")
MCP_NAMES = {"spec_check": "spec check", "tune_start": "tune start", "bench": "bench", "workload_freeze": "workload freeze",
             "workload_integrate": "workload integrate"}
# The profiled entry: the same factory workload freeze takes, with the knobs bound (profile calls it without arguments).
PROFILED = ("from decoder import build as _build\nfrom hyperloom.core.factory import declared_knobs, knob_values\n\n\n"
            "def build():\n    return _build(**knob_values(declared_knobs(_build), {knobs!r}))\n")


def run(root: Path, target: str, knobs: dict[str, str], pairs: int, steps_per_leg: int, tune_candidates: int, out: Path | None,
        by_hand: dict[str, str]) -> dict[str, Any]:
    shutil.copy(DECODER, root / "decoder.py")
    (root / "profiled.py").write_text(PROFILED.format(knobs=knobs))
    started = time.perf_counter()
    call = Calls(root)
    profiled = call("profile", workload="profiled:build", steps=2, warmup_steps=1, name="decoder", plot=False)
    print(f"profile: {len(profiled.handoff)} drafts; library: {[(h.library, h.module) for h in profiled.handoff if h.library]} "
          f"({time.perf_counter() - started:.0f} s)")
    kept: list[str] = []
    rows: list[dict[str, Any]] = []
    frozen = False
    first_keep: list[str] | None = None
    for kernel in KERNELS:
        draft = next((h for h in profiled.handoff if h.library == kernel), None)
        if draft is None:
            rows.append({"kernel": kernel, "verdict": "NO_DRAFT", "why": "the profile wrote no hand-off draft for this library kernel"})
            continue
        replace = draft.module or by_hand.get(kernel)
        if replace is None or draft.todos:
            rows.append({"kernel": kernel, "verdict": "NOT_READY",
                         "why": f"module {draft.module}; todos {draft.todos}; notes {draft.notes}"})
            continue
        first = len(call.names)
        checked = call("spec_check", spec=draft.spec)
        if not checked.ok:
            rows.append({"kernel": kernel, "verdict": "SPEC_REFUSED", "why": checked.summary})
            continue
        # tune refuses Triton's interpreter (its times are not kernel times): a gated bench instead, the default params
        if target == "host":
            tuned = call("bench", spec=draft.spec, target=target, shape=len(draft.shapes) - 1)
            params: dict[str, Any] = {}
        else:
            tuned = call("tune_start", spec=draft.spec, target=target, shape=len(draft.shapes) - 1, max_candidates=tune_candidates,
                         background=False, max_time_s=0.5, revalidate_pairs=3, sweep_shapes=False, session=f"tune-{kernel}")
            params = dict(tuned.best.params) if tuned.best is not None else {}
        if not frozen:
            freeze = call("workload_freeze", workload="decoder.py:build", name="decoder", knobs=knobs)
            frozen = True
            print(f"workload freeze: {freeze.summary[:300]}")
        integrated = call("workload_integrate", name="decoder", kernel=kernel, replace=replace, params=params, with_levers=kept,
                          pairs=pairs, steps_per_leg=steps_per_leg)
        candidate = integrated.bench.candidates[0]
        if integrated.verdict == "KEEP":
            kept.append(f"overrides:{integrated.overrides}")
            first_keep = first_keep or list(call.names)
        if out is not None:
            _keep_files(root, integrated.overrides, out, kernel)
        rows.append({"kernel": kernel, "replace": replace, "replace_by_hand": draft.module is None, "shapes": draft.shapes,
                     "dtype": draft.dtype, "tune_best": params, "tune_summary": tuned.summary, "verdict": integrated.verdict,
                     "summary": integrated.summary, "speedup": candidate.speedup, "speedup_ci95": candidate.speedup_ci95,
                     "calls_per_step": integrated.calls_per_step, "wrapper_us_per_call": integrated.wrapper_us_per_call,
                     "with_levers": candidate.levers[:-1], "overrides": integrated.overrides, "calls": call.names[first:],
                     "seconds": round(time.perf_counter() - started, 1)})
        print(f"{kernel}: {integrated.summary[:600]}")
        if out is not None:
            (out / "profile_to_keep.json").write_text(json.dumps({"partial": True, "calls": call.names, "kernels": rows}, indent=2,
                                                                 default=str))
    return {"target": target, "knobs": knobs, "calls": call.names, "kernels": rows, "kept": kept,
            "calls_to_first_keep": len(first_keep) if first_keep else None, "first_keep_chain": first_keep,
            "seconds": round(time.perf_counter() - started, 1)}


def _keep_files(root: Path, overrides: str, out: Path, kernel: str) -> None:
    """The overrides module integrate wrote (what reproduces the result) and the A/B behind its verdict, into `out`."""
    out.mkdir(parents=True, exist_ok=True)
    shutil.copy(root / overrides, out / f"{kernel}_overrides.py")
    for name in ("result.json", "report.md", "speedup.png"):
        found = root / ".hyperloom" / "workload" / "decoder" / "bench" / name
        if found.is_file():
            shutil.copy(found, out / f"{kernel}_{name}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default="sm_90", help="where tune runs the drafts (sm_90, gfx942, host)")
    parser.add_argument("--knobs", default="{}", help="the decoder's knobs, JSON (e.g. {\"new_tokens\": \"64\"})")
    parser.add_argument("--pairs", type=int, default=8)
    parser.add_argument("--steps-per-leg", type=int, default=2)
    parser.add_argument("--tune-candidates", type=int, default=12)
    parser.add_argument("--replace", action="append", default=[], metavar="KERNEL=module:Class.method",
                        help="what integrate replaces where the draft names no module (a trace without Python stacks); recorded as "
                             "given by hand")
    parser.add_argument("--out", type=Path, help="write profile_to_keep.json and the kept overrides here")
    args = parser.parse_args(argv)
    if args.target == "host":
        os.environ.setdefault("TRITON_INTERPRET", "1")
    with tempfile.TemporaryDirectory(prefix="hyperloom-keep-") as tmp:
        result = run(Path(tmp), args.target, json.loads(args.knobs), args.pairs, args.steps_per_leg, args.tune_candidates, args.out,
                     dict(item.split("=", 1) for item in args.replace))
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "profile_to_keep.json").write_text(json.dumps(result, indent=2, default=str))
    chain = result["first_keep_chain"]
    count = result["calls_to_first_keep"]
    verdict = "met" if count is not None and count <= MAX_CALLS else "NOT met"
    print(f"calls from profile to the first KEEP: {count} ({' -> '.join(MCP_NAMES.get(c, c) for c in chain) if chain else 'no KEEP'}); "
          f"target <= {MAX_CALLS}: {verdict}; {result['seconds']:.0f} s in all")
    for row in result["kernels"]:
        print(f"  {row['kernel']}: {row['verdict']} {row.get('speedup') or ''} {row.get('why') or ''}")
    return 0 if verdict == "met" else 1


if __name__ == "__main__":
    sys.exit(main())
