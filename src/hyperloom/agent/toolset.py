"""Which function definitions a request carries: the current phase's MCP tools plus a few agent-side tools
(`list_tools`, `use_tools`, `read_skill`, and with HYPERLOOM_ALLOW_WEB=1 `web_fetch`, `web_search`). Every MCP
tool stays callable: calling one of another phase moves the offer to that phase."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mcp.types import Tool

PREFIX = "mcp__hyperloom__"  # the names Claude Code gives these tools (the skill calls them by their bare names under any prefix)

# The skill's loop (SKILL.md, "The loop"), and the tools each phase names. A tool outside every phase is offered
# on demand only (list_tools shows it under "other").
PHASES: dict[str, tuple[str, ...]] = {
    "DETECT": ("detect",),
    "MAP": ("isa", "compile_kernel", "disasm_verify"),
    "WORKLOAD": ("workload",),
    "FIND-GAPS": ("profile", "spec", "gate_freeze", "correctness_gate", "roofline", "bench", "bench_command"),
    "TUNE": ("tune",),
    "FIX": ("compile_kernel", "disasm_verify", "correctness_gate", "spec"),
    "VALIDATE": ("correctness_gate", "disasm_verify", "bench"),
}


def _function(name: str, description: str, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "description": description,
                                             "parameters": {"type": "object", "properties": properties, "required": required}}}


META_TOOLS = (
    _function("list_tools", "List every Hyperloom tool by phase, with one line each.", {}, []),
    _function("use_tools", "Offer more Hyperloom tools from the next turn on: a phase's tools, or tools by name.",
              {"phase": {"type": "string", "enum": list(PHASES)}, "names": {"type": "array", "items": {"type": "string"}}}, []),
    _function("read_skill", "Read a page of the Hyperloom skill (no page: the list of pages).", {"page": {"type": "string"}}, []),
)
WEB_TOOLS = (
    _function("web_fetch", "Fetch a web page as text (outside material: cite it, never report it as a measurement).",
              {"url": {"type": "string"}}, ["url"]),
    _function("web_search", "Search the web through the user's configured search endpoint (outside material, not a measurement).",
              {"query": {"type": "string"}}, ["query"]),
)


def mcp_function(tool: Tool) -> dict[str, Any]:
    return {"type": "function", "function": {"name": PREFIX + tool.name, "description": tool.description or "",
                                             "parameters": tool.input_schema}}


def _one_line(text: str, limit: int = 80) -> str:
    first = " ".join((text or "").split()).split(". ")[0].split(": ")[0]
    return first if len(first) <= limit else first[:limit - 3].rsplit(" ", 1)[0] + "..."


@dataclass
class Toolset:
    """The MCP tools known, the agent-side tools, and the names offered in the next request."""

    tools: dict[str, Tool]
    web: bool = False
    phase: str = "DETECT"
    extra: list[str] = field(default_factory=list)  # asked for by name with use_tools
    last_called: str | None = None

    @property
    def agent_tools(self) -> tuple[dict[str, Any], ...]:
        return META_TOOLS + (WEB_TOOLS if self.web else ())

    @property
    def agent_names(self) -> set[str]:
        return {spec["function"]["name"] for spec in self.agent_tools}

    def offered(self) -> list[str]:
        """Most wanted first (a short context keeps a prefix): tools asked for by name, the last one called, the phase's."""
        names = [n for n in self.extra if n in self.tools]
        if self.last_called in self.tools and self.last_called not in names:
            names.append(self.last_called)
        return names + [n for n in PHASES.get(self.phase, ()) if n in self.tools and n not in names]

    def specs(self, limit: int | None = None) -> list[dict[str, Any]]:
        """The first `limit` offered MCP tools (all when None) and the agent's tools."""
        return [mcp_function(self.tools[n]) for n in self.offered()[:limit]] + list(self.agent_tools)

    def phase_of(self, name: str) -> str | None:
        if name in PHASES.get(self.phase, ()):
            return self.phase
        return next((phase for phase, names in PHASES.items() if name in names), None)

    def called(self, name: str) -> None:
        """The model called an MCP tool: its phase becomes the current one (or the tool joins the offer)."""
        phase = self.phase_of(name)
        if phase is not None and phase != self.phase:
            self.phase = phase
        self.last_called = name

    def listing(self) -> str:
        lines = []
        placed: set[str] = set()
        for phase, names in PHASES.items():
            present = [n for n in names if n in self.tools]
            placed.update(present)
            marker = " (offered now)" if phase == self.phase else ""
            lines.append(f"{phase}{marker}:")
            lines += [f"  {PREFIX}{n}: {_one_line(self.tools[n].description or '')}" for n in present]
        other = sorted(set(self.tools) - placed)
        if other:
            lines.append("other (use_tools names=[...]):")
            lines += [f"  {PREFIX}{n}: {_one_line(self.tools[n].description or '')}" for n in other]
        return "\n".join(lines)

    def use(self, arguments: dict[str, Any]) -> str:
        phase, names = arguments.get("phase"), arguments.get("names") or []
        if phase is not None and phase not in PHASES:
            return f"ERROR: unknown phase {phase!r}; phases: {', '.join(PHASES)}."
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            return "ERROR: names must be a list of tool names."
        bare = [n.removeprefix(PREFIX) for n in names]
        unknown = [n for n in bare if n not in self.tools]
        if unknown:
            return f"ERROR: unknown tools {', '.join(unknown)}; call list_tools for the names."
        if phase is not None:
            self.phase = phase
        self.extra = bare + [n for n in self.extra if n not in bare]
        return "Offered from the next turn on: " + ", ".join(PREFIX + n for n in self.offered()) + "."
