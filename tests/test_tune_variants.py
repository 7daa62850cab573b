"""tune sessions that search several variants of a spec at once (search_variants), on the host CPU."""

from __future__ import annotations

import json
import shutil

import pytest

from helpers import FIXTURES
from hyperloom.core.errors import HyperloomError
from hyperloom.tools.tune.api import tune_propose
from hyperloom.tools.tune.loop import run_tune
from hyperloom.tools.tune.models import ProposeRequest, TuneRequest
from hyperloom.tools.tune.proposers import OptunaProposer
from hyperloom.tools.tune.space import VARIANT, Space
from hyperloom.validators.schemas import schema_errors

needs_cc = pytest.mark.skipif(shutil.which("cc") is None, reason="no system C compiler (apt-get install gcc)")
QUICK = {"warmup_s": 0.0, "min_reps": 6, "max_reps": 20, "max_time_s": 0.2, "target_ci": 0.5, "flush_cache": False}
SPEC = "tune/variants.yaml"


@pytest.fixture
def specs(workspace):
    shutil.copytree(FIXTURES / "specs" / "tune", workspace.root / "tune")
    return workspace


def tune(workspace, **fields):
    request = {"spec": SPEC, "session": "v", "background": False, "search_variants": ["fast", "broken"], **QUICK, **fields}
    return run_tune(TuneRequest(**request), workspace)


def test_a_joint_space_lists_the_own_variant_first_then_each_further_variant_tagged():
    space = Space({"REPEAT": [4, 16]}, {"fast": {"REPEAT": [1, 2]}, "broken": {}}, variant="host")
    assert list(space.grid()) == [{"REPEAT": 4}, {"REPEAT": 16}, {VARIANT: "fast", "REPEAT": 1}, {VARIANT: "fast", "REPEAT": 2},
                                  {VARIANT: "broken"}]
    assert space.size == 5
    assert Space({}, {"fast": {}}).size == 1 and list(Space({}, {"fast": {}}).grid()) == [{}, {VARIANT: "fast"}]


@needs_cc
def test_the_grid_searches_every_variant_and_the_winner_of_another_variant_is_revalidated_and_swept(specs):
    report = tune(specs, revalidate_pairs=3)
    trials = sorted(report.leaderboard + report.rejected, key=lambda t: t.seq)
    assert [t.params for t in trials] == [
        {}, {"REPEAT": 4}, {"REPEAT": 64}, {VARIANT: "fast", "REPEAT": 1}, {VARIANT: "fast", "REPEAT": 8}, {VARIANT: "broken"},
    ]  # REPEAT 16 of the own variant is the baseline: not run twice
    broken = trials[-1]
    assert broken.status == "WRONG" and broken.input_set == "zeros"
    assert report.status.best.params == {VARIANT: "fast", "REPEAT": 1}
    assert report.revalidation is not None and report.revalidation.speedup > 1.5  # REPEAT 1 against 16
    assert [s.shape for s in report.sweep] == [{"n": 65536}, {"n": 4096}] and all(s.winner_s and s.baseline_s for s in report.sweep)
    assert "also searched: `fast`, `broken`" in (specs.root / report.report_md).read_text()
    folder = specs.root / ".hyperloom" / "tune" / "v"
    assert schema_errors("tune_breakdown", json.loads((folder / "breakdown.json").read_text())) == []
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["variant_defines"] == {"fast": {"REPEAT": 8}, "broken": {"REPEAT": 1, "FAULT": 5}}
    assert set(manifest["variant_sources_sha256"]) == {"fast", "broken"}


@needs_cc
def test_a_proposal_names_a_searched_variant_and_is_recognised_as_the_trial_it_repeats(specs):
    tune(specs, max_candidates=4, revalidate_pairs=0, sweep_shapes=False)  # baseline, REPEAT 4 and 64, then fast REPEAT 1
    again = tune_propose(ProposeRequest(session="v", params={VARIANT: "fast", "REPEAT": 1}), specs)
    assert not again.accepted and "already recorded as #4" in again.summary
    own = tune_propose(ProposeRequest(session="v", params={VARIANT: "host", "REPEAT": 4}), specs)  # the own variant, named
    assert not own.accepted and "already recorded as #2" in own.summary
    with pytest.raises(HyperloomError, match="does not search variant 'nope'") as error:
        tune_propose(ProposeRequest(session="v", params={VARIANT: "nope", "REPEAT": 1}), specs)
    assert "fast" in error.value.next_step and "broken" in error.value.next_step
    assert tune_propose(ProposeRequest(session="v", params={VARIANT: "fast", "REPEAT": 8}), specs).accepted


@needs_cc
def test_resuming_with_other_variants_searched_is_refused(specs):
    tune(specs, max_candidates=1, revalidate_pairs=0, sweep_shapes=False)
    with pytest.raises(HyperloomError, match="search_variants"):
        tune(specs, search_variants=["fast"], max_candidates=2)


def test_a_searched_variant_the_spec_lacks_is_refused_before_the_session_starts(specs):
    with pytest.raises(HyperloomError, match="nope"):
        tune(specs, search_variants=["nope"])
    assert not (specs.root / ".hyperloom" / "tune" / "v").exists()


def test_tpe_draws_a_variant_then_a_point_of_its_own_space_and_never_repeats():
    pytest.importorskip("optuna")
    space = Space({"REPEAT": [4, 16]}, {"fast": {"REPEAT": [1, 2], "UNROLL": [1, 2]}, "broken": {}}, variant="host")
    proposer = OptunaProposer(space, seed=1)
    asked: list[dict] = []
    while (params := proposer.ask(lambda p: p in asked)) is not None:
        assert params in list(space.grid())
        asked.append(params)
        proposer.tell(params, 1.0 / (1 + len(asked)))
    assert sorted(map(str, asked)) == sorted(map(str, space.grid()))  # all 7, once each
    learned = OptunaProposer(space, seed=1)
    learned.tell({VARIANT: "fast", "REPEAT": 1, "UNROLL": 2}, 1e-6)  # a candidate from elsewhere: learned, of its variant
    learned.tell({VARIANT: "fast", "REPEAT": 1}, 1e-6)  # not a point of fast's space (UNROLL missing): not learned
    assert len(learned.study.trials) == 1 and learned.study.trials[0].params[VARIANT] == "fast"


def test_cmaes_refuses_a_session_that_searches_several_variants():
    pytest.importorskip("optuna")
    with pytest.raises(HyperloomError, match="several variants") as error:
        OptunaProposer(Space({"REPEAT": [1, 2]}, {"fast": {"REPEAT": [1, 2]}}, variant="host"), seed=0, sampler="cmaes")
    assert "tpe" in error.value.next_step


@needs_cc
def test_a_warm_start_candidate_may_be_of_a_searched_variant(specs):
    report = tune(specs, warm_start=[{VARIANT: "fast", "REPEAT": 1}], max_candidates=2, revalidate_pairs=0, sweep_shapes=False)
    trials = sorted(report.leaderboard + report.rejected, key=lambda t: t.seq)
    assert [(t.proposer, t.params) for t in trials] == [("baseline", {}), ("warm_start", {VARIANT: "fast", "REPEAT": 1})]
    assert trials[1].status == "PASSED" and trials[1].speedup > 1
