"""The hand-off from a profile to the spec path: a draft folder (kernel.yaml, reference.py, handoff.json) for each top
hotspot and each top fusion candidate, and for every chain the fusion library matched.

A matched chain's draft is the library kernel (its source copied beside the spec, its entry and tuning space) at the
recorded shapes and dtypes: spec_check accepts it as written. Any other draft leaves the kernel's source and entry as
TODOs, with its buffers, launch, metric, tolerance and reference filled in: never a kernel that only looks right.
handoff.json records what integrate needs later: the ops (or the module's forward) the draft replaces, the launcher.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from hyperloom.core.atomic import write_bytes_atomic
from hyperloom.core.shipped import shipped_kernels
from hyperloom.core.workspace import Workspace
from hyperloom.tools.profile import drafts, replay
from hyperloom.tools.profile.classify import base_name, op_class
from hyperloom.tools.profile.fusion import Node
from hyperloom.tools.profile.group import WorkItem
from hyperloom.tools.profile.library import step_of
from hyperloom.tools.profile.models import FusionCandidate, Handoff, Hotspot
from hyperloom.tools.profile.stack import common_module
from hyperloom.tools.profile.tensors import Tensor, arguments
from hyperloom.tools.profile.tolerance import suggest_tolerance

ARGUMENT_NAMES = {
    "mm": ["a", "b"], "bmm": ["a", "b"], "matmul": ["a", "b"], "addmm": ["bias", "a", "b"], "baddbmm": ["c", "a", "b"],
    "linear": ["x", "weight", "bias"], "scaled_dot_product_attention": ["q", "k", "v", "mask"], "layer_norm": ["x", "", "weight", "bias"],
    "native_layer_norm": ["x", "", "weight", "bias"], "rms_norm": ["x", "", "weight"], "_fused_rms_norm": ["x", "", "weight"],
    "copy_": ["dst", "src"], "embedding": ["weight", "indices"],
}
NORMS = ("rmsnorm", "add_rmsnorm", "layernorm", "softmax")
NO_STACK = ("the trace records no Python stack, so integrate replaces the aten ops listed (ops); a trace captured with "
            "with_stack=True names the module whose forward they ran in")


def _module_notes(ops: list, module: str | None) -> list[str]:
    """Why no module is named (none recorded, or the ops ran in different forwards), for integrate's sake."""
    if module is not None:
        return []
    seen = list(dict.fromkeys(op.modules[-1] for op in ops if op is not None and op.modules))
    if not seen:
        return [NO_STACK]
    return [f"the ops ran in no one module's forward (innermost: {', '.join(seen)}; some outside any module), so integrate replaces the "
            "aten ops listed"]


def _names(op_name: str, count: int) -> list[str]:
    known = ARGUMENT_NAMES.get(base_name(op_name), [])
    return [known[i] if i < len(known) and known[i] else f"in{i}" for i in range(count)]


def _floats(tensors: Sequence[Tensor]) -> bool:
    return any(drafts.spec_dtype(t) in ("float16", "float32", "float64", "bfloat16") or "float8" in str(drafts.spec_dtype(t))
               for t in tensors)


def _header(label: str, trace_label: str, todos: list[str], why: str) -> list[str]:
    lines = [f"Hand-off draft of hyperloom profile ({trace_label}): {label}"]
    lines += [f"TODO {t}" for t in todos] or ["Nothing to fill in: spec_check, then tune."]
    lines += [f"tolerance ASSUMED (suggested): {why}", "handoff.json beside this file records what integrate replaces."]
    return lines


# --- a hotspot -------------------------------------------------------------------------------------------------------

def hotspot_draft(spot: Hotspot, item: WorkItem, trace_label: str) -> tuple[drafts.Draft, dict] | None:
    op, work = item.op, item.work
    if op is None or work is None or work.output is None or not op.name.startswith("aten::"):
        return None
    tensors = arguments(op)
    names = _names(op.name, len(tensors))
    kind = op_class(op.name)
    source = replay.op_reference(op, names, kind, item.label, trace_label)
    inputs = [(n, t) for n, t in zip(names, tensors) if t is not None and t.dims]
    if source is None or any(drafts.spec_dtype(t) is None for _, t in inputs) or drafts.spec_dtype(work.output) is None:
        return None
    name = f"hotspot{spot.rank}_{base_name(op.name)}"
    suggested = suggest_tolerance(drafts.spec_dtype(work.output), kind)
    args = [drafts.buffer(n, t, "input") for n, t in inputs] + [drafts.buffer("out", work.output, "output")]
    metric = {"bytes": work.bytes_moved, "flops": work.flops}
    spec = drafts.open_spec(name, f"A replacement for {item.label} (hotspot {spot.rank}), at its recorded shapes and dtypes.", args,
                            drafts.rows_cols(work.output), suggested, metric, _floats([t for _, t in inputs]), kind)
    todos = ["source: write the kernel", "variants.triton.entry: name it"]
    module = common_module([op])
    draft = drafts.Draft(name, spec, _header(item.label, trace_label, todos, suggested.why), source, todos, _module_notes([op], module))
    return draft, {"module": module, "kind": "hotspot", "rank": spot.rank, "label": spot.label, "ops": [op.name],
                   "kernel": spot.kernels[0] if spot.kernels else "",
                   "dtype": drafts.spec_dtype(work.output), "why": suggested.why, "metric": metric}


# --- a fusion candidate ----------------------------------------------------------------------------------------------

def library_draft(group: list[tuple[int, FusionCandidate, list[Node]]], trace_label: str) -> tuple[drafts.Draft, dict]:
    """Every candidate of `group` matched the same library kernel with the same dtypes: one draft at all their shapes."""
    rank, first, run = group[0]
    match = first.library
    assert match is not None
    name = f"fusion{rank}_{match.kernel}"
    dtypes = {a.name: a.dtype for a in match.args if a.dims is not None and a.dtype is not None}
    output = dtypes.get("y", dtypes.get("out", match.dtype))
    suggested = suggest_tolerance(output, "normalization" if match.kernel in NORMS else "elementwise")
    shapes = list({tuple(c.library.shape.items()): dict(c.library.shape) for _, c, _ in group if c.library}.values())
    label = " → ".join(first.ops)
    spec, notes = drafts.library_spec(name, match, shapes, dtypes, suggested, label)
    steps = [step_of(i, n.op, n.work.reads, n.work.output) for i, n in enumerate(run, start=1)]
    eps = next((a.value for a in match.args if a.name == "eps"), None)
    source = replay.library_reference(match.kernel, steps, dtypes, float(eps) if eps is not None else None, f"{label} ({match.pattern})",
                                      trace_label)
    notes = [*notes, *[n for n in match.notes if "gates float32" not in n],
             *[f"{a.name}: {a.source}" for a in match.args if a.tag.value == "ASSUMED"]]
    module = common_module([n.op for n in run])
    notes += _module_notes([n.op for n in run], module)
    draft = drafts.Draft(name, spec, _header(f"{label}, the library's {match.kernel}", trace_label, [], suggested.why), source, [], notes,
                         copy=[("triton", match.kernel, spec["source"])])
    return draft, {"module": module, "kind": "fusion", "rank": rank, "ranks": [r for r, _, _ in group], "label": label, "ops": first.ops,
                   "kernel": match.kernel,
                   "library": match.kernel, "dtype": output, "why": suggested.why, "metric": spec["metric"], "launcher": match.launcher}


def chain_draft(rank: int, candidate: FusionCandidate, run: list[Node], trace_label: str) -> tuple[drafts.Draft, dict] | None:
    """An unmatched chain: the recorded ops replayed, the kernel to write."""
    ops, outputs = [n.op for n in run], [n.work.output for n in run]
    label = " → ".join(candidate.ops)
    found = replay.chain_reference(ops, outputs, f"the chain {label}", trace_label)
    if found is None or any(drafts.spec_dtype(t) is None for t in [i.tensor for i in found.inputs] + outputs):
        return None
    out = outputs[-1]
    kinds = {n.cls for n in run}
    suggested = suggest_tolerance(drafts.spec_dtype(out),
                                  "reduction" if "reduction" in kinds else "normalization" if "normalization" in kinds else "elementwise")
    args = [drafts.buffer(i.name, i.tensor, "input") for i in found.inputs] + [drafts.buffer("out", out, "output")]
    args += [{"kind": "scalar", "name": s, "dtype": "float32",
              "value": f"TODO: {where} is a Python number the trace did not record; read it from the model"}
             for s, where in found.unrecorded]
    metric = {"bytes": sum(i.tensor.nbytes for i in found.inputs) + out.nbytes, "flops": sum(n.work.flops for n in run)}
    name = f"fusion{rank}_" + "_".join(dict.fromkeys(base_name(o).strip("_") for o in candidate.ops))[:60]
    spec = drafts.open_spec(name, f"A fused kernel for the chain {label} (fusion candidate {rank}), at its recorded shapes and dtypes.",
                            args, drafts.rows_cols(out), suggested, metric, _floats([i.tensor for i in found.inputs]), "elementwise")
    todos = ["source: write the kernel (no library kernel is this chain)", "variants.triton.entry: name it"]
    todos += [f"args {s}: {where} was not recorded" for s, where in found.unrecorded]
    module = common_module(ops)
    notes = ["the reference reads each op's input from the op before where the shapes allow; every other tensor operand is an input"
             " of its own (traces record shapes, not tensor identities): check the wiring against the model's "
             "code"] + _module_notes(ops, module)
    if candidate.library_note:
        notes.insert(0, candidate.library_note)
    draft = drafts.Draft(name, spec, _header(label, trace_label, todos, suggested.why), found.source, todos, notes)
    return draft, {"module": module, "kind": "fusion", "rank": rank, "ranks": [rank], "label": label, "ops": candidate.ops, "kernel": "",
                   "dtype": drafts.spec_dtype(out), "why": suggested.why, "metric": metric}


def _library_key(candidate: FusionCandidate) -> tuple:
    m = candidate.library
    assert m is not None
    return (m.kernel, tuple((a.name, a.dtype) for a in m.args if a.dims is not None))


def fusion_drafts(fusion: list[FusionCandidate], runs: list[list[Node]], trace_label: str, count: int) -> list[tuple[drafts.Draft, dict]]:
    """The top `count` candidates, and every matched one (one draft per library kernel and dtypes, at all its shapes)."""
    groups: dict[tuple, list[tuple[int, FusionCandidate, list[Node]]]] = {}
    out: list[tuple[int, tuple[drafts.Draft, dict] | None]] = []
    for rank, (candidate, run) in enumerate(zip(fusion, runs), start=1):
        if candidate.library is not None:
            groups.setdefault(_library_key(candidate), []).append((rank, candidate, run))
        elif rank <= count:
            out.append((rank, chain_draft(rank, candidate, run, trace_label)))
    out += [(group[0][0], library_draft(group, trace_label)) for group in groups.values()]
    return [d for _, d in sorted(out, key=lambda pair: pair[0]) if d is not None]


# --- the folders -----------------------------------------------------------------------------------------------------

def _write(draft: drafts.Draft, fields: dict, root: Path, workspace: Workspace) -> Handoff:
    folder = root / draft.name
    for parts in draft.copy:
        write_bytes_atomic(folder / parts[-1], shipped_kernels(*parts).read_bytes())
    write_bytes_atomic(folder / "reference.py", draft.reference.encode())
    write_bytes_atomic(folder / "kernel.yaml", draft.kernel_yaml().encode())
    t = draft.spec["tolerance"]
    launcher = fields.pop("launcher", None)
    handoff = Handoff(**{k: v for k, v in fields.items() if k != "why"}, folder=workspace.relative(folder),
                      spec=workspace.relative(folder / "kernel.yaml"),
                      todos=draft.todos, shapes=draft.spec["shapes"], tolerance={**t, "tag": "ASSUMED", "why": fields["why"]},
                      launcher=launcher, notes=draft.notes)
    write_bytes_atomic(folder / "handoff.json", handoff.model_dump_json(indent=1).encode())
    return handoff


def handoffs(ranked: list[tuple[Hotspot, WorkItem]], fusion: list[FusionCandidate], runs: list[list[Node]], folder: Path,
             workspace: Workspace, trace_label: str, count: int = 3) -> list[Handoff]:
    """Draft folders under folder/handoff for the top `count` hotspots a torch op launched and the top fusion candidates."""
    made = []
    for spot, item in ranked:
        if len(made) == count:
            break
        found = hotspot_draft(spot, item, trace_label)
        if found is not None:
            made.append(found)
    made += fusion_drafts(fusion, runs, trace_label, count)
    return [_write(draft, fields, folder / "handoff", workspace) for draft, fields in made]


def draft_files(handoff: Handoff) -> list[str]:
    """The files of a draft folder, relative to the workspace (for the result's file list)."""
    return [f"{handoff.folder}/{name}" for name in ("kernel.yaml", "reference.py", "handoff.json")] + (
        [f"{handoff.folder}/{handoff.launcher.split(':')[0]}"] if handoff.launcher else [])

