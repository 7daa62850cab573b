"""`hyperloom agent`: a local model (Lemonade by default) driving hyperloom-mcp over stdio, with the skill as instructions.

The run reads the server's context, starts the MCP server, and loops; Ctrl-C (SIGINT) cancels it at once: the
request in flight is dropped, the MCP server closed, and the transcript says `interrupted`.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path

import anyio
from mcp import ClientSession, StdioServerParameters, stdio_client

from hyperloom.agent.context import ServerContext, TokenCounter, discover_context
from hyperloom.agent.endpoint import ChatEndpoint, EndpointDown, list_models, new_client
from hyperloom.agent.fit import ReplyBudget
from hyperloom.agent.loop import Conversation, LoopSettings, Outcome, run_loop
from hyperloom.agent.skill_pages import load_skill_pages
from hyperloom.agent.toolset import Toolset
from hyperloom.agent.transcript import Transcript
from hyperloom.agent.web import WebConfig, new_web_client, web_config_from_env
from hyperloom.core.errors import HyperloomError
from hyperloom.core.evidence import utc_now

EXIT_INTERRUPTED = 130  # the shell's code for a process ended by SIGINT
MCP_MODULE = "hyperloom.mcp_server.server"


@dataclass(frozen=True)
class AgentConfig:
    prompt: str
    endpoint: ChatEndpoint
    model: str | None
    max_turns: int
    transcript: Path
    workspace: Path
    context_tokens: int | None = None  # --context: overrides what the server says
    budget: ReplyBudget = field(default_factory=ReplyBudget)
    web: WebConfig | None = None  # None: from HYPERLOOM_ALLOW_WEB and HYPERLOOM_SEARCH_URL


def default_transcript_path(workspace: Path) -> Path:
    return workspace / "hyperloom-transcripts" / f"agent-{utc_now().strftime('%Y%m%dT%H%M%SZ')}.json"


async def run_agent(config: AgentConfig, on_event: Callable[[str], None] = lambda line: None) -> tuple[Outcome, Transcript]:
    """Resolve the model and the context, start hyperloom-mcp, run the loop; the transcript records errors and Ctrl-C too."""
    transcript = Transcript(config.transcript, endpoint=config.endpoint.base_url, model=config.model or "", prompt=config.prompt,
                            max_turns=config.max_turns)
    interrupted = anyio.Event()
    outcome: Outcome | None = None
    error: BaseException | None = None

    async def watch_sigint(scope: anyio.CancelScope) -> None:
        try:
            receiver = anyio.open_signal_receiver(signal.SIGINT)
        except (ValueError, RuntimeError, NotImplementedError):  # not the main thread, or no signals here
            return
        with receiver as signals:
            async for _ in signals:
                interrupted.set()
                transcript.finish("interrupted", error="interrupted by SIGINT (Ctrl-C)")
                _stop_mcp_servers()
                scope.cancel()
                return

    async with anyio.create_task_group() as group:
        group.start_soon(watch_sigint, group.cancel_scope)
        try:
            outcome = await _run(config, transcript, on_event)
        except Exception as exc:  # kept for after the group, so it is not wrapped in an exception group
            error = exc
        finally:
            group.cancel_scope.cancel()
    if interrupted.is_set():
        return Outcome("interrupted", "", transcript.data["turns"]), transcript
    if error is not None:
        found = _hyperloom_error(error)
        transcript.finish("error", error=str(found or error) or type(error).__name__)
        if found is not None and found is not error:
            raise found from error  # unwrapped from the task group the stdio client runs in
        raise error
    assert outcome is not None
    return outcome, transcript


async def _run(config: AgentConfig, transcript: Transcript, on_event: Callable[[str], None]) -> Outcome:
    web = config.web or web_config_from_env()
    skill = load_skill_pages()
    server = StdioServerParameters(
        command=sys.executable, args=["-m", MCP_MODULE], cwd=str(config.workspace), env=dict(os.environ)
    )
    server_log = config.transcript.with_suffix(".server.log")
    async with AsyncExitStack() as stack:
        client = await stack.enter_async_context(new_client(config.endpoint))
        entries = await list_models(client, config.endpoint) if config.model is None else await _listed(client, config.endpoint)
        model = config.model or _first_model(entries, config.endpoint)
        transcript.data["model"] = model
        context = await discover_context(client, config.endpoint, model, entries)
        if config.context_tokens is not None:
            context = ServerContext(config.context_tokens, f"--context (the server says {context.tokens:,}: {context.source})", "GIVEN",
                                    context.kind)
        transcript.context({"tokens": context.tokens, "source": context.source, "tag": context.tag, "server": context.kind})
        on_event(f"context: {context.tokens:,} tokens ({context.tag}: {context.source})")
        web_client = await stack.enter_async_context(new_web_client(web)) if web.allowed else None
        if web.allowed:
            on_event("web lookups on (HYPERLOOM_ALLOW_WEB=1): web_fetch"
                     + (", web_search" if web.search_url else ", web_search (no HYPERLOOM_SEARCH_URL)"))
        errlog = stack.enter_context(server_log.open("w", encoding="utf-8"))
        read, write = await stack.enter_async_context(stdio_client(server, errlog=errlog))
        session = await stack.enter_async_context(ClientSession(read, write))
        await session.initialize()
        tools = {tool.name: tool for tool in (await session.list_tools()).tools}
        conv = Conversation(client=client, endpoint=config.endpoint, model=model, context=context,
                            counter=TokenCounter(client, config.endpoint, model),
                            toolset=Toolset(tools, web=web.allowed), skill=skill, transcript=transcript, web=web, web_client=web_client,
                            on_event=on_event, budget=config.budget)
        return await run_loop(conv, session, str(config.workspace), config.prompt, LoopSettings(max_turns=config.max_turns))


def _stop_mcp_servers() -> None:
    """SIGTERM to the hyperloom-mcp this process started (by pid): it runs in a session of its own, so the terminal's
    Ctrl-C never reaches it, and it takes about a second to exit once its stdin closes. Linux only (/proc); elsewhere
    the MCP client's own shutdown closes it."""
    me = str(os.getpid())
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            parent = (entry / "stat").read_text().rsplit(")", 1)[1].split()[1]
            if parent == me and MCP_MODULE.encode() in (entry / "cmdline").read_bytes():
                os.kill(int(entry.name), signal.SIGTERM)
        except (OSError, IndexError, ValueError):
            continue


def _hyperloom_error(exc: BaseException) -> HyperloomError | None:
    """The HyperloomError inside `exc`, looking through exception groups."""
    if isinstance(exc, HyperloomError):
        return exc
    for inner in getattr(exc, "exceptions", ()):
        if (found := _hyperloom_error(inner)) is not None:
            return found
    return None


async def _listed(client, endpoint: ChatEndpoint) -> list[dict]:
    """The /models entries where the server lists them (for the context some servers put there); an unreachable
    server is an error here already."""
    try:
        return await list_models(client, endpoint)
    except EndpointDown:
        raise
    except HyperloomError:
        return []


def _first_model(entries: list[dict], endpoint: ChatEndpoint) -> str:
    if not entries:
        raise HyperloomError(f"{endpoint.base_url} serves no model",
                             "load a model that supports tool calling into the server, or pass --model")
    return str(entries[0]["id"])
