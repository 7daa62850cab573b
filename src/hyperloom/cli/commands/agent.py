"""`hyperloom agent PROMPT`: a local model behind an OpenAI-compatible endpoint drives the Hyperloom tools."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import anyio

from hyperloom.agent.endpoint import DEFAULT_BASE_URL, ChatEndpoint
from hyperloom.agent.fit import ReplyBudget
from hyperloom.agent.run import EXIT_INTERRUPTED, AgentConfig, default_transcript_path, run_agent
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
        endpoint=ChatEndpoint(args.base_url, args.api_key or os.environ.get("LEMONADE_API_KEY"), args.timeout,
                              progress_interval_s=min(10.0, max(args.timeout / 4, 0.5))),
        model=args.model,
        max_turns=args.max_turns,
        transcript=Path(args.transcript) if args.transcript else default_transcript_path(workspace),
        workspace=workspace,
        context_tokens=args.context,
        budget=ReplyBudget(max_tokens=args.max_tokens, min_tokens=min(ReplyBudget().min_tokens, args.max_tokens)),
    )

    def show(line: str) -> None:
        print(line, file=sys.stderr)

    outcome, transcript = anyio.run(run_agent, config, show)
    print(f"transcript: {transcript.path}", file=sys.stderr)
    if outcome.status == "interrupted":
        print("hyperloom: interrupted (Ctrl-C); the MCP server is closed and the transcript says so", file=sys.stderr)
        return EXIT_INTERRUPTED
    if outcome.status == "turn_limit":
        print(f"hyperloom: stopped after {outcome.turns} turns without a final answer (raise --max-turns to allow more)", file=sys.stderr)
        return EXIT_FAILED_VERDICT
    print(outcome.answer)
    return EXIT_OK


def _positive(text: str) -> int:
    value = int(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive number of tokens, not {text}")
    return value


def configure(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "A tool-calling loop: the model at --base-url gets the skill as instructions and the hyperloom-mcp tools "
        "(started over stdio in the workspace) as functions; every call and result is saved in a transcript. Each request "
        "is fitted to the server's context (read from the server, or --context). It talks to no address other than "
        "--base-url unless HYPERLOOM_ALLOW_WEB=1 (web_fetch; web_search through HYPERLOOM_SEARCH_URL). Exit 0 with an answer, "
        "1 at the turn limit, 2 on errors, 130 on Ctrl-C."
    )
    parser.add_argument("prompt", help="the task, or '-' to read it from standard input")
    parser.add_argument("--base-url", default=DEFAULT_BASE_URL, help=f"OpenAI-compatible API root (default: Lemonade, {DEFAULT_BASE_URL})")
    parser.add_argument("--model", help="model id (default: the first model the endpoint lists)")
    parser.add_argument("--api-key", help="bearer token, if the endpoint needs one (default: $LEMONADE_API_KEY)")
    parser.add_argument("--max-turns", type=int, default=20, help="model replies allowed before stopping (default 20)")
    parser.add_argument("--timeout", type=float, default=300.0,
                        help="seconds of silence accepted from a server that has the request: before its first token (longer when its "
                             "measured prompt rate says the prompt takes longer) and between tokens (default 300)")
    parser.add_argument("--context", type=_positive,
                        help="tokens of context one request may fill (default: what the server says; 4096 if it says nothing)")
    parser.add_argument("--max-tokens", type=_positive, default=ReplyBudget().max_tokens,
                        help=f"most tokens one reply may take, sent as max_tokens (default {ReplyBudget().max_tokens}; less when the "
                             "context is short)")
    parser.add_argument("--transcript", help="where to save the transcript (default: hyperloom-transcripts/agent-<UTC time>.json)")
    parser.set_defaults(handler=run)
