"""`hyperloom workload bench`: the catalog tool run as every tool is (tool_command.run), then a line on stderr that says
what its exit code means. Exit 0 when the bench measured, whether any candidate was faster or not: a candidate not
faster, rejected, crashed or refused by the gate is an answer about that candidate, not a failure of the tool; exit 2
when the arguments or the frozen session were refused (a line on stderr says why)."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from hyperloom.cli.tool_command import emit, exit_code, run_tool
from hyperloom.tools.catalog import resolve

if TYPE_CHECKING:
    from hyperloom.tools.catalog import ToolDef


def bench(entry: ToolDef, args: argparse.Namespace) -> int:
    from hyperloom.tools.workload.models import WorkloadBenchResult

    assert entry.cli is not None and entry.cli.render is not None
    result = run_tool(entry, args)
    assert isinstance(result, WorkloadBenchResult)
    emit(result, args, resolve(entry.cli.render))
    code = exit_code(result, entry.cli.verdict)
    faster = [" + ".join(c.levers) for c in result.candidates if c.verdict == "FASTER"]
    line = (f"{len(faster)} of {len(result.candidates)} candidate(s) faster ({', '.join(faster)})" if faster else
            f"no candidate of {len(result.candidates)} faster than the baseline; a candidate not faster is an answer, not a "
            "failure of the tool"
            if result.candidates else "the baseline timed, no candidate given")
    print(f"hyperloom: exit {code}: {line}", file=sys.stderr)
    return code
