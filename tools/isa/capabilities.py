"""Features an optimizer cares about, each proven by the instructions that implement it (data).

A capability is present on a target when at least one canonical instruction of the census
matches one of its patterns (full match). The names that match are the proof.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property


@dataclass(frozen=True)
class CapabilityDef:
    name: str
    description: str
    patterns: tuple[str, ...]

    @cached_property
    def regex(self) -> re.Pattern[str]:
        return re.compile("|".join(f"(?:{p})" for p in self.patterns))

    def matches(self, names: Iterable[str]) -> list[str]:
        return sorted(n for n in names if self.regex.fullmatch(n))


def _cap(name: str, description: str, *patterns: str) -> CapabilityDef:
    return CapabilityDef(name, description, patterns)


CAPABILITIES: tuple[CapabilityDef, ...] = (
    # integer dot products
    _cap("dot2_int16", "2-way int16 dot product into int32, signed or unsigned", r"v_dot2c?_(i32_i16|u32_u16)"),
    _cap("dot4_int8_signed", "4-way signed int8 dot product into int32", r"v_dot4c?_i32_i8"),
    _cap("dot4_int8_unsigned", "4-way unsigned int8 dot product into uint32", r"v_dot4_u32_u8"),
    _cap("dot4_int8_mixed_sign", "4-way int8 dot product with signedness per operand (neg_lo selects signed inputs)", r"v_dot4_i32_iu8"),
    _cap("dot8_int4_signed", "8-way signed int4 dot product into int32", r"v_dot8c?_i32_i4"),
    _cap("dot8_int4_unsigned", "8-way unsigned int4 dot product into uint32", r"v_dot8_u32_u4"),
    _cap("dot8_int4_mixed_sign", "8-way int4 dot product with signedness per operand (neg_lo selects signed inputs)", r"v_dot8_i32_iu4"),
    # float dot products and fp8
    _cap("dot2_f16", "2-way f16 dot product, f32 or f16 accumulate", r"v_dot2(c|acc)?_f(32|16)_f16"),
    _cap("dot2_bf16", "2-way bf16 dot product, f32 or bf16 accumulate", r"v_dot2c?_(f32|bf16)_bf16"),
    _cap("dot4_fp8_bf8", "4-way fp8/bf8 dot product into f32", r"v_dot4_f32_(fp8|bf8)_(fp8|bf8)"),
    _cap("fp8_bf8_conversions", "Conversions between f32 and fp8/bf8 (incl. stochastic rounding)", r"v_cvt_\w*(fp8|bf8)\w*"),
    _cap("bf16_conversions", "Conversions to or from bf16", r"v_cvt_\w*bf16\w*"),
    _cap("microscaling", "Block-scaled (MX) conversions and MFMA", r"v_cvt_scalef32_\w+", r"v_mfma_scale_\w+"),
    # matrix cores
    _cap("wmma_f16_bf16", "Wave matrix multiply-accumulate (WMMA) on f16/bf16 inputs", r"v_wmma_\w+_(f16|bf16)"),
    _cap("wmma_int8", "WMMA on int8 inputs (signedness per operand)", r"v_wmma_i32_\w+_iu8"),
    _cap("wmma_int4", "WMMA on int4 inputs (signedness per operand)", r"v_wmma_i32_\w+_iu4"),
    _cap("wmma_fp8_bf8", "WMMA on fp8/bf8 inputs", r"v_wmma_f32_\w+_(fp8|bf8)_(fp8|bf8)"),
    _cap("swmmac", "Sparse WMMA with structured sparsity on A (SWMMAC)", r"v_swmmac_\w+"),
    _cap("mfma", "Matrix fused multiply-add on CDNA matrix cores (MFMA)", r"v_mfma_\w+"),
    _cap("mfma_int8", "MFMA on int8 inputs", r"v_mfma_i32_\w+"),
    _cap("mfma_fp8_bf8", "MFMA on fp8/bf8 inputs", r"v_mfma_f32_\w+_(fp8|bf8)_(fp8|bf8)"),
    _cap("mfma_f64", "MFMA in double precision", r"v_mfma_f64_\w+"),
    _cap("mfma_xf32", "MFMA on xf32 (reduced-precision f32) inputs", r"v_mfma_f32_\w+_?xf32"),
    _cap("smfmac", "Sparse MFMA (SMFMAC)", r"v_smfmac_\w+"),
    _cap("accumulation_vgprs", "Accumulation registers (AGPRs) and their moves", r"v_accvgpr_\w+"),
    # vector ALU
    _cap("packed_fp32", "Packed FP32: two f32 lanes per instruction", r"v_pk_(fma|mul|add)_f32", r"v_pk_mov_b32"),
    _cap("packed_fp16", "Packed FP16 math", r"v_pk_(fma|mul|add)_f16"),
    _cap("vopd_dual_issue", "VOPD: two VALU operations issued as one instruction (wave32)", r"v_dual_\w+"),
    _cap("three_operand_integer", "Fused three-operand integer ops (add3, lshl_add, …)",
         r"v_(add3|lshl_add|add_lshl|lshl_or|and_or|or3|xad)_u32"),
    _cap("mad_64bit", "64-bit integer multiply-add", r"v_mad_(co_)?(u64_u32|i64_i32)"),
    _cap("byte_permute", "Byte permute within a register pair (v_perm_b32)", r"v_perm_b32"),
    _cap("permlane", "Cross-lane moves without LDS (v_permlane*)", r"v_permlane\w+"),
    _cap("lds_permute", "Lane permutes through the LDS crossbar (ds_permute/ds_bpermute)", r"ds_b?permute_b32"),
    _cap("scalar_float_alu", "Scalar (SALU) float arithmetic", r"s_(add|sub|mul|fmac|fmaak|fmamk)_f(32|16)"),
    # memory
    _cap("transpose_loads", "Transposing loads of matrix fragments (global or LDS)", r"(ds|global)_(load|read)_(\w+_)?tr\d*_\w+"),
    _cap("lds_direct_loads", "Loads from memory straight into LDS, by name (gfx9's `lds` modifier on buffer loads is not a separate name)",
         r"(global|buffer|scratch)_load_lds_\w+"),
    _cap("atomic_add_f32", "Float32 atomic add on buffer/global/flat memory", r"(buffer|global|flat)_atomic_add_f32"),
    _cap("atomic_pk_add_f16_bf16", "Packed f16/bf16 atomic add on buffer/global/flat memory",
         r"(buffer|global|flat)_atomic_pk_add_(f16|bf16)"),
    _cap("atomic_min_max_f32", "Float32 atomic min/max on buffer/global/flat memory",
         r"(buffer|global|flat)_atomic_(fmin|fmax|min_f32|max_f32|min_num_f32|max_num_f32)"),
    _cap("atomic_f64", "Float64 atomic add/min/max on buffer/global/flat memory",
         r"(buffer|global|flat)_atomic_(add_f64|min_f64|max_f64|fmin_x2|fmax_x2)"),
    _cap("lds_float_atomics", "Float atomics on LDS", r"ds_(add|min|max)_(rtn_)?(f32|f64|num_f32|num_f64)", r"ds_pk_add_(rtn_)?(f16|bf16)"),
    # control
    _cap("split_wait_counters", "Separate wait counters per memory kind (s_wait_loadcnt, s_wait_dscnt, …)",
         r"s_wait_(loadcnt|storecnt|dscnt|kmcnt|samplecnt|bvhcnt)\w*"),
    _cap("split_barriers", "Split workgroup barrier (signal, then wait)", r"s_barrier_(signal|wait)\w*"),
    _cap("prefetch", "Instruction or data prefetch", r"s_(buffer_)?prefetch_\w+", r"s_set_inst_prefetch_distance"),
    _cap("ray_tracing", "BVH ray-intersection instructions", r"image_bvh\w*_intersect_ray", r"ds_bvh_stack\w*"),
)

