"""Installing the skill and the MCP server into agent hosts (Claude Code, Codex), and taking them out again."""
