"""`hyperloom tune start` (also `hyperloom tune` with no verb): run or resume a tuning session in the foreground,
with a progress bar, and print its report; status, propose, stop and report are plain catalog tools."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from hyperloom.cli.exits import EXIT_FAILED_VERDICT, EXIT_OK
from hyperloom.cli.model_args import model_from_args
from hyperloom.cli.render.tune import tune_report
from hyperloom.cli.tool_command import emit, progress_printer

if TYPE_CHECKING:
    from hyperloom.tools.catalog import ToolDef


def start(entry: ToolDef, args: argparse.Namespace) -> int:
    """Exit 0 when a candidate passed the gate, 1 when none did."""
    from hyperloom.core.workspace import Workspace
    from hyperloom.tools.tune.loop import run_tune
    from hyperloom.tools.tune.models import TuneRequest

    request = model_from_args(entry.request, args)
    assert isinstance(request, TuneRequest)
    # The CLI process is the session's only home: a background thread would die with it.
    report = run_tune(request.model_copy(update={"background": False}), Workspace.from_env(), progress_printer())
    emit(report, args, tune_report)
    return EXIT_OK if report.status.best is not None else EXIT_FAILED_VERDICT
