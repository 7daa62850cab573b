"""The local agent: an OpenAI-compatible model calling Hyperloom's MCP tools with the skill as its instructions."""
