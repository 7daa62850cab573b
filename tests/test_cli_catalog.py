"""The `hyperloom` command tree is the tool catalog: one command per tool, its options the request model's fields."""

from __future__ import annotations

import argparse
import typing

import pytest

from hyperloom.cli.extras import EXTRAS
from hyperloom.cli.main import EXIT_OK, build_parser, choose, leaves, main
from hyperloom.cli.model_args import _unwrap_optional, flag_name
from hyperloom.cli.tool_command import TRAILING_DEST
from hyperloom.tools.catalog import CATALOG, resolve, tool

ARGPARSE_OWN = {"help", "json", TRAILING_DEST}


def parser_at(path: tuple[str, ...]) -> argparse.ArgumentParser:
    """The fully configured parser of the command at `path`."""
    parser = build_parser()
    for word in path:
        action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))  # noqa: SLF001
        parser = action.choices[word]
    return parser


def dests(parser: argparse.ArgumentParser) -> set[str]:
    return {a.dest for a in parser._actions} - ARGPARSE_OWN  # noqa: SLF001


def own_commands() -> list:
    return [e for e in CATALOG if e.cli.via is None]


def test_every_catalog_tool_has_exactly_one_cli_command():
    assert all(e.cli is not None for e in CATALOG), [e.name for e in CATALOG if e.cli is None]
    paths = [e.cli.path for e in own_commands()] + [c.path for c in EXTRAS]
    assert len(paths) == len(set(paths)), "two commands share a path"
    by_path = {leaf.path: leaf for leaf in leaves()}
    assert sorted(name for leaf in leaves() for name in leaf.tools) == sorted(e.name for e in CATALOG)
    for entry in CATALOG:
        assert entry.name in by_path[entry.cli.path].tools
        if entry.cli.via:  # run through an option of another tool's command
            option = next(a for a in parser_at(entry.cli.path)._actions if entry.cli.via in a.option_strings)  # noqa: SLF001
            assert option.dest in entry.request.model_fields, entry.name


def test_a_path_is_a_command_or_a_group_never_both_and_each_group_has_one_help_and_at_most_one_default():
    paths = [leaf.path for leaf in leaves()]
    groups = {p[:depth] for p in paths for depth in range(1, len(p))}
    assert not groups & set(paths)
    declared = [e.cli.path[:-1] for e in CATALOG if e.cli.group_help]
    assert sorted(declared) == sorted(groups), "every group declares its help on exactly one entry"
    defaults = [leaf.path[:-1] for leaf in leaves() if leaf.default]
    assert len(defaults) == len(set(defaults)) and all(defaults)


def test_the_top_level_help_names_every_tool(capsys):
    with pytest.raises(SystemExit) as done:
        main(["--help"])
    out = capsys.readouterr().out
    assert done.value.code == 0
    for entry in CATALOG:
        assert entry.name in out, entry.name
        assert entry.cli.path[0] in out


@pytest.mark.parametrize("entry", [e for e in own_commands() if e.cli.options is None], ids=lambda e: e.name)
def test_a_generated_commands_options_are_its_request_fields(entry):
    parser = parser_at(entry.cli.path)
    trailing = entry.cli.trailing.fields if entry.cli.trailing else ()
    assert dests(parser) == set(entry.request.model_fields) - set(trailing)
    for action in parser._actions:  # noqa: SLF001
        if action.dest in entry.request.model_fields:
            annotation = _unwrap_optional(entry.request.model_fields[action.dest].annotation)
            assert action.option_strings[0] == flag_name(action.dest, typing.get_origin(annotation) is list)
    assert (("--json" in parser._option_string_actions)  # noqa: SLF001
            and (entry.cli.trailing is None) == (TRAILING_DEST not in {a.dest for a in parser._actions}))  # noqa: SLF001


def test_the_census_command_takes_every_field_of_the_three_isa_tools():
    parser = parser_at(tool("isa_census").cli.path)
    for name in ("isa_census", "isa_probe", "isa_audit"):
        assert set(tool(name).request.model_fields) <= dests(parser), name


def test_every_renderer_handler_and_verdict_an_entry_names_exists():
    for entry in CATALOG:
        cli = entry.cli
        for ref in (cli.render, cli.handler, cli.options):
            if ref is not None:
                assert callable(resolve(ref)), ref
        if cli.render is not None:
            assert cli.render.startswith("hyperloom.cli.render."), "renderers live in one package"
        assert cli.via or cli.render or cli.handler, f"{entry.name}: nothing prints its result"
        for field in cli.verdict:
            annotation = entry.result.model_fields[field].annotation
            assert bool in (annotation, *typing.get_args(annotation)), (entry.name, field)


@pytest.mark.parametrize(
    ("argv", "path", "words"),
    [
        (["tune", "--spec", "k"], ("tune", "start"), ["tune", "start", "--spec", "k"]),
        (["-v", "tune", "--spec", "k"], ("tune", "start"), ["-v", "tune", "start", "--spec", "k"]),
        (["tune", "status", "--session", "s"], ("tune", "status"), ["tune", "status", "--session", "s"]),
        (["tune", "--help"], ("tune",), ["tune", "--help"]),
        (["tune"], ("tune",), ["tune"]),
        (["doctor"], ("detect",), ["doctor"]),
        (["disasm-verify", "--code-object", "a.hsaco"], ("verify",), ["disasm-verify", "--code-object", "a.hsaco"]),
        (["gate", "check", "--candidate", "c.npy"], ("gate", "check"), ["gate", "check", "--candidate", "c.npy"]),
        (["census", "gfx1201"], ("census",), ["census", "gfx1201"]),
        (["gate", "--candidate", "c.npy"], ("gate",), ["gate", "--candidate", "c.npy"]),  # no default verb: argparse names the choices
        (["--version"], (), ["--version"]),
        (["gate", "chek"], ("gate",), ["gate", "chek"]),
    ],
)
def test_the_chosen_command_and_a_groups_default_verb(argv, path, words):
    assert choose(argv) == (path, words)


def test_a_group_without_its_verb_lists_the_verbs(capsys):
    with pytest.raises(SystemExit) as done:
        main(["tune"])
    assert done.value.code == 2 and "{start,status,propose,stop,report}" in capsys.readouterr().err
    assert main(["spec", "schema"]) == EXIT_OK and '"$schema"' in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["serve", "sweep", "--base-url", "http://h:1/v1", "--", "llama-server", "-m", "m.gguf"],
         {"server_command": ["llama-server", "-m", "m.gguf"]}),
        (["serve", "sweep", "--base-url", "http://h:1/v1"], {"server_command": None}),
        (["profile", "--steps", "1", "model.py", "48", "--fast"], {"workload": "model.py", "args": ["48", "--fast"]}),
        (["profile", "--trace", "t.json"], {"workload": None, "args": None}),
    ],
)
def test_the_words_after_the_options_fill_the_trailing_fields(argv, expected):
    from hyperloom.cli.tool_command import take_trailing

    chosen, words = choose(argv)
    args = build_parser(chosen, every=False).parse_args(words)
    take_trailing(tool({"serve": "serve_sweep", "profile": "profile"}[argv[0]]).cli.trailing, args)
    assert {name: getattr(args, name, None) for name in expected} == expected
