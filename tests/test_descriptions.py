"""Text that describes the tools matches the tools: nothing listed as missing that exists, no partial tool
lists, no file named that is not there (issue 23, finding 8)."""

from __future__ import annotations

import json
import re
import typing

from helpers import REPO
from hyperloom.tools.catalog import CATALOG, tool

SKILL_DIR = REPO / "skill" / "hyperloom-kernel-optimizer"
TOOL_NAMES = {entry.name for entry in CATALOG}


def test_no_skill_text_says_a_tool_the_server_lists_is_still_being_built():
    for page in SKILL_DIR.glob("**/*.md"):
        for paragraph in re.split(r"\n\s*\n", page.read_text()):
            if re.search(r"being built|not (yet )?available|coming soon", paragraph, re.I):
                named = set(re.findall(r"`([a-z0-9_]+)`", paragraph)) & TOOL_NAMES
                assert not named, f"{page.name} says {sorted(named)} are not there yet: {paragraph[:200]}"


def _plugin_descriptions() -> list[str]:
    marketplace = json.loads((REPO / ".claude-plugin" / "marketplace.json").read_text())
    plugin = json.loads((REPO / ".claude-plugin" / "plugin.json").read_text())
    return [marketplace["metadata"]["description"], plugin["description"], *(p["description"] for p in marketplace["plugins"])]


def test_the_plugin_descriptions_list_every_tool_by_name_or_none():
    for text in _plugin_descriptions():
        named = {name for name in TOOL_NAMES if "_" in name and re.search(rf"\b{name}\b", text)}
        assert not named or named == {n for n in TOOL_NAMES if "_" in n}, f"a partial tool list: {sorted(named)} in {text!r}"


def test_tune_start_describes_every_strategy_it_takes():
    strategies = typing.get_args(tool("tune_start").request.model_fields["strategy"].annotation)
    description = tool("tune_start").description
    assert strategies and all(re.search(rf"\b{s}\b", description) for s in strategies), strategies


def test_pyproject_names_only_files_that_exist():
    text = (REPO / "pyproject.toml").read_text()
    for name in re.findall(r"\b([\w./-]+\.(?:md|json|toml|py))\b", text):
        if "*" not in name and not name.startswith("hyperloom."):
            assert (REPO / name).exists(), f"pyproject.toml names {name}, which is not in the repository"
