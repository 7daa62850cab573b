// Decode GEMV, int4 weights × int4 activations (batch m = 1..8): 8 int4 products per instruction
// (v_dot8_i32_iu4 on gfx11/gfx12, v_dot8c_i32_i4 on gfx9). AMD only: NVIDIA sm_90 has no int4 dot.
// Activations are packed in the weights' nibble order (packing.py), so nibble i meets nibble i.
// Per (row, group): exact int32 dot, then fl32(fl32(isum · s_w) · s_x), accumulated in fp32.
#include "decode.h"

#if defined(HYPERLOOM_HIP_ON_CUDA)
#error "decode w4a4 needs an int4 dot instruction (v_dot8_i32_iu4, AMD gfx11/gfx12; v_dot8c_i32_i4, gfx9): not available on NVIDIA; use w4a8 there"
#elif !defined(HL_HAS_DOT8)
#error "decode w4a4 needs an int4 dot instruction (dot8-insts on gfx11/gfx12, dot1-insts on gfx90a/gfx942): not available on this target"
#endif

template <int M>
__device__ __forceinline__ void w4a4_team(const uint4* __restrict__ w, const unsigned short* __restrict__ w_scales,
                                          const uint4* __restrict__ x_q, const float* __restrict__ x_scales, float* __restrict__ y,
                                          int n, int k, int group, float* partial) {
  const int row = blockIdx.x * blockDim.y + threadIdx.y;
  const bool live = row < n;
  const size_t r = live ? row : n - 1;
  const int chunks = k / HL_CHUNK_K, groups = k / group, lanes_per_group = group / HL_CHUNK_K;
  float acc[M];
#pragma unroll
  for (int b = 0; b < M; ++b) acc[b] = 0.f;
  for (int base = 0; base < chunks; base += blockDim.x) {
    const int c = base + threadIdx.x;
    const bool valid = c < chunks;
    int isum[M];
#pragma unroll
    for (int b = 0; b < M; ++b) isum[b] = 0;
    if (valid) {
      const uint4 wv = w[r * chunks + c];
#pragma unroll
      for (int b = 0; b < M; ++b) {
        const uint4 xv = x_q[(size_t)b * chunks + c];  // 32 int4 per uint4
        isum[b] = hl_dot8_i4(wv.x, xv.x, isum[b]);
        isum[b] = hl_dot8_i4(wv.y, xv.y, isum[b]);
        isum[b] = hl_dot8_i4(wv.z, xv.z, isum[b]);
        isum[b] = hl_dot8_i4(wv.w, xv.w, isum[b]);
      }
    }
    for (int off = 1; off < lanes_per_group; off <<= 1)
#pragma unroll
      for (int b = 0; b < M; ++b) isum[b] += __shfl_xor(isum[b], off);
    if (valid && (threadIdx.x & (lanes_per_group - 1)) == 0) {
      const int g = c / lanes_per_group;
      const float s_w = hl_h2f(w_scales[r * groups + g]);
#pragma unroll
      for (int b = 0; b < M; ++b) acc[b] += ((float)isum[b] * s_w) * x_scales[(size_t)b * groups + g];
    }
  }
  hl_store_rows<M>(acc, y, n, row, live, partial);
}

extern "C" __global__ void __launch_bounds__(HL_MAX_THREADS, 1) decode_w4a4(const uint4* __restrict__ w, const unsigned short* __restrict__ w_scales,
                                                                const uint4* __restrict__ x_q, const float* __restrict__ x_scales,
                                                                float* __restrict__ y, int m, int n, int k, int group) {
  __shared__ float partial[HL_PARTIALS];
  HL_FOR_BATCH(m, w4a4_team, w, w_scales, x_q, x_scales, y, n, k, group, partial)
}
