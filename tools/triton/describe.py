"""Worker side of `describe`: the entry's parameters, autotune configs and heuristics, as JSON."""

from __future__ import annotations

import inspect
import os
from typing import Any

from hyperloom.tools.triton.entry import EntryError, autotuner, def_line, heuristics, load_module, unwrap

_PLAIN = (int, float, str, bool, type(None))


def describe_payload(payload: dict[str, Any]) -> dict[str, Any]:
    os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")  # Triton 3.9 warns when unset; 1 is its default
    try:
        import triton

        module = load_module(payload["source"])
        jit, chain = unwrap(module, payload["entry"])
        return describe(jit, chain, payload["entry"], triton.__version__)
    except EntryError as exc:
        return exc.payload()


def describe(jit: Any, chain: list[Any], entry: str, version: str) -> dict[str, Any]:
    signature = inspect.signature(jit.fn)
    constexpr = {p.name: bool(p.is_constexpr) for p in jit.params}
    params = []
    for name, parameter in signature.parameters.items():
        default = parameter.default
        has_default = default is not inspect.Parameter.empty
        if has_default and not isinstance(default, _PLAIN):
            default = getattr(default, "value", repr(default))  # tl.constexpr(4) holds its value
            default = default if isinstance(default, _PLAIN) else repr(default)
        params.append({"name": name, "constexpr": constexpr.get(name, False), "has_default": has_default,
                       "default": default if has_default else None})
    tuner = autotuner(chain)
    configs = None
    if tuner is not None:
        configs = [{
            "kwargs": {k: (v if isinstance(v, _PLAIN) else repr(v)) for k, v in c.kwargs.items()},
            "num_warps": getattr(c, "num_warps", None), "num_stages": getattr(c, "num_stages", None),
            "num_ctas": getattr(c, "num_ctas", None), "maxnreg": getattr(c, "maxnreg", None),
            "pre_hook": getattr(c, "pre_hook", None) is not None,
        } for c in tuner.configs]
    return {"entry": entry, "params": params, "def_line": def_line(jit), "autotune": configs,
            "autotune_key": list(getattr(tuner, "keys", []) or []), "heuristics": list(heuristics(chain)), "triton_version": version}
