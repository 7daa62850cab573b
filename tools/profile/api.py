"""profile: run a workload under torch.profiler (or read a trace), analyse it, place it on the roof, write the report."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

from hyperloom import __version__
from hyperloom.core.atomic import write_bytes_atomic
from hyperloom.core.collector import paused_gc
from hyperloom.core.errors import HyperloomError
from hyperloom.core.evidence import Evidence, assumed, host_device, measured
from hyperloom.core.hashing import sha256_file
from hyperloom.core.progress import ProgressFn
from hyperloom.core.workspace import Workspace
from hyperloom.tools.profile import roof
from hyperloom.tools.profile.analyse import Analysis, analyse
from hyperloom.tools.profile.handoff import draft_files, handoffs
from hyperloom.tools.profile.load import read_trace
from hyperloom.tools.profile.parse_chrome import EmptyTrace
from hyperloom.tools.profile.models import ProfileRequest, ProfileResult, ReplayRoof
from hyperloom.tools.profile.plot import draw, matplotlib_available
from hyperloom.tools.profile.replays import attribute_replays
from hyperloom.tools.profile.report import render
from hyperloom.tools.profile.trace import Trace
from hyperloom.tools.profile.workload import Capture, capture_workload

STEPS = 5  # progress: capture, read, roofs, analysis, files


def _roofs(request: ProfileRequest, trace: Trace, device: str, workspace: Workspace, folder: Path, findings: list[str]) -> roof.Roofs:
    if request.roofline is not None:
        path = workspace.resolve(request.roofline, kind="file", must_exist=True, what="roofline")
        roofs, note = roof.from_file(path, request.roofline, device)
        if note:
            findings.append(note)
        return roofs
    if request.roof_target is not None:
        from hyperloom.tools.roofline.models import RooflineRequest
        from hyperloom.tools.roofline.api import run_roofline

        result = run_roofline(RooflineRequest(target=request.roof_target, plot=False, out_dir=workspace.relative(folder / "roofline")),
                              workspace)
        if roof.same_device(result.device, device) is False:
            findings.append(f"the roofline measured now ran on {result.device}, the trace on {device}: its percent of roof "
                            "compares two devices")
        return roof.from_result(result)
    roofs = roof.from_datasheet(None if trace.cpu_only else device)
    if roofs.ceilings:
        findings.append(f"the roofs are {device}'s datasheet peaks: ASSUMED, not measured; pass roofline= (a roofline.json from this "
                        "device) or roof_target= to place the hotspots under measured ceilings")
    else:
        findings.append("no roof: no roofline given and no datasheet for this device, so no hotspot has a percent of roof "
                        "(ranked by time); pass roofline= or roof_target=")
    return roofs


def replay_roof(bytes_per_replay: int | None, roofs: roof.Roofs, findings: list[str],
                copy: dict[str, Any] | None = None) -> ReplayRoof | None:
    """The replay roof: the caller's bytes at the device copy's rate measured in the profiled process (copy_rate.py;
    the rate a token's roof is read at: docs/decisions.md, The decode levers), else at the best memory ceiling (measured before datasheet),
    or None."""
    if bytes_per_replay is None:
        return None
    memory = roofs.memory()
    copy = copy or {}
    if copy.get("copy_gb_s"):
        found = ReplayRoof(bytes_per_replay=bytes_per_replay, bandwidth_gb_s=float(copy["copy_gb_s"]),
                           source=f"a device copy of {int(copy.get('copy_bytes', 0)) >> 20} MiB in the profiled process, MEASURED")
        if memory is not None:
            findings.append(f"the replay's roof at {memory.name} {memory.value:.0f} GB/s ({memory.evidence.tag.value}) instead: "
                            f"{bytes_per_replay / (memory.value * 1e3):.1f} us")
        return found
    if copy.get("copy_skipped"):
        findings.append(f"the device's copy bandwidth was not measured ({copy['copy_skipped']}): the replay's roof is read at a "
                        "ceiling instead")
    if memory is None:
        findings.append("no replay roof: bytes_per_replay was given but there is no memory ceiling (pass roofline= or roof_target=)")
        return None
    return ReplayRoof(bytes_per_replay=bytes_per_replay, bandwidth_gb_s=memory.value, source=f"{memory.name}, {memory.evidence.tag.value}")


def _evidence(trace_path: Path, label: str, trace: Trace, device: str, capture: Capture | None) -> Evidence:
    digest = sha256_file(trace_path)
    target = "host" if trace.cpu_only else "unspecified"
    if capture is not None:
        return measured("profile", inputs_sha256=digest, target=target, device=device, toolchain=capture.toolchain)
    return assumed(f"recorded trace {label} ({trace.tool}), analysed by hyperloom.profile {__version__}", inputs_sha256=digest,
                   target=target, device=device)


def _summary(trace: Trace, device: str, a: Analysis) -> str:
    what = "CPU operator time slices" if trace.cpu_only else "GPU activities"
    time = "CPU operator time" if trace.cpu_only else "device time"
    parts = [f"{trace.tool} trace on {device}: {len(trace.kernels)} {what}, {a.device_time_us / 1e3:.4g} ms of {time} in a "
             f"{trace.window_s * 1e3:.4g} ms window"]
    if a.busy_percent is not None:
        parts.append(f"GPU busy {a.busy_percent:.0f} %{' (launch-bound)' if a.launch_bound else ''}")
    if a.ranked:
        top = a.ranked[0][0]
        roof_text = f", {top.percent_of_roof:.0f} % of its roof" if top.percent_of_roof is not None else ""
        parts.append(f"top hotspot {top.label[:80]} ({top.percent_of_device_time:.0f} % of device time{roof_text})")
    if a.fusion:
        saved = sum(c.bytes_saved_total for c in a.fusion)
        parts.append(f"{len(a.fusion)} fusion candidates saving {saved / 1e6:.3g} MB in the profiled steps")
    return "; ".join(parts)


def run_profile(request: ProfileRequest, workspace: Workspace, progress: ProgressFn | None = None,
                knobs: dict[str, str] | None = None, captured: Capture | None = None) -> ProfileResult:
    """`knobs` (not a request field): a workload factory's knob values, for callers that profile a frozen workload;
    `captured`: a run of the request's workload recorded already (optimize records its stack with every lever in
    place, in a workload worker), analysed instead of a new capture."""

    def step(done: int) -> None:
        if progress is not None:
            progress(done, STEPS)

    name = request.name or dt.datetime.now(dt.timezone.utc).strftime("%Y%m%d-%H%M%S-%f")
    folder = workspace.state_dir("profile", name)
    capture = captured
    if capture is not None:
        trace_path, label = capture.trace, workspace.relative(capture.trace)
    elif request.workload is not None:
        capture = capture_workload(request.workload, request.args, request.steps, request.warmup_steps, request.timeout_s, folder,
                                   workspace, knobs=knobs)
        trace_path = capture.trace
        label = workspace.relative(trace_path)
    else:
        trace_path = workspace.resolve(request.trace, kind="file", must_exist=True, what="trace")
        label = request.trace
    step(1)
    with paused_gc():  # the trace's objects stay alive to the end: collecting would rescan them all, again and again
        return _profile(request, workspace, folder, trace_path, label, capture, step)


def _read(request: ProfileRequest, trace_path: Path, label: str, capture: Capture | None) -> Trace:
    try:
        return read_trace(trace_path, label)
    except EmptyTrace as exc:
        if capture is None:
            raise
        raise HyperloomError(f"the workload {request.workload} ran no torch operator and no GPU kernel in its recorded steps",
                             "profile code that runs torch ops on each step (a script runs once per step; a function is called once per "
                             "step)") from exc


def _device(trace: Trace, capture: Capture | None, findings: list[str]) -> str:
    if not trace.cpu_only:
        return trace.device_name() or (capture.device if capture else None) or "a GPU the trace does not name"
    if capture is not None and capture.gpu_seen:
        findings.append(f"no GPU kernels in this trace although torch saw {capture.device}: the workload never touched the GPU "
                        "(its tensors stayed on the CPU); the tables rank CPU operators by their self time (as key_averages does)")
    else:
        findings.append("no GPU kernels in this trace: the run was CPU-only; the tables rank CPU operators by their self time (as "
                        "key_averages does)")
    return host_device()


def _profile(request: ProfileRequest, workspace: Workspace, folder: Path, trace_path: Path, label: str, capture: Capture | None,
             step: ProgressFn) -> ProfileResult:
    trace = _read(request, trace_path, label, capture)
    step(2)
    findings: list[str] = []
    device = _device(trace, capture, findings)
    roofs = _roofs(request, trace, device, workspace, folder, findings)
    step(3)
    a = analyse(trace, roofs)
    findings += a.findings
    replays = attribute_replays(trace, replay_roof(request.bytes_per_replay, roofs, findings, capture.extra if capture else None),
                               capture.extra.get("kernel_bytes") if capture else None)
    findings += replays.findings if replays is not None else []
    step(4)
    if capture is not None and capture.profiler_device_time_s:
        gap = 100 * (a.device_time_us / 1e6 - capture.profiler_device_time_s) / capture.profiler_device_time_s
        findings.append(f"the kernel times here sum to {a.device_time_us / 1e3:.4g} ms; torch.profiler's key_averages say "
                        f"{capture.profiler_device_time_s * 1e3:.4g} ms ({gap:+.2f} %)")
    plot = request.plot and matplotlib_available()
    if request.plot and not plot:
        findings.append("plots skipped: matplotlib is not installed (pip install 'hyperloom[plot]')")
    top = request.top
    result = ProfileResult(
        summary=_summary(trace, device, a), tool=trace.tool, trace=label, device=device, gpu=not trace.cpu_only,
        window_s=trace.window_s, device_time_s=a.device_time_us / 1e6, kernel_count=len(trace.kernels),
        busy_percent=a.busy_percent, idle_percent=100 - a.busy_percent if a.busy_percent is not None else None,
        launch_bound=a.launch_bound, devices=a.devices, profiler_device_time_s=capture.profiler_device_time_s if capture else None,
        steps=request.steps if capture else None, step_wall_s=capture.step_wall_s if capture else [], classes=a.classes,
        kernels=a.kernels[:top], kernel_groups=len(a.kernels), hotspots=[h for h, _ in a.ranked[:top]], fusion=a.fusion[:top],
        handoff=handoffs(a.ranked[:top], a.fusion, a.fusion_runs, folder, workspace, label), replays=replays, roofs=roofs.ceilings,
        roof_source=roofs.source, findings=findings, files=[], evidence=_evidence(trace_path, label, trace, device, capture),
    )
    files = [folder / "report.md", folder / "profile.json"]
    if capture is not None:
        files += [capture.trace, capture.key_averages]
    files += [workspace.root / f for h in result.handoff for f in draft_files(h)]
    if plot:
        files += draw(result, folder)
    result.files = [workspace.relative(f) for f in files]
    write_bytes_atomic(folder / "report.md", render(result).encode())
    write_bytes_atomic(folder / "profile.json", result.model_dump_json(indent=1).encode())
    step(STEPS)
    return result
