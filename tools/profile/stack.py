"""The nn.Module forwards each op ran inside, from a torch.profiler trace captured with with_stack=True: its
python_function events "nn.Module: Qwen2RMSNorm_0" and, under each, the frame
"transformers/models/qwen2/modeling_qwen2.py(52): forward" name the module's class and file, so an op's ancestry reads
as transformers.models.qwen2.modeling_qwen2:Qwen2RMSNorm.forward (outermost first): integrate's `replace`, as written."""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

from hyperloom.tools.profile.trace import Op

MODULE = re.compile(r"^nn\.Module: (?P<cls>[A-Za-z_]\w*?)(?:_\d+)?$")
FORWARD = re.compile(r"^(?P<file>[^()]+?)\.py\(\d+\): forward$")


@dataclass
class Frame:
    name: str
    start_us: float
    end_us: float
    thread: str | int


def keep(name: str) -> bool:
    """Whether a python_function event is one this module reads (a module call or a forward frame)."""
    return name.startswith("nn.Module: ") or name.endswith(": forward")


def _qualified(module: Frame, frames: list[Frame], calls: list[Frame], starts: list[float]) -> str | None:
    """pkg.file:Class.forward of a module call, from its own forward frame: the first inside it that no module call
    nested in it holds. A module whose forward a lever replaced (decode_gemv's MLP) has none, and its first forward frame
    is a child's (a fused projection's, in fused_projections.py): naming the file from it wrote a target that does not
    exist (docs/decisions.md: A module forward a lever replaced); the class alone then."""
    cls = MODULE.match(module.name)
    if cls is None:
        return None
    first = bisect.bisect_left(starts, module.start_us)  # `calls` sorted by start (`starts`): the nested ones that may hold a frame

    def own(frame: Frame) -> bool:
        nested = calls[first:bisect.bisect_right(starts, frame.start_us)]
        return not any(c is not module and c.end_us <= module.end_us and c.start_us <= frame.start_us and frame.end_us <= c.end_us
                       for c in nested)

    inner = next((f for f in frames if module.start_us <= f.start_us and f.end_us <= module.end_us and FORWARD.match(f.name) and own(f)),
                 None)
    if inner is None:
        return f"{cls['cls']}.forward"
    path = FORWARD.match(inner.name)["file"].replace("\\", "/")
    path = re.split(r"(?:site|dist)-packages/", path)[-1].lstrip("/")
    return f"{path.replace('/', '.')}:{cls['cls']}.forward"


def attach_modules(ops: list[Op], frames: list[Frame]) -> None:
    """Set each op's `modules` to the forwards it ran inside, outermost first; ops outside any module keep None."""
    if not frames:
        return
    by_thread: dict[str | int, list[Frame]] = {}
    for f in sorted(frames, key=lambda f: (f.start_us, -f.end_us)):
        by_thread.setdefault(f.thread, []).append(f)
    names: dict[int, str | None] = {}
    for thread, own in by_thread.items():
        calls = [f for f in own if MODULE.match(f.name)]
        forwards = [f for f in own if FORWARD.match(f.name)]
        starts = [c.start_us for c in calls]
        for c in calls:
            names[id(c)] = _qualified(c, [f for f in forwards if f.start_us >= c.start_us], calls, starts)
        stack: list[Frame] = []
        i = 0
        for op in sorted((o for o in ops if o.thread == thread), key=lambda o: o.start_us):
            while i < len(calls) and calls[i].start_us <= op.start_us:
                while stack and stack[-1].end_us <= calls[i].start_us:
                    stack.pop()
                stack.append(calls[i])
                i += 1
            while stack and stack[-1].end_us < op.start_us + op.dur_us:
                stack.pop()
            found = tuple(n for n in (names.get(id(f)) for f in stack) if n)
            op.modules = found or None


def common_module(ops: list[Op | None]) -> str | None:
    """The innermost forward every one of `ops` ran inside, or None (no stack recorded, or none in common)."""
    chains = [op.modules for op in ops if op is not None]
    if not chains or any(c is None for c in chains):
        return None
    common: str | None = None
    for level in zip(*chains):
        if len(set(level)) != 1:
            break
        common = level[0]
    return common
