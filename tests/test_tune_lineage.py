"""Kernel changes as candidates in a running session: a source file or a diff against a recorded candidate, each with
its parent and a note; a change that builds to a recorded code object is not new; the report draws the lineage."""

from __future__ import annotations

import shutil

import pytest

from helpers import FIXTURES
from hyperloom.core.errors import HyperloomError
from hyperloom.tools.tune.api import tune_propose, tune_report
from hyperloom.tools.tune.loop import run_tune
from hyperloom.tools.tune.models import ProposeRequest, SessionRef, TuneRequest

needs_cc = pytest.mark.skipif(shutil.which("cc") is None, reason="no system C compiler (apt-get install gcc)")
TUNE = {"spec": "lineage", "target": "host", "session": "lin", "strategy": "external", "revalidate_pairs": 3, "sweep_shapes": False,
        "min_reps": 7, "max_reps": 15, "max_time_s": 1.0, "warmup_s": 0.0}
WRONG = """--- scale.c
+++ scale.c
@@ -2,4 +2,4 @@
 void axpb(const float *x, float *y, int n) {
   for (int pass = 0; pass < 4; ++pass)
-    for (int i = 0; i < n; ++i) y[i] = 2.0f * x[i] + 1.0f;
+    for (int i = 0; i < n; ++i) y[i] = 2.0f * x[i] + 2.0f;
 }
"""
FASTER = """--- scale.c
+++ scale.c
@@ -1,5 +1,4 @@
-/* y = 2x + 1, the loop run four times over (each pass rewrites the same answer). */
+/* y = 2x + 1, one pass. */
 void axpb(const float *x, float *y, int n) {
-  for (int pass = 0; pass < 4; ++pass)
-    for (int i = 0; i < n; ++i) y[i] = 2.0f * x[i] + 1.0f;
+  for (int i = 0; i < n; ++i) y[i] = 2.0f * x[i] + 1.0f;
 }
"""


@pytest.fixture
def lineage(workspace):
    shutil.copytree(FIXTURES / "specs" / "lineage", workspace.root / "lineage")
    run_tune(TuneRequest(**TUNE, max_candidates=1, background=False), workspace)  # the baseline alone
    return workspace


@needs_cc
def test_a_lineage_of_source_changes_wrong_not_new_and_faster_is_drawn_with_its_gains(lineage):
    wrong = tune_propose(ProposeRequest(session="lin", diff=WRONG, note="adds 2, not 1"), lineage)
    faster = tune_propose(ProposeRequest(session="lin", diff=FASTER, note="one pass instead of four"), lineage)
    assert wrong.accepted and faster.accepted, (wrong, faster)
    (lineage.root / "same.c").write_text("/* one pass, spelled out differently */\nvoid axpb(const float *x, float *y, int n)\n{\n"
                                          "  for (int j = 0; j < n; j++)\n    y[j] = 2.0f * x[j] + 1.0f;\n}\n")
    same = tune_propose(ProposeRequest(session="lin", source="same.c", parent=faster.hash, note="the same loop, reformatted"), lineage)
    assert not same.accepted and same.summary.startswith("not new") and same.hash == faster.hash
    run_tune(TuneRequest(**TUNE, max_candidates=3, background=False), lineage)
    report = tune_report(SessionRef(session="lin"), lineage)
    nodes = {n.note: n for n in report.lineage}
    assert nodes["adds 2, not 1"].status == "WRONG"
    faster_node = nodes["one pass instead of four"]  # one pass against four: faster beyond any noise of this machine (1.4-2x measured)
    assert (faster_node.status == "PASSED" and faster_node.gain_over_baseline > 1.1
            and faster_node.gain_over_parent == faster_node.gain_over_baseline)
    assert nodes["the same loop, reformatted"].status == "NOT_NEW" and nodes["the same loop, reformatted"].same_as == faster.hash
    text = (lineage.root / report.report_md).read_text()
    assert "## Lineage of source changes" in text and "not new: builds to the same code object as" in text and "over the baseline" in text


@needs_cc
def test_a_diff_that_does_not_apply_or_an_unknown_parent_is_refused_with_the_next_step(lineage):
    with pytest.raises(HyperloomError, match="does not apply"):
        tune_propose(ProposeRequest(session="lin", diff=WRONG.replace("pass < 4", "pass < 9"), note="stale"), lineage)
    with pytest.raises(HyperloomError, match="no candidate"):
        tune_propose(ProposeRequest(session="lin", diff=FASTER, parent="f" * 64), lineage)
    with pytest.raises(HyperloomError, match="outside the workspace|escapes|not inside"):
        tune_propose(ProposeRequest(session="lin", source="/etc/passwd"), lineage)
