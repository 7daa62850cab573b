"""roofline: measure the ceilings on the backend at hand, add the datasheet's (ASSUMED), place kernels."""

from __future__ import annotations

from hyperloom.core.atomic import write_bytes_atomic
from hyperloom.core.errors import HyperloomError
from hyperloom.core.evidence import measured
from hyperloom.core.hashing import combine_digests, sha256_json
from hyperloom.core.progress import ProgressFn
from hyperloom.core.workspace import Workspace
from hyperloom.tools.bench.models import BenchResult
from hyperloom.tools.roofline.ceilings import available, measure, read_of_size, sized_shape, stage
from hyperloom.tools.pipeline.roof import record_roof
from hyperloom.tools.roofline.datasheet import datasheet_ceilings
from hyperloom.tools.roofline.models import Ceiling, RooflineRequest, RooflineResult
from hyperloom.tools.roofline.place import place
from hyperloom.tools.roofline.plot import draw


def run_roofline(request: RooflineRequest, workspace: Workspace, progress: ProgressFn | None = None) -> RooflineResult:
    names = request.ceilings or available(request.target)
    if unknown := [n for n in names if n not in available(request.target)]:
        raise HyperloomError(f"microbenchmarks {unknown} have no variant for {request.target}", f"choose from {available(request.target)}")
    placed = []
    for raw in request.place:
        try:
            placed.append(BenchResult.model_validate_json(workspace.resolve(raw, kind="file", what="place").read_text()))
        except ValueError as exc:
            raise HyperloomError(f"{raw} is not a bench result ({str(exc)[:200]})",
                                 "pass a file written by `hyperloom bench --json`") from exc
    out_dir = workspace.resolve(request.out_dir, must_exist=False, kind="dir", what="out_dir")
    out_dir.mkdir(parents=True, exist_ok=True)
    staged = stage(workspace)
    ceilings: list[Ceiling] = []
    failures: list[str] = []
    device_name = ""
    for index, name in enumerate(names):
        shape = sized_shape(name, request.target, request.shape == "full", staged)
        result, ceiling = measure(name, request.target, request.device, shape, request.max_time_s, staged, workspace)
        device_name = device_name or result.device
        if ceiling is None:
            failures.append(f"{name}: {result.summary}")
        else:
            ceilings.append(ceiling)
        if progress is not None:
            progress(index + 1, len(names))
    timed = [r for r in placed if r.kernel is not None]
    reads = [read_of_size(r.bytes_moved, r.target, request.device, (r.flush_bytes > 0, r.flush_mode), request.max_time_s, staged, workspace)
             if request.same_size_read and r.bytes_moved else None for r in timed]
    failures += [f"a read of {r.bytes_moved} bytes: {read.summary}" for r, read in zip(timed, reads) if read is not None and not read.ok]
    try:
        placements = [place(r, ceilings, read) for r, read in zip(timed, reads)]
    except ValueError as exc:
        raise HyperloomError(f"a kernel cannot be placed: {exc}",
                             "bench it with a spec whose metric has bytes or flops, and measure that ceiling") from exc
    summary = ", ".join(f"{c.name} {c.value:.4g} {c.unit}" for c in ceilings) or "no ceiling measured"
    if failures:
        summary += "; failed: " + "; ".join(failures)
    result = RooflineResult(
        summary=f"MEASURED on {device_name or request.target}: {summary}",
        target=request.target,
        device=device_name,
        measured=ceilings,
        datasheet=datasheet_ceilings(device_name, request.target),
        placements=placements,
        files=[],
        evidence=measured(
            "roofline", inputs_sha256=combine_digests([c.evidence.inputs_sha256 for c in ceilings] + [sha256_json(request.model_dump())]),
            target=request.target, device=device_name or None,
        ),
    )
    memory = [c.value for c in ceilings if c.kind == "memory"]
    compute = [c.value for c in ceilings if c.kind == "compute"]
    record_roof(device_name, max(memory, default=None), max(compute, default=None),
                f"roofline on {device_name}, {result.evidence.at:%Y-%m-%d %H:%M} UTC")
    files = [out_dir / "roofline.json"]
    if request.plot:
        files += draw(result, out_dir)
    result.files = [workspace.relative(f) for f in files]
    write_bytes_atomic(out_dir / "roofline.json", result.model_dump_json(indent=2).encode())
    return result
