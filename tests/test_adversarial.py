"""The server as a hostile caller meets it, over a real stdio connection.

A corpus generated from every tool's input schema (missing and unknown arguments, each field given
values of every wrong kind, out-of-range, oversized, NUL, non-finite and deeply nested) plus hand-made
hostile cases (paths outside the workspace, symlinks, injection in defines and flags, broken .npy
files, huge shapes). The server must stay up, refuse every invalid call with a short message naming
the cause and the next step, create nothing outside the workspace, keep answering valid calls
between them, and answer every call within its timeout. The counts are printed.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(300)]
SERVER = Path(sys.executable).parent / "hyperloom-mcp"
CALL_TIMEOUT_S = 30.0
MESSAGE_LIMIT = 1500
# the SDK's JSON reader drops a message nested past ~200 levels unanswered (its limit, below our layer)
DEEP = json.loads("[" * 100 + "]" * 100)


@pytest.fixture
def anyio_backend():
    return "asyncio"


def _types(schema: dict[str, Any], defs: dict[str, Any]) -> set[str]:
    if "$ref" in schema:
        return _types(defs[schema["$ref"].split("/")[-1]], defs)
    if "anyOf" in schema:
        return set().union(*(_types(s, defs) for s in schema["anyOf"]))
    if "enum" in schema or "const" in schema:
        return {"enum"}
    kind = schema.get("type")
    return set(kind) if isinstance(kind, list) else {kind or "object"}


WRONG = {
    "string": [5, [], {}, True, "x" * 5000, "a\x00b"],
    "integer": ["abc", [], {}, 1.5, "nan"],
    "number": ["abc", [], {}, "inf", "NaN"],
    "boolean": ["maybe", 2, [], {}],
    "array": [5, {}, "[", DEEP, "x" * 5000, [None]],
    "object": [5, [], "x", {"a": DEEP}],
    "enum": ["not-a-choice", 5, [], {}],
    "null": [],
}


def schema_corpus(tool: Any) -> list[tuple[str, dict[str, Any]]]:
    """(label, arguments) pairs that no valid call matches."""
    schema = tool.input_schema
    defs, props, required = schema.get("$defs", {}), schema.get("properties", {}), schema.get("required", [])
    cases: list[tuple[str, dict[str, Any]]] = [("unknown", {"definitely_not_an_argument": 1}), ("deep unknown", {"x": DEEP})]
    if props:
        first = next(iter(props))
        cases.append(("misspelled", {first[:-1] + ("x" if first[-1] != "x" else "y"): 1}))
    if required:
        cases.append(("missing", {}))
    for name, prop in props.items():
        kinds = _types(prop, defs)
        for kind in sorted(kinds - {None}):
            for value in WRONG.get(kind, []):
                if any(_accepts(other, value) for other in kinds - {kind}):
                    continue
                cases.append((f"{name}={type(value).__name__}", {name: value}))
        if "minimum" in prop or "exclusiveMinimum" in prop:
            cases.append((f"{name} below range", {name: -(10**30)}))
        if "maximum" in prop:
            cases.append((f"{name} above range", {name: 10**30}))
    actions = props.get("action", {}).get("enum")
    return [(label, _with_action(args, actions, props)) for label, args in cases] if actions else cases


def _with_action(args: dict[str, Any], actions: list[str], props: dict[str, Any]) -> dict[str, Any]:
    """A family tool's case with the action that takes its argument (named in the description's "(start, ...)"),
    so the verb's own validation meets it rather than the missing action."""
    if "action" in args or not args:
        return args
    name = next(iter(args))
    taken_by = re.match(r"\(([a-z, ]+)\) ", props.get(name, {}).get("description", ""))
    return {"action": taken_by.group(1).split(", ")[0] if taken_by else actions[0], **args}


def _accepts(kind: str, value: Any) -> bool:
    """Whether a field of JSON type `kind` would take `value` (so the case is not invalid by construction)."""
    return {
        "string": isinstance(value, str) and len(value) <= 4096 and "\x00" not in value,
        "array": isinstance(value, list) or (isinstance(value, str) and len(value) <= 4096),
        "integer": isinstance(value, int) and not isinstance(value, bool),
        "number": isinstance(value, int | float) and not isinstance(value, bool),
        "boolean": isinstance(value, bool),
        "object": isinstance(value, dict),
        "null": value is None,
    }.get(kind, False)


def hostile(workspace: Path, outside: Path) -> list[tuple[str, str, dict[str, Any]]]:
    """Hand-made cases: (tool, label, arguments), each to be refused."""
    (workspace / "a_folder").mkdir()
    (workspace / "link_out").symlink_to(outside)
    np.save(workspace / "ok.npy", np.ones(4, np.float32))
    header = np.lib.format.header_data_from_array_1_0(np.ones(4, np.float32)) | {"shape": (1 << 40,)}
    with open(workspace / "huge_header.npy", "wb") as handle:
        np.lib.format.write_array_header_1_0(handle, header)
    (workspace / "spec_evil").mkdir()
    (outside / "evil.py").write_text(f"open({str(outside / 'PWNED')!r}, 'w').write('x')\ndef f(i, s):\n    return {{}}\n")
    (workspace / "spec_evil" / "kernel.yaml").write_text(
        "name: e\nsource: k.c\nlanguage: c\nvariants: {host: {entry: k, targets: [host]}}\n"
        "args: [{kind: buffer, name: y, dtype: float32, shape: [4], role: output}]\nlaunch: {grid: [1], block: [1]}\n"
        f"shapes: [{{n: 1}}]\nreference: {os.path.relpath(outside / 'evil.py', workspace / 'spec_evil')}:f\ntolerance: {{atol: "
        f"0, rtol: 0}}\n")
    (workspace / "spec_evil" / "k.c").write_text("void k(float* y) { for (int i = 0; i < 4; ++i) y[i] = 0; }\n")
    long_name = "d" * 300
    paths = ["../outside.npy", "/etc/passwd", "link_out/x.npy", "a_folder", f"{long_name}.npy", "nope.npy", "~/x.npy"]
    cases = []
    for path in paths:
        cases += [
            ("correctness_gate", f"candidate {path}", {"candidates": [path], "references": ["ok.npy"], "atol": 0, "rtol": 0}),
            ("gate_freeze", f"reference {path}", {"out": "frozen", "references": [path], "atol": 0, "rtol": 0}),
            ("disasm_verify", f"code object {path}", {"code_object": path}),
            ("compile_kernel", f"source {path}", {"source": path, "targets": ["gfx1201"]}),
            ("bench", f"spec {path}", {"spec": path, "target": "host"}),
            ("spec", f"spec {path}", {"action": "check", "spec": path}),
            ("roofline", f"place {path}", {"target": "host", "place": [path]}),
            ("allreduce_int6", f"input {path}", {"inputs": [path, path]}),
        ]
    cases += [
        ("compile_kernel", "output_dir is a file", {"source": "ok.npy", "targets": ["gfx1201"], "output_dir": "ok.npy"}),
        ("compile_kernel", "output_dir outside", {"source": "ok.npy", "targets": ["gfx1201"], "output_dir": "link_out"}),
        ("compile_kernel", "define injection", {"source": "ok.npy", "targets": ["gfx1201"], "defines": ["X=1; rm -rf /", "-o/tmp/x"]}),
        ("compile_kernel", "flag injection", {"source": "ok.npy", "targets": ["gfx1201"], "extra_flags": ["-o", "/tmp/hyperloom-pwned"]}),
        ("compile_kernel", "unknown target", {"source": "ok.npy", "targets": ["gfx9999"]}),
        ("roofline", "out_dir is a file", {"target": "host", "out_dir": "ok.npy"}),
        ("bench", "reference outside the workspace", {"spec": "spec_evil", "target": "host"}),
        ("spec", "reference outside the workspace", {"action": "check", "spec": "spec_evil"}),
        ("tune", "reference outside the workspace", {"action": "start", "spec": "spec_evil", "background": False}),
        ("tune", "sqlite storage outside", {"action": "start", "spec": "spec_evil", "strategy": "tpe", "storage": f"sqlite:///{outside}/x.db"}),
        ("tune", "storage with grid", {"action": "start", "spec": "spec_evil", "strategy": "grid", "storage": "sqlite:///x.db"}),
        ("tune", "infinite roof", {"action": "start", "spec": "spec_evil", "roof_gbps": "inf"}),
        ("tune", "session outside", {"action": "start", "spec": "spec_evil", "session": "link_out/s"}),
        ("tune", "session through a symlink out", {"action": "status", "session": "link_out"}),
        ("tune", "a dangling session", {"action": "report", "session": "dangling"}),
        ("tune", "a session name with a path", {"action": "status", "session": "../../x"}),
        ("tune", "a source change to a session that is not there", {"action": "propose", "session": "dangling", "source": "ok.npy"}),
        ("tune", "a source change and a diff at once",
         {"action": "propose", "session": "dangling", "source": "ok.npy", "diff": "--- a\n+++ b\n"}),
        ("tune", "nothing to propose", {"action": "propose", "session": "dangling"}),
        ("bench_command", "empty command", {"command": []}),
        ("bench_command", "empty program", {"command": [""]}),
        ("bench_command", "not a program", {"command": ["/etc/passwd"]}),
        ("bench_command", "a folder", {"command": ["a_folder"]}),
        ("allreduce_int6", "shape overflowing 64 bits", {"ranks": 2, "shape": [4294967296, 4294967296]}),
        ("allreduce_int6", "a huge dimension", {"ranks": 2, "shape": [10**30]}),
        ("allreduce_int6", "too much memory over all ranks", {"ranks": 64, "shape": [67108864]}),
        ("allreduce_int6", "a forged .npy header", {"inputs": ["huge_header.npy", "huge_header.npy"]}),
        ("allreduce_int6", "out outside", {"ranks": 2, "shape": [4], "out": "link_out/r.npy"}),
        ("detect", "root outside", {"root": "../.."}),
        ("spec", "source outside", {"action": "init", "source": "link_out/x.cu", "entry": "k"}),
        ("spec", "entry injection", {"action": "init", "source": "ok.npy", "entry": "k; rm -rf /"}),
        ("spec", "unknown example", {"action": "example", "name": "nope"}),
        ("spec", "out outside", {"action": "example", "name": "copy", "out": "link_out/copy"}),
        ("isa", "a directive", {"action": "probe", "target": "gfx1201", "lines": [".include \"/etc/passwd\""]}),
        ("isa", "paths outside", {"action": "audit", "target": "gfx1201", "paths": ["link_out"]}),
        ("profile", "trace outside", {"trace": "link_out/trace.json"}),
        ("profile", "a negative replay byte count", {"trace": "ok.npy", "bytes_per_replay": -1}),
        ("profile", "a replay byte count past any GPU", {"trace": "ok.npy", "bytes_per_replay": 10**18}),
        ("serve_sweep", "prompts outside", {"base_url": "http://127.0.0.1:9", "model": "m", "prompts_file": "link_out/p.jsonl"}),
        ("workload", "workload outside", {"action": "freeze", "workload": "link_out/evil.py:build", "name": "w"}),
        ("workload", "a script outside", {"action": "freeze", "workload": "../outside/evil.py"}),
        ("workload", "not a workload", {"action": "freeze", "workload": "rm -rf /", "name": "w"}),
        ("workload", "a session name with a path", {"action": "bench", "name": "../../x"}),
        ("workload", "a session that is not there", {"action": "bench", "name": "nope"}),
        ("workload", "integrate into a session that is not there",
         {"action": "integrate", "name": "nope", "kernel": "rmsnorm", "replace": "m:C.forward"}),
        ("workload", "per_output with an unknown key",
         {"action": "freeze", "workload": "w.py:build", "per_output": {"y": {"tolerance": 1}}}),
        ("workload", "outputs() named as a path out", {"action": "freeze", "workload": "escape.py:build", "name": "escape"}),
        ("workload", "a workload's tolerances for an output it lacks",
         {"action": "freeze", "workload": "badtol.py:build", "name": "badtol"}),
        ("optimize", "workload outside", {"action": "start", "workload": "link_out/w.py:build", "session": "o"}),
        ("optimize", "workload through ..", {"action": "start", "workload": "../w.py:build", "session": "o"}),
        ("optimize", "not a workload", {"action": "start", "workload": "rm -rf /", "session": "o"}),
        ("optimize", "a workload without outputs", {"action": "start", "workload": "plain.py:build", "session": "plain"}),
        ("optimize", "nothing to start", {"action": "start"}),
        ("optimize", "a frozen session that is not there", {"action": "start", "session": "nothing"}),
        ("optimize", "one workload and a list", {"action": "start", "workload": "plain.py:build", "workload_list": ["plain.py:build"]}),
        ("optimize", "a zero budget", {"action": "start", "workload": "plain.py:build", "budget_gpu_hours": 0}),
        ("optimize", "a Ray address that does not answer",
         {"action": "start", "workload_list": ["plain.py:build"], "ray": "127.0.0.1:1", "session": "far"}),
        ("optimize", "ray without a list", {"action": "start", "workload": "plain.py:build", "ray": "local"}),
        ("optimize", "a session name with a path", {"action": "status", "session": "../../x"}),
        ("optimize", "a dangling session", {"action": "report", "session": "dangling"}),
        ("optimize", "stop a session that is not there", {"action": "stop", "session": "nothing"}),
        ("optimize", "propose to a session that is not there", {"action": "propose", "session": "nothing", "levers": ["compile"]}),
        ("optimize", "propose nothing", {"action": "propose", "session": "nothing", "levers": []}),
    ]
    (workspace / "plain.py").write_text("def build():\n    return lambda: None\n")
    outputs = ("import numpy as np\nclass W:\n    tolerances = {TOL}\n    def step(self): pass\n    def outputs(self): return {{{NAME!r}: "
               "np.ones(2)}}\ndef build(): return W()\n")
    (workspace / "escape.py").write_text(outputs.format(TOL="{}", NAME="../" * 12 + "escaped"))
    (workspace / "badtol.py").write_text(outputs.format(TOL="{'z': {'atol': 1}}", NAME="y"))
    (workspace / ".hyperloom" / "tune").mkdir(parents=True)
    (workspace / ".hyperloom" / "tune" / "dangling").symlink_to(workspace / "gone")
    (workspace / ".hyperloom" / "optimize").mkdir(parents=True)
    (workspace / ".hyperloom" / "optimize" / "dangling").symlink_to(workspace / "gone")
    return cases


def _listing(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*") if "ws" not in p.relative_to(folder).parts[:1]}


async def test_a_hostile_corpus_is_refused_with_cause_and_next_step_and_nothing_leaves_the_workspace(tmp_path):
    workspace, outside = tmp_path / "ws", tmp_path / "outside"
    workspace.mkdir()
    outside.mkdir()
    np.save(workspace / "ref.npy", np.linspace(-1, 1, 64, dtype=np.float32))
    hand = hostile(workspace, outside)
    before = _listing(tmp_path)
    params = StdioServerParameters(command=str(SERVER), cwd=str(workspace), env={**os.environ, "HYPERLOOM_WORKSPACE": str(workspace)})
    counts = {"calls": 0, "refused": 0, "valid": 0}
    slowest = (0.0, "")
    started = time.perf_counter()
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        tools = (await session.list_tools()).tools
        corpus = [(t.name, label, args) for t in tools for label, args in schema_corpus(t)] + hand

        async def call(name: str, args: dict[str, Any]):
            nonlocal slowest
            t0 = time.perf_counter()
            result = await session.call_tool(name, args, read_timeout_seconds=CALL_TIMEOUT_S)
            elapsed = time.perf_counter() - t0
            slowest = max(slowest, (elapsed, f"{name} {str(args)[:80]}"))
            counts["calls"] += 1
            return result

        for index, (name, label, args) in enumerate(corpus):
            result = await call(name, args)
            text = " ".join(getattr(block, "text", "") for block in result.content)
            # a spec it can read is judged, not refused: problems with next steps
            if name == "spec" and args.get("action") == "check" and not result.is_error:
                problems = result.structured_content["problems"]
                assert result.structured_content["ok"] is False and problems and all(p["next_step"]
                                                                                     for p in problems), f"{label}: {text[:300]}"
                counts["refused"] += 1
                continue
            assert result.is_error, f"{name} {label}: accepted {str(args)[:200]} -> {text[:300]}"
            assert "Next step" in text, f"{name} {label}: no next step in {text[:300]}"
            assert len(text) <= MESSAGE_LIMIT and "errors.pydantic.dev" not in text, f"{name} {label}: {len(text)} chars: {text[:200]}"
            counts["refused"] += 1
            if index % 40 == 0:  # the server still answers a valid call between hostile ones
                valid = await call("correctness_gate", {"candidates": ["ref.npy"], "references": ["ref.npy"], "atol": 0, "rtol": 0})
                assert not valid.is_error and valid.structured_content["passed"] is True
                counts["valid"] += 1
    elapsed_s = time.perf_counter() - started
    print(f"\nadversarial: {counts['calls']} calls ({counts['refused']} hostile, all refused; {counts['valid']} valid, all answered) "
          f"in {elapsed_s:.1f} s; slowest {slowest[0]:.2f} s ({slowest[1]})")
    assert counts["refused"] >= 1000 and slowest[0] < CALL_TIMEOUT_S
    assert _listing(tmp_path) - before == set(), "files appeared outside the workspace"
    assert not (outside / "PWNED").exists() and not Path("/tmp/hyperloom-pwned").exists()
