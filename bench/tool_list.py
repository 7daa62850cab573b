"""What tools/list costs a host's context: each tool's share of the compact JSON a plain MCP client receives (the
SDK's list_tools, dumped without nulls), against the 40,000-byte budget tests/test_mcp_memory.py keeps.

    .venv/bin/python bench/tool_list.py
"""

from __future__ import annotations

import json

import anyio
from mcp import Client

from hyperloom.mcp_server.server import build_server

BUDGET_BYTES = 40_000


def _bytes(value: object) -> int:
    return len(json.dumps(value, separators=(",", ":")))


async def main() -> None:
    async with Client(build_server(), mode="legacy") as client:
        listed = (await client.list_tools()).tools
    dumped = [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in listed]
    total = _bytes(dumped)
    print(f"{'tool':18} {'bytes':>6} {'share':>6} {'descr':>6} {'input':>6} {'output':>6}")
    for tool in dumped:
        size, output = _bytes(tool), _bytes(tool["outputSchema"]) if "outputSchema" in tool else "-"  # a family lists none
        print(f"{tool['name']:18} {size:6} {size / total:6.1%} {len(tool['description']):6} {_bytes(tool['inputSchema']):6} {output:>6}")
    print(f"tools/list: {total} bytes for {len(dumped)} tools, budget {BUDGET_BYTES} ({total / BUDGET_BYTES:.1%}, {BUDGET_BYTES - total} "
          "left); MEASURED with mcp's Client")


if __name__ == "__main__":
    anyio.run(main)
