// Decode GEMV, int4 weights × fp16 activations (batch m = 1..8): y[b, n] = Σ_k fl16(q · s) · x[b, k].
// Each weight is dequantized to fp16 (the numerics of weight-only kernels), then multiplied with
// the activation in fp32 (the product of two fp16 values is exact) and accumulated in fp32.
// Layout and geometry: decode.h; nibble order: packing.py.
#include "decode.h"

template <int M>
__device__ __forceinline__ void w4a16_team(const uint4* __restrict__ w, const unsigned short* __restrict__ w_scales,
                                           const uint4* __restrict__ x, float* __restrict__ y, int n, int k, int group,
                                           float* partial) {
  const int row = blockIdx.x * blockDim.y + threadIdx.y;
  const bool live = row < n;
  const size_t r = live ? row : n - 1;  // a dead team still joins the block's barrier
  const int chunks = k / HL_CHUNK_K, groups = k / group;
  float acc[M];
#pragma unroll
  for (int b = 0; b < M; ++b) acc[b] = 0.f;
  for (int c = threadIdx.x; c < chunks; c += blockDim.x) {
    const uint4 wv = w[r * chunks + c];
    const unsigned short s = w_scales[r * groups + c * HL_CHUNK_K / group];
    const unsigned words[4] = {wv.x, wv.y, wv.z, wv.w};
    float wf[HL_CHUNK_K];
#pragma unroll
    for (int j = 0; j < 4; ++j)
#pragma unroll
      for (int e = 0; e < 8; ++e) wf[8 * j + e] = hl_dequant16(hl_nibble(words[j], e), s);
#pragma unroll
    for (int b = 0; b < M; ++b) {
      const uint4* xb = x + (size_t)b * (k / 8) + 4 * c;  // 8 fp16 per uint4: word j's k = 32c + 8j + e
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const uint4 xv = xb[j];
        const unsigned halves[4] = {xv.x, xv.y, xv.z, xv.w};
#pragma unroll
        for (int h = 0; h < 4; ++h) {
          acc[b] = fmaf(wf[8 * j + 2 * h], hl_h2f(halves[h] & 0xFFFFu), acc[b]);
          acc[b] = fmaf(wf[8 * j + 2 * h + 1], hl_h2f(halves[h] >> 16), acc[b]);
        }
      }
    }
  }
  hl_store_rows<M>(acc, y, n, row, live, partial);
}

extern "C" __global__ void __launch_bounds__(HL_MAX_THREADS, 1) decode_w4a16(const uint4* __restrict__ w, const unsigned short* __restrict__ w_scales,
                                                                 const uint4* __restrict__ x, float* __restrict__ y, int m, int n, int k,
                                                                 int group) {
  __shared__ float partial[HL_PARTIALS];
  HL_FOR_BATCH(m, w4a16_team, w, w_scales, x, y, n, k, group, partial)
}
