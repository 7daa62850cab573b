"""The stdio MCP server `hyperloom-mcp`."""

from __future__ import annotations

from mcp.server import MCPServer

from hyperloom import __version__
from hyperloom.mcp_server.registry import build_tool
from hyperloom.tools.catalog import mcp_tools

INSTRUCTIONS = (
    "Hyperloom's instruments for AMD-first GPU kernel work. Every number carries evidence tagged MEASURED or "
    "ASSUMED; only MEASURED closes a question. Declare the tolerance before the first trial (gate_freeze), then "
    "judge every candidate with correctness_gate before any speed counts. Paths are relative to the workspace root "
    "(HYPERLOOM_WORKSPACE, default the server's working directory)."
)


def build_server() -> MCPServer:
    return MCPServer("hyperloom", version=__version__, instructions=INSTRUCTIONS, log_level="INFO",
                     tools=[build_tool(entry) for entry in mcp_tools()])


def main() -> None:
    build_server().run()


if __name__ == "__main__":
    main()
