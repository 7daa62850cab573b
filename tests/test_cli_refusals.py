"""Refusals a new user meets in the first hour (issue 67): each names the closest valid name and the one form a value
takes, in the CLI's words and the MCP server's alike (both validate through the same request model)."""

from __future__ import annotations

import pytest

from hyperloom.cli.main import EXIT_INPUT_ERROR, main
from hyperloom.cli.model_args import model_from_args
from hyperloom.cli.tree import build_parser, choose
from hyperloom.core.arguments import validate_arguments
from hyperloom.core.errors import HyperloomError
from hyperloom.tools.workload.levers import check_candidate
from hyperloom.tools.workload.models import WorkloadBenchRequest


def _refused(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as ended:
        main(argv)
    assert ended.value.code == EXIT_INPUT_ERROR
    return capsys.readouterr().err


@pytest.mark.parametrize(("argv", "said"), [
    (["workload", "bench", "--name", "x", "--pairz", "7"], "--pairz (did you mean --pairs?)"),
    (["optimize", "start", "--workload", "m.py:build", "--dedline-s", "60"], "--dedline-s (did you mean --deadline-s?)"),
    (["optimize", "start", "--workload", "m.py:build", "--dedline-s=60"], "--dedline-s (did you mean --deadline-s?)"),
])
def test_a_misspelled_flag_is_refused_with_the_closest_valid_name(argv, said, capsys):
    err = _refused(argv, capsys)
    assert "unrecognized arguments" in err and said in err, err
    assert f"hyperloom {argv[0]} {argv[1]}: error" in err  # the command's own usage, not the root's


def test_a_flag_with_no_name_near_it_is_refused_with_the_command_s_options(capsys):
    err = _refused(["workload", "bench", "--name", "x", "--zzzzzz"], capsys)
    assert "--zzzzzz (no option is near it)" in err and "its options: --help, --name, --candidate, --pairs" in err, err


def _bench_request(*words: str) -> WorkloadBenchRequest:
    chosen, argv = choose(["workload", "bench", "--name", "x", *words])
    request = model_from_args(WorkloadBenchRequest, build_parser(chosen, every=False).parse_args(argv))
    assert isinstance(request, WorkloadBenchRequest)
    return request


@pytest.mark.parametrize(("words", "candidates"), [
    (("--candidate", "compile"), [["compile"]]),
    (("--candidate", "compile", "--candidate", '["static_cache", "decode_loop"]'), [["compile"], ["static_cache", "decode_loop"]]),
    (("--candidate", '[["compile"]]'), [["compile"]]),
    (("--candidate", '[["compile"], ["static_cache", "decode_loop"]]'), [["compile"], ["static_cache", "decode_loop"]]),
    (("--candidate", '["compile", ["static_cache", "decode_loop"]]'), [["compile"], ["static_cache", "decode_loop"]]),
])
def test_a_cli_candidate_is_a_lever_or_a_list_of_levers_and_a_list_of_candidates_is_those_candidates(words, candidates):
    assert _bench_request(*words).candidates == candidates


@pytest.mark.parametrize(("given", "candidates"), [
    ("compile", [["compile"]]), (["compile", ["static_cache", "decode_loop"]], [["compile"], ["static_cache", "decode_loop"]]),
    ([["compile"], ["graph"]], [["compile"], ["graph"]]), ('["compile", "graph"]', [["compile"], ["graph"]]),
])
def test_mcp_candidates_are_levers_or_lists_of_levers(given, candidates):
    request = validate_arguments(WorkloadBenchRequest, {"name": "x", "candidates": given})
    assert isinstance(request, WorkloadBenchRequest) and request.candidates == candidates


def test_a_candidate_of_another_shape_is_refused_with_the_one_form_in_both_front_ends_words():
    with pytest.raises(HyperloomError) as caught:
        validate_arguments(WorkloadBenchRequest, {"name": "x", "candidates": [[1]]})
    said = str(caught.value)
    assert "a candidate is a lever or a list of levers tried together" in said, said
    assert "--candidate compile --candidate '[\"static_cache\", \"decode_loop\"]'" in said and "list of a list" not in said, said


def test_the_help_shows_the_form_the_command_takes(capsys):
    with pytest.raises(SystemExit):
        main(["workload", "bench", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert 'each a lever or a list of levers tried together, e.g. "compile" or ["static_cache", "decode_loop"]' in help_text, help_text
    assert '[["compile"]' not in help_text


def test_a_misspelled_lever_gets_the_closest_name_and_only_the_levers_of_this_vendor():
    with pytest.raises(HyperloomError) as caught:
        check_candidate(["compil"], "cpu", {})
    said = str(caught.value)
    assert "unknown lever 'compil' (did you mean compile?)" in said and "(the levers that apply on cpu)" in said, said
    assert "sdpa_math" in said and "tunableop" not in said and "graph," not in said and "sdpa_cudnn" not in said, said


def test_a_misspelled_lever_near_one_of_another_vendor_says_where_that_one_applies():
    with pytest.raises(HyperloomError, match=r"unknown lever 'graf' \(did you mean graph, which applies on cuda, rocm only\?\)"):
        check_candidate(["graf"], "cpu", {})


def test_a_misspelled_knob_gets_the_closest_knob_the_workload_declares():
    with pytest.raises(HyperloomError, match=r"declares no knob 'batchs' \(did you mean batch\?\); it declares width, batch"):
        check_candidate(["knob:batchs=8"], "cpu", {"width": None, "batch": ["8", "64"]})
