"""Tool registration as a host sees it: flat described parameters, truthful hints, typed output."""

from __future__ import annotations

import json

import jsonschema
import numpy as np
import pytest
from mcp import Client

from hyperloom.mcp_server.server import build_server
from hyperloom.tools.catalog import CATALOG, FAMILIES, mcp_tools

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend():
    return "asyncio"


async def test_every_tool_has_flat_described_parameters_and_a_tool_of_one_verb_an_output_schema():
    async with Client(build_server(), mode="legacy") as client:
        listed = (await client.list_tools()).tools
    assert [t.name for t in listed] == [entry.name for entry in mcp_tools()]
    in_families = {name for family in FAMILIES for _, name in family.actions}
    assert {e.name for e in CATALOG} - in_families <= {t.name for t in listed}  # every entry is a tool or an action of one
    families = {family.name for family in FAMILIES}
    for t in listed:
        assert t.description and t.title
        assert (t.output_schema is None) == (t.name in families), t.name  # a family's fields depend on its action (issue 47)
        for name, prop in t.input_schema["properties"].items():
            assert prop.get("description"), f"{t.name}.{name} has no description"
            assert "$ref" not in str(prop), f"{t.name}.{name} is nested; parameters must stay flat"


async def test_the_tool_list_fits_in_40000_bytes_with_valid_schemas():
    """Hosts put tools/list in the model's context every session (issues 23, 47): lean, yet typed."""
    async with Client(build_server(), mode="legacy") as client:
        listed = (await client.list_tools()).tools
    dumped = [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in listed]
    assert len(json.dumps(dumped, separators=(",", ":"))) <= 40_000  # bench/tool_list.py prints each tool's share
    for t in listed:
        for schema in filter(None, (t.input_schema, t.output_schema)):
            jsonschema.Draft202012Validator.check_schema(schema)
            assert schema["type"] == "object" and schema["properties"], t.name
        assert t.output_schema is None or all("type" in p or "anyOf" in p or "enum" in p
                                              for p in t.output_schema["properties"].values()), t.name


async def test_a_family_answers_with_its_verbs_result_though_it_lists_no_output_schema(workspace):
    from hyperloom.tools.catalog import tool

    async with Client(build_server(), mode="legacy") as client:
        spec = next(t for t in (await client.list_tools()).tools if t.name == "spec")
        example = await client.call_tool("spec", {"action": "example", "name": "rmsnorm", "out": "mine"})
    assert spec.output_schema is None and not example.is_error, example.content
    jsonschema.validate(example.structured_content, tool("spec_example").result.model_json_schema(mode="serialization"))
    assert json.loads(example.content[0].text) == example.structured_content  # the text says the same, for hosts that read only text


async def test_hints_follow_what_each_tool_does():
    async with Client(build_server(), mode="legacy") as client:
        hints = {t.name: t.annotations for t in (await client.list_tools()).tools}
    assert hints["correctness_gate"].read_only_hint and hints["correctness_gate"].idempotent_hint
    assert not hints["gate_freeze"].read_only_hint and hints["gate_freeze"].destructive_hint
    open_world = {name for name, h in hints.items() if h.open_world_hint}
    # any program, any workload, a network server: the tools reaching beyond the workspace
    assert open_world == {"bench_command", "profile", "serve_sweep", "workload", "optimize"}
    assert hints["bench_command"].destructive_hint and not hints["bench"].destructive_hint


async def test_an_inline_call_needs_no_files(workspace):
    async with Client(build_server(), mode="legacy") as client:
        result = await client.call_tool(
            "correctness_gate", {"candidates": [[1.0, 2.0]], "references": [[1.0, 2.5]], "atol": 0.1, "rtol": 0}
        )
    assert result.structured_content["passed"] is False
    assert result.structured_content["cases"][0]["first_mismatches"][0]["index"] == [1]


async def test_a_refusal_reaches_the_model_with_its_next_step(workspace):
    np.save(workspace.root / "a.npy", np.zeros(3))
    async with Client(build_server(), mode="legacy") as client:
        result = await client.call_tool(
            "correctness_gate", {"candidates": ["a.npy"], "references": ["a.npy"], "reference_set": "a.npy", "atol": 0}
        )
    assert result.is_error and "Next step:" in result.content[0].text
    assert not result.content[0].text.startswith("Error executing tool"), result.content[0].text  # the host adds its own "Error:"


def test_the_text_block_is_the_structured_content_without_its_null_fields():
    from hyperloom.mcp_server.registry import answer, without_nulls
    from hyperloom.tools.detect.models import Passed

    assert without_nulls({"a": None, "b": [None, {"c": None, "d": 1}], "e": {"f": None}}) == {"b": [None, {"d": 1}], "e": {}}
    result = answer(Passed(layer="driver", check="amdgpu", summary="loaded"))
    assert json.loads(result.content[0].text) == without_nulls(result.structured_content) == result.structured_content


@pytest.mark.parametrize(("root", "nodes"), [
    *((root, nodes) for root in ("gfx942-mi300x", "gfx1100-rx7900xtx", "gfx1201-rx9070xt", "h200", "vega10-perf-manual")
      for nodes in (1, 8)),
    ("gfx942-mi300x", 64),  # eight MI300X in CPX mode: each XCD its own node
    ("h200", 64),  # GPU checks past the eighth folded into one passed line
])
def test_detect_answers_under_16_kb_on_every_captured_machine_and_with_8_gpus(workspace, root, nodes):
    """Issue 23: a default answer < 16 KB of text and structured content. Without detail detect lists 8 GPUs and counts the rest,
    and names GPUs or nodes that share a value once ('nodes 2-65: gfx942 (38 CUs)')."""
    import shutil

    from detect_helpers import ROOTS
    from hyperloom.mcp_server.registry import answer
    from hyperloom.tools.detect.api import run_detect
    from hyperloom.tools.detect.models import DetectRequest

    shutil.copytree(ROOTS / root, workspace.root / "m", symlinks=True)
    topology = workspace.root / "m" / "sys" / "class" / "kfd" / "kfd" / "topology" / "nodes"
    gpu_nodes = [n for n in sorted(topology.iterdir()) if "simd_count 0" not in (n / "properties").read_text()] if topology.is_dir() else []
    for copy in range(nodes - 1 if gpu_nodes else 0):  # the captured GPU node, copied under new node numbers
        shutil.copytree(gpu_nodes[0], topology / str(100 + copy))
    queries = list((workspace.root / "m" / "commands").glob("nvidia-smi --query-gpu=*"))
    for query in queries:  # the captured GPU's row, copied under new indices and bus ids (an 8-GPU HGX board)
        row = query.read_text().splitlines()[0].split(", ")
        query.write_text("".join(", ".join([str(i), row[1], f"00000000:{0x10 + i:02x}:00.0", *row[3:]]) + "\n" for i in range(nodes)))
    result = answer(run_detect(DetectRequest(root="m"), workspace))
    listed = result.structured_content["gpus"]
    assert not (gpu_nodes or queries) or (len(listed), result.structured_content["more_gpus"]) == (min(nodes, 8), max(0, nodes - 8))
    size = len(result.content[0].text) + len(json.dumps(result.structured_content, separators=(",", ":")))
    assert size < 16 * 1024, size
    gpu_lines = [line for line in result.structured_content["passed"] if line["layer"] == "nvidia" and line["check"].startswith("gpu_")]
    assert not queries or nodes <= 8 or [line["check"] for line in gpu_lines][-2:] == ["gpu_7", f"gpu_8-{nodes - 1}"]


async def test_a_family_is_one_tool_whose_action_picks_the_verb_and_refuses_another_verbs_argument(workspace):
    async with Client(build_server(), mode="legacy") as client:
        tune = next(t for t in (await client.list_tools()).tools if t.name == "tune")
        assert (tune.input_schema["required"] == ["action"]
                and tune.input_schema["properties"]["action"]["enum"] == ["start", "status", "propose", "stop", "report"])
        # a parameter not every action takes says which do
        assert tune.input_schema["properties"]["spec"]["description"].startswith("(start) ")
        assert not tune.annotations.read_only_hint and not tune.annotations.destructive_hint
        missing = await client.call_tool("tune", {"session": "s"})
        other = await client.call_tool("tune", {"action": "status", "session": "s", "strategy": "grid"})
        routed = await client.call_tool("tune", {"action": "status", "session": "s"})
    assert missing.is_error and "needs action, one of start, status" in missing.content[0].text
    assert other.is_error and "does not take strategy (an argument of start)" in other.content[0].text
    assert routed.is_error and "no tune session 's'" in routed.content[0].text  # the status verb ran, on a session that is not there
