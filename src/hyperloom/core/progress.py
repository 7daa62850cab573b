"""How long work reports progress to whichever front end called it."""

from __future__ import annotations

from collections.abc import Callable

ProgressFn = Callable[[int, int], None]
"""Called with (done, total) in units the tool chooses; the MCP server and the CLI render it."""
