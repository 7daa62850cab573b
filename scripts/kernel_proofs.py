"""Build every shipped kernel listed in kernels/proofs.yaml for one target, prove its instructions with
disasm_verify, and write results/kernels/<target>.json (resource usage, verdicts, evidence).

    .venv/bin/python scripts/kernel_proofs.py gfx1201
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import yaml

from hyperloom.core.workspace import Workspace
from hyperloom.tools.compile.api import compile_kernel
from hyperloom.tools.compile.models import CompileRequest
from hyperloom.tools.verify.api import verify
from hyperloom.tools.verify.models import VerifyRequest

REPO = Path(__file__).resolve().parent.parent
PROOFS = REPO / "kernels" / "proofs.yaml"


def proofs_for(target: str) -> list[dict]:
    return yaml.safe_load(PROOFS.read_text()).get(target, [])


def prove(entry: dict, target: str, workspace: Workspace, build_dir: str) -> dict:
    """One kernel: its build (with resource usage) and the verdict of its expect/forbid rules."""
    result = compile_kernel(
        CompileRequest(source=entry["source"], targets=[target], kernels=[entry["kernel"]], output_dir=build_dir, use_cache=False),
        workspace,
    )
    build = result.builds[0]
    record = {"source": entry["source"], "kernel": entry["kernel"], "built": build.ok, "summary": build.summary,
              "command": build.command, "compile_evidence": result.evidence.model_dump(mode="json")}
    if not build.ok:
        return record | {"proved": False}
    checked = verify(VerifyRequest(code_object=build.code_object, kernels=[entry["kernel"]], expect=entry["expect"],
                                   forbid=entry["forbid"], histogram_top=0, lines_per_rule=2), workspace)
    resources = next(k for k in build.kernels if k.name == entry["kernel"])
    return record | {
        "proved": checked.passed,
        "resources": resources.model_dump(),
        "verdicts": [{"rule": v.rule, "kind": v.kind, "passed": v.passed, "found": v.found, "lines": v.lines} for v in checked.verdicts],
        "verify_evidence": checked.evidence.model_dump(mode="json"),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("target", help="a target listed in kernels/proofs.yaml, e.g. gfx1201")
    target = parser.parse_args(argv).target
    entries = proofs_for(target)
    if not entries:
        parser.error(f"kernels/proofs.yaml lists nothing for {target}")
    workspace = Workspace(REPO)
    with tempfile.TemporaryDirectory(dir=REPO, prefix=".proofs-") as tmp:
        kernels = [prove(e, target, workspace, Path(tmp).name) for e in entries]
    out = REPO / "results" / "kernels" / f"{target}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"target": target, "tag": "MEASURED (compile and disassembly only; nothing was run)",
                               "made_by": f"python scripts/kernel_proofs.py {target}", "kernels": kernels}, indent=1) + "\n")
    failed = [k["kernel"] for k in kernels if not k["proved"]]
    print(f"{out.relative_to(REPO)}: {len(kernels) - len(failed)}/{len(kernels)} kernels proved" + (f"; failed: {failed}" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
