// Decode GEMV, int4 weights × int8 activations (batch m = 1..8), activations quantized per group
// with float32 scales. Per (row, group): an exact int32 dot of the codes (v_dot4_i32_iu8 on
// gfx11/gfx12, v_dot4c_i32_i8 on gfx9, __dp4a on NVIDIA), then fl32(fl32(isum · s_w) · s_x),
// accumulated in fp32. A group of g k spans g/32 adjacent lanes, which add their integer partial
// sums by shuffles before any rounding, so the integer part is exact for every launch geometry.
#include "decode.h"

#if !defined(HL_HAS_DOT4)
#error "decode w4a8 needs an int8 dot instruction (dot8-insts on gfx11/gfx12, dot1-insts on gfx90a/gfx942, dp4a on NVIDIA): not available on this target"
#endif

template <int M>
__device__ __forceinline__ void w4a8_team(const uint4* __restrict__ w, const unsigned short* __restrict__ w_scales,
                                          const uint4* __restrict__ x_q, const float* __restrict__ x_scales, float* __restrict__ y,
                                          int n, int k, int group, float* partial) {
  const int row = blockIdx.x * blockDim.y + threadIdx.y;
  const bool live = row < n;
  const size_t r = live ? row : n - 1;
  const int chunks = k / HL_CHUNK_K, groups = k / group, lanes_per_group = group / HL_CHUNK_K;
  float acc[M];
#pragma unroll
  for (int b = 0; b < M; ++b) acc[b] = 0.f;
  for (int base = 0; base < chunks; base += blockDim.x) {  // the same trip count on every lane: shuffles below
    const int c = base + threadIdx.x;
    const bool valid = c < chunks;
    int isum[M];
#pragma unroll
    for (int b = 0; b < M; ++b) isum[b] = 0;
    if (valid) {
      const uint4 wv = w[r * chunks + c];
      const unsigned words[4] = {wv.x, wv.y, wv.z, wv.w};
#pragma unroll
      for (int b = 0; b < M; ++b) {
        const uint4* xb = x_q + (size_t)b * (k / 16) + 2 * c;  // 16 int8 per uint4
        const uint4 x0 = xb[0], x1 = xb[1];
        const unsigned xw[8] = {x0.x, x0.y, x0.z, x0.w, x1.x, x1.y, x1.z, x1.w};
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          // 16·q in each int8 lane: k = 32c+8j+0..3 from the low nibbles, +4..7 from the high ones.
          isum[b] = hl_dot4_i8((words[j] << 4) & 0xF0F0F0F0u, xw[2 * j], isum[b]);
          isum[b] = hl_dot4_i8(words[j] & 0xF0F0F0F0u, xw[2 * j + 1], isum[b]);
        }
      }
    }
    for (int off = 1; off < lanes_per_group; off <<= 1)
#pragma unroll
      for (int b = 0; b < M; ++b) isum[b] += __shfl_xor(isum[b], off);
    if (valid && (threadIdx.x & (lanes_per_group - 1)) == 0) {
      const int g = c / lanes_per_group;
      const float s_w = hl_h2f(w_scales[r * groups + g]);
#pragma unroll
      for (int b = 0; b < M; ++b) acc[b] += ((float)(isum[b] >> 4) * s_w) * x_scales[(size_t)b * groups + g];
    }
  }
  hl_store_rows<M>(acc, y, n, row, live, partial);
}

extern "C" __global__ void __launch_bounds__(HL_MAX_THREADS, 1) decode_w4a8(const uint4* __restrict__ w, const unsigned short* __restrict__ w_scales,
                                                                const uint4* __restrict__ x_q, const float* __restrict__ x_scales,
                                                                float* __restrict__ y, int m, int n, int k, int group) {
  __shared__ float partial[HL_PARTIALS];
  HL_FOR_BATCH(m, w4a8_team, w, w_scales, x_q, x_scales, y, n, k, group, partial)
}
