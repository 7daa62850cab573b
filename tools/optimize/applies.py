"""Whether a catalog lever can act on this workload at all, read from the baseline before any candidate is built:
its profiled step (the ops and kernels that ran, compiled graphs, graph launches) and the facts its worker read off
the built model (tools/workload/model_changes.facts). A candidate costs a worker's build, warm-up, gate and pairs
(tens of device-seconds on a 1B decoder); a lever that needs a convolution on a model with none would only come back
NO_OP after all of it.

Two kinds of unmet need: one no stack can bring (no convolution, no attention, no generate: the lever is not tried,
with a note saying why), and one a kept lever can bring (compiled code, CUDA/HIP graph launches, a static KV cache
for a generate on the default one: the lever is not
tried alone but recorded NO_OP without a run, so the campaign's retry on the stack tries it there). Where the evidence
is missing (no profile, no torch module), the lever is tried: an unknown is never a reason to skip.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hyperloom.tools.profile.classify import op_class
from hyperloom.tools.workload.checks.engagement import GRAPH_LAUNCH
from hyperloom.tools.workload.levers import BY_NAME, Lever, Need

STACK_MAY_BRING: frozenset[Need] = frozenset({"compiled", "graph_launch"})


@dataclass(frozen=True)
class Unmet:
    """Why `lever` cannot act on the baseline as it is; `deferred`: a stack may bring what it needs."""

    lever: str
    reason: str
    deferred: bool


def brought(levers: list[str]) -> frozenset[Need]:
    """What the catalog levers among `levers` put in the step that a waiting lever may need (Lever.brings)."""
    return frozenset().union(*(BY_NAME[name].brings for name in levers if name in BY_NAME))


def present(evidence: dict[str, Any]) -> frozenset[Need]:
    """What a stack may bring that a reference's profiled step shows it has (compiled code, graph launches): a stack
    can bring them without a lever that lists them (decode_loop compiles its step on a GPU, a static KV cache's generate
    compiles its decode in transformers)."""
    return frozenset(need for need in STACK_MAY_BRING if evidence.get("ops") and _lacks(need, {}, evidence) is None)


def unmet(lever: Lever, facts: dict[str, Any], evidence: dict[str, Any]) -> Unmet | None:
    """The need of `lever` that the baseline lacks, or None (met, or not known: tried); what it acts on first (no stack
    brings an attention the model lacks)."""
    if lever.acts_on is not None and (lacks := _lacks(lever.acts_on, facts, evidence)) is not None:
        return Unmet(lever.name, lacks, False)
    if lever.needs is None:
        return None
    if lever.needs == "static_cache" and facts.get("encoder_decoder"):  # no stack brings what it needs: not tried at all
        return Unmet(lever.name, "the workload's model is an encoder-decoder: the loop decodes a decoder-only model's tokens", False)
    if lever.needs == "static_cache" and facts.get("generate") and facts.get("cache_implementation") != "static":
        return Unmet(lever.name, f"the model's generate decodes on the {facts.get('cache_implementation') or 'default (dynamic)'} cache, "
                                 "not a static one", True)
    lacks = _lacks(lever.needs, facts, evidence)
    return None if lacks is None else Unmet(lever.name, lacks, lever.needs in STACK_MAY_BRING)


def _lacks(need: Need, facts: dict[str, Any], evidence: dict[str, Any]) -> str | None:
    ops: dict[str, int] = evidence.get("ops") or {}
    if need in ("generate", "static_cache"):
        return None if not facts or facts.get("generate") else "the workload's model has no transformers generate with a generation_config"
    if need == "projections":
        return None if not facts or facts.get("projection_groups") else ("the workload's model has no sibling projections to fuse (q/k/v, "
                                                                         "query/key/value or gate/up as plain Linear layers on "
                                                                         "one input width)")
    if need == "float32_weights":
        return None if not facts or facts.get("float32_weights") else ("the workload's model has no float32 weights (TF32 acts on "
                                                                       "float32 matmuls)")
    if not ops:  # no profiled step to read: not known
        return None
    if need == "convolution":
        return None if any("convolution" in op for op in ops) else "the baseline's profiled step ran no convolution"
    if need == "attention":
        return None if any(op_class(op) == "attention" for op in ops) else ("the baseline's profiled step called no "
                                                                            "scaled_dot_product_attention")
    if need == "gemm":
        return None if any(op_class(op) == "gemm" for op in ops) else "the baseline's profiled step ran no GEMM"
    if need == "compiled":
        return None if int(evidence.get("compiled_graphs", 0)) else "the baseline runs no compiled code"
    if need == "graph_launch":
        return None if any(op in GRAPH_LAUNCH for op in ops) else "the baseline's step launches no CUDA/HIP graph"
    return None
