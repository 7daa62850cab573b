"""A skill folder against the amd/skills validator, the open Agent Skills spec and anthropics' quick check.

The rules mirror amd/skills `.github/scripts/validate_skills.py`, `skills-ref`'s validator (the
`agentskills validate` command) and anthropics/skills `quick_validate.py`; each finding names
whose rule it is. The evals dataset and the marketplace have their own modules.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from hyperloom.validators.evals import validate_evals
from hyperloom.validators.findings import ANTHROPIC, SPEC, Finding, SkillReport, finding
from hyperloom.validators.marketplace import validate_repository

FRONTMATTER_RE = re.compile(r"\A---\r?\n(?P<frontmatter>.*?)\r?\n---\r?\n?(?P<body>.*)\Z", re.DOTALL)
NAME_RE = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
SPEC_KEYS = ("name", "description", "license", "compatibility", "metadata", "allowed-tools")
RESERVED_NAME_PARTS = ("anthropic", "claude")
MAX_NAME_CHARS, MAX_DESCRIPTION_CHARS, MAX_COMPATIBILITY_CHARS, MAX_BODY_LINES = 64, 1024, 500, 500
CARD = "skill-card.md"
CARD_SECTIONS = ("Description", "Owner", "License")


def validate_skill(skill_dir: Path, repo_root: Path | None = None) -> SkillReport:
    """Every rule of SKILL.md, skill-card.md and evals/evals.json for one skill folder.

    With `repo_root`, also the repository-wide rules: the marketplace bundle and unique case ids.
    """
    report = SkillReport(skill=str(skill_dir))
    report.findings += _skill_md(skill_dir)
    report.findings += _card(skill_dir)
    evals, cases = validate_evals(skill_dir)
    report.findings += evals
    report.cases = len(cases)
    if repo_root is not None:
        report.findings += validate_repository(repo_root, skill_dir)
    return report


def split_frontmatter(text: str) -> tuple[str, str] | None:
    """(frontmatter, body) of a SKILL.md, or None when it does not open with a --- block."""
    match = FRONTMATTER_RE.match(text)
    return (match.group("frontmatter"), match.group("body")) if match else None


def _skill_md(skill_dir: Path) -> list[Finding]:
    path = skill_dir / "SKILL.md"
    if not path.is_file():
        return [finding("skill-md.missing", "SKILL.md", "SKILL.md is missing at the skill root")]
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        return [finding("skill-md.encoding", "SKILL.md", f"SKILL.md is not UTF-8 ({exc.reason} at byte {exc.start})")]
    parts = split_frontmatter(text)
    if parts is None:
        return [finding("frontmatter.block", "SKILL.md",
                        "SKILL.md must open with a `---` YAML frontmatter block closed by `---` on its own line")]
    raw, body = parts
    try:
        node = yaml.compose(raw, Loader=yaml.SafeLoader)
        meta = yaml.safe_load(raw)
    except yaml.YAMLError as exc:
        return [finding("frontmatter.yaml", "SKILL.md", f"the frontmatter is not valid YAML: {exc}".replace("\n", " "))]
    if not isinstance(meta, dict):
        return [finding("frontmatter.mapping", "SKILL.md", "the frontmatter must be a YAML mapping with at least `name` and `description`")]
    out = _strict_yaml(node, raw)
    out += _keys(meta)
    out += _name(meta.get("name"), skill_dir.name)
    out += _description(meta.get("description"))
    out += _optional_fields(meta)
    out += _body(body)
    return out


def _strict_yaml(node: yaml.Node | None, raw: str) -> list[Finding]:
    """What strictyaml (used by `agentskills validate`) refuses although PyYAML reads it."""
    out = []
    events = yaml.parse(raw, Loader=yaml.SafeLoader)
    if any(isinstance(e, (yaml.MappingStartEvent, yaml.SequenceStartEvent)) and e.flow_style for e in events):
        out.append(finding("frontmatter.flow-style", "SKILL.md",
                           "flow-style `{...}` or `[...]` values are refused by `agentskills validate` (strictyaml); write block style",
                           SPEC))
    if isinstance(node, yaml.MappingNode):
        keys = [key.value for key, _ in node.value]
        if repeated := sorted({k for k in keys if keys.count(k) > 1}):
            out.append(finding("frontmatter.duplicate-key", "SKILL.md", f"frontmatter key(s) given twice: {', '.join(repeated)}", SPEC))
    return out


def _keys(meta: dict[str, Any]) -> list[Finding]:
    unknown = sorted(str(k) for k in meta if k not in SPEC_KEYS)
    if not unknown:
        return []
    return [finding("frontmatter.unknown-key", "SKILL.md",
                    f"unexpected frontmatter key(s) {', '.join(unknown)}; only {', '.join(SPEC_KEYS)} are allowed", SPEC)]


def _name(name: object, dir_name: str) -> list[Finding]:
    if not isinstance(name, str) or not name:
        return [finding("name.missing", "SKILL.md", "frontmatter `name` is missing or not a non-empty string")]
    out = []
    if len(name) > MAX_NAME_CHARS:
        out.append(finding("name.length", "SKILL.md", f"`name` is {len(name)} characters; at most {MAX_NAME_CHARS}"))
    if not NAME_RE.match(name):
        out.append(finding("name.pattern", "SKILL.md",
                           f"`name` {name!r} must be lowercase letters and digits in segments joined by single hyphens"))
    for part in RESERVED_NAME_PARTS:
        if part in name.lower():
            out.append(finding("name.reserved", "SKILL.md", f"`name` may not contain {part!r}"))
    if name != dir_name:
        out.append(finding("name.directory", "SKILL.md", f"`name` {name!r} must equal the skill folder's name {dir_name!r}"))
    return out


def _description(description: object) -> list[Finding]:
    if not isinstance(description, str) or not description.strip():
        return [finding("description.missing", "SKILL.md", "frontmatter `description` is missing or not a non-empty string")]
    out = []
    if len(description) > MAX_DESCRIPTION_CHARS:
        out.append(finding("description.length", "SKILL.md",
                           f"`description` is {len(description)} characters; at most {MAX_DESCRIPTION_CHARS}"))
    if set("<>") & set(description):
        out.append(finding("description.angle-brackets", "SKILL.md", "`description` may not contain `<` or `>`", ANTHROPIC))
    return out


def _optional_fields(meta: dict[str, Any]) -> list[Finding]:
    out = []
    for key, rule in (("license", "license.type"), ("allowed-tools", "allowed-tools.type")):
        if key in meta and not (isinstance(meta[key], str) and meta[key].strip()):
            out.append(finding(rule, "SKILL.md", f"`{key}` must be a non-empty string", SPEC))
    if "compatibility" in meta:
        value = meta["compatibility"]
        if not isinstance(value, str) or not value.strip():
            out.append(finding("compatibility.type", "SKILL.md", "`compatibility` must be a non-empty string", SPEC))
        elif len(value) > MAX_COMPATIBILITY_CHARS:
            out.append(finding("compatibility.length", "SKILL.md",
                               f"`compatibility` is {len(value)} characters; at most {MAX_COMPATIBILITY_CHARS}", SPEC))
    if "metadata" in meta:
        value = meta["metadata"]
        if not isinstance(value, dict) or any(isinstance(v, (dict, list)) or v is None for v in value.values()):
            out.append(finding("metadata.type", "SKILL.md", "`metadata` must map keys to plain string values", SPEC))
    return out


def _body(body: str) -> list[Finding]:
    lines = body.splitlines()
    while lines and not lines[0].strip():
        lines.pop(0)
    while lines and not lines[-1].strip():
        lines.pop()
    if len(lines) <= MAX_BODY_LINES:
        return []
    return [finding("body.length", "SKILL.md", f"the body is {len(lines)} lines; at most {MAX_BODY_LINES} (move detail into reference.md)")]


def card_sections(text: str) -> dict[str, str]:
    """Each `## ` heading of a card (lowercased) with the text up to the next one."""
    sections: dict[str, str] = {}
    current: str | None = None
    for line in text.splitlines():
        heading = re.match(r"^##\s+(?P<title>.+?)\s*$", line)
        if heading:
            current = heading.group("title").lower()
            sections[current] = ""
        elif current is not None:
            sections[current] += line + "\n"
    return {title: body.strip() for title, body in sections.items()}


def _card(skill_dir: Path) -> list[Finding]:
    path = skill_dir / CARD
    if not path.is_file():
        return [finding("card.missing", CARD, f"{CARD} is missing; it needs `## Description`, `## Owner` and `## License` sections")]
    sections = card_sections(path.read_text(encoding="utf-8", errors="replace"))
    out = []
    for title in CARD_SECTIONS:
        if title.lower() not in sections:
            out.append(finding("card.section-missing", CARD, f"{CARD} has no `## {title}` section"))
        elif not sections[title.lower()]:
            out.append(finding("card.section-empty", CARD, f"{CARD}'s `## {title}` section is empty"))
    return out
