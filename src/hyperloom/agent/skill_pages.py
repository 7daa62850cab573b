"""The skill for a small context: a compact system prompt (the iron rules and the loop's exit conditions, taken
from SKILL.md) and the rest of the skill as pages the model reads on demand with `read_skill`."""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources

from hyperloom.core.errors import HyperloomError
from hyperloom.hosts.locations import SKILL_NAME
from hyperloom.validators.skill import split_frontmatter

_HEADING = re.compile(r"^(#{2,3}) (.+)$", re.MULTILINE)
_EXIT = re.compile(r"\*\*Exit when\*\*(.+?)(?:\n\n|\Z)", re.DOTALL)
_RULE_TITLE = re.compile(r"^\d+\. \*\*(.+?)\*\*", re.MULTILINE)


def slug(heading: str) -> str:
    words = re.sub(r"[^a-z0-9]+", "-", heading.lower().split(":")[0]).strip("-")
    return words or "page"


@dataclass(frozen=True)
class SkillPages:
    rules: str  # SKILL.md's "Iron rules" section, verbatim
    rule_titles: list[str]
    phases: list[tuple[str, str]]  # (phase, its exit condition)
    pages: dict[str, str]  # page name -> text

    def index(self) -> str:
        return ", ".join(self.pages)


def _sections(text: str, prefix: str = "") -> dict[str, str]:
    """Every ## section of a markdown file, and the ### sections of the loop, by slug."""
    found: dict[str, str] = {}
    marks = list(_HEADING.finditer(text))
    for i, mark in enumerate(marks):
        end = next((m.start() for m in marks[i + 1:] if len(m.group(1)) <= len(mark.group(1))), len(text))
        name = prefix + slug(mark.group(2))
        if name not in found:
            found[name] = text[mark.start():end].strip()
    return found


def load_skill_pages() -> SkillPages:
    folder = resources.files("hyperloom").joinpath("skill", SKILL_NAME)
    parts = split_frontmatter(folder.joinpath("SKILL.md").read_text(encoding="utf-8"))
    if parts is None:
        raise HyperloomError("the packaged SKILL.md has no frontmatter block", "reinstall hyperloom")
    body = parts[1]
    pages = _sections(body)
    for extra in ("reference.md", "spec.md"):
        page = folder.joinpath(extra)
        if page.is_file():
            text = page.read_text(encoding="utf-8")
            pages[extra.removesuffix(".md")] = text.strip()
            pages.update({k: v for k, v in _sections(text, extra.removesuffix(".md") + ":").items()})
    rules = pages.get("iron-rules")
    if rules is None:
        raise HyperloomError("the packaged SKILL.md has no '## Iron rules' section", "reinstall hyperloom")
    phases = []
    for name in ("detect", "map", "find-gaps", "tune", "fix", "validate"):
        text = pages.get(name, "")
        exit_when = _EXIT.search(text)
        phases.append((name.upper(), " ".join(exit_when.group(1).split()) if exit_when else ""))
    return SkillPages(rules=rules, rule_titles=_RULE_TITLE.findall(rules), phases=phases, pages=pages)


def system_prompt(skill: SkillPages, workspace: str, prefix: str, tier: str) -> str:
    """`compact`: the rules verbatim and each phase's exit condition; `minimal`: the rules' titles and the phase names."""
    head = (
        f"You are a kernel-optimization agent working in {workspace}, following the Hyperloom skill. Hyperloom's tools are "
        f"functions named {prefix}<tool>. Only the current phase's tools are listed: call list_tools to see every tool, use_tools to "
        "get more, read_skill to read a page of the skill (read_skill with no page lists them) before a step you have not done before."
    )
    if tier == "minimal":
        rules = "Rules: " + "; ".join(f"{i}. {t.rstrip('.')}" for i, t in enumerate(skill.rule_titles, 1)) + " (read_skill iron-rules)."
        loop = "Loop, in order: " + " -> ".join(p for p, _ in skill.phases) + " (read_skill the-loop)."
        return f"{head}\n{rules}\n{loop}\n"
    loop = "\n".join(f"- {phase}: exit when {condition}" for phase, condition in skill.phases)
    return f"{head}\n\n{skill.rules}\n\n## The loop, in order (read_skill <phase> says how)\n\n{loop}\n"


PROMPT_TIERS = ("compact", "minimal")
