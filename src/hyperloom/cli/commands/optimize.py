"""`hyperloom optimize start`: run or resume a campaign in the foreground (the CLI process is its only home: a
background thread would die with it), with a progress bar, and print its report; the other verbs are plain catalog tools."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from hyperloom.cli.exits import EXIT_FAILED_VERDICT, EXIT_OK
from hyperloom.cli.model_args import model_from_args
from hyperloom.cli.render.optimize import report_text, status_report
from hyperloom.cli.tool_command import emit, progress_printer

if TYPE_CHECKING:
    from hyperloom.tools.catalog import ToolDef


def start(entry: ToolDef, args: argparse.Namespace) -> int:
    """Exit 0 when the campaign kept a change, 1 when it kept nothing (or a pass, when no workload did)."""
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
        return EXIT_OK if any(row.stack for row in status.workloads) else EXIT_FAILED_VERDICT
    report = run_campaign(request, workspace, progress_printer())
    emit(report, args, report_text)
    return EXIT_OK if report.status.stack else EXIT_FAILED_VERDICT
