"""Worker side: the code one call runs, as names a controller can compare between two workers (the reference's and a
candidate's): each Python function entered ("file:line qualname") and each builtin called ("module.name"), on the
calling thread. What inputs(seed) runs must be what the reference's runs: work hidden in a wrapper of it, or of what it
calls, would otherwise run outside every timed window."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any


def traced(call: Callable[[], Any]) -> list[str]:
    """`call` run once under sys.setprofile: the sorted names of the functions it entered, `call` itself among them."""
    seen: set[str] = set()

    def record(frame: Any, event: str, arg: Any) -> None:
        if event == "call":
            code = frame.f_code
            seen.add(f"{code.co_filename}:{code.co_firstlineno} {getattr(code, 'co_qualname', code.co_name)}")
        elif event == "c_call":
            seen.add(f"{getattr(arg, '__module__', None) or type(getattr(arg, '__self__', None)).__name__}."
                     f"{getattr(arg, '__qualname__', repr(arg))}")

    previous = sys.getprofile()
    sys.setprofile(record)
    try:
        call()
    finally:
        sys.setprofile(previous)
    return sorted(seen)
