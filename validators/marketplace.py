"""Repository-wide rules for a skill: the Claude marketplace bundle that publishes it, and unique eval ids
(across the skills beside it and amd/skills' shared negatives, `eval/negatives.json`).

Mirrors `validate_claude_marketplace` of amd/skills `validate_skills.py`, with the skills folder
taken from where the skill lives (amd/skills: `skills/`; this repository: `skill/`).
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from hyperloom.validators.evals import DATASET, validate_evals
from hyperloom.validators.findings import Finding, finding

MARKETPLACE = ".claude-plugin/marketplace.json"
SHARED_NEGATIVES = "eval/negatives.json"


def validate_repository(repo_root: Path, skill_dir: Path) -> list[Finding]:
    """The marketplace's bundle entry, and case ids unique across every skill beside this one."""
    repo_root, skill_dir = repo_root.resolve(), skill_dir.resolve()
    try:
        folder = skill_dir.parent.relative_to(repo_root).as_posix()
    except ValueError:
        return [finding("repository.outside", str(skill_dir), f"the skill is not inside the repository {repo_root}")]
    siblings = sorted(p for p in skill_dir.parent.iterdir() if p.is_dir() and not p.name.startswith("."))
    return _marketplace(repo_root, folder, skill_dir.name, {p.name for p in siblings}) + _repository_ids(repo_root, skill_dir, siblings)


def _marketplace(repo_root: Path, folder: str, skill: str, on_disk: set[str]) -> list[Finding]:
    path = repo_root / MARKETPLACE

    def bad(rule: str, message: str, severity: str = "error") -> Finding:
        return finding(rule, MARKETPLACE, message, severity=severity)

    if not path.is_file():
        return [bad("marketplace.missing", f"{MARKETPLACE} is missing; it lists the bundle plugin that publishes the skills")]
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        return [bad("marketplace.json", f"{MARKETPLACE} is not valid JSON: {exc}")]
    plugins = data.get("plugins") if isinstance(data, dict) else None
    if not isinstance(plugins, list):
        return [bad("marketplace.plugins", "the top-level `plugins` array is missing")]
    if len(plugins) != 1:
        return [bad("marketplace.one-plugin", f"exactly one plugin (the bundle) is expected, found {len(plugins)}")]
    entry = plugins[0]
    if not isinstance(entry, dict):
        return [bad("marketplace.plugin-object", "plugins[0] must be an object")]
    name = entry.get("name")
    if not isinstance(name, str) or not name:
        return [bad("marketplace.name", "plugins[0] needs a non-empty `name`")]
    out = []
    if entry.get("source") != "./":
        out.append(bad("marketplace.source",
                       f"plugins[0] `source` must be './' (the repository root is the bundle), got {entry.get('source')!r}"))
    if entry.get("strict") is not False:
        out.append(bad("marketplace.strict", "plugins[0] must set `strict` to false (the marketplace entry defines the bundle)"))
    description = entry.get("description")
    if not isinstance(description, str) or not description.strip():
        out.append(bad("marketplace.description", "plugins[0] needs a non-empty `description`"))
    skills = entry.get("skills")
    if not isinstance(skills, list) or not skills:
        return out + [bad("marketplace.skills", f"plugins[0] `skills` must be a non-empty list of './{folder}/<name>' paths")]
    prefix, seen = f"./{folder}/", set()
    for item in skills:
        if not isinstance(item, str) or not item.startswith(prefix):
            out.append(bad("marketplace.skill-path", f"`skills` entry {item!r} must be a '{prefix}<name>' path"))
            continue
        listed = item[len(prefix):].strip("/")
        if not listed or "/" in listed:
            out.append(bad("marketplace.skill-single", f"`skills` entry {item!r} must name a single skill folder"))
        elif listed in seen:
            out.append(bad("marketplace.skill-duplicate", f"`skills` lists {item!r} more than once"))
        elif listed not in on_disk:
            out.append(bad("marketplace.skill-missing", f"`skills` names {item!r}, which has no folder under {folder}/"))
        seen.add(listed)
    if skill not in seen:
        out.append(bad("marketplace.unlisted",
                       f"the skill is not listed in `skills`, so the bundle does not publish it (add '{prefix}{skill}')", "warning"))
    return out


def _repository_ids(repo_root: Path, skill_dir: Path, siblings: list[Path]) -> list[Finding]:
    """Ids used by this skill's cases and by another skill's cases in the same folder, or by the catalog's shared negatives."""
    ours = {case.id for case in validate_evals(skill_dir)[1]}
    others: Counter[str] = Counter()
    for sibling in siblings:
        if sibling != skill_dir and (sibling / "SKILL.md").is_file():
            others.update({case.id for case in validate_evals(sibling)[1]})
    out = [
        finding("evals.duplicate-id", DATASET,
                f"case id {case_id!r} is also used by another skill in {skill_dir.parent.name}/; ids are repository-wide")
        for case_id in sorted(ours & set(others))
    ]
    shared = _shared_negative_ids(repo_root)
    out += [
        finding("evals.duplicate-id", DATASET,
                f"case id {case_id!r} is also used by {SHARED_NEGATIVES}, the catalog's shared negatives; ids are repository-wide")
        for case_id in sorted(ours & shared)
    ]
    return out


def _shared_negative_ids(repo_root: Path) -> set[str]:
    """The ids of amd/skills' `eval/negatives.json` (prompts no skill owns, pooled into every routing run); none when absent or
    unreadable."""
    try:
        payload = json.loads((repo_root / SHARED_NEGATIVES).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError, UnicodeDecodeError):
        return set()  # amd/skills' own check reports a broken pool; it is no property of this skill
    cases = payload.get("evaluations") if isinstance(payload, dict) else None
    return {c["id"].strip() for c in cases or [] if isinstance(c, dict) and isinstance(c.get("id"), str)}
