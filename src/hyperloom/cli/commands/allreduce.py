"""`hyperloom allreduce bench`: allreduce_int6 timed against the backend's native bf16 all-reduce (`allreduce run`
is the catalog tool)."""

from __future__ import annotations

import argparse

from hyperloom.cli.exits import EXIT_OK
from hyperloom.cli.model_args import add_model_arguments, model_from_args
from hyperloom.cli.render.allreduce import allreduce_bench_report
from hyperloom.cli.tool_command import add_json_option, emit
from hyperloom.tools.allreduce.bench import run_allreduce_bench
from hyperloom.tools.allreduce.models import AllreduceBenchRequest


def bench(args: argparse.Namespace) -> int:
    emit(run_allreduce_bench(model_from_args(AllreduceBenchRequest, args)), args, allreduce_bench_report)
    return EXIT_OK


def configure_bench(parser: argparse.ArgumentParser) -> None:
    parser.description = run_allreduce_bench.__doc__
    add_model_arguments(parser, AllreduceBenchRequest)
    add_json_option(parser)
    parser.set_defaults(handler=bench)
