#!/bin/sh
# The Claude Code plugin's MCP server (.claude-plugin/plugin.json runs it from the plugin's copy of this repository):
# the hyperloom-mcp of the .venv that scripts/setup.sh or scripts/demo.sh made in the clone, copied with the plugin,
# else hyperloom-mcp on PATH (pipx install .), else one line that says what to do.
root=$(CDPATH= cd -- "$(dirname -- "$0")/.." && pwd)
if [ -x "$root/.venv/bin/hyperloom-mcp" ]; then
  exec "$root/.venv/bin/hyperloom-mcp" "$@"
fi
if command -v hyperloom-mcp >/dev/null 2>&1; then
  exec hyperloom-mcp "$@"
fi
echo "hyperloom plugin: no hyperloom-mcp in $root/.venv or on PATH. Next step: run 'bash scripts/setup.sh' in the Hyperloom clone, then 'claude plugin marketplace update hyperloom' and reinstall the plugin (claude plugin uninstall hyperloom@hyperloom; claude plugin install hyperloom@hyperloom), or 'pipx install .' in the clone so that hyperloom-mcp is on PATH." >&2
exit 127
