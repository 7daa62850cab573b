// Shared device code of the NVIDIA tensor-core decode GEMVs (w4a16_mma.cu on packing.py's row layout,
// w4a16_tiled.cu on its tile layout): the mma, the int4 → fp16 conversion, weight loads and the way a
// grid's blocks share the 16-row tiles.
#pragma once
#include <cuda_fp16.h>
#include <stdint.h>

#define HL_TILE 16       // rows per tile (one mma's M)
#define HL_MAX_WARPS 8   // blockDim.y at most: the warps that split k
#define HL_MAX_TILES 2   // tiles a warp computes at once

#define HL_PARTIAL_FLOATS (4 * HL_MAX_TILES * 32)  // one warp's partial tiles: 4 C values a lane per tile (1 KB)

// The block's per-warp sums in shared memory: warp w's HL_PARTIAL_FLOATS at base + w · stride, value i of
// lane l at [32 i + l] (conflict-free). A static array (stride HL_PARTIAL_FLOATS), or a slice of each warp's
// own dynamic shared memory that its copies no longer use.
struct HlPartials {
  float* base;
  int stride;
};

// y fragment += A (16 x 16 fp16, rows g and g + 8 in a0..a3) · B (16 x 8 fp16, column g in b0, b1), fp32 accumulation.
__device__ __forceinline__ void hl_mma(float (&c)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3, uint32_t b0, uint32_t b1) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

__device__ __forceinline__ uint32_t hl_bits(__half2 h) { return *reinterpret_cast<uint32_t*>(&h); }
__device__ __forceinline__ __half2 hl_half2(uint32_t u) { return *reinterpret_cast<__half2*>(&u); }

// (a & mask) ^ key in one LOP3 (nvcc splits `(a & m) | c` into two when both constants are immediates).
template <uint32_t MASK, uint32_t KEY>
__device__ __forceinline__ uint32_t hl_and_xor(uint32_t a) {
  uint32_t d;
  asm("lop3.b32 %0, %1, %2, %3, 0x6a;" : "=r"(d) : "r"(a), "n"(MASK), "n"(KEY));  // 0x6a: (a & b) ^ c
  return d;
}

// The signed int4 pairs of a word as exact fp16 q: nibbles (0, 4) of `word` (hl_low_q) or (1, 5) (hl_high_q);
// shift the word right by 8 for nibbles (2, 6) and (3, 7). The LOP3 masks two nibbles, flips their sign
// bits (q + 8 in [0, 15]) and puts them in an fp16 mantissa: 1024 + (q + 8) for low nibbles, 1024 + 16 (q + 8)
// for high ones; taking 1032 off, or scaling by 1/16 and taking 72 off, leaves q exactly. A multiply by
// the scale then rounds once, to the reference's fl16(q · s).
__device__ __forceinline__ __half2 hl_low_q(uint32_t word) {
  return __hsub2(hl_half2(hl_and_xor<0x000F000Fu, 0x64086408u>(word)), hl_half2(0x64086408u));  // - (1032, 1032)
}
__device__ __forceinline__ __half2 hl_high_q(uint32_t word) {
  return __hfma2(hl_half2(hl_and_xor<0x00F000F0u, 0x64806480u>(word)), hl_half2(0x2C002C00u), hl_half2(0xD480D480u));  // · 1/16 - 72
}

// 16 bytes of weights, read once: L1::no_allocate keeps the activations in L1.
__device__ __forceinline__ uint4 hl_load_weights(const uint4* p) {
  uint4 v;
  asm("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
  return v;
}

// The tiles [begin, end) of this block: gridDim.x blocks share ceil(n / 16) tiles in equal runs, so the
// launch's grid sets how many tiles each block takes (the spec's `tiles`).
struct HlTileRun {
  int begin, end;
};
__device__ __forceinline__ HlTileRun hl_tile_run(int n) {
  const int tiles = (n + HL_TILE - 1) / HL_TILE, per_block = (tiles + gridDim.x - 1) / gridDim.x;
  const int begin = blockIdx.x * per_block;
  return {begin, min(begin + per_block, tiles)};
}

// The block's sum over its warps of TILES tiles' C fragments (fp32), left in warp 0's `sum`: sum[t][0], sum[t][1]
// are rows g of tile t, batches 2q and 2q + 1; sum[t][2], sum[t][3] rows g + 8. Every warp of the block calls it
// (it synchronizes); it leaves `partial` free for the next tiles.
template <int TILES>
__device__ __forceinline__ void hl_reduce(float (&sum)[TILES][4], const HlPartials& partial) {
  const int lane = threadIdx.x, warp = threadIdx.y, warps = blockDim.y;
  if (warps > 1) {
    float* mine = partial.base + warp * partial.stride + lane;
#pragma unroll
    for (int t = 0; t < TILES; ++t)
#pragma unroll
      for (int i = 0; i < 4; ++i) mine[32 * (4 * t + i)] = sum[t][i];
    __syncthreads();
    if (warp == 0)
      for (int v = 1; v < warps; ++v)
#pragma unroll
        for (int t = 0; t < TILES; ++t)
#pragma unroll
          for (int i = 0; i < 4; ++i) sum[t][i] += partial.base[v * partial.stride + lane + 32 * (4 * t + i)];
    __syncthreads();  // the block's next tiles reuse `partial`
  }
}

// A warp's TILES tiles of C fragments stored to y (rows past n and batches past m are not).
template <int TILES>
__device__ __forceinline__ void hl_store(const float (&sum)[TILES][4], float* __restrict__ y, int m, int n, int tile) {
  const int lane = threadIdx.x, g = lane >> 2, q = lane & 3;
  const int b0 = 2 * q, b1 = 2 * q + 1;
#pragma unroll
  for (int t = 0; t < TILES; ++t) {
    const int row0 = (tile + t) * HL_TILE + g, row1 = row0 + 8;
    if (row0 < n) {
      if (b0 < m) y[(size_t)b0 * n + row0] = sum[t][0];
      if (b1 < m) y[(size_t)b1 * n + row0] = sum[t][1];
    }
    if (row1 < n) {
      if (b0 < m) y[(size_t)b0 * n + row1] = sum[t][2];
      if (b1 < m) y[(size_t)b1 * n + row1] = sum[t][3];
    }
  }
}

// The block's sum over its warps, stored by warp 0.
template <int TILES>
__device__ __forceinline__ void hl_reduce_store(float (&sum)[TILES][4], const HlPartials& partial, float* __restrict__ y, int m, int n, int tile) {
  hl_reduce<TILES>(sum, partial);
  if (threadIdx.y == 0) hl_store<TILES>(sum, y, m, n, tile);
}
