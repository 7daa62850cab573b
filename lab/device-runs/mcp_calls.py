"""The device scripts' MCP client: the hyperloom server over stdio in a workspace, as an agent host starts it, and
each call of one family tool logged (arguments, seconds, is_error, the text's head) and summarized as it returns.

    async with logged_tool(ws, "workload", out / "calls.json") as call:
        frozen = await call({"action": "freeze", ...})
    copy_named(ws / ".hyperloom" / "workload" / "NAME" / "bench", out, ("result.json", "report.md"))
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

Call = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]


@asynccontextmanager
async def logged_tool(ws: Path, tool: str, log_file: Path, read_timeout_s: float = 3600.0, text_chars: int = 3000) -> AsyncIterator[Call]:
    """call(arguments) calls `tool` and returns its structured content; every call made is written to `log_file` at the end."""
    env = {**os.environ, "HYPERLOOM_WORKSPACE": str(ws)}
    server = StdioServerParameters(command=sys.executable, args=["-m", "hyperloom.mcp_server.server"], cwd=str(ws), env=env)
    log: list[dict[str, Any]] = []
    async with stdio_client(server) as (read, write), ClientSession(read, write) as client:
        await client.initialize()

        async def call(arguments: dict[str, Any]) -> dict[str, Any]:
            started = time.perf_counter()
            result = await client.call_tool(tool, arguments, read_timeout_seconds=read_timeout_s)
            text = " ".join(getattr(b, "text", "") for b in result.content)
            seconds = time.perf_counter() - started
            log.append({"arguments": arguments, "seconds": round(seconds, 1), "is_error": result.is_error, "text": text[:text_chars]})
            structured = result.structured_content or {}
            summary = structured.get("summary") or (structured.get("status") or {}).get("summary") or text
            print(f"{tool} {arguments['action']}: {seconds:.0f} s: {summary[:400]}", flush=True)
            return structured

        try:
            yield call
        finally:
            log_file.write_text(json.dumps(log, indent=2))


def copy_named(folder: Path, out: Path, names: tuple[str, ...], prefix: str = "") -> None:
    """The files of `names` that `folder` holds, copied into `out` (as prefix + name)."""
    out.mkdir(parents=True, exist_ok=True)
    for name in names:
        if (folder / name).is_file():
            shutil.copy(folder / name, out / f"{prefix}{name}")
