"""Build every shipped kernel listed in kernels/proofs.yaml for one target, prove its instructions with
disasm_verify, and write results/kernels/<target>.json (resource usage, verdicts, evidence).

    .venv/bin/python scripts/kernel_proofs.py gfx1201
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from pathlib import Path

import yaml

from hyperloom.core.workspace import Workspace
from hyperloom.tools.compile.api import compile_kernel
from hyperloom.tools.compile.drivers import prelude_dir
from hyperloom.tools.compile.models import CompileRequest
from hyperloom.tools.verify.api import verify
from hyperloom.tools.verify.models import VerifyRequest

REPO = Path(__file__).resolve().parent.parent
PROOFS = REPO / "kernels" / "proofs.yaml"
PRELUDE_NAME = "hyperloom/tools/compile/prelude"  # where the installed package keeps its headers, whatever the install
BUILD_DIR_RE = re.compile(r"^.*/hyperloom-build-[^/]+(?=/)")
PATH_OPTION_RE = re.compile(r"^(-I|-isystem|-include|-o|-MF)?(/.*)$")


def proofs_for(target: str) -> list[dict]:
    return yaml.safe_load(PROOFS.read_text()).get(target, [])


def portable(command: list[str], root: Path) -> list[str]:
    """The build command without this machine's paths: files in the repository relative to it, Hyperloom's own
    headers relative to the installed package, the compile's temporary folder as {build}, programs by name."""

    def rename(arg: str) -> str:
        match = PATH_OPTION_RE.match(arg)
        if match is None:
            return arg
        option, raw = match.group(1) or "", match.group(2)
        if BUILD_DIR_RE.match(raw):
            return option + BUILD_DIR_RE.sub("{build}", raw)
        path, prelude = Path(raw).resolve(), prelude_dir("").resolve()
        if path.is_relative_to(prelude):
            return option + f"{PRELUDE_NAME}/{path.relative_to(prelude).as_posix()}".rstrip("/")
        if path.is_relative_to(root.resolve()):
            return option + path.relative_to(root.resolve()).as_posix()
        return option + Path(raw).name  # a program or a file elsewhere: by name (the evidence records versions)

    return [rename(arg) for arg in command]


def prove(entry: dict, target: str, workspace: Workspace, build_dir: str) -> dict:
    """One kernel: its build (with resource usage) and the verdict of its expect/forbid rules."""
    result = compile_kernel(
        CompileRequest(source=entry["source"], targets=[target], kernels=[entry["kernel"]], output_dir=build_dir, use_cache=False),
        workspace,
    )
    build = result.builds[0]
    record = {"source": entry["source"], "kernel": entry["kernel"], "built": build.ok, "summary": build.summary,
              "command": portable(build.command, workspace.root), "compile_evidence": result.evidence.model_dump(mode="json")}
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
    print(f"{out.relative_to(REPO)}: {len(kernels) - len(failed)}/{len(kernels)} kernels proved"
          + (f"; failed: {failed}" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
