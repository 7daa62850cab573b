"""Protocol glue only: the stdio MCP server that exposes the tool catalog."""
