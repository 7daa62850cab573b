// Shared device code of the int4 decode GEMVs (w4a16.hip, w4a8.hip, w4a4.hip), for AMD through
// Hyperloom's offline prelude (or ROCm) and for NVIDIA through the HIP-on-CUDA header.
//
// Geometry: a block holds blockDim.y rows (one "row team" of blockDim.x lanes each, a power of
// two ≥ 4). Lane t of a team owns the 32-k chunks c = t, t + blockDim.x, …: one 16-byte load of
// packed weights (4 uint32 words), so a team's loads are contiguous. Partial sums meet through
// warp shuffles, then LDS across the waves of a team.
//
// Weights: uint32 words in the nibble order of packing.py (NIBBLE_K): byte b of word j holds
// k = 8j+b (low nibble) and k = 8j+4+b (high nibble), signed int4.
#pragma once
#include <hip/hip_runtime.h>

#define HL_CHUNK_K 32
#define HL_MAX_BATCH 8
#define HL_MAX_THREADS 256  // per block; more would cap NVIDIA at 64 registers a thread (spills)
#define HL_MAX_WAVES (HL_MAX_THREADS / 32)
#define HL_PARTIALS (HL_MAX_BATCH * HL_MAX_WAVES)

// fp16 bits → float, and the fp16 dequantization fl16(q · s) as weight-only kernels compute it.
#if defined(HYPERLOOM_HIP_ON_CUDA)
__device__ __forceinline__ float hl_h2f(unsigned bits) { return __half2float(__ushort_as_half((unsigned short)bits)); }
__device__ __forceinline__ float hl_dequant16(int q, unsigned short s) {
  return __half2float(__hmul(__int2half_rn(q), __ushort_as_half(s)));
}
#else
__device__ __forceinline__ float hl_h2f(unsigned bits) { return (float)__builtin_bit_cast(_Float16, (unsigned short)bits); }
__device__ __forceinline__ float hl_dequant16(int q, unsigned short s) {
  return (float)((_Float16)q * __builtin_bit_cast(_Float16, s));
}
#endif

// The signed int4 that holds k offset e (0..7) of a word; e is a compile-time constant after unrolling.
__device__ __forceinline__ int hl_nibble(unsigned w, int e) {
  return e < 4 ? (int)(w << (28 - 8 * e)) >> 28 : (int)(w << (24 - 8 * (e - 4))) >> 28;
}

// Calls F<M>(args…) for the runtime batch m in 1..8, so each batch size gets register accumulators.
#define HL_FOR_BATCH(m, F, ...)                                                                    \
  switch (m) {                                                                                     \
    case 1: F<1>(__VA_ARGS__); break;                                                              \
    case 2: F<2>(__VA_ARGS__); break;                                                              \
    case 3: F<3>(__VA_ARGS__); break;                                                              \
    case 4: F<4>(__VA_ARGS__); break;                                                              \
    case 5: F<5>(__VA_ARGS__); break;                                                              \
    case 6: F<6>(__VA_ARGS__); break;                                                              \
    case 7: F<7>(__VA_ARGS__); break;                                                              \
    case 8: F<8>(__VA_ARGS__); break;                                                              \
    default: break;                                                                                \
  }

// Sum each acc[b] over the lanes of the row team and store it at y[b * n + row] (when live).
template <int M>
__device__ __forceinline__ void hl_store_rows(float (&acc)[M], float* __restrict__ y, int n, int row, bool live, float* partial) {
  const int team = blockDim.x;
  const int width = team < warpSize ? team : warpSize;
#pragma unroll
  for (int b = 0; b < M; ++b)
    for (int off = width / 2; off > 0; off >>= 1) acc[b] += __shfl_xor(acc[b], off, width);
  if (team <= warpSize) {
    if (threadIdx.x == 0 && live)
#pragma unroll
      for (int b = 0; b < M; ++b) y[(size_t)b * n + row] = acc[b];
    return;
  }
  const int waves = team / warpSize;
  const int wave = (threadIdx.y * team + threadIdx.x) / warpSize;
  if (threadIdx.x % warpSize == 0)
#pragma unroll
    for (int b = 0; b < M; ++b) partial[b * HL_MAX_WAVES + wave] = acc[b];
  __syncthreads();
  if (threadIdx.x == 0 && live)
#pragma unroll
    for (int b = 0; b < M; ++b) {
      float sum = 0.f;
      for (int v = 0; v < waves; ++v) sum += partial[b * HL_MAX_WAVES + threadIdx.y * waves + v];
      y[(size_t)b * n + row] = sum;
    }
}

// The integer dots: 4 int8 products (w4a8) and 8 int4 products (w4a4), accumulated into c.
#if defined(HYPERLOOM_HIP_ON_CUDA)
__device__ __forceinline__ int hl_dot4_i8(unsigned a, unsigned b, int c) { return __dp4a((int)a, (int)b, c); }
#define HL_HAS_DOT4 1
#elif defined(__GFX11__) || defined(__GFX12__)
__device__ __forceinline__ int hl_dot4_i8(unsigned a, unsigned b, int c) { return __builtin_amdgcn_sudot4(true, (int)a, true, (int)b, c, false); }
__device__ __forceinline__ int hl_dot8_i4(unsigned a, unsigned b, int c) { return __builtin_amdgcn_sudot8(true, (int)a, true, (int)b, c, false); }
#define HL_HAS_DOT4 1
#define HL_HAS_DOT8 1
#elif defined(__gfx90a__) || defined(__gfx940__) || defined(__gfx941__) || defined(__gfx942__) || defined(__gfx950__)
__device__ __forceinline__ int hl_dot4_i8(unsigned a, unsigned b, int c) { return __builtin_amdgcn_sdot4((int)a, (int)b, c, false); }
__device__ __forceinline__ int hl_dot8_i4(unsigned a, unsigned b, int c) { return __builtin_amdgcn_sdot8((int)a, (int)b, c, false); }
#define HL_HAS_DOT4 1
#define HL_HAS_DOT8 1
#endif
