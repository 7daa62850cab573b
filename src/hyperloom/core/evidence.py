"""Evidence: how every number a tool returns was obtained, MEASURED or ASSUMED."""

from __future__ import annotations

import datetime as dt
import platform
from enum import Enum
from functools import lru_cache
from pathlib import Path

from pydantic import BaseModel, Field

from hyperloom import __version__


class Tag(str, Enum):
    MEASURED = "MEASURED"
    ASSUMED = "ASSUMED"


class Evidence(BaseModel):
    """Provenance of a result. MEASURED means produced in this call by the named tool."""

    tag: Tag = Field(description="MEASURED: produced in this call by `source`; ASSUMED: taken from elsewhere (datasheet, default).")
    source: str = Field(description="Tool and version that produced the result, e.g. 'hyperloom.correctness_gate 0.1.0'.")
    target: str = Field(description="Target the result is about: a gfx/sm name, 'host', or 'unspecified'.")
    device: str = Field(description="Device the measurement ran on, e.g. 'host CPU: AMD EPYC'.")
    toolchain: dict[str, str] = Field(default_factory=dict, description="Name → version of every tool and library used.")
    at: dt.datetime = Field(description="UTC time the result was produced.")
    inputs_sha256: str = Field(description="sha256 over every input that determines the result.")


def utc_now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


@lru_cache(maxsize=1)
def host_cpu_name() -> str:
    """The host CPU's model name, read from /proc/cpuinfo where it exists."""
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():
        for line in cpuinfo.read_text(errors="replace").splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine() or "unknown"


def host_device() -> str:
    return f"host CPU: {host_cpu_name()}"


def measured(
    tool: str,
    *,
    inputs_sha256: str,
    target: str = "unspecified",
    device: str | None = None,
    toolchain: dict[str, str] | None = None,
) -> Evidence:
    """Evidence for a result this Hyperloom tool produced just now."""
    return Evidence(
        tag=Tag.MEASURED,
        source=f"hyperloom.{tool} {__version__}",
        target=target,
        device=device or host_device(),
        toolchain={"python": platform.python_version(), **(toolchain or {})},
        at=utc_now(),
        inputs_sha256=inputs_sha256,
    )


def assumed(
    source: str,
    *,
    inputs_sha256: str,
    target: str = "unspecified",
    device: str = "not measured",
    toolchain: dict[str, str] | None = None,
) -> Evidence:
    """Evidence for a figure taken from elsewhere (a datasheet, a recorded output), not produced in this call."""
    return Evidence(
        tag=Tag.ASSUMED,
        source=source,
        target=target,
        device=device,
        toolchain=toolchain or {},
        at=utc_now(),
        inputs_sha256=inputs_sha256,
    )
