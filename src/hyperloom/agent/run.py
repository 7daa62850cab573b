"""`hyperloom agent`: a local model (Lemonade by default) driving hyperloom-mcp over stdio, with the skill as instructions."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from mcp import ClientSession, StdioServerParameters, stdio_client

from hyperloom.agent.endpoint import ChatEndpoint
from hyperloom.agent.loop import PREFIX, Outcome, run_loop
from hyperloom.agent.transcript import Transcript
from hyperloom.core.errors import HyperloomError
from hyperloom.core.evidence import utc_now
from hyperloom.hosts.locations import SKILL_NAME
from hyperloom.validators.skill import split_frontmatter


@dataclass(frozen=True)
class AgentConfig:
    prompt: str
    endpoint: ChatEndpoint
    model: str | None
    max_turns: int
    transcript: Path
    workspace: Path


def skill_instructions() -> str:
    """The system prompt: how the tools are named here, then the skill's body and its reference."""
    folder = resources.files("hyperloom").joinpath("skill", SKILL_NAME)
    parts = split_frontmatter(folder.joinpath("SKILL.md").read_text(encoding="utf-8"))
    if parts is None:
        raise HyperloomError("the packaged SKILL.md has no frontmatter block", "reinstall hyperloom")
    reference = folder.joinpath("reference.md").read_text(encoding="utf-8")
    return (
        f"You are a kernel-optimization agent working in {os.getcwd()}. You call Hyperloom's MCP tools as functions "
        f"named {PREFIX}<tool>, exactly as the skill below names them; a tool the function list does not contain is "
        "not available. Follow the skill.\n\n"
        f"{parts[1].strip()}\n\n# reference.md\n\n{reference.strip()}\n"
    )


def default_transcript_path(workspace: Path) -> Path:
    return workspace / "hyperloom-transcripts" / f"agent-{utc_now().strftime('%Y%m%dT%H%M%SZ')}.json"


async def run_agent(config: AgentConfig, on_event: Callable[[str], None] = lambda line: None) -> tuple[Outcome, Transcript]:
    """Resolve the model, start hyperloom-mcp, run the loop; the transcript records errors too."""
    model = config.model or _first_model(config.endpoint)
    transcript = Transcript(config.transcript, endpoint=config.endpoint.base_url, model=model, prompt=config.prompt, max_turns=config.max_turns)
    server = StdioServerParameters(
        command=sys.executable, args=["-m", "hyperloom.mcp_server.server"], cwd=str(config.workspace), env=dict(os.environ)
    )
    server_log = config.transcript.with_suffix(".server.log")
    try:
        with server_log.open("w", encoding="utf-8") as errlog:
            async with stdio_client(server, errlog=errlog) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                outcome = await run_loop(
                    config.endpoint, model, session, skill_instructions(), config.prompt, transcript, config.max_turns, on_event=on_event
                )
    except BaseException as exc:
        error = _hyperloom_error(exc)
        transcript.finish("error", error=str(error or exc))
        if error is not None and error is not exc:
            raise error from exc  # unwrapped from the task group the stdio client runs in
        raise
    return outcome, transcript


def _hyperloom_error(exc: BaseException) -> HyperloomError | None:
    """The HyperloomError inside `exc`, looking through exception groups."""
    if isinstance(exc, HyperloomError):
        return exc
    for inner in getattr(exc, "exceptions", ()):
        if (found := _hyperloom_error(inner)) is not None:
            return found
    return None


def _first_model(endpoint: ChatEndpoint) -> str:
    models = endpoint.models()
    if not models:
        raise HyperloomError(f"{endpoint.base_url} serves no model", "load a model that supports tool calling into the server, or pass --model")
    return models[0]
