"""Fusion candidates: chains of memory-bound ops that run back to back on one stream, each reading what the one
before it wrote, between compute kernels.

Traces carry shapes, not tensor identities, so "reads what the one before wrote" means: one of the op's tensor
inputs has the previous op's output shape (or element count). A fused kernel keeps each intermediate on chip,
so it saves writing it and reading it back: 2 x its bytes. A chain ends at a compute op (GEMM, attention), at a
communication or unclassified op, at an op with no work model, and where the shapes stop lining up. It steps over a
GEMM that reads nothing it wrote when the op after the GEMM reads both (the gated MLP's activation times its up projection).
Each chain is then matched against the fusion library (library.py).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from hyperloom.tools.profile.classify import COMPUTE_CLASSES, FUSABLE_CLASSES, base_name, op_class
from hyperloom.tools.profile.group import Classifier
from hyperloom.tools.profile.library import Step, match_chain, step_of
from hyperloom.tools.profile.models import FusionCandidate
from hyperloom.tools.profile.trace import Op, Trace
from hyperloom.tools.profile.work import Work, WorkCache

# ops that launch no device work (views, allocations): invisible on a GPU stream, skipped on a CPU thread
TRANSPARENT = {"empty", "empty_strided", "empty_like", "as_strided", "t", "transpose", "view", "reshape", "_reshape_alias",
               "expand", "slice", "select", "unsqueeze", "squeeze", "permute", "_unsafe_view", "detach", "alias", "resolve_conj",
               "resolve_neg", "lift_fresh", "result_type", "item", "_local_scalar_dense", "unbind", "split", "chunk", "narrow",
               "resize", "set_", "view_as", "flatten", "broadcast_tensors", "numpy_T", "_has_compatible_shallow_copy_type"}


@dataclass
class Node:
    """One op call on a stream, with its kernels merged."""

    op: Op | None
    cls: str
    work: Work | None
    kernels: int
    time_us: float


def _nodes(trace: Trace, classify: Classifier, work_of: WorkCache) -> list[list[Node]]:
    """Per stream, its op calls in order. On a GPU an op is the innermost one that launched each kernel; on a CPU-only
    trace the top-level ops of each thread (what a fusion of the model's code would merge)."""
    streams: dict[tuple[str, str], list[Node]] = defaultdict(list)
    if trace.cpu_only:
        for op in sorted(trace.ops, key=lambda o: o.start_us):
            if op.parent is None and base_name(op.name) not in TRANSPARENT:
                streams[("cpu", op.thread)].append(Node(op, op_class(op.name), work_of(op), 1, op.dur_us))
        return list(streams.values())
    for k in sorted(trace.kernels, key=lambda k: k.start_us):
        if k.op is not None and base_name(k.op.name) in TRANSPARENT:
            continue
        nodes = streams[(k.device, k.stream)]
        if nodes and k.op is not None and nodes[-1].op is k.op:
            nodes[-1].kernels += 1
            nodes[-1].time_us += k.dur_us
            continue
        cls = classify(k)
        if k.op is not None and k.kind == "kernel":
            cls = op_class(k.op.name) if op_class(k.op.name) != "other" else cls
            nodes.append(Node(k.op, cls, work_of(k.op), 1, k.dur_us))
        else:
            nodes.append(Node(None, cls, None, 1, k.dur_us))
    return list(streams.values())


def _reads(node: Node, previous: Node) -> bool:
    """Whether `node` reads a tensor shaped like `previous`'s output."""
    out = previous.work.output if previous.work else None
    if out is None or node.work is None:
        return False
    return any(t.dims == out.dims or t.numel == out.numel for t in node.work.reads)


def _fusable(node: Node) -> bool:
    return node.cls in FUSABLE_CLASSES and node.op is not None and node.work is not None and node.work.output is not None


@dataclass
class Chain:
    run: list[Node]
    before: Node | None  # the node right before the chain
    after: Node | None  # the node that ended it
    over: list[Node]  # compute nodes it steps over (see _steps_over)


def _steps_over(run: list[Node], node: Node, following: Node | None) -> bool:
    """Whether the chain goes on past compute node `node`: it reads nothing the chain wrote, and the op after it reads both
    (HF's gated MLP: silu(gate_proj(x)), then up_proj(x), then their product; a fused kernel runs after the GEMM)."""
    if (not run or node.cls not in COMPUTE_CLASSES or node.work is None or node.work.output is None or following is None
            or not _fusable(following)):
        return False
    written = run[-1].work.output
    if any(t.dims == written.dims or t.numel == written.numel for t in node.work.reads):
        return False
    return _reads(following, run[-1]) and _reads(following, node)


def chains(trace: Trace, classify: Classifier, work_of: WorkCache) -> list[Chain]:
    """Every chain of at least two linked memory-bound nodes, with the nodes right before and after it."""
    found = []
    for nodes in _nodes(trace, classify, work_of):
        run: list[Node] = []
        over: list[Node] = []
        start = 0
        i = 0
        padded: list[Node | None] = [*nodes, None]
        while i < len(padded):
            node = padded[i]
            if node is not None and run and _steps_over(run, node, padded[i + 1]):
                over.append(node)
                i += 1
                continue
            linked = node is not None and _fusable(node) and (not run or _reads(node, run[-1]))
            if linked:
                if not run:
                    start = i
                run.append(node)
                i += 1
                continue
            if len(run) >= 2:
                found.append(Chain(run, nodes[start - 1] if start > 0 else None, node, over))
            run = [node] if node is not None and _fusable(node) else []
            over = []
            start = i
            i += 1
    return found


def _saved(run: list[Node]) -> int:
    return sum(2 * n.work.output.nbytes for n in run[:-1])


def _steps(run: list[Node]) -> list[Step]:
    return [step_of(i, n.op, n.work.reads, n.work.output) for i, n in enumerate(run, start=1)]


def fusion_candidates(trace: Trace, classify: Classifier, work_of: WorkCache) -> list[tuple[FusionCandidate, list[Node]]]:
    """Chains grouped by their ops and shapes, most bytes saved first (chains that save nothing are left out), each
    matched against the fusion library, with the nodes of its first occurrence (what a hand-off draft replays)."""
    groups: dict[tuple, list[Chain]] = defaultdict(list)
    for chain in chains(trace, classify, work_of):
        groups[tuple((n.op.name, n.work.output.text()) for n in chain.run)].append(chain)
    candidates = []
    for signature, members in groups.items():
        first = members[0]
        saved = _saved(first.run)
        if not saved:
            continue
        moved = sum(n.work.bytes_moved for n in first.run)
        time_us = sum(n.time_us for c in members for n in c.run)
        library, note = match_chain(_steps(first.run))
        candidates.append((FusionCandidate(
            ops=[name for name, _ in signature], shapes=[text for _, text in signature],
            before=_compute_name(first.before), after=_compute_name(first.after), occurrences=len(members),
            kernels_per_occurrence=sum(n.kernels for n in first.run), time_s=time_us / 1e6,
            bytes_moved_per_occurrence=moved, bytes_saved_per_occurrence=saved, bytes_saved_total=saved * len(members),
            estimated_time_saved_s=time_us / 1e6 * saved / moved if moved else 0.0,
            steps_over=[n.op.name if n.op is not None else "a compute kernel" for n in first.over], library=library, library_note=note,
        ), first.run))
    candidates.sort(key=lambda c: (c[0].bytes_saved_total, c[0].time_s), reverse=True)
    return candidates


def _compute_name(node: Node | None) -> str | None:
    if node is None or node.cls not in COMPUTE_CLASSES:
        return None
    return node.op.name if node.op is not None else "a compute kernel"
