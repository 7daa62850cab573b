"""`hyperloom tune`: run (or resume) a tuning session in the foreground with a progress bar."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from hyperloom.cli.common import EXIT_FAILED_VERDICT, EXIT_OK, emit, progress_printer, tool_options
from hyperloom.cli.model_args import model_from_args
from hyperloom.core.workspace import Workspace
from hyperloom.tools.catalog import tool

if TYPE_CHECKING:
    from hyperloom.tools.tune.models import TuneReport


def render(report: TuneReport) -> str:
    lines = [report.status.summary, f"report: {report.report_md}"]
    lines += [f"  #{t.seq} {t.params or 'baseline'}: {t.median_s * 1e6:.2f} us ({t.speedup or 1:.3f}x)" for t in report.leaderboard[:10]]
    lines += [f"  #{t.seq} {t.params or 'baseline'}: {t.status} at {t.input_set}" for t in report.rejected]
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    from hyperloom.tools.tune.loop import run_tune
    from hyperloom.tools.tune.models import TuneRequest

    request = model_from_args(tool("tune_start").request, args)
    assert isinstance(request, TuneRequest)
    report = run_tune(request.model_copy(update={"background": False}), Workspace.from_env(), progress_printer())
    emit(report, args, render)
    return EXIT_OK if report.status.best is not None else EXIT_FAILED_VERDICT


def configure(parser: argparse.ArgumentParser) -> None:
    tool_options(parser, "tune_start", run)
