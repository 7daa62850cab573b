"""`hyperloom census TARGET…`: isa_census (summary, listing, compare), isa_probe (--probe), isa_audit (--audit),
and --write-results and --check of the committed results/isa/<target>.json files."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING

from hyperloom.cli.exits import EXIT_FAILED_VERDICT, EXIT_OK
from hyperloom.cli.model_args import add_model_arguments, model_from_args
from hyperloom.cli.render.isa import audit_report, census_report, probe_report
from hyperloom.cli.render.text import table
from hyperloom.cli.tool_command import add_json_option, emit, progress_printer
from hyperloom.core.errors import HyperloomError
from hyperloom.core.workspace import Workspace
from hyperloom.tools.catalog import tool

if TYPE_CHECKING:
    from hyperloom.tools.catalog import ToolDef


def run(census: ToolDef, args: argparse.Namespace) -> int:
    """The census of each target; or, with --probe or --audit, that tool on the one target given."""
    targets: list[str] = list(args.target or [])
    if args.write_results is not None or args.check is not None:
        return _results(args, targets)
    if not targets:
        raise HyperloomError("no target was given", "name one or more targets, e.g. `hyperloom census gfx1201`")
    if args.lines or args.paths:
        if len(targets) != 1 or (args.lines and args.paths):
            raise HyperloomError("--probe and --audit take exactly one target, one at a time",
                                 "e.g. `hyperloom census gfx1201 --probe 'v_dot8_i32_iu4 v1, v2, v3, v4'`")
        args.target = targets[0]
        entry, render = (tool("isa_probe"), probe_report) if args.lines else (tool("isa_audit"), audit_report)
        emit(entry.run(model_from_args(entry.request, args), Workspace.from_env(), progress_printer()), args, render)
        return EXIT_OK
    if len(targets) > 1:
        from hyperloom.tools.isa.census import census_many

        census_many(targets, refresh=args.refresh, progress=progress_printer())  # measures side by side; the reports below read the cache
        args.refresh = False
    results = []
    for target in targets:
        args.target = target
        results.append(census.run(model_from_args(census.request, args), Workspace.from_env(), progress_printer()))
    if args.json:
        print(json.dumps([r.model_dump(mode="json") for r in results], indent=2) if len(results) > 1
              else results[0].model_dump_json(indent=2))
    else:
        print("\n\n".join(census_report(r) for r in results))
    return EXIT_OK


def _results(args: argparse.Namespace, chosen: list[str]) -> int:
    """Write results/isa/<target>.json, or compare a fresh census of each with the committed file."""
    from hyperloom.tools.isa.census import census_many
    from hyperloom.tools.isa.results import RESULTS_DIR, drift, read_committed, write_results
    from hyperloom.tools.isa.targets import default_targets, find_llvm_mc, known_targets

    checking = args.check is not None
    folder = Workspace.from_env().resolve((args.check if checking else args.write_results) or RESULTS_DIR, must_exist=checking)
    llvm = find_llvm_mc()
    committed = {p.stem: p for p in sorted(folder.glob("*.json"))} if checking else {}
    defaults = default_targets(llvm)
    targets = chosen or defaults + sorted(set(committed) - set(defaults))
    unknown = [t for t in targets if t not in known_targets(llvm.path) and t not in chosen]
    measured = census_many([t for t in targets if t not in unknown], refresh=True, progress=progress_printer())
    if not checking:
        paths = write_results(measured, folder)
        rows = [(c.target, c.llvm.version, c.canonical_count, c.alias_count, str(p)) for c, p in zip(measured, paths, strict=True)]
        print(table(["target", "LLVM", "canonical", "aliases", "written"], rows))
        return EXIT_OK
    drifted = False
    for fresh in measured:
        if fresh.target not in committed:
            drifted = True
            print(f"{fresh.target}: no committed file in {folder}")
            continue
        report = drift(fresh, read_committed(committed[fresh.target]))
        drifted |= report.drifted
        print(f"{fresh.target}: " + ("no drift" if not report.drifted else "DRIFT\n  " + "\n  ".join(report.differences)))
    for target in unknown:
        print(f"{target}: not checked, llvm-mc {llvm.version} does not know it")
    return EXIT_FAILED_VERDICT if drifted else EXIT_OK


def options(parser: argparse.ArgumentParser, census: ToolDef) -> None:
    """TARGET… positionally, the census's other fields as options, and isa_probe's and isa_audit's beside them."""
    probe, audit = tool("isa_probe"), tool("isa_audit")
    parser.add_argument("target", nargs="*", metavar="TARGET", help="AMDGPU targets, e.g. gfx1201 gfx942")
    add_model_arguments(parser, census.request, skip=("target",))
    fields = probe.request.model_fields
    parser.add_argument("--probe", dest="lines", action="append", metavar="LINE",
                        help=f"isa_probe: {fields['lines'].description} (repeat for several)")
    parser.add_argument("--wave64", action="store_true", help=fields["wave64"].description)
    parser.add_argument("--audit", dest="paths", action="append", metavar="PATH",
                        help=f"isa_audit: {audit.request.model_fields['paths'].description} (repeat for several)")
    parser.add_argument("--write-results", nargs="?", const="", metavar="DIR",
                        help="write the census of each target (default: the default targets) to DIR/<target>.json (default: results/isa)")
    parser.add_argument("--check", nargs="?", const="", metavar="DIR",
                        help="measure again and report drift from the files in DIR (default: results/isa); exit 1 on drift")
    add_json_option(parser)
