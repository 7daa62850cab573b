"""The roof of the baseline's step: the least time any candidate doing its work can take on this device. A candidate
timed below it (the controller's clock) is IMPOSSIBLE, whatever its profile or its worker say.

The step's gemm and attention flops at the compute ceiling of their dtype, and the model's parameters read once at
the memory ceiling: the larger of the two. Each ceiling is the larger of a measured one (a roofline.json in the
workspace, `hyperloom roofline`, on this device) and the datasheet's (ASSUMED). The roof is then halved (ROOF_SLACK):
a microbenchmark misses the fastest path now and then (a kernel placed above 100 % of a measured roof happens), a
datasheet figure can lag a part's boost clock, and weights smaller than the last-level cache may not all come from
DRAM each step; a refusal here must only catch what cannot happen (the cheats it exists for ran 20x-200,000x under
their baseline). Flops of a dtype no ceiling covers are left out, which lowers the roof, never raises it. On a part
with no known ceiling there is no roof, and the note says so; on a CPU the host microbenchmarks' ceilings (one core's
scalar C loops, far under what torch reaches on all its cores) are not read, so a CPU has none unless a roofline result
of the whole machine names it."""

from __future__ import annotations

from pathlib import Path

from hyperloom.core.evidence import Tag
from hyperloom.core.workspace import Workspace
from hyperloom.tools.profile.roof import COMPUTE_CEILINGS, DTYPE_FAMILY, same_device
from hyperloom.tools.roofline.datasheet import datasheet_ceilings
from hyperloom.tools.roofline.models import Ceiling, RooflineResult
from hyperloom.tools.workload.models import StepRoof, StepWork

ROOF_SLACK = 0.5
ROOFLINE_FILE = Path(".hyperloom") / "roofline" / "roofline.json"  # roofline's default out_dir
NEXT_STEP = "measure this GPU's ceilings (hyperloom roofline --target ARCH, e.g. gfx942 or sm_90) in this workspace"
# On a CPU the host microbenchmarks (the c backend, evidence target "host") time one core's scalar C loops: on a 2-core
# EPYC its fmaf loop ran 0.96 GFLOP/s where torch's float32 GEMM ran 119 GFLOP/s, so a roof from them would put an
# honest step 60x under it. A floor of the machine is no ceiling: a CPU workload's roof does not read them.
ONE_CORE = "host"
ON_A_CPU = ("no roof: no ceiling known for this CPU, so no candidate here is refused as IMPOSSIBLE (the outputs' gate, proof of work and "
            "fresh inputs still hold); nothing to do about it: the host roofline times one core's scalar C loops, a floor of this CPU "
            "rather than a ceiling for torch's work on all its cores, so a workload's roof does not use it")


def known_ceilings(workspace: Workspace, device: str) -> tuple[list[Ceiling], str]:
    """The ceilings known for `device`: the measured ones of the workspace's roofline.json when it names this device,
    and the datasheet's; with where they came from."""
    ceilings, said = datasheet_ceilings(device, "unspecified"), []
    if ceilings:
        said.append(f"datasheet of {device} (ASSUMED)")
    path = workspace.root / ROOFLINE_FILE
    if path.is_file():
        try:
            result = RooflineResult.model_validate_json(path.read_bytes())
        except ValueError:
            result = None
        usable = [c for c in result.measured if not (on_cpu(device) and c.evidence.target == ONE_CORE)] if result is not None else []
        if result is not None and usable and same_device(result.device, device):
            ceilings += usable
            said.append(f"{ROOFLINE_FILE} measured on {result.device} (MEASURED)")
    return ceilings, " and ".join(said)


def on_cpu(device: str) -> bool:
    """Whether `device` (a workload's, as its worker named it) is the host CPU."""
    return device.lower().startswith("host cpu") or not device


def step_roof(work: StepWork, ceilings: list[Ceiling], source: str, device: str) -> StepRoof:
    """The roof of a step doing `work` under `ceilings` (the larger of measured and datasheet, per kind), times ROOF_SLACK."""
    used: list[Ceiling] = []
    compute_s, left_out = 0.0, []
    for dtype, flops in work.compute_flops_by_dtype.items():
        names = COMPUTE_CEILINGS.get(DTYPE_FAMILY.get(dtype, ""), ())
        best = max((c for c in ceilings if c.kind == "compute" and c.name in names), key=lambda c: c.value, default=None)
        if best is None:
            left_out.append(dtype)
            continue
        compute_s += flops / (best.value * 1e12)
        used.append(best)
    memory = max((c for c in ceilings if c.kind == "memory"), key=lambda c: c.value, default=None)
    memory_s = work.parameter_bytes / (memory.value * 1e9) if memory is not None and work.parameter_bytes else None
    if memory_s is not None and memory is not None:
        used.append(memory)
    if not used:
        note = ON_A_CPU if on_cpu(device) else f"no roof: no ceiling known for {device} ({NEXT_STEP})"
        return StepRoof(roof_s=None, slack=ROOF_SLACK, source=source or "none", note=note)
    bound_s = max(compute_s, memory_s or 0.0)
    tag = Tag.MEASURED.value if all(c.evidence.tag == Tag.MEASURED for c in used) else Tag.ASSUMED.value
    named = ", ".join(f"{c.name} {c.value:.4g} {c.unit} ({c.evidence.tag.value})" for c in used)
    skipped = f"; flops in {', '.join(left_out)} left out (no ceiling for that dtype)" if left_out else ""
    note = (f"roof {bound_s * ROOF_SLACK * 1e3:.3g} ms a step ({tag}): {ROOF_SLACK:g} x max(compute {compute_s * 1e3:.3g} ms, "
            f"parameters {(memory_s or 0) * 1e3:.3g} ms) at {named}{skipped}")
    return StepRoof(roof_s=bound_s * ROOF_SLACK, compute_s=compute_s, memory_s=memory_s, slack=ROOF_SLACK, tag=tag, source=source,
                    note=note)


def impossible(roof: StepRoof | None, step_s: float) -> str | None:
    """Why a candidate timed at `step_s` a step (the controller's clock) cannot be doing the baseline's work, or None."""
    if roof is None or roof.roof_s is None or step_s >= roof.roof_s:
        return None
    return (f"timed at {step_s * 1e3:.3g} ms a step (the controller's clock, its paired legs' median), {roof.roof_s / step_s:.3g}x under "
            f"the baseline step's {roof.note}; no machine does that work that fast: it skipped work, or its time was not seen")
