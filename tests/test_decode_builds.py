"""The decode levers' library kernels built offline for AMD targets (issue 65): the launches the launchers make at two
decoders' shapes (Llama-3.2-1B, Qwen3-1.7B), recorded on meta tensors (nothing launched, no device), each built by
Triton's compiler for gfx942 and gfx1201 with its resource report; a kernel that does not build there is a failed build
that names why."""

from __future__ import annotations

import importlib.util
import textwrap
from pathlib import Path

import pytest

from hyperloom.core.workspace import Workspace
from hyperloom.tools.runtime.models import ArgSpec
from hyperloom.tools.triton.build import build_triton
from hyperloom.tools.triton.constexprs import Binding
from hyperloom.tools.triton.decode_builds import SHAPES, decode_kernel_builds
from hyperloom.tools.verify.api import verify
from hyperloom.tools.verify.models import VerifyRequest

HAS = all(importlib.util.find_spec(name) is not None for name in ("triton", "torch"))
pytestmark = pytest.mark.skipif(not HAS, reason="recording and building the kernels needs triton and torch (pip install 'hyperloom[test]')")


@pytest.mark.parametrize(("target", "wave"), [("gfx942", 64), ("gfx1201", 32)])
def test_every_kernel_the_decode_levers_launch_builds_for_amd_with_its_resources(workspace: Workspace, target: str, wave: int) -> None:
    # Llama-3.2-1B's and Qwen3-1.7B's (a head of 128: its own attention builds; its GEMVs are Llama's, from the cache)
    built = [b for shape in ("llama-3.2-1b", "qwen3-1.7b") for b in decode_kernel_builds(target, SHAPES[shape], workspace)]
    assert sorted({b.constexprs["BLOCK_D"] for b in built if b.entry == "decode_attention_kernel"}) == [64, 128]
    failed = [f"{b.lever} {b.label}: {b.build.summary}" for b in built if not b.build.ok]
    assert not failed, failed
    assert {(b.lever, b.entry) for b in built} == {("decode_gemv", "gemv_kernel"), ("decode_attention", "decode_attention_kernel"),
                                                   ("decode_attention", "combine_kernel")}
    # the launchers' own choices: the one-row tile, both folds, the few-row tile, every mask kind and the split
    gemv = [b.constexprs for b in built if b.entry == "gemv_kernel"]
    assert {(c["ONE_ROW"], c["NORM"], c["ACT"]) for c in gemv} == {(True, False, False), (True, True, False), (True, False, True),
                                                                 (False, False, False)}
    attention = [b.constexprs for b in built if b.entry == "decode_attention_kernel"]
    assert {(c["MASK"], c["SPLIT"]) for c in attention} >= {(1, False), (1, True), (2, False), (2, True)}
    for b in built:
        (kernel,) = b.build.kernels
        assert kernel.wavefront_size == wave and kernel.vgprs and kernel.vgpr_spills == 0 and kernel.scratch_bytes == 0
        assert kernel.lds_bytes is not None and kernel.lds_bytes <= 65536
        assert kernel.occupancy_waves_per_simd and 1 <= kernel.occupancy_waves_per_simd <= (8 if wave == 64 else 16)
    # the disassembly: every GEMV streams its weights in 16-byte loads (the vector width a bandwidth-bound read needs)
    wide = "buffer_load_dwordx4*" if wave == 64 else "buffer_load_b128*"
    for b in built:
        if b.entry == "gemv_kernel":
            checked = verify(VerifyRequest(code_object=b.build.code_object, expect=[wide], forbid=["@scratch"]), workspace)
            assert checked.passed, (b.label, checked.summary)
    again = decode_kernel_builds(target, SHAPES["llama-3.2-1b"], workspace)
    assert all(b.build.cache_hit for b in again)
    assert [b.build.code_object for b in again] == [b.build.code_object for b in built][:len(again)]


def test_a_recorded_launch_is_the_launchers_own_and_runs_nothing() -> None:
    import torch

    from hyperloom.core.shipped import shipped_kernels
    from hyperloom.tools.triton.entry import load_module
    from hyperloom.tools.triton.recorded import recorded

    gemv = load_module(str(shipped_kernels("triton", "gemv", "gemv.py")))
    x, w = torch.empty(1, 2048, dtype=torch.bfloat16, device="meta"), torch.empty(16384, 2048, dtype=torch.bfloat16, device="meta")
    (launch,) = recorded(lambda: gemv.gemv(x, w, params={"BLOCK_N": 4, "num_warps": 8}))
    assert launch["entry"] == "gemv_kernel" and launch["options"] == {"num_warps": 8, "num_stages": 4}
    assert launch["constexprs"]["BLOCK_N"] == 4 and launch["constexprs"]["BLOCK_K"] == 1024 and launch["constexprs"]["ONE_ROW"] is True
    buffers = {a["name"]: a for a in launch["args"] if a["kind"] == "buffer"}
    assert buffers["w"] == {"name": "w", "kind": "buffer", "dtype": "bfloat16", "nbytes": 16384 * 2048 * 2}
    scalars = {a["name"]: a["value"] for a in launch["args"] if a["kind"] == "scalar"}
    assert scalars["n_out"] == 16384 and scalars["k_in"] == 2048 and scalars["rows"] == 1


def test_a_kernel_that_does_not_build_for_the_target_says_why_with_its_line(workspace: Workspace, tmp_path: Path) -> None:
    """A module-level float read inside the kernel: Triton 3.6 took it, later ones refuse it (the decode attention
    kernel's LEFT_OUT did this until it became a constexpr)."""
    import torch

    from hyperloom.tools.triton.entry import load_module
    from hyperloom.tools.triton.recorded import recorded

    source = tmp_path / "leaky.py"
    source.write_text(textwrap.dedent("""\
        import triton
        import triton.language as tl

        FLOOR = -1.0e30


        @triton.jit
        def leaky_kernel(x, y, n, BLOCK: tl.constexpr):
            i = tl.arange(0, BLOCK)
            tl.store(y + i, tl.maximum(tl.load(x + i, mask=i < n, other=0.0), FLOOR), mask=i < n)


        def leaky(x):
            y = torch_empty_like(x)
            leaky_kernel[(1,)](x, y, x.numel(), BLOCK=128)
            return y
        """).replace("torch_empty_like(x)", "x.new_empty(x.shape)"))
    module = load_module(str(source))
    (launch,) = recorded(lambda: module.leaky(torch.empty(100, device="meta")))
    build, _ = build_triton(Path(launch["source"]), launch["entry"], "gfx942", Binding(launch["constexprs"], launch["options"]),
                            [ArgSpec(**a) for a in launch["args"]], workspace)
    if build.ok:  # a Triton that still takes a module-level float (3.6): nothing to refuse here
        pytest.skip(f"this Triton builds a kernel reading a module-level float: {build.summary}")
    assert "leaky.py:10" in build.summary and "FLOOR" in build.summary, build.summary
