"""Tool registration as a host sees it: flat described parameters, truthful hints, typed output."""

from __future__ import annotations

import json

import jsonschema
import numpy as np
import pytest
from mcp import Client

from hyperloom.mcp_server.server import build_server
from hyperloom.tools.catalog import CATALOG

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend():
    return "asyncio"


async def test_every_tool_has_flat_described_parameters_and_an_output_schema():
    async with Client(build_server(), mode="legacy") as client:
        listed = (await client.list_tools()).tools
    assert [t.name for t in listed] == [entry.name for entry in CATALOG]
    for t in listed:
        assert t.description and t.output_schema and t.title
        for name, prop in t.input_schema["properties"].items():
            assert prop.get("description"), f"{t.name}.{name} has no description"
            assert "$ref" not in str(prop), f"{t.name}.{name} is nested; parameters must stay flat"


async def test_the_tool_list_fits_in_40_kb_with_valid_schemas_both_ways():
    """Hosts put tools/list in the model's context every session (issue 23): lean, yet typed both ways."""
    async with Client(build_server(), mode="legacy") as client:
        listed = (await client.list_tools()).tools
    dumped = [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in listed]
    assert len(json.dumps(dumped, separators=(",", ":"))) <= 40 * 1024
    for t in listed:
        for schema in (t.input_schema, t.output_schema):
            jsonschema.Draft202012Validator.check_schema(schema)
            assert schema["type"] == "object" and schema["properties"], t.name
        assert all("type" in p or "anyOf" in p or "enum" in p for p in t.output_schema["properties"].values()), t.name


async def test_hints_follow_what_each_tool_does():
    async with Client(build_server(), mode="legacy") as client:
        hints = {t.name: t.annotations for t in (await client.list_tools()).tools}
    assert hints["correctness_gate"].read_only_hint and hints["correctness_gate"].idempotent_hint
    assert not hints["gate_freeze"].read_only_hint and hints["gate_freeze"].destructive_hint
    open_world = {name for name, h in hints.items() if h.open_world_hint}
    assert open_world == {"bench_command", "profile", "serve_sweep"}  # any program, any workload, a network server: the tools reaching beyond the workspace
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
