"""The shipped skill: one source of truth, and what it teaches matches the tools that exist."""

from __future__ import annotations

import json
import re

from helpers import REPO
from hyperloom.tools.catalog import CATALOG, mcp_tools
from hyperloom.validators.skill import split_frontmatter

SKILL_DIR = REPO / "skill" / "hyperloom-kernel-optimizer"
BODY = split_frontmatter((SKILL_DIR / "SKILL.md").read_text())[1]
BEING_BUILT: set[str] = set()
PHASES = ("DETECT", "MAP", "FIND-GAPS", "TUNE", "FIX", "VALIDATE")
LAYERS = ("silicon", "driver", "runtime", "compiler", "kernel", "format", "serving")


def _section(title: str) -> str:
    match = re.search(rf"^#+ {re.escape(title)}\n(.*?)(?=^#+ |\Z)", BODY, re.M | re.S)
    assert match, f"no section {title!r}"
    return match.group(1)


def test_the_root_skill_is_the_same_file_as_the_packaged_one():
    assert (REPO / "SKILL.md").is_symlink()
    assert (REPO / "SKILL.md").read_bytes() == (SKILL_DIR / "SKILL.md").read_bytes()


def test_every_fully_qualified_tool_the_skill_calls_exists_and_every_tool_is_taught():
    available = {entry.name for entry in mcp_tools()}
    called = set(re.findall(r"mcp__hyperloom__([a-z0-9_]+)", BODY))
    assert called <= available, f"the skill calls tools the server does not have: {called - available}"
    assert available <= called | BEING_BUILT, f"tools the skill never names: {available - called}"


def test_tools_still_being_built_are_never_presented_as_working():
    paragraphs_and_rows = re.split(r"\n\s*\n|\n(?=\|)", BODY)
    for name in BEING_BUILT - {entry.name for entry in CATALOG}:
        mentions = [chunk for chunk in paragraphs_and_rows if f"`{name}`" in chunk]
        assert mentions, name
        for chunk in mentions:
            assert "being built" in chunk, f"{name} is mentioned without saying it is not there yet: {chunk}"


def test_each_phase_of_the_loop_has_an_exit_condition_in_order():
    positions = [BODY.index(f"### {phase}\n") for phase in PHASES]
    assert positions == sorted(positions)
    for phase in PHASES:
        assert "**Exit when**" in _section(phase), phase


def test_the_layer_table_names_every_layer_with_its_ground_truth():
    table = _section("Layered fault isolation")
    rows = {row.split("|")[1].strip(): row for row in table.splitlines() if row.startswith("| ") and not row.startswith("| layer")}
    assert tuple(rows) == LAYERS
    assert all(len([cell for cell in row.split("|") if cell.strip()]) == 4 for row in rows.values())


def test_the_skill_teaches_tags_tolerance_first_stop_rules_and_deferral():
    for needle in ("MEASURED", "ASSUMED", "Before the first trial", "Never loosen a tolerance"):
        assert needle in BODY, needle
    assert len(re.findall(r"^- ", _section("Stop rules"), re.M)) >= 4
    assert "vLLM" in _section("When to defer")


def test_trigger_cases_carry_behaviour_checks_and_near_misses_carry_none():
    cases = json.loads((SKILL_DIR / "evals" / "evals.json").read_text())["evaluations"]
    triggers = [c for c in cases if c["skill_should_trigger"]]
    checked = [c for c in triggers if c.get("expected_behavior") or c.get("unexpected_behavior")]
    assert len(checked) >= 3 and len(cases) - len(triggers) >= 2
    for case in cases:
        assert all(SKILL_DIR.name not in literal for literal in case.get("logs_contain", []))
