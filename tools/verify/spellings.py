"""Instruction spellings by GPU generation: one capability, the mnemonics that implement it.

Sources: LLVM 19 assembler and disassembler (../shared/docs/toolchain.md §4, §6.4, §7.2), e.g.
the int8 dot is `v_dot4_i32_iu8` on gfx11/gfx12 but `v_dot4_i32_i8` or the accumulate form
`v_dot4c_i32_i8` (what clang emits) on gfx9. NVIDIA SASS names come from cuobjdump output.
"""

from __future__ import annotations

from hyperloom.core.errors import HyperloomError
from hyperloom.tools.isa.targets import generation as gfx_generation

SPELLINGS: dict[str, dict[str, tuple[str, ...]]] = {
    "dot4_i8": {"gfx9": ("v_dot4_i32_i8", "v_dot4c_i32_i8"), "gfx10": ("v_dot4_i32_i8", "v_dot4c_i32_i8"),
                "gfx11": ("v_dot4_i32_iu8",), "gfx12": ("v_dot4_i32_iu8",), "sm": ("IDP.4A*",)},
    "dot8_i4": {"gfx9": ("v_dot8_i32_i4", "v_dot8c_i32_i4"), "gfx10": ("v_dot8_i32_i4", "v_dot8c_i32_i4"),
                "gfx11": ("v_dot8_i32_iu4",), "gfx12": ("v_dot8_i32_iu4",)},
    "dot2_f16": {"gfx9": ("v_dot2_f32_f16", "v_dot2c_f32_f16"), "gfx10": ("v_dot2_f32_f16", "v_dot2c_f32_f16"),
                 "gfx11": ("v_dot2_f32_f16",), "gfx12": ("v_dot2_f32_f16",)},
    "fp8_dot": {"gfx12": ("v_dot4_f32_fp8_*", "v_dot4_f32_bf8_*")},
    "wmma": {"gfx11": ("v_wmma_*",), "gfx12": ("v_wmma_*",)},
    "swmmac": {"gfx12": ("v_swmmac_*",)},
    "mfma": {"gfx9": ("v_mfma_*",)},
    "smfmac": {"gfx9": ("v_smfmac_*",)},
    "tensor_core": {"sm": ("HMMA*", "IMMA*", "HGMMA*", "IGMMA*", "QGMMA*")},
    "pk_fma_f32": {"gfx9": ("v_pk_fma_f32",)},
    "lds": {"gfx9": ("ds_*",), "gfx10": ("ds_*",), "gfx11": ("ds_*",), "gfx12": ("ds_*",), "sm": ("LDS*", "STS*")},
    "scratch": {"gfx9": ("scratch_*",), "gfx10": ("scratch_*",), "gfx11": ("scratch_*",), "gfx12": ("scratch_*",),
                "sm": ("LDL*", "STL*")},
    "barrier": {"gfx9": ("s_barrier",), "gfx10": ("s_barrier",), "gfx11": ("s_barrier",),
                "gfx12": ("s_barrier_signal", "s_barrier_wait"), "sm": ("BAR*",)},
}


def generation(target: str) -> str:
    """'gfx1201' → 'gfx12', 'gfx942' → 'gfx9' (the census's mapping), 'sm_90' → 'sm'."""
    if target.startswith("sm_"):
        return "sm"
    gen = gfx_generation(target)
    if gen is None:
        raise HyperloomError(f"cannot tell the generation of target {target!r}", "pass a gfx name such as gfx1201 or gfx942")
    return gen


def spelling(name: str, target: str) -> tuple[str, ...]:
    """The patterns standing for capability `name` on `target`; empty when the target lacks it."""
    try:
        by_generation = SPELLINGS[name]
    except KeyError:
        raise HyperloomError(
            f"@{name} is not a known instruction set name",
            "use one of " + ", ".join(f"@{n}" for n in SPELLINGS) + ", or an instruction name or glob",
        ) from None
    return by_generation.get(generation(target), ())
