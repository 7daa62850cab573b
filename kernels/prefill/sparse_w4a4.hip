// Prefill GEMM, 2:4-sparse int4 weights × int4 activations → int32: v_swmmac_i32_16x16x64_iu4 (RDNA4).
// One instruction per 16 × 16 tile and 64 k: A = 16 rows of w, 2:4 compressed (2 VGPRs of stored int4
// plus one VGPR of 2-bit selectors), B = 16 tokens of x (4 VGPRs), D += A·B in 8 VGPRs.
// Operands (packing.py): w_vals uint32 (n, k/16) = compressed values in natural nibble order,
// w_idx uint32 (n, k/32) = selectors, x uint32 (m, k/8) = activations in natural nibble order.
#include "prefill.h"

#if defined(HL_PREFILL_UNAVAILABLE)
#error "prefill sparse_w4a4 needs v_swmmac_i32_16x16x64_iu4 (RDNA4 structured-sparse WMMA, gfx1200/gfx1201): not available on this target"
#else

extern "C" __global__ void __launch_bounds__(32 * HL_MAX_WAVES) prefill_sparse_w4a4(const hl_v2i* __restrict__ w_vals, const int* __restrict__ w_idx,
                                                                        const hl_v4i* __restrict__ x, int* __restrict__ y, int m, int n, int k) {
  const hl_tile t = hl_tile_of_wave();
  // Lane (i, kb) loads row f0 + i (token t0 + i for x) at k = 64 s + 32 kb .. + 31: 16 stored values
  // (one uint2), one selector word, and 32 activations (one uint4).
  const hl_v2i* a = w_vals + (size_t)(t.f0 + t.i) * (k / 32) + t.kb;
  const int* idx = w_idx + (size_t)(t.f0 + t.i) * (k / 32) + t.kb;
  const hl_v4i* b = x + (size_t)(t.t0 + t.i) * (k / 32) + t.kb;
  hl_v8i acc = {0, 0, 0, 0, 0, 0, 0, 0};
  for (int s = 0; s < k / 64; ++s) {
    // The builtin types the selector operand as short in LLVM 19, but the instruction reads the whole
    // 32-bit VGPR (no index_key on this opcode in wave32). The truncation to i16 is free, so the register
    // is the 32-bit load of idx[]; kernels/proofs.yaml forbids 16-bit global loads in this kernel, which
    // would leave the selectors of k 16..31 of the lane's half undefined.
    acc = __builtin_amdgcn_swmmac_i32_16x16x64_iu4_w32(true, a[2 * s], true, b[2 * s], acc, idx[2 * s], false);
  }
  hl_store_tile(t, acc, y, n);
}
#endif
