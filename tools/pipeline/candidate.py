"""A candidate built and checked against its disasm rules before any device runs it: built, or rejected with the reason."""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from hyperloom.core.errors import HyperloomError
from hyperloom.core.hashing import sha256_bytes, sha256_json
from hyperloom.tools.codeobj.elf import loaded_contents
from hyperloom.core.workspace import Workspace
from hyperloom.tools.compile.models import TargetBuild
from hyperloom.tools.pipeline.build import build_with
from hyperloom.tools.pipeline.launch import Launchable
from hyperloom.tools.pipeline.phases import PhaseClock
from hyperloom.tools.pipeline.resources import resource_refusal
from hyperloom.tools.verify.models import VerifyRequest
from hyperloom.tools.verify.api import verify


@dataclass
class Built:
    """A candidate that built and met the disasm rules: its launch as built, its code object, and the seconds it took."""

    launchable: Launchable
    build: TargetBuild
    clock: PhaseClock


@dataclass
class Unbuilt:
    """Why a candidate never reached a device: it did not build (COMPILE_ERROR), asks more than its target allows
    (RESOURCE_LIMIT), or broke a disasm rule (RULE_FAILED)."""

    status: str
    reason: str
    input_set: str
    compile_s: float
    clock: PhaseClock


def build_candidate(launchable: Launchable, params: Mapping[str, str | int], workspace: Workspace, *, expect: list[str],
                    forbid: list[str]) -> Built | Unbuilt:
    """Compile (cached) with `params` and check the disasm rules `expect` and `forbid`."""
    clock = PhaseClock()
    started = time.perf_counter()
    try:
        built, build = build_with(launchable, workspace, params)
    except HyperloomError as exc:  # e.g. a define the compiler's allow-list refuses, a geometry that changes the problem
        clock.add("compile", time.perf_counter() - started)
        return Unbuilt("COMPILE_ERROR", str(exc), "compile", 0.0, clock)
    clock.add("compile", time.perf_counter() - started)
    if not build.ok:
        return Unbuilt("COMPILE_ERROR", build.summary + (f": {build.log.strip()[-400:]}" if build.log.strip() else ""), "compile",
                       build.compile_s, clock)
    refusal = resource_refusal(built, build)
    if refusal is not None:
        return Unbuilt("RESOURCE_LIMIT", f"resource limit: {refusal}", "compile", build.compile_s, clock)
    if expect or forbid:
        started = time.perf_counter()
        checked = verify(VerifyRequest(code_object=build.code_object, expect=expect, forbid=forbid), workspace)
        clock.add("rules", time.perf_counter() - started)
        if not checked.passed:
            return Unbuilt("RULE_FAILED", checked.summary, "disasm", build.compile_s, clock)
    return Built(built, build, clock)


def built_digest(launchable: Launchable, code_object: Path) -> str:
    """What a built candidate is, for novelty: what its code object loads (the sections mapped, not the file names and
    build ids beside them) and the launch it runs with."""
    image = code_object.read_bytes()
    try:
        contents = sha256_json([[name, sha256_bytes(data)] for name, data in loaded_contents(image)])
    except HyperloomError:  # not ELF (the interpreter's plan): its bytes
        contents = sha256_bytes(image)
    return sha256_json({"code_object": contents, "symbol": launchable.symbol, "grid": launchable.grid, "block": launchable.block,
                        "shared_bytes": launchable.shared_bytes})
