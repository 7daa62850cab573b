"""Plain-text reports of spec_check, spec_init and spec_example for the terminal."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hyperloom.tools.spec.models import SpecCheckResult, SpecExampleResult, SpecInitResult

_MARK = {"error": "ERROR", "warning": "warn ", "todo": "TODO "}


def spec_check_report(result: SpecCheckResult) -> str:
    lines = [result.summary]
    for problem in result.problems:
        at = f" (shape {problem.shape})" if problem.shape is not None else ""
        lines.append(f"  {_MARK[problem.severity]} {problem.path}{at}: {problem.cause}")
        lines.append(f"        next: {problem.next_step}")
    if result.reference is not None:
        outputs = "; ".join(f"{k}: {v}" for k, v in result.reference.outputs.items())
        lines.append(f"  reference at shape {result.reference.shape}: {result.reference.elapsed_s * 1e3:.1f} ms ({outputs})")
    for build in result.builds:
        lines.append(f"  build {build.variant} for {build.target}: {'ok' if build.ok else 'FAILED'}  {build.summary}")
    for answer in result.runnable:
        lines.append(f"  run {answer.target} ({answer.backend}): {'yes' if answer.can_run else 'no'}, {answer.reason}")
    return "\n".join(lines)


def spec_init_report(result: SpecInitResult) -> str:
    lines = [result.summary, f"  entry: {result.entry}"]
    for parameter in result.parameters:
        role = f", {parameter.role}" if parameter.role else ""
        lines.append(f"  {parameter.name}: {parameter.type} -> {parameter.kind} {parameter.dtype or '?'}{role}")
    lines.append(spec_check_report(result.check))
    return "\n".join(lines)


def spec_example_report(result: SpecExampleResult) -> str:
    if result.name is None:
        return "\n".join(["shipped examples (hyperloom spec example --name NAME [--out DIR]):"]
                         + [f"  {k}: {v}" for k, v in result.examples.items()])
    lines = [f"# {result.name}: {result.examples.get(result.name, '')}", f"# files: {', '.join(result.files)}"]
    if result.copied_to:
        lines.append(f"# copied to {result.copied_to}")
    lines.append(result.kernel_yaml or "")
    return "\n".join(lines)
