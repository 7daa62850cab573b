"""The shipped skill: one source of truth, and the structural rules hosts enforce."""

from __future__ import annotations

import json
import re

import yaml

from helpers import REPO

SKILL_DIR = REPO / "skill" / "hyperloom-kernel-optimizer"
SPEC_KEYS = {"name", "description", "license", "compatibility", "metadata", "allowed-tools"}


def _frontmatter_and_body(text: str) -> tuple[dict, str]:
    match = re.match(r"\A---\r?\n(.*?)\r?\n---\r?\n?(.*)\Z", text, re.S)
    assert match, "SKILL.md must open with a --- frontmatter block"
    return yaml.safe_load(match.group(1)), match.group(2)


def test_the_root_skill_is_the_same_file_as_the_packaged_one():
    assert (REPO / "SKILL.md").read_bytes() == (SKILL_DIR / "SKILL.md").read_bytes()


def test_the_frontmatter_meets_the_open_spec_and_the_amd_rules():
    meta, body = _frontmatter_and_body((SKILL_DIR / "SKILL.md").read_text())
    assert set(meta) <= SPEC_KEYS
    assert meta["name"] == SKILL_DIR.name and re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", meta["name"])
    assert "claude" not in meta["name"] and "anthropic" not in meta["name"]
    assert 0 < len(meta["description"]) <= 1024 and not set("<>") & set(meta["description"])
    assert "Do not use" in meta["description"]
    assert len(body.strip("\n").splitlines()) <= 500


def test_the_skill_card_has_its_three_sections():
    card = (SKILL_DIR / "skill-card.md").read_text()
    for heading in ("Description", "Owner", "License"):
        section = re.search(rf"^## {heading}\s*\n(.+?)(?=^## |\Z)", card, re.M | re.S | re.I)
        assert section and section.group(1).strip(), heading


def test_the_evals_have_enough_trigger_and_near_miss_cases():
    data = json.loads((SKILL_DIR / "evals" / "evals.json").read_text())
    assert set(data) <= {"evaluations", "comment"}
    cases = data["evaluations"]
    assert len({c["id"] for c in cases}) == len(cases)
    assert sum(c["skill_should_trigger"] is True for c in cases) >= 3
    assert sum(c["skill_should_trigger"] is False for c in cases) >= 2
    for case in cases:
        if not case["skill_should_trigger"]:
            assert set(case) <= {"id", "prompt", "skill_should_trigger", "note"}
