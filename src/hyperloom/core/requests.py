"""The base of every tool's request model: strict about what a caller may send."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, model_validator

STRING_LIMIT_CHARS = 4096  # a path, a define, a rule: no argument string is longer, and none is echoed back at length


class Request(BaseModel):
    """Unknown fields are refused, numbers must be finite, strings are bounded and hold no NUL byte."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, str_max_length=STRING_LIMIT_CHARS)

    @model_validator(mode="before")
    @classmethod
    def _no_nul_bytes(cls, data: Any) -> Any:
        if isinstance(data, dict):
            for name, value in data.items():
                if _has_nul(value):
                    raise ValueError(f"{name} contains a NUL byte; pass plain text")
        return data


def _has_nul(value: Any, depth: int = 0) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if depth < 4 and isinstance(value, list | tuple):
        return any(_has_nul(v, depth + 1) for v in value)
    if depth < 4 and isinstance(value, dict):
        return any(_has_nul(k, depth + 1) or _has_nul(v, depth + 1) for k, v in value.items())
    return False
