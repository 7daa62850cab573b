"""Benchmark: how many tokens `hyperloom agent`'s first request takes, and the tool definitions' share of them.

Target (issue 33): the first request <= 4,096 tokens as the server counts them, so a llama.cpp or Lemonade server
started with its default context works. The request is built as the agent builds it (hyperloom-mcp started over
stdio for its tool list, the compact and minimal system prompts, the phase's tools), then counted:

  - with --base-url of a llama.cpp server: by the server's own template and tokenizer (/apply-template, /tokenize),
    MEASURED; the tool share is the count with the definitions minus the count without them. A chat template that
    renders no tools (the random-weight test GGUF's) gives a share of 0: the characters' share is printed beside it;
  - without: characters x 0.4 tokens (ASSUMED; common BPE vocabularies take 0.25 to 0.35 per character).

The old first request (the whole SKILL.md and reference.md, every tool) is counted the same way, for comparison.

Run: .venv/bin/python bench/agent_prompt.py [--base-url http://127.0.0.1:8080/v1] [--prompt TEXT]
"""

from __future__ import annotations

import argparse
import os
import sys
from importlib import resources

import anyio
from mcp import ClientSession, StdioServerParameters, stdio_client

from hyperloom.agent.context import ASSUMED_TOKENS_PER_CHAR, TokenCounter, request_chars
from hyperloom.agent.endpoint import ChatEndpoint, new_client
from hyperloom.agent.loop import first_choices
from hyperloom.agent.skill_pages import load_skill_pages
from hyperloom.agent.toolset import PREFIX, Toolset, mcp_function
from hyperloom.hosts.locations import SKILL_NAME

TARGET_TOKENS = 4096


async def _tools() -> dict:
    server = StdioServerParameters(command=sys.executable, args=["-m", "hyperloom.mcp_server.server"], env=dict(os.environ))
    with open(os.devnull, "w") as quiet:
        async with stdio_client(server, errlog=quiet) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            return {tool.name: tool for tool in (await session.list_tools()).tools}


def _old_request(tools: dict, prompt: str) -> tuple[list, list]:
    folder = resources.files("hyperloom").joinpath("skill", SKILL_NAME)
    system = folder.joinpath("SKILL.md").read_text(encoding="utf-8") + folder.joinpath("reference.md").read_text(encoding="utf-8")
    return [{"role": "system", "content": system}, {"role": "user", "content": prompt}], [mcp_function(t) for t in tools.values()]


async def run(base_url: str | None, prompt: str) -> int:
    tools = await _tools()
    toolset = Toolset(tools)
    choices = first_choices(load_skill_pages(), toolset, os.getcwd(), prompt)
    rows = [("before issue 33: SKILL.md + reference.md, every tool", *_old_request(tools, prompt))]
    rows += [(c.label, c.messages, c.tools) for c in (choices[0], choices[len(toolset.offered())], choices[-1])]
    endpoint = ChatEndpoint(base_url or "http://127.0.0.1:9/v1")
    async with new_client(endpoint) as client:
        counter = TokenCounter(client, endpoint, "") if base_url else None
        how = "the server's /apply-template and /tokenize (MEASURED)" if base_url else f"characters x {ASSUMED_TOKENS_PER_CHAR} (ASSUMED)"
        print(f"first request of `hyperloom agent`, counted by {how}; target <= {TARGET_TOKENS:,} tokens")
        print(f"{'request':<62} {'tokens':>7} {'tools':>7} {'share':>6} {'chars share':>11} {'fits':>5}")
        for label, messages, specs in rows:
            if counter is not None:
                total, counted_by = await counter.count(messages, specs)
                bare, _ = await counter.count(messages, [])
                if "tokenize" not in counted_by:
                    label = f"{label} [estimated: the server could not tokenize it]"
            else:
                total = int(request_chars(messages, specs) * ASSUMED_TOKENS_PER_CHAR)
                bare = int(request_chars(messages, []) * ASSUMED_TOKENS_PER_CHAR)
            tool_chars = request_chars([], specs) - 2
            chars_share = tool_chars / max(request_chars(messages, specs), 1)
            print(f"{label:<62} {total:>7,} {total - bare:>7,} {(total - bare) / max(total, 1):>6.0%} {chars_share:>11.0%} "
                  f"{'yes' if total <= TARGET_TOKENS else 'NO':>5}"
                  f"  ({len(specs)} definitions: {', '.join(s['function']['name'].removeprefix(PREFIX) for s in specs)})"[:400])
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base-url", help="a llama.cpp server's OpenAI API root, to count with its tokenizer (default: estimate)")
    parser.add_argument("--prompt", default="Make kernels/decode faster on this GPU without changing its results.")
    args = parser.parse_args()
    return anyio.run(run, args.base_url, args.prompt)


if __name__ == "__main__":
    sys.exit(main())
