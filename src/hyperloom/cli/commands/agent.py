"""`hyperloom agent PROMPT`: a local model behind an OpenAI-compatible endpoint drives the Hyperloom tools."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import anyio

from hyperloom.agent.endpoint import DEFAULT_BASE_URL, ChatEndpoint
from hyperloom.agent.run import AgentConfig, default_transcript_path, run_agent
from hyperloom.cli.exits import EXIT_FAILED_VERDICT, EXIT_OK
from hyperloom.core.errors import HyperloomError
from hyperloom.core.workspace import Workspace


def run(args: argparse.Namespace) -> int:
    prompt = sys.stdin.read() if args.prompt == "-" else args.prompt
    if not prompt.strip():
        raise HyperloomError("the prompt is empty", "give the task as an argument, or '-' to read it from standard input")
    workspace = Workspace.from_env().root
    config = AgentConfig(
        prompt=prompt,
        endpoint=ChatEndpoint(args.base_url, args.api_key or os.environ.get("LEMONADE_API_KEY"), args.timeout),
        model=args.model,
        max_turns=args.max_turns,
        transcript=Path(args.transcript) if args.transcript else default_transcript_path(workspace),
        workspace=workspace,
    )

    def show(line: str) -> None:
        print(line, file=sys.stderr)

    outcome, transcript = anyio.run(run_agent, config, show)
    print(f"transcript: {transcript.path}", file=sys.stderr)
    if outcome.status == "turn_limit":
        print(f"hyperloom: stopped after {outcome.turns} turns without a final answer (raise --max-turns to allow more)", file=sys.stderr)
        return EXIT_FAILED_VERDICT
    print(outcome.answer)
    return EXIT_OK


def configure(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "A tool-calling loop: the model at --base-url gets the skill as instructions and the hyperloom-mcp tools "
        "(started over stdio in the workspace) as functions; every call and result is saved in a transcript. It "
        "talks to no address other than --base-url. Exit 0 with an answer, 1 at the turn limit, 2 on errors."
    )
    parser.add_argument("prompt", help="the task, or '-' to read it from standard input")
    parser.add_argument("--base-url", default=DEFAULT_BASE_URL, help=f"OpenAI-compatible API root (default: Lemonade, {DEFAULT_BASE_URL})")
    parser.add_argument("--model", help="model id (default: the first model the endpoint lists)")
    parser.add_argument("--api-key", help="bearer token, if the endpoint needs one (default: $LEMONADE_API_KEY)")
    parser.add_argument("--max-turns", type=int, default=20, help="model replies allowed before stopping (default 20)")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds to wait for one model reply (default 300)")
    parser.add_argument("--transcript", help="where to save the transcript (default: hyperloom-transcripts/agent-<UTC time>.json)")
    parser.set_defaults(handler=run)
