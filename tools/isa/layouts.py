"""Encoding families per GPU generation, as data: where the opcode sits and which operand
templates make the disassembler decode every opcode of the family.

A family fixes some bits of dword0 (`prefix`), enumerates an opcode field, and tries each
dword0 `variant` (operand fields, flag bits) with each `tail` (the dwords that follow).
Operand fields an instruction does not use must be zero, so templates are mostly zeros; a few
need VGPRs (v0 = 0x100, v8 = 0x108, v16 = 0x110 in a 9-bit source field). Every group is padded
with one `s_nop 0` dword (PAD): an instruction that needs a literal constant consumes it,
any other decodes it as `s_nop` (toolchain.md 6.2).

How the layouts were verified, with LLVM 19's `llvm-mc --show-encoding` (toolchain.md 6.2):
representative instructions of every family were assembled on a target of the generation and
the bits of sibling opcodes compared (e.g. `ds_add_u32` against `ds_sub_u32` shows the opcode's
lowest bit). gfx9, gfx11 and gfx12 follow toolchain.md 6.3 and were re-checked on gfx908,
gfx90a, gfx1151 and gfx1201; gfx10 (gfx1030) was derived the same way and is noted per family.
Every layout is also cross-checked on each run: sweep ⊆ probe (census.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache

PAD = 0xBF800000  # s_nop 0 on gfx9-gfx12
V0, V8, V16 = 0x100, 0x108, 0x110
VOP3_SOURCES = ((0, 0, 0), (V0, 0, 0), (V0, V8, 0), (V0, V8, V16), (V0, V0, V0))


def vop3_tails(extra: int = 0) -> tuple[tuple[int, ...], ...]:
    """dword1 of VOP3/VOP3P: src0[8:0], src1[17:9], src2[26:18], for each source template."""
    return tuple((s0 | s1 << 9 | s2 << 18 | extra,) for s0, s1, s2 in VOP3_SOURCES)


@dataclass(frozen=True)
class Family:
    """One encoding family: fixed dword0 bits, an opcode field, operand templates."""

    name: str
    prefix: int
    op_lsb: int
    op_bits: int
    variants: tuple[int, ...] = (0,)
    tails: tuple[tuple[int, ...], ...] = ((),)
    ops: int | None = None  # opcodes enumerated, when the top of the field belongs to other families
    paired: bool = False  # variants[i] goes with tails[i] only, instead of every tail

    @property
    def op_count(self) -> int:
        return self.ops if self.ops is not None else 1 << self.op_bits

    def templates(self) -> list[tuple[int, tuple[int, ...]]]:
        if self.paired:
            return list(zip(self.variants, self.tails, strict=True))
        return [(variant, tail) for variant in self.variants for tail in self.tails]

    def groups(self) -> Iterator[tuple[int, ...]]:
        """Every candidate encoding, as dwords (PAD appended)."""
        templates = self.templates()
        for op in range(self.op_count):
            word0 = self.prefix | op << self.op_lsb
            for variant, tail in templates:
                yield (word0 | variant, *tail, PAD)

    @property
    def size(self) -> int:
        return self.op_count * len(self.templates())


def vop3p(prefix: int) -> tuple[Family, Family]:
    """VOP3P op[22:16], tried with op_sel_hi all ones (dword0 bit 14, dword1 [28:27]), as the
    assembler writes by default and WMMA requires (v_wmma_f32_16x16x16_f16 = cc404008
    1c220900 decodes, cc000008 04220900 does not), and all zero, as MFMA's acc/blgp bits are."""
    return (
        Family("VOP3P", prefix | 0x4000, 16, 7, tails=vop3_tails(0x18000000)),
        Family("VOP3P", prefix, 16, 7, tails=vop3_tails()),
    )


_HEX = tuple(f"0x{b:02x}" for b in range(256))


def _dword(word: int) -> str:
    return f"{_HEX[word & 0xFF]},{_HEX[word >> 8 & 0xFF]},{_HEX[word >> 16 & 0xFF]},{_HEX[word >> 24 & 0xFF]}"


@lru_cache(maxsize=256)
def _tail(words: tuple[int, ...]) -> str:
    return "".join("," + _dword(word) for word in words)


def encode_group(words: tuple[int, ...]) -> str:
    """One bracketed disassembler input line: little-endian bytes of each dword."""
    return "[" + _dword(words[0]) + _tail(words[1:]) + "]"  # a family's tails repeat: their text is reused


# ---------------------------------------------------------------- shared by every generation

# SOP2 [31:30]=10 op[29:23]; SOPK [31:28]=1011 op[27:23]; SOP1 [31:23]=0x17D op[15:8];
# SOPC 0x17E op[22:16]; SOPP 0x17F op[22:16]. s_mov_b32 s0, s1 = be800301 (gfx9/10) and
# s_movk_i32 s100, 5 = b0640005 on all four generations. SOP2 ops 0x60-0x7F and SOPK ops
# 0x1D-0x1F are the SOPK/SOP1/SOPC/SOPP prefixes (toolchain.md 6.2 item 8): those families
# enumerate them, so each name is found under its own family.
SCALAR = (
    Family("SOP2", 0x80000000, 23, 7, ops=0x60),
    Family("SOPK", 0xB0000000, 23, 5, ops=0x1D),
    Family("SOP1", 0xBE800000, 8, 8),
    Family("SOPC", 0xBF000000, 16, 7),
    Family("SOPP", 0xBF800000, 16, 7),
)

# VOP2 [31]=0 op[30:25]; VOP1 [31:25]=0x3F op[16:9]; VOPC 0x3E op[24:17]; src0 in [8:0]:
# s0 (0) or v0 (0x100), since some ops refuse an SGPR there. Same bits on gfx9 (v_fmac_f32 =
# 76000501 on gfx908), gfx10 (56000501 on gfx1030), gfx11 and gfx12. VOP2 ops 0x3E/0x3F are
# the VOPC/VOP1 prefixes.
VECTOR_32 = (
    Family("VOP2", 0x00000000, 25, 6, variants=(0, V0), ops=0x3E),
    Family("VOP1", 0x7E000000, 9, 8, variants=(0, V0)),
    Family("VOPC", 0x7C000000, 17, 8, variants=(0, V0)),
)

# ---------------------------------------------------------------- gfx9 (gfx908, gfx90a, gfx942, gfx950)

GFX9 = (
    *SCALAR,
    *VECTOR_32,
    # VOP3 [31:26]=110100 op[25:16]; VOP3P (packed math, dot, MFMA) is ops 0x380-0x3FF of it,
    # i.e. [31:23]=0x1A7 op[22:16]: v_pk_fma_f16 = d38e4000, v_mfma_f32_4x4x1f32 = d3c20000
    # on gfx908, v_pk_fma_f32 = d3b04000 on gfx90a.
    Family("VOP3", 0xD0000000, 16, 10, tails=vop3_tails(), ops=0x380),
    *vop3p(0xD3800000),
    # SMEM [31:26]=110000 op[25:18], imm bit 17 (s_load_dword = c0020141, x2 = c0060101).
    Family("SMEM", 0xC0000000, 18, 8, variants=(0x20000, 0), tails=((0,),)),
    # DS [31:26]=110110 op[24:17], gds bit 16 (ds_sub_u32 = d8020000, gds = d8010000).
    Family("DS", 0xD8000000, 17, 8, variants=(0, 0x10000), tails=((0,),)),
    # FLAT/SCRATCH/GLOBAL [31:26]=110111 op[24:18], seg[15:14]; saddr dword1[22:16], 0x7F = off.
    Family("FLAT", 0xDC000000, 18, 7, variants=(0, 0x4000, 0x8000), tails=((0x7F0000,), (0,))),
    # MUBUF [31:26]=111000 op[24:18], lds bit 16; soffset dword1[31:24] = 0x80 (constant 0).
    # buffer_store_lds_dword decodes only with lds set (e0f50000 80000000 on gfx90a).
    Family("MUBUF", 0xE0000000, 18, 7, variants=(0, 0x10000), tails=((0x80000000,),)),
    # MTBUF [31:26]=111010 op[18:15] (tbuffer_load_format_xy = e8088000).
    Family("MTBUF", 0xE8000000, 15, 4, tails=((0x80000000,),)),
    # MIMG [31:26]=111100 op[24:18], dmask[11:8] (image_store = f0200f00); none on gfx942.
    Family("MIMG", 0xF0000000, 18, 7, variants=(0xF00, 0x100), tails=((0,),)),
    # VINTRP [31:26]=110101 op[17:16] (v_interp_p1_f32 = d4000001); EXP [31:26]=110001.
    Family("VINTRP", 0xD4000000, 16, 2),
    Family("EXP", 0xC4000000, 0, 0, tails=((0,),)),
)

# ---------------------------------------------------------------- gfx10 (gfx1030; derived here)

GFX10 = (
    *SCALAR,
    *VECTOR_32,
    # VOP3 [31:26]=110101 op[25:16] (v_add_f32_e64 = d5030000, v_sub_f32_e64 = d5040000);
    # VOP3P [31:24]=0xCC op[22:16] (v_pk_fma_f16 = cc0e4000, v_dot2_f32_f16 = cc134000).
    Family("VOP3", 0xD4000000, 16, 10, tails=vop3_tails()),
    *vop3p(0xCC000000),
    # SMEM [31:26]=111101 op[25:18]; dword1 soffset[31:25] = 0x7D (null): s_load_dword =
    # f4000141 fa000000, s_load_dwordx2 = f4040101.
    Family("SMEM", 0xF4000000, 18, 8, tails=((0xFA000000,), (0,))),
    # DS [31:26]=110110 op[25:18], gds bit 17 (ds_sub_u32 = d8040000, gds = d8020000).
    Family("DS", 0xD8000000, 18, 8, variants=(0, 0x20000), tails=((0,),)),
    # FLAT [31:26]=110111 op[24:18], seg[15:14]; saddr 0x7D = off (global_load_dword =
    # dc308000 017d0002, scratch = dc304000).
    Family("FLAT", 0xDC000000, 18, 7, variants=(0, 0x4000, 0x8000), tails=((0x7D0000,), (0,))),
    # MUBUF [31:26]=111000 op[25:18] (buffer_load_dwordx2 = e0340000, buffer_gl1_inv =
    # e1c80000; the d16 format ops set bit 25: buffer_load_format_d16_x = e2000000).
    Family("MUBUF", 0xE0000000, 18, 8, tails=((0x80000000,),)),
    # MTBUF [31:26]=111010 op[18:16] plus op bit 3 at dword1 bit 21 (tbuffer_load_format_xy =
    # e8090000; the d16 forms set 0x00200000 in dword1).
    Family("MTBUF", 0xE8000000, 16, 3, tails=((0x80000000,), (0x80200000,))),
    # MIMG [31:26]=111100 op[24:18] plus op bit 7 at dword0 bit 0; dim[5:3], dmask[11:8],
    # unorm bit 12, r128 bit 15 (image_load 2D = f0000f08; image_bvh_intersect_ray = f1989f01,
    # which decodes only with unorm and r128 set; image_msaa_load needs dim 2D_MSAA = 6).
    Family("MIMG", 0xF0000000, 18, 7, variants=(0xF08, 0x108, 0x9F01, 0xF09, 0x109, 0xF30, 0x130), tails=((0,),)),
    # VINTRP [31:26]=110010 op[17:16] (v_interp_mov_f32 = c8020000); EXP [31:26]=111110.
    Family("VINTRP", 0xC8000000, 16, 2),
    Family("EXP", 0xF8000000, 0, 0, tails=((0,),)),
)

# ---------------------------------------------------------------- gfx11 (gfx1100, gfx1151)

# VOPD [31:26]=110010, opX[25:22] and opY[21:17] enumerated together as one 9-bit field.
# dword0: srcX0[8:0], vsrcX1[16:9]; dword1: srcY0[8:0], vsrcY1[16:9], vdstY>>1 [23:17],
# vdstX[31:24]. `v_dual_mul_f32 v0, v1, v2 :: v_dual_mul_f32 v3, v4, v5` = c8c60501 00020b04;
# the second template zeroes both vsrc1 fields (v_dual_mov_b32 needs that); fmaak/fmamk
# consume PAD as their literal. Paired templates suffice: every X op meets some two-source Y
# op in the first, and v_dual_mov_b32 meets itself in the second.
VOPD = Family(
    "VOPD", 0xC8000000, 17, 9, variants=(0x101 | 2 << 9, 0x101), tails=((0x104 | 5 << 9 | 1 << 17,), (0x104 | 1 << 17,)), paired=True
)

GFX11 = (
    *SCALAR,
    *VECTOR_32,
    Family("VOP3", 0xD4000000, 16, 10, tails=vop3_tails()),
    *vop3p(0xCC000000),
    VOPD,
    # SMEM [31:26]=111101 op[25:18]; soffset 0x7C = null (s_load_b64 = f4040101 f8000000).
    Family("SMEM", 0xF4000000, 18, 8, tails=((0xF8000000,), (0,))),
    # DS op[25:18], gds bit 17 (ds_ordered_count ... gds = d8fe0000).
    Family("DS", 0xD8000000, 18, 8, variants=(0, 0x20000), tails=((0,),)),
    # FLAT op[24:18], seg[17:16]; saddr 0x7C = off (global_load_b32 = dc520000 017c0002).
    Family("FLAT", 0xDC000000, 18, 7, variants=(0, 0x10000, 0x20000), tails=((0x7C0000,), (0,))),
    # MUBUF op[25:18] (buffer_load_b32 = e0500000); MTBUF op[18:15].
    Family("MUBUF", 0xE0000000, 18, 8, tails=((0x80000000,),)),
    Family("MTBUF", 0xE8000000, 15, 4, tails=((0x80000000,),)),
    # MIMG op[25:18], dim[4:2], dmask[11:8], r128 bit 15, a16 bit 7 (image_load 2D =
    # f0000f04; image_bvh_intersect_ray = f0648f80).
    Family("MIMG", 0xF0000000, 18, 8, variants=(0xF04, 0x104, 0x8F80, 0x8F00, 0x118), tails=((0,),)),
    # EXP [31:26]=111110; VINTERP [31:24]=0xCD op[22:16]; LDSDIR [31:24]=0xCE op[21:20].
    Family("EXP", 0xF8000000, 0, 0, tails=((0,),)),
    Family("VINTERP", 0xCD000000, 16, 7, tails=((0,), (V0 | V0 << 9 | V0 << 18,))),
    Family("LDSDIR", 0xCE000000, 20, 2),
)

# ---------------------------------------------------------------- gfx12 (gfx1200, gfx1201, gfx1250)

GFX12 = (
    *SCALAR,
    *VECTOR_32,
    Family("VOP3", 0xD4000000, 16, 10, tails=vop3_tails()),
    *vop3p(0xCC000000),
    VOPD,
    # SMEM [31:26]=111101 op[20:13] (s_load_b64 = f4002101 f8000000).
    Family("SMEM", 0xF4000000, 13, 8, tails=((0xF8000000,), (0,))),
    Family("DS", 0xD8000000, 18, 8, tails=((0,),)),
    # VFLAT 0xEC / VSCRATCH 0xED / VGLOBAL 0xEE in [31:24], op[21:14], saddr[6:0] = 0x7C off
    # (global_load_b32 = ee05007c 00000001 00000002); scratch with a VGPR address sets dword1
    # bit 17 (scratch_load_b32 v1, v2, off = ed05007c 00020001).
    Family("VFLAT", 0xEC00007C, 14, 8, tails=((0, 0),)),
    Family("VSCRATCH", 0xED00007C, 14, 8, tails=((0, 0), (0x20000, 0))),
    Family("VGLOBAL", 0xEE000000, 14, 8, variants=(0x7C, 0), tails=((0, 0),)),
    # VBUFFER [31:24]=0xC4 op[21:14], soffset[6:0] = 0x7C null, dword1 format[28:22]=1
    # (buffer_load_b32 = c405007c 00800001; tbuffer ops from 0x80 share the field).
    Family("VBUFFER", 0xC400007C, 14, 8, tails=((0x00800000, 0),)),
    # VIMAGE [31:26]=110100, VSAMPLE [31:26]=111001; op[21:14], dmask[25:22], r128 bit 4,
    # dword1 rsrc[17:9] (image_load 2D = d3c00001 00001000; image_bvh_intersect_ray =
    # d3c64010 0c001000; image_sample = e7c6c001 08001000).
    Family("VIMAGE", 0xD0000000, 14, 8, variants=(0x03C00001, 0x00400001, 0x03C00010, 0x03C00000), tails=((0x1000, 0),)),
    Family("VSAMPLE", 0xE4000000, 14, 8, variants=(0x03C00001, 0x00400001, 0x03C00000, 0x00400006), tails=((0x08001000, 0), (0x1000, 0))),
    Family("EXP", 0xF8000000, 0, 0, tails=((0,),)),
    Family("VINTERP", 0xCD000000, 16, 7, tails=((0,), (V0 | V0 << 9 | V0 << 18,))),
    Family("LDSDIR", 0xCE000000, 20, 2),
)

GENERATIONS: dict[str, tuple[Family, ...]] = {"gfx9": GFX9, "gfx10": GFX10, "gfx11": GFX11, "gfx12": GFX12}

# Encodings newer targets add that the layouts above do not sweep (seen with LLVM 22.1.8): their
# instructions reach the census only through the assembler probe, so they are listed as aliases.
UNSWEPT: dict[str, str] = {
    "gfx950": "the 16-byte VOP3PX2 encoding of v_mfma_scale_* is not swept",
    "gfx1250": "VOPD3 (v_dual_*_f64, v_dual_fma_f32), TENSOR (tensor_load_to_lds), VOP3PX2 (v_wmma_scale*) and 64-bit literals "
               "(v_fmaak_f64) are not swept",
}
