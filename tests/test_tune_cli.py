"""`hyperloom tune start|status|propose|stop|report` on a real session of a C kernel on the host."""

from __future__ import annotations

import json
import shutil

import pytest

from helpers import FIXTURES
from hyperloom.cli.main import EXIT_FAILED_VERDICT, EXIT_INPUT_ERROR, EXIT_OK, main

needs_cc = pytest.mark.skipif(shutil.which("cc") is None, reason="no system C compiler (apt-get install gcc)")
QUICK = ["--warmup-s", "0", "--min-reps", "6", "--max-reps", "20", "--max-time-s", "0.2", "--target-ci", "0.5", "--no-flush-cache",
         "--revalidate-pairs", "0", "--no-sweep-shapes", "--strategy", "external"]


@pytest.fixture
def specs(workspace):
    shutil.copytree(FIXTURES / "specs" / "tune", workspace.root / "tune")
    return workspace


def json_of(capsys) -> dict:
    return json.loads(capsys.readouterr().out)


@needs_cc
def test_tune_with_no_verb_starts_a_session_as_tune_start_does(specs, capsys):
    assert main(["tune", "--spec", "tune", "--session", "a", "--max-candidates", "1", *QUICK, "--json"]) == EXIT_OK
    plain = json_of(capsys)
    assert main(["tune", "start", "--spec", "tune", "--session", "b", "--max-candidates", "1", *QUICK, "--json"]) == EXIT_OK
    started = json_of(capsys)
    for report, name in ((plain, "a"), (started, "b")):
        assert report["status"]["session"] == name and report["status"]["recorded"] == 1
        assert [t["proposer"] for t in report["leaderboard"]] == ["baseline"]
        assert (specs.root / ".hyperloom" / "tune" / name / "report.md").is_file()


@needs_cc
def test_status_propose_report_and_stop_steer_a_session_from_the_command_line(specs, capsys):
    assert main(["tune", "--spec", "tune", "--session", "s", "--max-candidates", "1", *QUICK]) == EXIT_OK
    assert "s: closed; 1 recorded (1 passed)" in capsys.readouterr().out

    assert main(["tune", "status", "--session", "s"]) == EXIT_OK
    out = capsys.readouterr().out
    assert out.startswith("s: closed; 1 recorded (1 passed)") and "0 proposal(s) queued" in out

    assert main(["tune", "propose", "--session", "s", "--params", '{"REPEAT": 2}', "--note", "halve the repeats"]) == EXIT_OK
    assert capsys.readouterr().out.startswith("queued; it runs when the session is started or resumed")
    assert main(["tune", "propose", "--session", "s", "--params", '{"REPEAT": 16}']) == EXIT_FAILED_VERDICT  # the baseline's defines
    assert capsys.readouterr().out.startswith("refused: already recorded as #1")
    assert main(["tune", "status", "--session", "s", "--json"]) == EXIT_OK
    assert json_of(capsys)["pending_proposals"] == 1

    assert main(["tune", "--spec", "tune", "--session", "s", "--max-candidates", "2", *QUICK]) == EXIT_OK  # resumes: runs the proposal
    capsys.readouterr()
    assert main(["tune", "report", "--session", "s"]) == EXIT_OK
    out = capsys.readouterr().out
    assert "{'REPEAT': 2}" in out and "report: .hyperloom/tune/s/report.md" in out and "2 recorded (2 passed)" in out
    assert main(["tune", "report", "--session", "s", "--json"]) == EXIT_OK
    assert sorted(t["params"].get("REPEAT", 16) for t in json_of(capsys)["leaderboard"]) == [2, 16]

    assert main(["tune", "stop", "--session", "s", "--json"]) == EXIT_OK
    stopped = json_of(capsys)
    assert stopped["state"] == "closed" and stopped["recorded"] == 2


def test_the_tune_verbs_refuse_a_missing_session_and_smuggled_defines_in_one_line(specs, capsys):
    for verb in ("status", "stop", "report"):
        assert main(["tune", verb, "--session", "nope"]) == EXIT_INPUT_ERROR
        err = capsys.readouterr().err.strip()
        assert err.count("\n") == 0 and "nope" in err and "Next step" in err, verb
    assert main(["tune", "propose", "--session", "nope", "--params", '{"REPEAT": "1 -o /etc/x"}']) == EXIT_INPUT_ERROR
    assert "not a plain token" in capsys.readouterr().err
    with pytest.raises(SystemExit) as done:
        main(["tune", "status"])
    assert done.value.code == EXIT_INPUT_ERROR and "--session" in capsys.readouterr().err
