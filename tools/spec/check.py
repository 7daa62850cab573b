"""spec_check: validate a kernel.yaml without a GPU and report every problem at once.

In order: the YAML; placeholders spec_init left (TODO); the schema; files (inside the workspace);
every expression at every shape, tuning values, the tolerance (tools/spec/sanity.py); the reference
at the smallest shape, in a worker process; each variant built for the requested targets with its
resource usage; and whether this machine can run each target. Later steps run only when the
earlier ones leave something to run.
"""

from __future__ import annotations

import math
import tempfile
import time
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from hyperloom.core.errors import HyperloomError
from hyperloom.core.evidence import measured
from hyperloom.core.hashing import combine_digests, sha256_file, sha256_json
from hyperloom.core.progress import ProgressFn
from hyperloom.core.workspace import Workspace
from hyperloom.tools.pipeline.build import build_with
from hyperloom.tools.pipeline.languages import language
from hyperloom.tools.pipeline.launch import at_shape, backend_for, builds_for
from hyperloom.tools.runtime.probe import backend_readiness
from hyperloom.tools.spec.models import ReferenceRunReport, Runnable, SpecCheckRequest, SpecCheckResult, SpecProblem, VariantBuild
from hyperloom.tools.kernelspec.load import SPEC_HELP, LoadedSpec, buffer_shape, draw_inputs, field_path, locate, output_buffers, read_spec
from hyperloom.tools.kernelspec.models import BufferArg, KernelSpec
from hyperloom.tools.kernelspec.reference import run_references
from hyperloom.tools.pipeline.audit import StagedSet, audit_references
from hyperloom.tools.spec.sanity import check_spec

TODO = "TODO"
KERNEL_FIELDS = ("source", "language", "variants", "tuning")  # what a placeholder may leave open while the contract is checked


class Problems:
    """The problems found so far, each once."""

    def __init__(self) -> None:
        self.items: list[SpecProblem] = []
        self._seen: set[tuple[str, str]] = set()
        self.placeholders: set[str] = set()  # paths still TODO: reported once as a todo, not again as the error the text makes there

    def __call__(self, path: str, severity: str, cause: str, next_step: str, *, shape: int | None = None) -> None:
        if severity == "error" and _under(path, self.placeholders):
            return
        if (path, cause) not in self._seen:
            self._seen.add((path, cause))
            self.items.append(SpecProblem(path=path, severity=severity, cause=cause.rstrip("."), next_step=next_step.rstrip("."),  # type: ignore[arg-type]
                                          shape=shape))

    def count(self, *severities: str) -> int:
        return sum(1 for p in self.items if p.severity in severities)


def run_spec_check(request: SpecCheckRequest, workspace: Workspace, progress: ProgressFn | None = None) -> SpecCheckResult:
    started = time.perf_counter()
    given = workspace.resolve(request.spec, what="spec")
    problems = Problems()
    builds: list[VariantBuild] = []
    runnable: list[Runnable] = []
    reference: ReferenceRunReport | None = None
    path, spec, loaded = given, None, None
    try:
        path, raw = read_spec(given)
    except HyperloomError as exc:
        problems("(file)", "error", exc.cause, exc.next_step)
        raw = None
    if raw is not None:
        todos = _todos(raw, "")
        for where, text in todos:
            problems(where, "todo", f"still a placeholder: {text}", "fill it in (see the skill's spec.md), then run spec_check again")
        problems.placeholders = {w for w, _ in todos}
        spec = _schema(raw, problems.placeholders, problems)
    kernel_todo = any(_under(w, KERNEL_FIELDS) for w in problems.placeholders)
    if spec is not None:
        loaded = _files(spec, path, workspace, problems, skip_sources=kernel_todo)
        check_spec(spec, problems)
        if loaded is not None and not kernel_todo:
            for name in dict.fromkeys(v.language or spec.language for v in spec.variants.values()):
                language(name).check_spec(loaded, workspace, problems)  # Triton's reads the kernel file in a worker
    if progress is not None:
        progress(1, 3)
    # the reference needs the buffers, shapes and tolerance, not the kernel: a draft whose kernel is still TODO checks it too
    contract_todo = any(not _under(w, KERNEL_FIELDS) for w in problems.placeholders)
    if loaded is not None and request.run_reference and not problems.count("error") and not contract_todo:
        reference = _reference(loaded, workspace, request.timeout_s, problems)
    if progress is not None:
        progress(2, 3)
    if loaded is not None and not problems.count("todo"):
        builds = _builds(loaded, request.targets, workspace, problems)
    if spec is not None:
        runnable = _runnable(spec, request.targets)
    if progress is not None:
        progress(3, 3)
    errors, todos, warnings = problems.count("error"), problems.count("todo"), problems.count("warning")
    ok = errors == 0 and todos == 0
    built = [b for b in builds if b.ok]
    summary = (
        (f"{path.name}: ready for bench and tune" if ok else f"{path.name}: {errors} error(s), {todos} placeholder(s) to fill")
        + (f", {warnings} warning(s)" if warnings else "")
        + (f"; reference ran in {reference.elapsed_s:.3g} s at shape {reference.shape}" if reference else "")
        + (f"; built {len(built)} of {len(builds)} variant/target pair(s)" if builds
           else "; no variant built (entries read from their sources; pass targets to build)")
        + ("; runs here on " + ", ".join(r.target for r in runnable if r.can_run) if any(r.can_run for r in runnable) else "")
    )
    inputs = [sha256_file(path)] if path.is_file() else []
    return SpecCheckResult(
        ok=ok, summary=summary, spec=workspace.relative(path), problems=problems.items, builds=builds, runnable=runnable,
        reference=reference, elapsed_s=time.perf_counter() - started,
        evidence=measured("spec_check", inputs_sha256=combine_digests([*inputs, sha256_json(request.model_dump())]),
                          target=",".join(request.targets) or "unspecified"),
    )


def _under(path: str, roots: set[str] | tuple[str, ...]) -> bool:
    """Whether `path` is one of `roots` or inside one (variants.triton.entry is inside variants)."""
    return any(path == r or path.startswith(r + ".") or path.startswith(r + "[") for r in roots)


def _todos(node: Any, where: str) -> list[tuple[str, str]]:
    """(path, text) of every string placeholder starting with TODO, depth first."""
    if isinstance(node, str):
        return [(where or "(root)", node)] if node.strip().upper().startswith(TODO) else []
    if isinstance(node, dict):
        keys = [(f"{where}.{key}" if where else str(key), str(key)) for key in node if str(key).upper().startswith(TODO)]
        return keys + [found for key, value in node.items() for found in _todos(value, f"{where}.{key}" if where else str(key))]
    if isinstance(node, list):
        return [found for index, value in enumerate(node) for found in _todos(value, f"{where}[{index}]")]
    return []


def _schema(raw: Any, todo_paths: set[str], problems: Problems) -> KernelSpec | None:
    try:
        return KernelSpec.model_validate(raw)
    except ValidationError as exc:
        for item in exc.errors(include_url=False, include_input=False):
            where = field_path(item["loc"])
            if not _under(where, todo_paths):
                problems(where, "error", str(item["msg"]).removeprefix("Value error, "), SPEC_HELP)
        return None
    except RecursionError:
        problems("(file)", "error", "the spec nests too deeply", SPEC_HELP)
        return None


def _files(spec: KernelSpec, path: Path, workspace: Workspace, problems: Problems, skip_sources: bool = False) -> LoadedSpec | None:
    try:
        return locate(spec, path, workspace, sources=not skip_sources)  # the spec already read and validated above, its files now
    except HyperloomError as exc:
        where = "reference" if "reference" in exc.cause else "source" if "source" in exc.cause else "(file)"
        problems(where, "error", exc.cause, exc.next_step)
        return None


def smallest_shape(spec: KernelSpec) -> int:
    """The shape whose buffers hold the fewest elements (the cheapest to run the reference at)."""
    def size(index: int) -> float:
        try:
            return sum(math.prod(buffer_shape(a, spec.shapes[index])) for a in spec.args if isinstance(a, BufferArg))
        except HyperloomError:
            return math.inf
    return min(range(len(spec.shapes)), key=size)


def _reference(loaded: LoadedSpec, workspace: Workspace, timeout_s: float, problems: Problems) -> ReferenceRunReport | None:
    """The reference at the smallest shape on the seeded inputs, then on the adversarial sets and with each input redrawn
    (one worker for all of them): its outputs reported, and audited (tools/pipeline/audit.py)."""
    from hyperloom.core.dtypes import load_npy, save_npy

    index = smallest_shape(loaded.spec)
    shape = loaded.shape(index)
    with tempfile.TemporaryDirectory(prefix="spec-check-", dir=workspace.state_dir("spec_check")) as tmp:
        folder = Path(tmp)
        drawn = {case: draw_inputs(loaded.spec, shape, case) for case in ["seeded", *loaded.spec.adversarial]}
        redrawn = {f"redrawn:{name}": {**drawn["seeded"], name: draw_inputs(loaded.spec, shape, "seeded", seed=loaded.spec.seed + 1)[name]}
                   for name in drawn["seeded"]}
        cases = {**drawn, **redrawn}
        for case, inputs in cases.items():
            (folder / _slug(case)).mkdir()
            for name, array in inputs.items():
                save_npy(folder / _slug(case) / f"in_{name}.npy", array)
        try:
            runs = run_references(loaded, shape, [(folder / _slug(c), folder / _slug(c)) for c in cases], timeout_s=timeout_s)
        except HyperloomError as exc:
            problems("reference", "error", exc.cause, exc.next_step, shape=index)
            return None
        outputs_of = {case: {a.name: load_npy(folder / _slug(case) / f"ref_{a.name}.npy") for a in output_buffers(loaded.spec)}
                            for case in cases}
    run = runs[0]
    outputs = {}
    for arg in output_buffers(loaded.spec):
        nan = run.nan.get(arg.name, 0)
        outputs[arg.name] = f"{arg.dtype} {list(buffer_shape(arg, shape))}" + (f", {nan} NaN" if nan else "")
        if nan and loaded.spec.tolerance.nan_policy != "match":
            problems("reference", "error",
                     f"the reference's {arg.name} holds {nan} NaN at shape {index} on seeded inputs, and nan_policy forbids NaN",
                     "fix the reference, or declare nan_policy: match if NaN is part of the contract", shape=index)
        returned = run.shapes.get(arg.name)
        if returned is not None and tuple(returned) != buffer_shape(arg,
                                                                    shape) and math.prod(returned) == math.prod(buffer_shape(arg, shape)):
            problems("reference", "warning", f"the reference's {arg.name} has shape {returned}, the spec declares "
                                             f"{list(buffer_shape(arg, shape))} (same size, reshaped)",
                     "return the declared shape, or declare the shape the reference returns", shape=index)
    _audit(loaded, drawn, outputs_of, index, problems)
    return ReferenceRunReport(shape=index, elapsed_s=run.elapsed_s, outputs=outputs)


def _slug(case: str) -> str:
    return case.replace(":", "-")


def _audit(loaded: LoadedSpec, drawn: dict[str, dict[str, Any]], outputs_of: dict[str, dict[str, Any]], index: int,
           problems: Problems) -> None:
    """Degenerate references: a trivial kernel that passes the gate on every set (error, or a warning for an input passed
    through), and outputs that do not change when an input is redrawn (warning)."""
    import numpy as np

    staged = [StagedSet(case, inputs, outputs_of[case]) for case, inputs in drawn.items()]
    for finding in audit_references(staged, loaded.spec.tolerance):
        refuses = finding.refuses and not loaded.spec.trivial_reference
        problems("reference", "error" if refuses else "warning", f"degenerate for these inputs: {finding.describe()}",
                 "draw inputs that make the outputs vary (args[].init, low/high, the adversarial sets) or tighten the tolerance"
                 if refuses else f"declared right: {loaded.spec.trivial_reference}" if finding.refuses and loaded.spec.trivial_reference
                 else "fine for a copy; otherwise the reference ignores its arithmetic on these inputs", shape=index)
    for name in drawn["seeded"]:
        same = [o for o, array in outputs_of["seeded"].items() if np.array_equal(array, outputs_of[f"redrawn:{name}"][o], equal_nan=True)]
        if same and np.any(drawn["seeded"][name] != draw_inputs(loaded.spec, loaded.shape(index), "seeded",
                                                                seed=loaded.spec.seed + 1)[name]):
            problems("reference", "warning",
                     f"{', '.join(same)} did not change when input {name} was redrawn: the reference does not read {name}",
                     f"check the reference uses {name}; a kernel that ignores {name} would pass its gate", shape=index)


def _builds(loaded: LoadedSpec, targets: list[str], workspace: Workspace, problems: Problems) -> list[VariantBuild]:
    builds = []
    index = smallest_shape(loaded.spec)
    for target in dict.fromkeys(targets):
        for name, variant in loaded.spec.variants.items():
            if not builds_for(loaded, variant, target):
                continue
            try:
                launchable, build = build_with(at_shape(loaded, name, variant, target, loaded.shape(index)), workspace, {})
            except HyperloomError as exc:
                problems(f"variants.{name}", "error", f"{target}: {exc.cause}", exc.next_step)
                builds.append(VariantBuild(variant=name, target=target, ok=False, summary=exc.cause))
                continue
            builds.append(VariantBuild(variant=name, target=target, ok=build.ok, summary=build.summary, symbol=launchable.symbol,
                                       code_object=build.code_object, kernels=build.kernels))
            if not build.ok:
                problems(f"variants.{name}", "error", f"does not build for {target}: {build.summary}",
                         "fix the source (compile_kernel shows the full log)")
    return builds


def _runnable(spec: KernelSpec, targets: list[str]) -> list[Runnable]:
    declared = [t for v in spec.variants.values() for t in (v.targets or [])]
    chosen = list(dict.fromkeys(targets or declared))
    backend = {t: backend_for(t, spec.language) for t in chosen}
    ready = {b: backend_readiness(b) for b in dict.fromkeys(backend.values())}  # one probe per backend
    return [Runnable(target=t, backend=backend[t], can_run=ready[backend[t]].can_run, reason=ready[backend[t]].reason) for t in chosen]  # type: ignore[arg-type]
