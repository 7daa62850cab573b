"""tune on the host CPU (c backend): the loop, its stop rules, its session folder and its faults."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
import uuid

import pytest
from pydantic import ValidationError

from helpers import FIXTURES
from hyperloom.core.errors import HyperloomError
from hyperloom.tools.tune.api import tune_propose, tune_report, tune_stop
from hyperloom.tools.tune.budget import Budget
from hyperloom.tools.tune.loop import run_tune
from hyperloom.tools.tune.models import ProposeRequest, SessionRef, TuneRequest
from hyperloom.tools.pipeline.stats import sign_test_p
from hyperloom.validators.schemas import schema_errors

needs_cc = pytest.mark.skipif(shutil.which("cc") is None, reason="no system C compiler (apt-get install gcc)")
QUICK = {"warmup_s": 0.0, "min_reps": 6, "max_reps": 20, "max_time_s": 0.2, "target_ci": 0.5, "flush_cache": False, "revalidate_pairs": 3}


@pytest.fixture
def specs(workspace):
    shutil.copytree(FIXTURES / "specs" / "tune", workspace.root / "tune")
    return workspace


def tune(workspace, **fields):
    return run_tune(TuneRequest(**{"spec": "tune", "session": "s", "background": False, **QUICK, **fields}), workspace)


@needs_cc
def test_the_grid_finds_the_known_best_candidate_after_the_baseline_and_writes_the_session(specs):
    report = tune(specs)
    trials = sorted(report.leaderboard + report.rejected, key=lambda t: t.seq)
    assert trials[0].proposer == "baseline" and trials[0].params == {}
    assert sorted(t.params.get("REPEAT", 16) for t in trials) == [1, 4, 16, 64]  # 16 is the baseline: never run twice
    assert report.status.best.params == {"REPEAT": 1} and report.status.best.speedup > 3
    assert report.revalidation.pairs == 3 and report.revalidation.winner_faster == 3 and report.revalidation.speedup > 3
    assert [s.shape for s in report.sweep] == [{"n": 65536}, {"n": 4096}] and not any(s.regression for s in report.sweep)
    folder = specs.root / ".hyperloom" / "tune" / "s"
    assert {"manifest.json", "ledger.sqlite", "report.md", "breakdown.json"} <= {p.name for p in folder.iterdir()}
    assert schema_errors("tune_breakdown", json.loads((folder / "breakdown.json").read_text())) == []
    manifest = json.loads((folder / "manifest.json").read_text())
    assert set(manifest["input_sets"]) == {"seeded", "zeros"} and len(manifest["input_set_sha256"]) == 64
    assert "{'REPEAT': 1}" in (folder / "report.md").read_text()


@needs_cc
def test_with_two_workers_a_candidate_runs_beside_the_baseline_and_gets_its_speedup_when_the_baseline_lands(specs):
    import yaml

    spec = yaml.safe_load((specs.root / "tune" / "kernel.yaml").read_text())
    # about 0.4 s a launch, 3 s in all: the other worker (started, compiled) finishes first
    spec["variants"]["host"]["defines"] = {"REPEAT": 16384}
    spec["tuning"] = {"REPEAT": [1, 16384]}
    (specs.root / "tune" / "slow.yaml").write_text(yaml.safe_dump(spec))
    report = tune(specs, spec="tune/slow.yaml", strategy="grid", workers=2, revalidate_pairs=0, sweep_shapes=False)
    first, second = sorted(report.leaderboard, key=lambda t: t.seq)
    assert (first.params, second.proposer) == ({"REPEAT": 1}, "baseline"), "the candidate waited for the baseline"
    assert first.speedup == pytest.approx(second.median_s / first.median_s) and first.speedup > 10 and second.speedup == 1.0
    stored = {t.hash: t for t in tune_report(SessionRef(session="s"), specs).leaderboard}
    assert stored[first.hash].speedup == first.speedup  # filled in the ledger, not only in this run's memory


@needs_cc
def test_every_kind_of_failing_candidate_is_recorded_with_its_reason_and_the_loop_goes_on(specs):
    report = tune(specs, spec="tune/faults.yaml", timeout_s=1.0, workers=2)
    by_fault = {t.params.get("FAULT", 0): t for t in report.leaderboard + report.rejected}
    assert by_fault[0].status == "PASSED" and len(by_fault) == 6
    assert by_fault[1].status == "COMPILE_ERROR" and by_fault[1].input_set == "compile"
    assert by_fault[2].status == "TIMEOUT" and by_fault[2].input_set == "seeded"
    assert by_fault[3].status == "CRASH" and "SIGSEGV" in by_fault[3].reason
    assert by_fault[4].status == "NAN"
    assert by_fault[5].status == "WRONG" and by_fault[5].input_set == "zeros" and "input set zeros" in by_fault[5].reason
    assert {t.worker for t in by_fault.values() if t.status != "COMPILE_ERROR"} == {0, 1}  # both workers ran candidates
    assert by_fault[1].worker == -1 and by_fault[1].device == "compiler"  # rejected before any worker ran it
    markdown = (specs.root / report.report_md).read_text()
    assert "**TIMEOUT**" in markdown and "**WRONG** at zeros" in markdown


@needs_cc
def test_the_device_second_budget_is_never_passed_by_more_than_one_launch_cap(specs):
    report = tune(specs, spec="tune/faults.yaml", strategy="random", seed=1, timeout_s=2.0, budget_device_s=1.5)
    assert report.status.spent_device_s <= 1.5 + 2.0
    assert "budget" in report.status.stop_reason or "exhausted" in report.status.stop_reason


def test_a_budget_grants_launches_only_up_to_what_is_left():
    budget = Budget(limit_s=3.0, spent_s=1.0)
    assert budget.reserve(5.0) == 2.0 and budget.reserve(5.0) is None
    budget.settle(2.0, 0.5)
    assert budget.spent_s == 1.5 and budget.reserve(1.0) == 1.0


def test_a_launch_that_finds_the_budget_reserved_waits_for_the_launch_in_flight_and_only_used_time_counts():
    import threading

    budget = Budget(limit_s=6.0, spent_s=0.0)
    assert budget.reserve(60.0) == 6.0 and budget.unspent_s() == 6.0  # reserved is not spent: the stop rule still sees 6 s
    granted: list[float | None] = []
    waiter = threading.Thread(target=lambda: granted.append(budget.reserve(60.0, wait=True)))
    waiter.start()
    waiter.join(0.3)
    assert waiter.is_alive() and not granted  # waiting, not refused
    budget.settle(6.0, 1.2)
    waiter.join(5)
    assert granted == [pytest.approx(4.8)] and budget.spent_s == pytest.approx(1.2)


def test_the_sign_test_needs_five_of_five_pairs_to_call_a_speedup_beyond_noise():
    assert sign_test_p(3, 3) == 0.125 and sign_test_p(5, 5) < 0.05 and sign_test_p(4, 5) > 0.05


@needs_cc
def test_max_candidates_and_patience_stop_the_loop(specs):
    assert "max_candidates (2)" in tune(specs, max_candidates=2).status.stop_reason
    patient = tune(specs, session="p", strategy="grid", patience=1, epsilon=0.5, revalidate_pairs=0, sweep_shapes=False)
    # order: baseline(16), 1 (improves), 4 (no 50 % gain) -> stop before 64
    assert patient.status.recorded == 3 and "patience" in patient.status.stop_reason


@needs_cc
@pytest.mark.parametrize("strategy", ["tpe", "cmaes"])
def test_optuna_samplers_propose_only_novel_candidates_until_the_space_is_exhausted(specs, strategy):
    pytest.importorskip("optuna")
    report = tune(specs, strategy=strategy, revalidate_pairs=0, sweep_shapes=False)
    assert {t.proposer for t in report.leaderboard + report.rejected} <= {"baseline", strategy}
    hashes = [t.hash for t in report.leaderboard + report.rejected]
    assert len(hashes) == len(set(hashes)) == 4 and report.status.best.params == {"REPEAT": 1}


@needs_cc
def test_an_external_proposal_runs_and_a_repeat_is_refused_with_its_earlier_verdict(specs):
    tune(specs, strategy="external", max_candidates=1, revalidate_pairs=0, sweep_shapes=False)  # the baseline only
    queued = tune_propose(ProposeRequest(session="s", params={"REPEAT": 2}, note="halve the repeats"), specs)
    assert queued.accepted
    again = tune_propose(ProposeRequest(session="s", params={"REPEAT": 16}), specs)  # the baseline's defines
    assert not again.accepted and "already recorded as #1" in again.summary
    report = tune(specs, strategy="external", max_candidates=2, revalidate_pairs=0, sweep_shapes=False)
    assert [t.params for t in sorted(report.leaderboard, key=lambda t: t.seq)] == [{}, {"REPEAT": 2}]
    with pytest.raises(HyperloomError, match="not a plain token"):
        tune_propose(ProposeRequest(session="s", params={"REPEAT": "1 -o /etc/x"}), specs)


@needs_cc
def test_warm_start_candidates_run_right_after_the_baseline_once_each_and_a_resume_does_not_repeat_them(specs):
    warm = [{"REPEAT": 64}, {"REPEAT": 64}, {"REPEAT": 16}]  # a repeat, and the baseline's own defines
    first = tune(specs, warm_start=warm, max_candidates=3, revalidate_pairs=0, sweep_shapes=False)
    trials = sorted(first.leaderboard + first.rejected, key=lambda t: t.seq)
    assert [(t.proposer, t.params) for t in trials[:2]] == [("baseline", {}), ("warm_start", {"REPEAT": 64})]
    assert trials[2].proposer == "grid" and trials[2].params not in ({}, {"REPEAT": 64}, {"REPEAT": 16})
    again = tune(specs, warm_start=warm, max_candidates=4, revalidate_pairs=0, sweep_shapes=False)
    trials = sorted(again.leaderboard + again.rejected, key=lambda t: t.seq)
    assert [t.proposer for t in trials] == ["baseline", "warm_start", "grid", "grid"]
    assert sorted(t.params.get("REPEAT", 16) for t in trials) == [1, 4, 16, 64]


def test_a_warm_start_candidate_that_could_smuggle_compiler_flags_is_refused_before_a_session_exists(specs):
    with pytest.raises(ValidationError, match="not a plain token"):
        TuneRequest(spec="tune", session="s", warm_start=[{"REPEAT": "1 -o /etc/x"}])
    assert not (specs.root / ".hyperloom" / "tune" / "s").exists()


@needs_cc
def test_closing_twice_writes_the_same_report_files(specs):
    tune(specs, max_candidates=2, revalidate_pairs=0, sweep_shapes=False)
    folder = specs.root / ".hyperloom" / "tune" / "s"
    first = [(folder / n).read_bytes() for n in ("report.md", "breakdown.json")]
    tune_report(SessionRef(session="s"), specs)
    tune_stop(SessionRef(session="s"), specs)
    assert [(folder / n).read_bytes() for n in ("report.md", "breakdown.json")] == first


@needs_cc
def test_a_session_killed_mid_run_resumes_without_repeating_or_losing_a_finished_trial(specs):
    command = [sys.executable, "-m", "hyperloom.cli.main", "tune", "--spec", "tune/faults.yaml", "--session", "k", "--timeout-s", "3",
               "--no-flush-cache", "--max-time-s", "0.2", "--min-reps", "6", "--target-ci", "0.5", "--warmup-s", "0"]
    proc = subprocess.Popen(command, cwd=specs.root, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    ledger = specs.root / ".hyperloom" / "tune" / "k" / "ledger.sqlite"
    deadline = time.monotonic() + 60
    finished: list[tuple] = []
    while time.monotonic() < deadline and len(finished) < 3:
        time.sleep(0.1)
        if ledger.is_file():
            with sqlite3.connect(ledger) as db:
                finished = db.execute("SELECT seq, hash, record FROM trials ORDER BY seq").fetchall()
    os.killpg(proc.pid, signal.SIGKILL)  # the hang candidate (FAULT=2) may be mid-launch: its worker dies too
    proc.wait()
    assert len(finished) >= 3, "the session did not record three trials within a minute"
    with sqlite3.connect(ledger) as db:
        before = db.execute("SELECT seq, hash, record FROM trials ORDER BY seq").fetchall()
    report = tune(specs, spec="tune/faults.yaml", session="k", timeout_s=3.0, **{"revalidate_pairs": 0})
    with sqlite3.connect(ledger) as db:
        after = db.execute("SELECT seq, hash, record FROM trials ORDER BY seq").fetchall()
    assert after[: len(before)] == before  # nothing lost, nothing rewritten
    assert len({row[1] for row in after}) == len(after) == 6 == report.status.recorded


@needs_cc
def test_a_resume_with_a_changed_spec_is_refused(specs):
    tune(specs, max_candidates=1, revalidate_pairs=0, sweep_shapes=False)
    source = specs.root / "tune" / "scale.c"
    source.write_text(source.read_text() + "\n/* changed */\n")
    with pytest.raises(HyperloomError, match="different source_sha256"):
        tune(specs, max_candidates=1)


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda f: (f / "notes.txt").write_text("mine"), "not a tune session"),
        (lambda f: (f / "manifest.json").write_text("{not json"), "is corrupt"),
        (lambda f: (f / "manifest.json").write_text('{"kind": "something.else"}'), "not a tune session manifest"),
        (lambda f: (f / "ledger.sqlite").write_bytes(b"garbage" * 100), "not a readable tune ledger"),
    ],
)
@needs_cc
def test_a_corrupt_or_foreign_session_folder_is_refused_clearly(specs, damage, message):
    folder = specs.root / ".hyperloom" / "tune" / "s"
    if "notes" in message or message == "not a tune session":
        folder.mkdir(parents=True)
    else:
        tune(specs, max_candidates=1, revalidate_pairs=0, sweep_shapes=False)
    damage(folder)
    with pytest.raises(HyperloomError, match=message):
        tune(specs, max_candidates=2)
    with pytest.raises(HyperloomError, match=message):
        tune_report(SessionRef(session="s"), specs)


def test_a_session_name_cannot_escape_the_workspace(specs):
    with pytest.raises(HyperloomError, match="outside the workspace"):
        tune(specs, session="../../elsewhere/s")


POSTGRES = os.environ.get("HYPERLOOM_TEST_POSTGRES")


@needs_cc
@pytest.mark.parametrize("engine", ["sqlite",
                                    pytest.param("postgresql", marks=pytest.mark.skipif(not POSTGRES,
                                                                                        reason="no PostgreSQL (.ci/run starts one: "
                                                                                               "HYPERLOOM_TEST_POSTGRES)"))])
def test_two_sessions_sharing_an_optuna_storage_never_run_the_same_candidate_twice(specs, engine):
    pytest.importorskip("optuna")
    storage = f"sqlite:///{specs.root / 'study.db'}" if engine == "sqlite" else POSTGRES
    study = f"shared-{engine}-{uuid.uuid4().hex[:8]}"  # a server outlives tests: a fresh study each time
    first = tune(specs, session="machine-a", strategy="tpe", storage=storage, study=study, revalidate_pairs=0, sweep_shapes=False)
    assert first.status.recorded == 4
    second = tune(specs, session="machine-b", strategy="tpe", storage=storage, study=study, revalidate_pairs=0, sweep_shapes=False)
    assert [t.proposer for t in second.leaderboard + second.rejected] == ["baseline"]  # the study already holds the rest


def _proposer(storage: str, study: str, lease_s: float = 3600.0, sampler: str = "tpe"):
    from hyperloom.tools.tune.proposers import OptunaProposer
    from hyperloom.tools.tune.space import Space

    return OptunaProposer(Space({"REPEAT": [1, 4, 16, 64], "UNROLL": [1, 2]}), seed=7, storage=storage, study=study, lease_s=lease_s,
                          sampler=sampler)


def test_cmaes_walks_numeric_values_in_order_and_refuses_a_categorical_define(tmp_path):
    pytest.importorskip("optuna")
    from hyperloom.tools.tune.proposers import make_proposer
    from hyperloom.tools.tune.space import Space

    proposer = make_proposer("cmaes", Space({"BLOCK": [256, 32, 128, 64]}), 0, None, "s")
    proposed = [proposer.ask(lambda params: False) for _ in range(4)]
    assert sorted(p["BLOCK"] for p in proposed) == [32, 64, 128, 256]  # each value once, as the spec typed it
    assert proposer._ordered["BLOCK"] == [32, 64, 128, 256]
    with pytest.raises(HyperloomError, match="cmaes searches numeric spaces, and MODE has the value 'fast'") as error:
        make_proposer("cmaes", Space({"MODE": ["fast", "slow"]}), 0, None, "s")
    assert "tpe" in error.value.next_step


@pytest.mark.parametrize("sampler", ["tpe", "cmaes"])
def test_a_candidate_running_on_another_machine_is_not_proposed_until_its_lease_runs_out(tmp_path, sampler):
    pytest.importorskip("optuna")
    storage, never = f"sqlite:///{tmp_path / 'study.db'}", lambda params: False
    a = _proposer(storage, "s", sampler=sampler)
    running = a.ask(never)  # machine a is running this candidate
    b = _proposer(storage, "s", sampler=sampler)  # the same seed: its sampler wants the same candidate first
    assert [b.ask(never) for _ in range(7)].count(running) == 0
    late = _proposer(storage, "s", lease_s=0.0, sampler=sampler)  # a's lease is over: a died, the candidate may run again
    assert running in [late.ask(never) for _ in range(16)]


def test_of_two_machines_asking_for_one_candidate_at_once_the_lower_trial_number_runs_it(tmp_path):
    pytest.importorskip("optuna")
    storage, never = f"sqlite:///{tmp_path / 'study.db'}", lambda params: False
    a, b = _proposer(storage, "s"), _proposer(storage, "s")
    first = a.ask(never)
    b._taken = lambda: {}  # b's snapshot predates a's trial: only the trial numbers can settle it
    assert b.ask(never) != first
    duplicates = [t for t in b.study.get_trials() if t.user_attrs.get(b.DUPLICATE)]
    assert duplicates and all(t.state.name == "FAIL" and t.number > 0 for t in duplicates)


@needs_cc
@pytest.mark.skipif(not POSTGRES, reason="no PostgreSQL (.ci/run starts one: HYPERLOOM_TEST_POSTGRES)")
def test_two_machines_tuning_at_once_on_one_postgresql_study_never_run_a_candidate_twice(specs):
    pytest.importorskip("optuna")
    study = f"concurrent-{uuid.uuid4().hex[:8]}"
    command = [sys.executable, "-m", "hyperloom.cli.main", "tune", "--spec", "tune", "--strategy", "tpe", "--storage", POSTGRES, "--study",
               study,
               "--seed", "1", "--revalidate-pairs", "0", "--no-sweep-shapes", "--no-flush-cache", "--max-time-s", "0.2", "--min-reps", "6",
               "--target-ci", "0.5", "--warmup-s", "0", "--json"]
    machines = [subprocess.Popen([*command, "--session", name], cwd=specs.root, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                for name in ("a", "b")]
    reports = []
    for proc in machines:
        out, err = proc.communicate(timeout=240)
        assert proc.returncode == 0, err[-2000:]
        reports.append(json.loads(out))
    ran = [json.dumps(t["params"], sort_keys=True) for r in reports for t in r["leaderboard"] + r["rejected"]
           if t["proposer"] != "baseline"]
    assert len(ran) == len(set(ran)) == 3  # the space's three non-baseline candidates, each run by one machine
