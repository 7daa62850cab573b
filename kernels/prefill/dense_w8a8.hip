// Prefill GEMM, dense int8 weights × int8 activations → int32: v_wmma_i32_16x16x16_iu8 (RDNA4), the
// dense baseline of sparse_w4a4 in the same tile framework (prefill.h). One instruction per 16 × 16
// tile and 16 k: lane (i, kb) loads 8 consecutive int8 of row i at k = 16 s + 8 kb (one uint2) from w
// (n, k) and x (m, k), plain row-major (packing.py).
// gfx11 has an iu8 WMMA too, but with RDNA3's operand layout (lanes 16-31 repeat lanes 0-15): this
// kernel's loads are RDNA4's, so it is not built there.
#include "prefill.h"

#if defined(HL_PREFILL_UNAVAILABLE)
#error "prefill dense_w8a8 needs v_wmma_i32_16x16x16_iu8 with the RDNA4 (gfx1200/gfx1201) operand layout: not available on this target"
#else

extern "C" __global__ void __launch_bounds__(32 * HL_MAX_WAVES) prefill_dense_w8a8(const hl_v2i* __restrict__ w, const hl_v2i* __restrict__ x,
                                                                       int* __restrict__ y, int m, int n, int k) {
  const hl_tile t = hl_tile_of_wave();
  const hl_v2i* a = w + (size_t)(t.f0 + t.i) * (k / 8) + t.kb;
  const hl_v2i* b = x + (size_t)(t.t0 + t.i) * (k / 8) + t.kb;
  hl_v8i acc = {0, 0, 0, 0, 0, 0, 0, 0};
  for (int s = 0; s < k / 16; ++s) acc = __builtin_amdgcn_wmma_i32_16x16x16_iu8_w32_gfx12(true, a[2 * s], true, b[2 * s], acc, false);
  hl_store_tile(t, acc, y, n);
}
#endif
