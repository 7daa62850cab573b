"""torch.profiler's Chrome trace (Kineto JSON) → Trace, in one pass over the events.

Kernels, copies and sets are the `kernel`, `gpu_memcpy` and `gpu_memset` events; each carries the
`External id` of the innermost `cpu_op` that was running when it was launched, which links it to that
op's input shapes and dtypes. Launch geometry comes from the kernel event (CUDA) or from the runtime
call with the same `correlation` (ROCm's hipLaunchKernel); copy sizes likewise.
"""

from __future__ import annotations

from typing import Any

from hyperloom.core.errors import HyperloomError
from hyperloom.tools.profile.stack import Frame, attach_modules, keep
from hyperloom.tools.profile.trace import Kernel, Op, Trace, launch_text

DEVICE_CATEGORIES = {"kernel": "kernel", "gpu_memcpy": "memcpy", "gpu_memset": "memset"}
RUNTIME_CATEGORIES = ("cuda_runtime", "cuda_driver")
GRAPH_LAUNCH = ("GraphLaunch",)  # cudaGraphLaunch, hipGraphLaunch, cuGraphLaunch
TORCH_CATEGORIES = {"cpu_op", "kernel", "gpu_memcpy", "gpu_memset", "cuda_runtime", "cuda_driver", "user_annotation",
                    "gpu_user_annotation", "python_function", "ac2g", "Trace", "cpu_instant_event"}
class EmptyTrace(HyperloomError):
    """A torch.profiler trace with no device activity and no operator in it."""


NEXT_STEP = "export the trace with torch.profiler (prof.export_chrome_trace), or pass rocprofv3's <prefix>_kernel_trace.csv"


def _int(value: Any) -> int | None:
    if type(value) is int:
        return value
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def parse_chrome(doc: Any, label: str) -> Trace:
    """The Trace of a loaded Chrome trace document; a document that is not torch.profiler's is refused."""
    if isinstance(doc, dict) and "rocprofiler-sdk-tool" in doc:
        raise HyperloomError(f"{label} is rocprofv3's JSON output, which profile does not read",
                             "run rocprofv3 with --kernel-trace --output-format csv and pass <prefix>_kernel_trace.csv")
    if isinstance(doc, dict) and isinstance(doc.get("traceEvents"), list):
        events, meta = doc["traceEvents"], doc
    elif isinstance(doc, list):
        events, meta = doc, {}
    else:
        raise HyperloomError(f"{label} is JSON but not a Chrome trace (no traceEvents list)", NEXT_STEP)

    kernels: list[Kernel] = []
    ops: list[Op] = []
    launches: dict[int, dict] = {}  # correlation → the runtime call's args
    graphs: list[tuple[float, int | None]] = []  # (host start, correlation) of each graph launch: its kernels carry that correlation
    steps: list[tuple[float, float]] = []
    categories: set[str] = set()
    frames: list[Frame] = []  # module calls and forward frames (with_stack=True)
    add_op, add_kernel, seen = ops.append, kernels.append, categories.add  # the loop below runs once per event
    for event in events:
        if type(event) is not dict:
            continue
        cat = event.get("cat")
        seen(cat)
        if cat == "cpu_op":
            args = event.get("args") or {}
            ext = args.get("External id")
            add_op(Op(event.get("name", ""), event.get("ts", 0.0), event.get("dur", 0.0), event.get("tid", ""),
                      ext if type(ext) is int else _int(ext), args.get("Input Dims"), args.get("Input type"), args.get("Concrete Inputs")))
        elif cat in DEVICE_CATEGORIES:
            args = event.get("args") or {}
            grid = args.get("grid")
            add_kernel(Kernel(
                event.get("name", ""), event.get("ts", 0.0), event.get("dur", 0.0),
                str(args.get("device", event.get("pid", ""))), str(args.get("stream", event.get("tid", ""))),
                DEVICE_CATEGORIES[cat], _int(args.get("correlation")), _int(args.get("External id")),
                launch_text(grid, args.get("block")) if grid is not None else None, _int(args.get("bytes")),
            ))
        elif cat in RUNTIME_CATEGORIES:
            args = event.get("args") or {}
            correlation = args.get("correlation")
            if correlation is not None and ("grid" in args or "size" in args):
                launches[_int(correlation)] = args
            elif correlation is not None and str(event.get("name", "")).endswith(GRAPH_LAUNCH):
                graphs.append((float(event.get("ts", 0.0)), _int(correlation)))
        elif cat == "python_function" and keep(str(event.get("name", ""))):
            start = float(event.get("ts", 0.0))
            frames.append(Frame(str(event["name"]), start, start + float(event.get("dur", 0.0)), event.get("tid", "")))
        elif cat == "user_annotation" and str(event.get("name", "")).startswith("ProfilerStep#"):
            start = float(event.get("ts", 0.0))
            steps.append((start, start + float(event.get("dur", 0.0))))
    categories.discard(None)

    if not categories & TORCH_CATEGORIES and "schemaVersion" not in meta:
        raise HyperloomError(f"{label} is a Chrome trace, but not torch.profiler's (none of its cpu_op or kernel events)", NEXT_STEP)
    if not kernels and not ops:
        raise EmptyTrace(f"{label} has no GPU kernels and no operators: nothing ran in the profiled window",
                             "profile steps that do work (check the profiler's schedule: wait, warmup and active steps)")
    link_kernels(kernels, ops, launches)
    attach_modules(ops, frames)
    names = {str(p.get("id")): str(p.get("name")) for p in meta.get("deviceProperties") or [] if isinstance(p, dict)}
    trace = Trace("torch.profiler", kernels, ops, window_of(steps, kernels, ops), names,
                  graph_launches=[c for _, c in sorted(graphs, key=lambda g: g[0]) if c is not None])
    if not kernels:
        to_cpu_only(trace)
    return trace


def link_kernels(kernels: list[Kernel], ops: list[Op], launches: dict[int, dict]) -> None:
    """Each kernel its launching op (by the op's external id), and its launch and copy size from the runtime call
    that launched it (`launches`: correlation -> that call's args) where the trace records them."""
    by_ext = {op.ext_id: op for op in ops if op.ext_id is not None}
    for k in kernels:
        if k.ext_id is not None:
            k.op = by_ext.get(k.ext_id)
        launch = launches.get(k.correlation) if k.correlation is not None else None
        if launch is not None:
            k.launch = k.launch or launch_text(launch.get("grid"), launch.get("block"))
            if k.kind != "kernel" and k.bytes is None:
                k.bytes = _int(launch.get("size"))


def window_of(steps: list[tuple[float, float]], kernels: list[Kernel], ops: list[Op]) -> tuple[float, float]:
    """The recorded steps, stretched to the device work they launched; first to last event without steps."""
    spans = steps or [(o.start_us, o.start_us + o.dur_us) for o in ops]
    spans = spans + [(k.start_us, k.end_us) for k in kernels]
    return min(s for s, _ in spans), max(e for _, e in spans)


def to_cpu_only(trace: Trace) -> None:
    """No device activity: each operator's self time (its time minus that of the operators it calls, on its thread)
    stands in for a kernel, as key_averages' self CPU time does; each op learns its parent."""
    by_thread: dict[str | int, list[Op]] = {}
    for op in trace.ops:
        by_thread.setdefault(op.thread, []).append(op)
    slices = []
    for thread, ops in by_thread.items():
        ops.sort(key=lambda o: (o.start_us, -o.dur_us))
        own = {id(op): op.dur_us for op in ops}
        stack: list[Op] = []
        for op in ops:
            while stack and stack[-1].start_us + stack[-1].dur_us <= op.start_us:
                stack.pop()
            if stack:
                op.parent = stack[-1]
                own[id(stack[-1])] -= op.dur_us
            stack.append(op)
        slices += [Kernel(op.name, op.start_us, own[id(op)], "cpu", str(thread), "kernel", ext_id=op.ext_id, op=op) for op in ops
                   if own[id(op)] > 0]
    slices.sort(key=lambda k: k.start_us)
    trace.kernels = slices
    trace.cpu_only = True
