"""The fuse_projections lever, worker side: sibling linear projections that read the same input become one GEMM.

A decoder's attention reads its input through three projections (q, k, v) and its MLP through two (gate, up): five
GEMMs per layer where two would do, each reading its own weights (at decode, batch 1, one GEMV per projection: more
launches, and smaller GEMVs that run further from the copy bandwidth; docs/decisions.md, The decode levers). gpt-fast and vLLM define their
models with the projections fused; a transformers model, or a user's, has them apart. Here the weights of each group are
concatenated into one linear layer registered on the parent module (no extra memory: the separate layers are dropped),
and each projection becomes a part of it: the first part called with an input computes the fused product once and
splits it; its siblings called with that same input tensor take their slices; called with another input (a
cross-attention's keys and values read the encoder's states) a part computes its own rows alone, so the result is
right whatever the parent's forward does. The shared product lives only while the parent's forward runs (a pre-hook
and a hook clear it), so nothing escapes a compiled graph or a CUDA graph capture, and a deep copy of the model (a
kept worker's copy) is a fused model of its own. Mathematically the same numbers; the bits may differ (a wider GEMM
may take another kernel and accumulation order): the gate judges them like any other lever.

Groups are found by the names the model families use (GROUPS); a group whose members are not plain torch.nn.Linear
layers on one input width, dtype and device is left as it is, and why is counted (Placement.not_placed)."""

from __future__ import annotations

import functools
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from hyperloom.core.factory import WorkloadContractError
from hyperloom.tools.workload.wire import PROJECTION_GROUPS as GROUPS

GROUPS_ATTR = "_hyperloom_fused_groups"


@dataclass
class Placement:
    """What the lever did to a model: groups fused, by their member names, and groups found but left apart, by why."""

    placed: Counter[str] = field(default_factory=Counter)
    not_placed: Counter[str] = field(default_factory=Counter)

    def as_dict(self) -> dict[str, dict[str, int]]:
        return {"placed": dict(self.placed), "not_placed": dict(self.not_placed)}


class _Shared:
    """One fused group's layer (`name` on its parent: a plain linear layer, or what a later lever put there, e.g. a
    weight-only quantized one) and, while its parent's forward runs, the input it last saw and its split output."""

    def __init__(self, fused: Any, sizes: list[int], name: str) -> None:
        self.fused, self.sizes, self.name = fused, sizes, name
        self.input: Any = None
        self.parts: Any = None

    def clear(self) -> None:
        self.input = self.parts = None


def refresh(model: Any) -> None:
    """Point each fused group at the layer now registered under its name (a lever that replaced it: quantization)."""
    for parent in model.modules():
        for shared in getattr(parent, GROUPS_ATTR, ()):
            shared.fused = getattr(parent, shared.name)


@functools.cache
def _part_class(torch: Any) -> type:
    functional = torch.nn.functional

    class FusedPart(torch.nn.Module):
        """Rows [start, stop) of a fused projection: the slice of the shared product for the input its siblings read,
        or its own rows' product for any other input."""

        def __init__(self, shared: _Shared, index: int, start: int, stop: int) -> None:
            super().__init__()
            self.__dict__["shared"] = shared  # not a submodule: the parent owns the fused layer (one copy in state_dict)
            self.index, self.start, self.stop = index, start, stop
            self.in_features, self.out_features = shared.fused.in_features, stop - start

        def forward(self, x: Any) -> Any:
            shared = self.shared
            if shared.input is x:
                return shared.parts[self.index]
            if shared.input is None:
                shared.input = x
                shared.parts = shared.fused(x).split(shared.sizes, dim=-1)
                return shared.parts[self.index]
            fused = shared.fused
            # replaced or rerouted by another lever: its own product, these rows
            if type(fused) is not torch.nn.Linear or "forward" in vars(fused):
                return fused(x)[..., self.start:self.stop]
            bias = None if fused.bias is None else fused.bias[self.start:self.stop]
            return functional.linear(x, fused.weight[self.start:self.stop], bias)

        @property
        def weight(self) -> Any:  # code that reads a projection's weight (its dtype, its device) reads its rows: a view
            return self.shared.fused.weight[self.start:self.stop]

        @property
        def bias(self) -> Any:
            bias = self.shared.fused.bias
            return None if bias is None else bias[self.start:self.stop]

        def extra_repr(self) -> str:
            return f"rows {self.start}:{self.stop} of a fused projection"

    return FusedPart


def _clear(module: Any, *_: Any) -> None:
    for shared in getattr(module, GROUPS_ATTR, ()):
        shared.clear()


def _why_not(torch: Any, members: list[Any]) -> str | None:
    if any(type(m) is not torch.nn.Linear for m in members):
        return "a member is not a plain torch.nn.Linear (already fused, quantized or custom)"
    first = members[0].weight
    if any(m.in_features != members[0].in_features for m in members):
        return "the members read inputs of different widths"
    if any(m.weight.dtype != first.dtype or m.weight.device != first.device for m in members):
        return "the members' weights differ in dtype or device"
    return None


def fusable(torch: Any, model: Any) -> int:
    """How many groups of GROUPS on `model`'s modules fuse would fuse (read only: optimize's precondition)."""
    return sum(1 for _, _, members in _groups(model) if _why_not(torch, members) is None)


def _groups(model: Any) -> list[tuple[Any, tuple[str, ...], list[Any]]]:
    """Each group of GROUPS found on a module of `model`: the module, the member names, the members."""
    found = []
    for parent in model.modules():
        children = dict(parent.named_children())
        found.extend((parent, names, [children[name] for name in names]) for names in GROUPS if all(name in children for name in names))
    return found


def fuse(torch: Any, model: Any) -> Placement:
    """Fuse every group of GROUPS found on a module of `model` (in place); what was placed and what was not, by why."""
    if torch is None or not isinstance(model, torch.nn.Module):
        raise WorkloadContractError("the fuse_projections lever needs the workload's `model` attribute to be a torch.nn.Module; this "
                                    "workload has none")
    part_class, placement = _part_class(torch), Placement()
    for parent, names, members in _groups(model):
        label = "+".join(names)
        why = _why_not(torch, members)
        if why:
            placement.not_placed[f"{label}: {why}"] += 1
            continue
        _fuse_group(torch, part_class, parent, names, members)
        placement.placed[label] += 1
    return placement


def _fuse_group(torch: Any, part_class: type, parent: Any, names: tuple[str, ...], members: list[Any]) -> None:
    first = members[0].weight
    with torch.no_grad():
        weight = torch.cat([m.weight for m in members])
        biases = [m.bias if m.bias is not None else torch.zeros(m.out_features, dtype=first.dtype, device=first.device) for m in members]
        bias = torch.cat(biases) if any(m.bias is not None for m in members) else None
    fused = torch.nn.Linear(weight.shape[1], weight.shape[0], bias=bias is not None, device="meta", dtype=first.dtype)
    fused.weight = torch.nn.Parameter(weight, requires_grad=False)
    if bias is not None:
        fused.bias = torch.nn.Parameter(bias, requires_grad=False)
    fused_name = "fused_" + "_".join(names)
    parent.add_module(fused_name, fused)
    shared = _Shared(fused, [m.out_features for m in members], fused_name)
    start = 0
    for index, (member_name, member) in enumerate(zip(names, members, strict=True)):
        setattr(parent, member_name, part_class(shared, index, start, start + member.out_features))
        start += member.out_features
    if not hasattr(parent, GROUPS_ATTR):
        parent.__dict__[GROUPS_ATTR] = []
        parent.register_forward_pre_hook(_clear)
        parent.register_forward_hook(_clear, always_call=True)
    parent.__dict__[GROUPS_ATTR].append(shared)
