"""The worker side of engagement and proof of work: one step profiled as a timed step runs (the controller's seed
through inputs(seed), then step() and outputs() on the host), so a candidate cannot tell it from a timed step by
what is called; its op and kernel names counted and, given a path, its ops' shapes recorded and the Chrome trace
written for the controller to weigh (tools/workload/work.py). Imported by runner.engagement, in the worker.

Known limit: a candidate can still ask torch whether a profiler is on and behave differently under it. The roof
(IMPOSSIBLE) and the fresh-input gate do not read this profile, so they hold whatever it does here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any



def profiled(run: Callable[[], Any], gpu: bool, trace: str | None, parameter_bytes: int | None = None) -> dict[str, Any]:
    """`run` once under torch.profiler (CPU, and CUDA/HIP on a GPU): {"ops": name -> count, "kernels": name -> count};
    with `trace`, shapes recorded and the step's work weighed: here from the raw events ("work", a StepWork's JSON)
    where they carry what it reads (kineto.py: a CPU step or a GPU one), else the Chrome trace written there for the controller to weigh."""
    from torch.profiler import ProfilerActivity, profile

    from hyperloom.tools.profile.capture import export_json
    from hyperloom.tools.profile.kineto import raw_events, trace_of
    from hyperloom.core.collector import paused_gc

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if gpu else [])
    with profile(activities=activities, record_shapes=trace is not None) as prof:
        run()
    events = raw_events(prof)  # built once, for the counts and the weighing
    seen: dict[str, Any] = dict(counted(prof, events))
    if trace is None:
        return seen
    with paused_gc():  # a decoder step's 8,000 ops: the collector's passes took 0.21 of 0.25 s weighing them, on a CPU
        raw = trace_of(prof, events)
        if raw is not None:
            from hyperloom.tools.workload.work import work_of

            seen["work"] = work_of(raw, parameter_bytes).model_dump(mode="json")
        del raw  # no cycles: freed here by their counts, no collection left owed for a timed leg to pay
    if "work" not in seen:
        export_json(prof, trace, checked=False)  # the controller's reader repairs what torch's export leaves invalid
    return seen


def counted(prof: Any, events: list[Any] | None = None) -> dict[str, dict[str, int]]:
    """{"ops": name -> count, "kernels": name -> count} from the profiler's raw events (`events`, else read here; CPU
    ops and runtime calls are ops, device activity kernels): a tenth of key_averages' time, which builds every event's
    Python object and tree first (1 s of a 1.8 s proof-of-work profile of a small decoder on a CPU)."""
    if events is None:
        from hyperloom.tools.profile.kineto import raw_events

        events = raw_events(prof)
    pairs = ((e.device_type(), e.name(), 1) for e in events) if events is not None else (
        (getattr(e, "device_type", "CPU"), e.key, int(e.count)) for e in prof.key_averages())
    seen: dict[str, dict[str, int]] = {"ops": {}, "kernels": {}}
    host: dict[Any, bool] = {}  # device type -> an op's (the host's), read as text once per type, not per event
    for device, name, count in pairs:
        on_host = host.get(device)
        if on_host is None:
            on_host = host[device] = "CPU" in str(device)
        table = seen["ops"] if on_host else seen["kernels"]
        table[name] = table.get(name, 0) + count
    return seen


def parameter_bytes(torch: Any, obj: Any) -> int | None:
    """The bytes of the workload's model's parameters (each once, tied ones too), or None without a torch model."""
    model = getattr(obj, "model", None)
    if torch is None or not isinstance(model, torch.nn.Module):
        return None
    return int(sum(p.numel() * p.element_size() for p in model.parameters()))
