"""The `hyperloom` commands that are not MCP tools; every tool's command comes from the catalog instead."""

from __future__ import annotations

from typing import NamedTuple

_C = "hyperloom.cli.commands."


class Command(NamedTuple):
    """A command that is no catalog tool: where it sits, its one-line help, and the 'module:function' that adds its
    options and handler (imported only when the command runs or help lists every option)."""

    path: tuple[str, ...]
    configure: str
    help: str
    aliases: tuple[str, ...] = ()


EXTRAS: tuple[Command, ...] = (
    Command(("demo",), _C + "demo:configure", "Run the loop on the shipped decode kernel through the MCP server and write a report"),
    Command(("spec", "schema"), _C + "spec:configure_schema", "Print the JSON Schema of kernel.yaml (validators/kernel_spec.schema.json)"),
    Command(("allreduce", "bench"), _C + "allreduce:configure_bench",
            "Time allreduce_int6 against the backend's native bf16 all-reduce, 1 MiB to 1 GiB"),
    Command(("tools",), _C + "tools:configure", "List the MCP tools with their schemas (a family of verbs: input only)"),
    Command(("toolchain",), _C + "toolchain:configure", "Where each external tool was found, and its version"),
    Command(("validate-skill",), _C + "validate_skill:configure",
            "Check a skill folder against amd/skills' validator, its evals check and the Agent Skills spec"),
    Command(("install",), _C + "install:configure", "Install the skill and register hyperloom-mcp with Claude Code or Codex"),
    Command(("uninstall",), _C + "install:configure_uninstall", "Remove what `hyperloom install` added to Claude Code or Codex"),
    Command(("agent",), _C + "agent:configure",
            "Let a local model (Lemonade or any OpenAI-compatible endpoint) run the Hyperloom tools with the skill"),
)
