"""The shipped skill: one source of truth, and what it teaches matches the tools that exist."""

from __future__ import annotations

import json
import re

import yaml

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


def _taught_tools() -> set[str]:
    """The tools the "Which tool when" table names (its right column), by their bare names."""
    rows = [row for row in _section("Which tool when").splitlines() if row.startswith("| ") and not row.startswith("| question")]
    return {name for row in rows for name in re.findall(r"`([a-z0-9_]+)`", row.rsplit("|", 2)[1])}


def test_every_tool_the_skill_teaches_exists_and_every_tool_is_taught():
    available = {entry.name for entry in mcp_tools()}
    taught = _taught_tools()
    assert taught <= available, f"the skill teaches tools the server does not have: {taught - available}"
    assert available <= taught | BEING_BUILT, f"tools the skill never names: {available - taught}"


def test_the_skill_names_tools_bare_and_works_under_every_host_prefix():
    # Claude Code: mcp__hyperloom__X (hyperloom install, claude mcp add), mcp__plugin_hyperloom_hyperloom__X (the plugin).
    prefixed = re.findall(r"(mcp__[a-z0-9_]+?__)([a-z0-9_]+)", BODY)
    assert {prefix for prefix, _ in prefixed} == {"mcp__hyperloom__", "mcp__plugin_hyperloom_hyperloom__"}
    assert len(prefixed) == 2, f"name the tools bare; a prefix belongs only where the forms are explained: {prefixed}"
    assert "whatever its prefix" in BODY
    assert "stop and ask the user to install" not in BODY  # a missing form is not a missing install


def test_the_description_says_what_it_covers_and_when_its_namesake_fits():
    meta = yaml.safe_load(split_frontmatter((SKILL_DIR / "SKILL.md").read_text())[0])
    description = meta["description"]
    for covered in ("ISA truth offline", "levers", "any agent host", "tune", "tolerance declared"):
        assert covered in description, covered
    assert "use hyperloom-workload-optimizer" in description and "Instinct" in description
    assert "hyperloom-workload-optimizer" in _section("When to defer")
    assert "pip install hyperloom " not in meta["compatibility"] + " " and "not on PyPI" in meta["compatibility"]


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
