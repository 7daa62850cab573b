"""`hyperloom optimize start`: run or resume a campaign in the foreground (the CLI process is its only home: a
background thread would die with it), with a progress bar, and print its report; the other verbs are plain catalog tools.

Exit codes: 0 when the campaign ran to a stop rule, whether it kept a change or not (a campaign that measured nothing
faster answered the question: not a failure of the tool); 1 when it stopped on an error (its reference could not be
built or timed, so nothing could be judged; a pass: when a workload did) ; 2 when the arguments were refused. A line on
stderr says which, and why."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from hyperloom.cli.exits import EXIT_FAILED_VERDICT, EXIT_OK
from hyperloom.cli.model_args import model_from_args
from hyperloom.cli.render.optimize import report_text, status_report
from hyperloom.cli.tool_command import emit, progress_printer

if TYPE_CHECKING:
    from hyperloom.tools.catalog import ToolDef
    from hyperloom.tools.optimize.models import OptimizeStatus


def start(entry: ToolDef, args: argparse.Namespace) -> int:
    """Run the campaign (or pass), print its report, and say on stderr what its exit code means."""
    from hyperloom.core.workspace import Workspace
    from hyperloom.tools.optimize.api import optimize_status, run_campaign, run_pass
    from hyperloom.tools.optimize.models import OptimizeRef, OptimizeRequest

    request = model_from_args(entry.request, args)
    assert isinstance(request, OptimizeRequest)
    workspace = Workspace.from_env()
    if request.workload_list:
        run_pass(request, workspace, progress_printer())
        status = optimize_status(OptimizeRef(session=request.session or "pass"), workspace)
        emit(status, args, status_report)
        failed = [row.session for row in status.workloads if (row.stop_reason or "").startswith("error") or row.state == "not running"]
        return _said(EXIT_FAILED_VERDICT, f"{', '.join(failed)} could not be optimized (see each one's stop reason)") if failed else \
            _said(EXIT_OK, f"the pass ran; {sum(bool(row.stack) for row in status.workloads)} of {len(status.workloads)} workloads "
                           "kept a change")
    report = run_campaign(request, workspace, progress_printer())
    emit(report, args, report_text)
    return campaign_exit(report.status)


def campaign_exit(status: OptimizeStatus) -> int:
    """The exit code of one campaign, said in a line on stderr."""
    reason = status.stop_reason or ""
    if reason.startswith("error"):
        return _said(EXIT_FAILED_VERDICT, f"the campaign stopped on an error, so nothing could be judged: {reason[len('error: '):]}")
    if status.stack:
        gain = f" ({status.gain:.3g}x, MEASURED)" if status.gain else ""
        return _said(EXIT_OK, f"kept {' + '.join(status.stack)}{gain}")
    return _said(EXIT_OK, f"nothing kept: no candidate was measured faster and gated ({status.candidates} tried; the report says why each "
                          "was dropped); a campaign that finds nothing faster answered, and is not a failure of the tool")


def _said(code: int, line: str) -> int:
    print(f"hyperloom: exit {code}: {line}", file=sys.stderr)
    return code
