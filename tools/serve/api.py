"""serve_sweep: start the server when asked (ended in a finally block, or by its watchdog), calibrate, sweep, keep the result.

After every level the result so far is cached labelled 'interrupted', so a killed sweep leaves its partial figures."""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path

import anyio
import httpx2

from hyperloom.core.errors import HyperloomError
from hyperloom.core.evidence import host_device, measured
from hyperloom.core.hashing import sha256_file
from hyperloom.core.process import run_checked
from hyperloom.core.progress import ProgressFn
from hyperloom.core.toolchain import find_tool
from hyperloom.core.workspace import Workspace
from hyperloom.tools.serve import cache, server as servers
from hyperloom.core.hashing import sha256_json
from hyperloom.tools.serve.capacity import ServerFacts, capacity_for, probe
from hyperloom.tools.serve.client import list_models, new_client, root_url
from hyperloom.tools.serve.knee import find_knee, saturation
from hyperloom.tools.serve.models import Capacity, Level, ServeSweepRequest, ServeSweepResult, ServerInfo, StopReason, Workload
from hyperloom.tools.serve.plot import draw
from hyperloom.tools.serve.prepare import Plan, TraceInput, prepare, trace_input
from hyperloom.tools.serve.sweep import LevelRunner, plan_levels, requests_for, stop_after
from hyperloom.tools.serve.workload import load_prompts
from hyperloom.tools.smi.nvidia import NAME_ARGS, parse_names


@dataclass
class Context:
    """What one call knows once the server serves: used to build the result after every level."""

    request: ServeSweepRequest
    model: str
    device: str
    key: str
    folder: Path
    facts: ServerFacts
    info: ServerInfo
    capacity: Capacity
    plan: Plan
    files: list[str] = field(default_factory=list)

    @property
    def workload(self) -> Workload:
        return self.plan.workload


def run_serve_sweep(request: ServeSweepRequest, workspace: Workspace, progress: ProgressFn | None = None) -> ServeSweepResult:
    prompts, prompts_sha256, trace = None, None, None
    path = workspace.resolve(request.prompts_file, kind="file", what="prompts_file") if request.prompts_file is not None else None
    if request.workload == "agent_trace":
        trace = trace_input(path, request.prompts_file)
        prompts_sha256 = sha256_file(path) if path is not None else sha256_json(trace.spec.model_dump() if trace.spec else None)
    elif path is not None:
        prompts, prompts_sha256 = load_prompts(path, request.prompts_file or ""), sha256_file(path)
    api_key = None
    if request.api_key_env is not None:
        api_key = os.environ.get(request.api_key_env)
        if not api_key:
            raise HyperloomError(f"the environment variable {request.api_key_env} named by api_key_env is not set",
                                 "set it in the environment of hyperloom (or hyperloom-mcp), or drop api_key_env")
    return anyio.run(_sweep, request, workspace, progress, prompts, prompts_sha256, trace, api_key)


async def _sweep(request: ServeSweepRequest, workspace: Workspace, progress: ProgressFn | None,
                 prompts: list[str] | None, prompts_sha256: str | None, trace: TraceInput | None, api_key: str | None) -> ServeSweepResult:
    started: servers.StartedServer | None = None
    async with new_client(request.base_url, api_key, request.max_concurrency, request.request_timeout_s) as client:
        identity: dict[str, object] | None = None
        if request.server_command is not None:
            identity = servers.command_identity(request.server_command, workspace.root)
            device = request.device or local_device()
            key = cache.cache_key(request, identity, request.model, device, prompts_sha256)
            if not request.refresh and (hit := cache.lookup(cache.folder_for(workspace, key), key)) is not None:
                return _as_cached(hit)
            await servers.refuse_if_busy(client, request.base_url)
            started = servers.start(request.server_command, workspace.root, cache.folder_for(workspace, key) / "server.log")
        try:
            if started is not None:
                await servers.wait_ready(started, client, request.base_url, request.ready_timeout_s)
            models = await list_models(client)
            model = request.model or (models[0].id if models else None)
            if model is None:
                raise HyperloomError(f"{request.base_url}/models lists no model", "load a model into the server, or pass model")
            facts = await probe(client, root_url(request.base_url))
            listed = next((m.context_tokens for m in models if m.id == model), None)
            if facts.context_per_slot_tokens is None and listed is not None:
                facts = replace(facts, context_per_slot_tokens=listed, source=f"{facts.source}; /models max_model_len {listed}")
            if identity is None:
                device = request.device or f"unknown ({request.base_url})"
                described = {"kind": facts.kind, "version": facts.version, "slots": facts.slots, "n_ctx": facts.context_per_slot_tokens,
                             "kv_cache_tokens": facts.kv_cache_tokens, "base_url": request.base_url}
                key = cache.cache_key(request, described, model, device, prompts_sha256)
                if not request.refresh and (hit := cache.lookup(cache.folder_for(workspace, key), key)) is not None:
                    return _as_cached(hit)
            folder = cache.folder_for(workspace, key)
            plan = await prepare(request, client, model, facts, prompts, prompts_sha256, trace)
            info = ServerInfo(kind=facts.kind, version=facts.version, started_by_tool=started is not None,
                              command=started.command if started else None,
                              executable_sha256=str(identity["program_sha256"]) if identity else None)
            files = [workspace.relative(started.log_path)] if started else []
            context = Context(request, model, device, key, folder, facts, info, capacity_for(facts, plan.tokens_per_request), plan, files)
            return await _levels(context, client, workspace, progress)
        finally:
            if started is not None:
                servers.stop(started)  # blocking on purpose: an await here would be skipped when the sweep is cancelled


async def _levels(ctx: Context, client: httpx2.AsyncClient, workspace: Workspace, progress: ProgressFn | None) -> ServeSweepResult:
    request = ctx.request
    plan = plan_levels(request.max_concurrency, ctx.capacity.max_concurrency)
    total = sum(sum(requests_for(request, c)) for c in plan)
    done = 0

    def on_request() -> None:
        nonlocal done
        done += 1
        if progress is not None:
            progress(min(done, total), total)

    metrics_url = f"{root_url(request.base_url)}/metrics" if ctx.facts.metrics else None
    runner = LevelRunner(client, request.api, ctx.plan.session_for, request.request_timeout_s, metrics_url, on_request,
                         sustained=ctx.plan.sustained)
    levels: list[Level] = []
    began = anyio.current_time()
    stop: tuple[StopReason, str] = ("interrupted", "the sweep was interrupted before its first level finished")
    for concurrency in plan:
        measured_n, warmup_n = requests_for(request, concurrency)
        levels.append(await runner.level(concurrency, measured_n, warmup_n, request.level_duration_s, request.max_error_rate))
        decided = stop_after(levels[-1], request, ctx.capacity, plan[-1], anyio.current_time() - began)
        if decided is not None:
            stop = decided
            break
        _write(ctx, levels, ("interrupted", f"interrupted after {concurrency} streams (partial result)"), workspace, final=False)
    return _write(ctx, levels, stop, workspace, final=True)


def _write(ctx: Context, levels: list[Level], stop: tuple[StopReason, str], workspace: Workspace, final: bool) -> ServeSweepResult:
    request = ctx.request
    points = [(level.concurrency, level.output_tokens_per_s) for level in levels if level.requests_ok]
    knee = find_knee(points, request.knee_fraction)
    verdict, reason = saturation(points, request.rise_threshold)
    result = ServeSweepResult(
        summary="", base_url=request.base_url, model=ctx.model, server=ctx.info, capacity=ctx.capacity, workload=ctx.workload,
        levels=levels, knee_concurrency=knee.knee_concurrency, knee_output_tokens_per_s=knee.knee_tokens_per_s,
        knee_fraction=request.knee_fraction, best_concurrency=knee.best_concurrency, best_output_tokens_per_s=knee.best_tokens_per_s,
        speedup_vs_one_stream=knee.speedup_vs_one_stream, saturation=verdict, saturation_reason=reason,  # type: ignore[arg-type]
        stop_reason=stop[0], stop_detail=stop[1], complete=stop[0] not in ("errors", "interrupted"), cached=False, cache_key=ctx.key,
        files=[], evidence=measured("serve_sweep", inputs_sha256=ctx.key, target=ctx.model, device=ctx.device,
                                    toolchain={"server": f"{ctx.info.kind} {ctx.info.version or 'version unknown'}",
                                               "httpx2": httpx2.__version__}),
    )
    result.summary = summary_line(result)
    files = [ctx.folder / cache.RESULT_NAME]
    if final and request.plot and points:
        files += draw(result, ctx.folder)
    result.files = [workspace.relative(f) for f in files] + ctx.files
    cache.store(ctx.folder, result)
    return result


def summary_line(result: ServeSweepResult) -> str:
    head = (f"{result.evidence.tag.value} on {result.evidence.device}: {result.server.kind} {result.server.version or ''} serving "
            f"{result.model}").replace("  ", " ")
    if result.best_concurrency is None:
        return f"{head}: no level produced tokens; stopped ({result.stop_reason}): {result.stop_detail}"
    speedup = f" ({result.speedup_vs_one_stream:.1f}x one stream)" if result.speedup_vs_one_stream else ""
    return (f"{head}: best {result.best_output_tokens_per_s:.4g} output tokens/s at {result.best_concurrency} streams{speedup}; "
            f"knee at {result.knee_concurrency} streams ({result.knee_fraction:.0%} of best); {result.saturation}: "
            f"{result.saturation_reason}; stopped ({result.stop_reason}): {result.stop_detail}")


def _as_cached(hit: ServeSweepResult) -> ServeSweepResult:
    hit.cached = True
    hit.summary = f"CACHED result measured {hit.evidence.at:%Y-%m-%d %H:%M} UTC (pass refresh to measure again): {hit.summary}"
    return hit


def local_device() -> str:
    """This host's CPU and the GPUs nvidia-smi lists: where a server this tool starts runs, unless told otherwise."""
    gpus: list[str] = []
    smi = find_tool("nvidia-smi")
    if smi.path:
        try:
            out = run_checked([smi.path, *NAME_ARGS], timeout_s=20, what="listing GPUs with nvidia-smi")
            gpus = parse_names(out.stdout)
        except HyperloomError:
            gpus = []
    names = ", ".join(f"{n}x {name}" if n > 1 else name for name, n in _counted(gpus))
    return f"{host_device()}" + (f"; GPUs: {names}" if names else "")


def _counted(names: list[str]) -> list[tuple[str, int]]:
    counts: dict[str, int] = {}
    for name in names:
        counts[name] = counts.get(name, 0) + 1
    return list(counts.items())

