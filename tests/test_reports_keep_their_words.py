"""What a bench or a campaign leaves a reader (issue 67): reasons whole (wrapped, never cut mid-word), each bench its
own folder beside a list of them, counts that agree with the rows under them, no empty label, and exit codes that say
what they mean in a line."""

from __future__ import annotations

import argparse
import types

import pytest

from hyperloom.core.evidence import measured
from hyperloom.tools.optimize.models import OptimizeReport, OptimizeStatus, Record, SweepNote
from hyperloom.tools.workload.models import CandidateResult, WorkloadBenchResult
from hyperloom.tools.workload.report import write_report

# a reason as long as the ones a busy machine gives: its words past 160, 200, 240 and 300 characters were cut mid-word
REASON = ("NOT_FASTER: the reference ran at 3.1 ms a step in the pairs, twice its solo pace in the pairs (1.48 ms a step before the "
          "candidate was built): a process that escaped the stop, or a machine that got busy, so measure again; the median of the "
          "pairs' ratios 1.01x lies inside the noise band of 2.0 % and the sign test gives p 0.34 over 6 pairs; inputs fresh")


def _bench(summary: str = "baseline 1.48 ms/step; no candidate of 2 faster") -> WorkloadBenchResult:
    candidates = [CandidateResult(levers=["compile"], verdict="NOT_FASTER", reason=REASON),
                  CandidateResult(levers=["knob:batch=8"], verdict="FASTER", reason="2.1x over 6 pairs", speedup=2.1)]
    return WorkloadBenchResult(ok=True, summary=summary, name="mlp", baseline=None, candidates=candidates, warnings=[], report_md="",
                               result_json="", plot=None, vendor="cpu", evidence=measured("workload_bench", inputs_sha256="0" * 64))


def _words(text: str) -> list[str]:
    return " ".join(text.split()).split()


def test_each_bench_keeps_its_own_report_and_result_beside_a_list_of_them(workspace):
    benches = workspace.root / ".hyperloom" / "workload" / "mlp" / "bench"
    first = write_report(_bench("the first bench"), benches, workspace)
    second = write_report(_bench("the second bench"), benches, workspace)
    assert first.report_md != second.report_md and first.result_json != second.result_json
    assert "the first bench" in (workspace.root / first.report_md).read_text(), "the first bench's verdicts are kept"
    assert "the second bench" in (workspace.root / second.report_md).read_text()
    assert (workspace.root / first.result_json).parent.name == "1" and (workspace.root / second.result_json).parent.name == "2"
    listed = (benches / "index.md").read_text()
    assert listed.index("the first bench") < listed.index("the second bench") and "[2/report.md](2/report.md)" in listed, listed
    assert "compile NOT_FASTER, knob:batch=8 FASTER" in listed


def test_a_bench_report_s_table_holds_each_reason_whole(workspace):
    result = write_report(_bench(), workspace.root / "bench", workspace)
    assert " ".join(REASON.split()) in " ".join((workspace.root / result.report_md).read_text().split())


def test_the_cli_s_bench_lines_wrap_a_reason_and_keep_every_word():
    from hyperloom.cli.render.workload import bench_report

    text = bench_report(_bench())
    assert "\n  compile: NOT_FASTER: " in text and "\n  knob:batch=8: FASTER 2.1x: " in text, text  # under the summary, indented
    assert _words(REASON) == _words(text.split("compile: NOT_FASTER: ", 1)[1].split("knob:batch=8")[0])
    assert all(len(line) <= 100 for line in text.splitlines() if "NOT_FASTER" in line or line.startswith("    "))


def _record(seq: int, phase: str, levers: list[str], device_s: float = 5.0, reason: str = REASON) -> Record:
    return Record(seq=seq, key=str(seq), phase=phase, reference=levers if phase == "baseline" else [], proposer="catalog",
                  decision="MEASURED",
                  result=CandidateResult(levers=levers, verdict="NOT_FASTER", reason=reason, speedup=1.01), device="cpu", device_s=device_s,
                  finished_at="2026-01-01T00:00:00")


def _report() -> OptimizeReport:
    records = [_record(1, "baseline", []), _record(2, "levers", ["compile"]), _record(3, "levers", ["knob:batch=8"]),
               _record(4, "levers", ["decode_loop"], device_s=0.0, reason="not run alone: it needs a static KV cache"),
               _record(5, "levers", ["channels_last"]), _record(6, "levers", ["sdpa_math"]), _record(7, "revalidate", ["knob:batch=8"])]
    status = OptimizeStatus(session="mlp", workload="mymodel.py:build", folder="f", state="closed", phase="closed",
                            summary="mlp: closed; 4 candidate(s) tried", candidates=4, pending_proposals=0, stack=[], gain=None,
                            baseline_step_s=0.00148, budget_device_s=3600, spent_device_s=60, stop_reason="every phase ran to its end")
    return OptimizeReport(status=status, records=records, sweep_note=SweepNote(declared=0, swept=0, note="no points"), notes=[REASON],
                          evidence=None, report_md="r.md", breakdown_json="b.json", plot=None)


def test_the_campaign_s_lines_count_what_they_list_and_label_the_a_a():
    from hyperloom.cli.render.optimize import report_text

    text = report_text(_report())
    assert ": : " not in text and "#1 baseline: A/A: the baseline against itself: MEASURED" in text, text
    assert ("7 measurement(s) recorded: 4 candidate(s) tried, 1 A/A (a reference against its own work), 1 not run alone (a need the "
            "baseline lacks), 1 whole-stack revalidation(s)" in " ".join(text.split())), text
    note = text.split("note: ", 1)[1]
    assert _words(REASON) == _words(note.split("report:")[0]), "a note whole, wrapped"


def test_the_campaign_s_report_md_keeps_reasons_whole_and_counts_its_rows():
    from hyperloom.tools.optimize.report import markdown

    text = markdown(_report())
    assert " ".join(REASON.split()) in text and "7 measurement(s) recorded: 4 candidate(s) tried" in text
    assert "| 1 | baseline | A/A: the baseline against itself |" in text


@pytest.mark.parametrize("limit", [80, 160, 200, 240])
def test_a_reason_shortened_for_a_line_ends_at_a_clause_or_a_word_and_says_where_the_rest_is(limit):
    from hyperloom.core.shorten import at_clause

    short = at_clause(REASON, limit, "result.json")
    kept = short.removesuffix(" ... (the rest in result.json)")
    assert short.endswith("(the rest in result.json)") and len(short) <= limit + 1 and REASON.startswith(kept), short
    assert REASON[len(kept)] in " ;:,.(", f"cut mid-word: {short!r}"


def _status(stack: list[str], stop: str) -> OptimizeStatus:
    return OptimizeStatus(session="mlp", workload="w", folder="f", state="closed", phase="closed", summary="s", candidates=4,
                          pending_proposals=0, stack=stack, gain=1.3 if stack else None, baseline_step_s=None, budget_device_s=1,
                          spent_device_s=1, stop_reason=stop)


@pytest.mark.parametrize(("stack", "stop", "code", "said"), [
    ([], "every phase ran to its end", 0, "exit 0: nothing kept: no candidate was measured faster and gated (4 tried"),
    (["compile"], "every phase ran to its end", 0, "exit 0: kept compile (1.3x, MEASURED)"),
    ([], "error: the workload w raised in warmup: boom", 1,
     "exit 1: the campaign stopped on an error, so nothing could be judged: the workload w raised"),
])
def test_optimize_start_s_exit_code_is_said_in_a_line(stack, stop, code, said, capsys):
    from hyperloom.cli.commands.optimize import campaign_exit

    assert campaign_exit(_status(stack, stop)) == code
    assert said in capsys.readouterr().err


def test_workload_bench_exits_0_when_nothing_is_faster_and_says_why(monkeypatch, capsys):
    from hyperloom.cli.commands import workload
    from hyperloom.tools.catalog import CATALOG

    entry = next(e for e in CATALOG if e.name == "workload_bench")
    slower = _bench().model_copy(update={"candidates": [_bench().candidates[0]]})
    monkeypatch.setattr(workload, "run_tool", lambda entry, args: slower)
    assert workload.bench(entry, argparse.Namespace(json=True)) == 0
    assert ("exit 0: no candidate of 1 faster than the baseline; a candidate not faster is an answer, not a failure of the "
            "tool") in capsys.readouterr().err


def test_a_campaign_s_progress_counts_against_what_it_plans_and_ends_at_what_it_tried():
    from hyperloom.tools.optimize.campaign import Campaign

    seen: list[tuple[int, int]] = []
    tried = [1, 2, 3, 4]
    fake = types.SimpleNamespace(progress=lambda done, total: seen.append((done, total)),
                                 ledger=types.SimpleNamespace(candidates=lambda: tried), planned=0,
                                 request=types.SimpleNamespace(max_candidates=64))
    Campaign.report_progress(fake)  # type: ignore[arg-type]  # the baseline's A/A, before any plan: nothing said, not 0/0
    fake.planned = 7
    Campaign.report_progress(fake)  # type: ignore[arg-type]
    Campaign.report_progress(fake, final=True)  # type: ignore[arg-type]
    assert seen == [(4, 7), (4, 4)], "4 of the 7 planned, not of max_candidates' 64; the end says 4 of 4"
