"""`hyperloom demo`: the loop on the shipped decode kernel, through the MCP server, with a report."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import anyio

from hyperloom.cli.exits import EXIT_FAILED_VERDICT, EXIT_OK


def run(args: argparse.Namespace) -> int:
    from hyperloom.demo.run import check_out_dir, run_demo

    out = Path(args.out).resolve()
    check_out_dir(out)
    report = anyio.run(run_demo, out, args.target, lambda line: print(line, file=sys.stderr))
    print((out / "report.md").read_text())
    print(f"report: {out / 'report.md'} and {out / 'report.json'}")
    return EXIT_OK if all(step.ok for step in report.steps) else EXIT_FAILED_VERDICT


def configure(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Drives hyperloom-mcp over stdio: detect, isa_census, compile the w4a8 and w4a4 decode kernels for the "
        "target, prove their dot instructions with disasm_verify; with a GPU, gate and bench one on it and place "
        "it on the roofline; without, list the claims that stay ASSUMED. Writes report.md and report.json."
    )
    parser.add_argument("--out", default="hyperloom-demo", help="folder for the demo workspace and its report (default ./hyperloom-demo)")
    parser.add_argument("--target", default="gfx1201", help="AMD target to map and compile for (default gfx1201)")
    parser.set_defaults(handler=run)
