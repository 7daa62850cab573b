"""Compile one Triton kernel to an AMDGPU code object, in its own process (a crash or a hang of
Triton's compiler ends this process, not the caller's).

    python -m hyperloom.tools.compile.triton_worker SOURCE.py KERNEL TARGET WAVE SIGNATURE_JSON CONSTEXPRS_JSON OUT
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import tempfile


def main(argv: list[str]) -> int:
    source, kernel, target, wave, signature, constexprs, out = argv
    os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")
    os.environ.setdefault("TRITON_CACHE_DIR", tempfile.mkdtemp(prefix="hyperloom-triton-"))
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    spec = importlib.util.spec_from_file_location("hyperloom_triton_source", source)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # the caller's own kernel file, from the workspace
    function = getattr(module, kernel, None)
    if function is None:
        print(f"{source}: error: no function {kernel!r} in this file", file=sys.stderr)
        return 1
    compiled = triton.compile(
        ASTSource(fn=function, signature=json.loads(signature), constexprs=json.loads(constexprs)),
        target=GPUTarget("hip", target, int(wave)),
    )
    with open(out, "wb") as handle:
        handle.write(compiled.asm["hsaco"])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
