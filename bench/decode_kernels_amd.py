"""The decode levers' Triton kernels built offline for AMD targets (issue 65): every distinct launch decode_gemv and
decode_attention make at a decoder's shapes, recorded on meta tensors and compiled by Triton's AMD backend, with the
compiler's resource report: VGPRs (AGPRs), SGPRs, spills, LDS, scratch and the backend's occupancy (waves a SIMD).
The occupancy is the backend's from registers: Triton's LDS is asked for at launch and not in it, so a kernel whose LDS
is more than a fraction of the compute unit's (64 KiB on gfx942) runs fewer waves than it says.

Compiler-reported, on this machine, no AMD hardware: these are what the code object says, not a runtime figure.

    .venv/bin/python bench/decode_kernels_amd.py [--targets gfx942,gfx1201] [--shapes llama-3.2-1b,qwen3-1.7b] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from hyperloom.core.workspace import Workspace
from hyperloom.tools.triton.decode_builds import SHAPES, decode_kernel_builds
from hyperloom.tools.triton.loader import triton_version


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--targets", default="gfx942,gfx1201")
    parser.add_argument("--shapes", default=",".join(SHAPES), help=f"comma-separated, of {', '.join(SHAPES)}")
    parser.add_argument("--json", type=Path, help="write the rows here too")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="hyperloom-decode-kernels-") as folder:
        workspace = Workspace.at(Path(folder))
        print(f"Triton {triton_version()}; compiler-reported resources of each distinct launch (offline: no AMD hardware)")
        print(f"{'shape':<13} {'target':<8} {'lever':<17} {'launch':<46} {'kernel':<24} {'VGPR':>4} {'AGPR':>4} {'SGPR':>4} "
              f"{'spill':>5} {'LDS B':>6} {'waves/SIMD':>10}")
        for shape in args.shapes.split(","):
            for target in args.targets.split(","):
                started = time.perf_counter()
                for built in decode_kernel_builds(target, SHAPES[shape], workspace):
                    kernel = built.build.kernels[0] if built.build.kernels else None
                    row = {"shape": shape, "target": target, "lever": built.lever, "launch": built.label, "entry": built.entry,
                           "ok": built.build.ok, "summary": built.build.summary, "constexprs": built.constexprs, "options": built.options,
                           "resources": kernel.model_dump() if kernel else None}
                    rows.append(row)
                    if kernel is None:
                        print(f"{shape:<13} {target:<8} {built.lever:<17} {built.label:<46} FAILED: {built.build.summary[:160]}")
                        continue
                    print(f"{shape:<13} {target:<8} {built.lever:<17} {built.label:<46} {built.entry:<24} {kernel.vgprs or 0:>4} "
                          f"{kernel.agprs or 0:>4} {kernel.sgprs or 0:>4} {(kernel.vgpr_spills or 0) + (kernel.sgpr_spills or 0):>5} "
                          f"{kernel.lds_bytes or 0:>6} {kernel.occupancy_waves_per_simd or 0:>10}")
                print(f"# {shape} for {target}: {time.perf_counter() - started:.1f} s")
    if args.json:
        args.json.write_text(json.dumps({"triton": triton_version(), "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
