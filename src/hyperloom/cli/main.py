"""`hyperloom`: the command-line front end over the tool catalog.

Start-up imports only the command that runs: the table below names each command's module, imported
when that command is chosen, so `hyperloom --version` imports no tool and `hyperloom census` none but
the census."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass

from hyperloom.cli.exits import EXIT_FAILED_VERDICT, EXIT_INPUT_ERROR, EXIT_OK  # noqa: F401  (re-exported)

# Pydantic looks for plugins by reading the metadata of every installed distribution the first time a
# model is built: about 30 ms of every command on the 2-core machine, for plugins Hyperloom never uses.
# A user who sets the variable keeps their choice.
os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")


@dataclass(frozen=True)
class Command:
    """One subcommand: its name, its one-line help, and the function under hyperloom.cli.commands that
    adds its options ('module:function', imported only when the command runs or help lists every option)."""

    name: str
    configure: str
    help: str
    aliases: tuple[str, ...] = ()

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        module, _, function = self.configure.partition(":")
        getattr(importlib.import_module(f"hyperloom.cli.commands.{module}"), function)(parser)


# A new command adds one module under hyperloom.cli.commands (with `configure(parser)`) and one row here.
COMMANDS = (
    Command("demo", "demo:configure", "run the loop on the shipped decode kernel through the MCP server and write a report"),
    Command("detect", "detect:configure", "check the GPU stack bottom-up and name the layer a fault lives in (detect)", ("doctor",)),
    Command("census", "census:configure", "the real instruction set of AMD GPU targets, measured with LLVM (isa_census, isa_probe, isa_audit)"),
    Command("gate", "gate:configure", "correctness gate: compare outputs with references under a declared tolerance"),
    Command("compile", "compile:configure", "compile a kernel source for one or more targets, offline (compile_kernel)"),
    Command("verify", "verify:configure", "prove from a code object's disassembly which instructions each kernel uses (disasm_verify)", ("disasm-verify",)),
    Command("spec", "spec:configure", "bring a kernel into the loop: draft a kernel.yaml from a source, check one, copy an example (spec_init, spec_check, spec_example)"),
    Command("bench", "bench:configure", "gate a kernel from its kernel.yaml on every input set, then time it (bench)"),
    Command("bench-command", "bench:configure_command", "time any program that prints its own samples (bench_command; nothing is gated)"),
    Command("roofline", "roofline:configure", "measure this device's ceilings and place kernels against them (roofline)"),
    Command("tune", "tune:configure", "search a kernel.yaml's tuning space for the fastest candidate that passes the gate (tune_start)"),
    Command("allreduce", "allreduce:configure", "INT6 compressed all-reduce: run it, or time it against native bf16"),
    Command("profile", "profile:configure", "run a workload under torch.profiler (or read a trace): kernel and fusion hotspots on the roof (profile)"),
    Command("serve", "serve:configure", "sweep a model server's concurrency: throughput knee, latency, saturation, cached per model (serve_sweep)"),
    Command("tools", "tools:configure", "list the MCP tools with their input and output schemas"),
    Command("toolchain", "toolchain:configure", "where each external tool was found, and its version"),
    Command("validate-skill", "validate_skill:configure", "check a skill folder against amd/skills' validator, its evals check and the Agent Skills spec"),
    Command("install", "install:configure", "install the skill and register hyperloom-mcp with Claude Code or Codex"),
    Command("uninstall", "install:configure_uninstall", "remove what `hyperloom install` added to Claude Code or Codex"),
    Command("agent", "agent:configure", "let a local model (Lemonade or any OpenAI-compatible endpoint) run the Hyperloom tools with the skill"),
)


def _chosen(argv: Sequence[str]) -> Command | None:
    """The command named by the first argument that is not a global option."""
    word = next((a for a in argv if not a.startswith("-")), None)
    return next((c for c in COMMANDS if word == c.name or word in c.aliases), None)


def build_parser(only: Command | None = None, every: bool = True) -> argparse.ArgumentParser:
    """The parser; every command is configured (its module imported) unless `every` is false, when only `only` is."""
    from hyperloom import __version__

    parser = argparse.ArgumentParser(prog="hyperloom", description="AMD-GPU-first kernel optimizer tools.")
    parser.add_argument("--version", action="version", version=f"hyperloom {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log debug messages to stderr")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS:
        sub = subparsers.add_parser(command.name, help=command.help, aliases=list(command.aliases), description=command.help)
        if every or command is only:
            command.add_options(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser(_chosen(argv), every=False).parse_args(argv)
    import logging

    from pydantic import ValidationError

    from hyperloom.core.errors import HyperloomError, describe_validation_error

    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.WARNING, stream=sys.stderr)
    try:
        return args.handler(args)
    except HyperloomError as exc:
        print(f"hyperloom: error: {exc}", file=sys.stderr)
    except ValidationError as exc:
        print(f"hyperloom: error: invalid arguments: {describe_validation_error(exc)}", file=sys.stderr)
    except BrokenPipeError:  # the reader (e.g. `head`) went away: not an error of ours
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
    return EXIT_INPUT_ERROR


if __name__ == "__main__":
    sys.exit(main())
