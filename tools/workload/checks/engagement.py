"""Whether each lever of a candidate took effect, from what its worker saw in one profiled step (runner.engagement)
beside the baseline's: a lever that left no evidence is a no-op, whatever the timing says."""

from __future__ import annotations

from typing import Any

from hyperloom.tools.profile.classify import kernel_class, op_class
from hyperloom.tools.workload.levers import Lever
from hyperloom.tools.workload.models import Engagement
from hyperloom.tools.workload.wire import PROJECTION_GROUPS as GROUPS

SDPA_OPS = {  # the aten ops each scaled-dot-product attention backend runs (CPU ops, so a CPU-only run sees them too)
    "FLASH_ATTENTION": ("_scaled_dot_product_flash_attention", "_flash_attention_forward"),
    "EFFICIENT_ATTENTION": ("_scaled_dot_product_efficient_attention", "_efficient_attention_forward"),
    "CUDNN_ATTENTION": ("_scaled_dot_product_cudnn_attention", "_cudnn_attention_forward"),
    "MATH": ("_scaled_dot_product_attention_math",),
}


GRAPH_LAUNCH = ("cudaGraphLaunch", "hipGraphLaunch", "cuGraphLaunch")
GRAPH_CAPTURE = ("cudaStreamBeginCapture", "hipStreamBeginCapture", "cuStreamBeginCapture", "cudaStreamBeginCaptureToGraph")


def engagement(levers: list[Lever], seen: dict[str, Any], baseline: dict[str, Any], warm: dict[str, Any]) -> list[Engagement]:
    return [_one(lever, seen, baseline, warm) for lever in levers]


def _one(lever: Lever, seen: dict[str, Any], baseline: dict[str, Any], warm: dict[str, Any]) -> Engagement:
    if lever.kind == "compile":
        graphs = int(seen.get("compiled_graphs", 0))
        breaks = int(seen.get("graph_breaks", 0))
        return Engagement(lever=lever.name, engaged=graphs > 0,
                          evidence=f"dynamo compiled {graphs} graph(s), {breaks} graph break(s)" if graphs
                          else "dynamo compiled no graph: the step ran eagerly")
    if lever.kind == "graph":
        captured = bool(warm.get("graph_captured")) and bool(seen.get("graph_replayed"))
        return Engagement(lever=lever.name, engaged=captured,
                          evidence="captured once, each timed step a replay" if captured else "no graph was captured")
    if lever.kind == "sdpa":
        names = SDPA_OPS[lever.value]
        hits = {op: count for op, count in seen.get("ops", {}).items() if any(n in op for n in names)}
        missing = f"no {' or '.join(names)} op ran: the model calls no scaled_dot_product_attention there"
        return Engagement(lever=lever.name, engaged=bool(hits),
                          evidence=", ".join(f"{op} x{count}" for op, count in hits.items()) if hits else missing)
    if lever.kind == "stance":
        return _stance(lever, seen)
    if lever.value == "coordinate_descent":  # a compiler setting: engaged where the step ran code compiled under it
        graphs = int(seen.get("compiled_graphs", 0))
        return Engagement(lever=lever.name, engaged=graphs > 0,
                          evidence=f"{graphs} graph(s) compiled with Inductor's coordinate-descent tuning on"
                          if graphs else "nothing was compiled: stack it on a compiled candidate (compile, decode_loop on a GPU)")
    if lever.value == "combo_kernels":  # engaged where compiled code ran and the step launched fewer device kernels than its reference
        return _combo(lever, seen, baseline)
    if lever.name == "tunableop":
        files, tuned = seen.get("tunableop_files") or [], int(seen.get("tunableop_results") or 0)
        on = bool(seen.get("tunableop_enabled")) and bool(files or tuned)
        said = f"results in {', '.join(files)}" if files else f"{tuned} GEMM(s) tuned"
        return Engagement(lever=lever.name, engaged=on,
                          evidence=f"TunableOp enabled, {said}" if on else "TunableOp wrote no results (no GEMM it tunes ran)")
    if lever.kind == "overrides":
        counted = seen.get("override_calls") or {}
        if not counted:
            return Engagement(lever=lever.name, engaged=False, evidence="the overrides module replaced nothing (it made no replace() call)")
        on_device = _device_launches(seen, baseline, [target for target, count in counted.items() if count == 0])
        silent = [target for target, count in counted.items() if count == 0 and not on_device.get(target)]
        said = ", ".join(f"{target.rsplit(':', 1)[-1]} x{count}" for target, count in counted.items() if count) or "none"
        if on_device:
            said += "; on the device with no host call (a replayed graph): " + ", ".join(
                f"{target.rsplit(':', 1)[-1]} by {', '.join(f'{name} x{n}' for name, n in names.items())}"
                for target, names in on_device.items())
        wrapper_us = seen.get("wrapper_overhead_us")
        wrapper = f"; the counting wrapper {wrapper_us:.3f} us a call" if wrapper_us is not None else ""
        compiled = ("; in compiled code only a custom op calling overrides.note_call counts (integrate's modules do)"
                    if silent and seen.get("compiled_graphs") else "")
        return Engagement(lever=lever.name, engaged=not silent, calls=sum(counted.values()), wrapper_us=wrapper_us,
                          evidence=f"calls the host made in one step: {said}"
                          + (f"; never called: {', '.join(silent)}{compiled}" if silent else "") + wrapper)
    if lever.kind == "generate":
        return _decode_loop(lever, seen)
    if lever.kind == "cache":
        counted = seen.get("static_cache") or {}
        calls, overridden = int(counted.get("calls", 0)), int(counted.get("overridden", 0))
        engaged = calls > 0 and not overridden
        return Engagement(lever=lever.name, engaged=engaged, calls=calls, evidence=(
            f"{calls} generate call(s) in one step on the static cache" if engaged
            else f"{overridden} of {calls} generate call(s) passed another cache_implementation"
            if overridden else "the step called no generate of the model's"))
    if lever.kind == "layout":
        count = int(seen.get("channels_last") or 0)
        return Engagement(lever=lever.name, engaged=count > 0,
                          evidence=f"{count} 4-D weight(s) in channels_last; " + _kernel_change(seen, baseline) if count
                          else "the model has no 4-D weights (no convolutions): nothing for the format to change")
    if lever.kind == "fusion":
        return _fused(lever, seen, baseline)
    if lever.kind == "kernel":
        return _routed_kernel(lever, seen, baseline)
    if lever.kind == "quantize":
        counted = seen.get("weight_only") or {}
        layers, before, after = (int(counted.get(key, 0)) for key in ("layers", "bytes_before", "bytes_after"))
        return Engagement(lever=lever.name, engaged=layers > 0, evidence=f"{layers} Linear layer(s) in {lever.value}: their weights "
                          f"{before / 1e6:.1f} -> {after / 1e6:.1f} MB" if layers
                          else "the model has no plain floating-point Linear layer to quantize")
    if lever.kind == "knob":
        return Engagement(lever=lever.name, engaged=True, evidence="the workload's factory took it; " + _kernel_change(seen, baseline))
    changed = _kernel_change(seen, baseline)
    return Engagement(lever=lever.name, engaged=not changed.startswith("the same"), evidence=changed)


def _device_launches(seen: dict[str, Any], baseline: dict[str, Any], targets: list[str]) -> dict[str, dict[str, int]]:
    """For each of `targets` (replacements no host call reached), the device kernels it declared (overrides.launches)
    that ran in the profiled step and not in its reference's (a name the reference runs too proves nothing), with their
    counts; only targets with some."""
    declared: dict[str, list[str]] = seen.get("override_kernels") or {}
    found = {target: _new_kernels(seen, baseline, declared.get(target, [])) for target in targets}
    return {target: names for target, names in found.items() if names}


def _new_kernels(seen: dict[str, Any], baseline: dict[str, Any], names: list[str]) -> dict[str, int]:
    """Those of the device kernels `names` that ran in the profiled step and not in its reference's (a name the
    reference runs too proves nothing), with their counts."""
    ran: dict[str, int] = seen.get("kernels") or {}
    theirs = set(baseline.get("kernels") or {})
    return {name: ran[name] for name in names if ran.get(name) and name not in theirs}


def _stance(lever: Lever, seen: dict[str, Any]) -> Engagement:
    """A stance acts on compiled code: engaged where the step ran some (compiled graphs; CUDA graphs launched)."""
    if lever.value == "skip_guard_eval":
        graphs = int(seen.get("compiled_graphs", 0))
        return Engagement(lever=lever.name, engaged=graphs > 0,
                          evidence=f"{graphs} compiled graph(s), their guards skipped in every step after warm-up" if graphs else
                          "nothing was compiled, so no guards to skip: stack it on a compiled candidate (compile, a static KV cache's "
                          "decode)")
    ops = seen.get("ops", {})
    launches = int(sum(count for op, count in ops.items() if op in GRAPH_LAUNCH))
    captures = int(sum(count for op, count in ops.items() if op in GRAPH_CAPTURE))
    recorded = f"; {captures} graph capture(s) in the warmed-up step" if captures else "; no graph captured in the warmed-up step"
    return Engagement(lever=lever.name, engaged=launches > 0,
                      evidence=f"{launches} CUDA/HIP graph launch(es) in one step{recorded}" if launches else
                      "no CUDA/HIP graph was launched in a step, so nothing to mark: stack it on compile_reduce_overhead or a static KV "
                      "cache's decode")


def _combo(lever: Lever, seen: dict[str, Any], baseline: dict[str, Any]) -> Engagement:
    """Inductor's combo kernels: engaged where the step ran compiled code and fewer device kernels than its reference
    (a replayed graph's kernels counted too); without a kernel count on either side, not proven."""
    graphs = int(seen.get("compiled_graphs", 0))
    if not graphs:
        return Engagement(lever=lever.name, engaged=False,
                          evidence="nothing was compiled: stack it on a compiled candidate (compile, decode_loop on a GPU)")
    mine, theirs = (sum(int(n) for n in (side.get("kernels") or {}).values()) for side in (seen, baseline))
    if not mine or not theirs:
        return Engagement(lever=lever.name, engaged=False, evidence=f"{graphs} graph(s) compiled with combo kernels on, but no device "
                          "kernels to count on both sides (the profiled step's or its reference's)")
    fewer = mine < theirs
    return Engagement(lever=lever.name, engaged=fewer,
                      evidence=f"{graphs} graph(s) compiled with combo kernels on; device kernels in one step {theirs} -> {mine}"
                      + ("" if fewer else ": no fewer than the reference's (no independent kernels were combined)"))


def _decode_loop(lever: Lever, seen: dict[str, Any]) -> Engagement:
    """Engaged where every generate call of the profiled step took the loop, none fell back to transformers' own."""
    counted = seen.get("decode_loop") or {}
    loops, fallbacks = int(counted.get("loop", 0)), dict(counted.get("fallbacks") or {})
    if fallbacks:
        said = "; ".join(f"{why} (x{n})" for why, n in fallbacks.items())
        return Engagement(lever=lever.name, engaged=False, calls=loops, evidence=f"generate fell back to transformers' own loop: {said}")
    if not loops:
        return Engagement(lever=lever.name, engaged=False, calls=0, evidence="the step called no generate")
    graphs = int(seen.get("compiled_graphs", 0))
    return Engagement(lever=lever.name, engaged=True, calls=loops,
                      evidence=f"{loops} generate call(s) in one step took the loop, none fell back; {graphs} compiled graph(s)")


def _fused(lever: Lever, seen: dict[str, Any], baseline: dict[str, Any]) -> Engagement:
    """Engaged where groups were fused and the step ran fewer GEMMs than its reference (a fused group whose members the
    model calls on different inputs computes each apart: no fewer GEMMs, not engaged)."""
    placement = seen.get("fused_projections") or {}
    placed, apart = dict(placement.get("placed") or {}), dict(placement.get("not_placed") or {})
    left = ("; left apart: " + "; ".join(f"{why} (x{n})" for why, n in apart.items())) if apart else ""
    if not placed:
        if not apart:
            return Engagement(lever=lever.name, engaged=False, evidence="no sibling projections were fused: the model has none of the "
                              f"known groups ({', '.join('/'.join(g) for g in GROUPS)}); its projections may be one layer already (GPT-2's "
                              "c_attn, Falcon's query_key_value)")
        return Engagement(lever=lever.name, engaged=False, evidence="no sibling projections were fused" + left)
    fused = ", ".join(f"{n} x {label}" for label, n in placed.items())
    mine, theirs, key = _gemms(seen, baseline)
    if mine is None:
        return Engagement(lever=lever.name, engaged=False, evidence=f"fused {fused}, but the profiled step showed no GEMM to count{left}")
    fewer = mine < theirs
    return Engagement(lever=lever.name, engaged=fewer, evidence=f"fused {fused}; GEMM {key} in one step {theirs} -> {mine}"
                      + ("" if fewer else ": no fewer than the reference's (the model calls the members on different inputs)") + left)


def _routed_kernel(lever: Lever, seen: dict[str, Any], baseline: dict[str, Any]) -> Engagement:
    """Engaged where the route placed the kernel in the model, the kernel ran in the profiled step (its op's host
    calls, or its device kernels in a replayed graph where the reference ran none) and no call the lever is for fell
    back to torch's code (a fallback by design, a prefill's, is not counted against it)."""
    routed = seen.get(lever.value) or {}
    if not routed.get("routed"):
        return Engagement(lever=lever.name, engaged=False,
                          evidence=str(routed.get("why") or "the route placed the kernel nowhere in the model"))
    placed = f"{routed['routed']} {routed.get('what', 'module(s) routed')}"
    expected = set(routed.get("expected") or [])
    fallbacks = {why: n for why, n in (routed.get("fallbacks") or {}).items() if why not in expected}
    calls = int(routed.get("kernel", 0))
    on_device = _new_kernels(seen, baseline, list(routed.get("kernels") or []))
    ran = f"{calls} kernel call(s) on the host" if calls else ""
    if on_device:
        ran += ("; " if ran else "") + "on the device: " + ", ".join(f"{name} x{n}" for name, n in on_device.items())
    if fallbacks:
        said = "; ".join(f"{why} (x{n})" for why, n in fallbacks.items())
        return Engagement(lever=lever.name, engaged=False, calls=calls,
                          evidence=f"{placed}, but calls fell back to torch's code: {said}" + (f"; {ran}" if ran else ""))
    if not ran:
        return Engagement(lever=lever.name, engaged=False, calls=0,
                          evidence=f"{placed}, but the profiled step ran no call through the kernel")
    return Engagement(lever=lever.name, engaged=True, calls=calls, evidence=f"{placed}; {ran}")


def _gemms(seen: dict[str, Any], baseline: dict[str, Any]) -> tuple[int | None, int, str]:
    """The GEMMs one step ran, the candidate's and its reference's: device kernels where both profiles have them (a
    replayed graph's kernels show there, its ops do not), else CPU ops; None where neither shows one."""
    for key, classify in (("kernels", kernel_class), ("ops", op_class)):
        mine = sum(count for name, count in (seen.get(key) or {}).items() if classify(name) == "gemm")
        theirs = sum(count for name, count in (baseline.get(key) or {}).items() if classify(name) == "gemm")
        if mine and theirs:
            return mine, theirs, key
    return None, 0, ""


def compile_note(seen: dict[str, Any], reference: dict[str, Any]) -> str:
    """What dynamo did in a candidate's worker that says the candidate made a compiled model compile again or break
    (each worker warmed up and profiled alike): graphs compiled during the warmed-up profiled step, or, on top of a
    reference that is compiled too, more graphs or more breaks than it. A kernel whose Python changes a value dynamo
    guards on recompiles at every call until dynamo gives up and runs eagerly; it shows here whatever its timing
    says. Empty when nothing of the kind."""
    graphs, breaks, in_step = (int(seen.get(key, 0)) for key in ("compiled_graphs", "graph_breaks", "graphs_compiled_in_step"))
    their_graphs, their_breaks = int(reference.get("compiled_graphs", 0)), int(reference.get("graph_breaks", 0))
    said = []
    if in_step:
        said.append(f"dynamo compiled {in_step} graph(s) during a warmed-up step")
    if their_graphs and (graphs > their_graphs or breaks > their_breaks):
        said.append(f"dynamo compiled {graphs} graph(s) with {breaks} graph break(s) where its reference, compiled too, compiled "
                    f"{their_graphs} with {their_breaks}")
    return ("; ".join(said) + ": recompiles or breaks the candidate brought (TORCH_LOGS=recompiles,graph_breaks in its worker says where)"
            if said else "")


def _kernel_change(seen: dict[str, Any], baseline: dict[str, Any]) -> str:
    """How the names run in one step differ from the baseline's: device kernels on a GPU, ops on a CPU."""
    key = "kernels" if seen.get("kernels") or baseline.get("kernels") else "ops"
    mine, theirs = set(seen.get(key, {})), set(baseline.get(key, {}))
    if mine == theirs:
        return f"the same {key} ran as in the baseline ({len(mine)} names)"
    new, gone = sorted(mine - theirs), sorted(theirs - mine)
    return f"{key} changed: {len(new)} new (e.g. {', '.join(n[:60] for n in new[:2]) or '-'}), {len(gone)} gone"
