"""disasm_verify as its fronts call it: every kernel of a code object judged by every rule, with histograms."""

from __future__ import annotations

from hyperloom.core.errors import HyperloomError
from hyperloom.core.evidence import measured
from hyperloom.core.hashing import combine_digests, sha256_bytes, sha256_json
from hyperloom.core.progress import ProgressFn
from hyperloom.core.workspace import Workspace
from hyperloom.tools.verify.kernels import judge_rule, kernel_summary, load_kernels, spill_verdict
from hyperloom.tools.verify.models import RuleVerdict, VerifyRequest, VerifyResult
from hyperloom.tools.verify.rules import parse_rule


def verify(request: VerifyRequest, workspace: Workspace, progress: ProgressFn | None = None) -> VerifyResult:
    """Every rule (and the spill check) on every kernel of the code object, or of those named; passes when all hold."""
    path = workspace.resolve(request.code_object, kind="file", what="code_object")
    label = request.code_object
    expect = [parse_rule(text, "expect") for text in request.expect]
    forbid = [parse_rule(text, "forbid") for text in request.forbid]
    kernels, tools = load_kernels(path, label)
    if request.kernels:
        known = {k.name for k in kernels}
        if missing := [name for name in request.kernels if name not in known]:
            raise HyperloomError(f"{label} has no kernel named {missing}", f"choose from {sorted(known)}")
        kernels = [k for k in kernels if k.name in request.kernels]
    verdicts: list[RuleVerdict] = []
    for index, kernel in enumerate(kernels):
        verdicts += [judge_rule(kernel, rule, "expect", request.lines_per_rule) for rule in expect]
        verdicts += [judge_rule(kernel, rule, "forbid", request.lines_per_rule) for rule in forbid]
        if request.check_spills:
            verdicts.append(spill_verdict(kernel, request.lines_per_rule))
        if progress is not None:
            progress(index + 1, len(kernels))
    failed = [v for v in verdicts if not v.passed]
    targets = sorted({k.target for k in kernels})
    summary = (
        f"PASS: {len(verdicts)} check(s) on {len(kernels)} kernel(s) for {', '.join(targets)}"
        if not failed
        else "FAIL: " + "; ".join(f"{v.kernel}: {v.kind} {v.rule} found {v.found} ({v.requirement})" for v in failed[:5])
    )
    evidence = measured(
        "disasm_verify",
        inputs_sha256=combine_digests([sha256_bytes(path.read_bytes()), sha256_json(request.model_dump())]),
        target=",".join(targets),
        toolchain=tools,
    )
    return VerifyResult(
        passed=not failed,
        summary=summary,
        code_object=workspace.relative(path),
        targets=targets,
        kernels=[kernel_summary(k, request.histogram_top) for k in kernels],
        verdicts=verdicts,
        evidence=evidence,
    )
