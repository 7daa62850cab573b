"""The `hyperloom` command line: the same functions and models as the MCP server."""
