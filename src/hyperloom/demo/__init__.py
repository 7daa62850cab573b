"""`hyperloom demo`: the loop driven through the MCP server over stdio, on the shipped decode kernel."""
