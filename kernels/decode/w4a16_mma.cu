// Decode GEMV, int4 weights × fp16 activations (batch m = 1..8), on NVIDIA tensor cores (sm_80+):
// y[b, n] = Σ_k fl16(q · s) · x[b, k], the same contract as w4a16.hip (reference.py:w4a16).
//
// Why tensor cores for a memory-bound GEMV: dequantizing and accumulating in fp32 on the SIMT pipes
// costs about four instructions per weight, which is as much as an H200 can issue at its DRAM rate.
// Here the SIMT pipes only dequantize (per eight weights: five integer instructions and eight half2
// ones, see hl_dequant), and mma.m16n8k16 does the products, exact for two fp16 values, with fp32
// accumulation. What is left is instruction issue, so the loop is built to spend as little as it can
// around the dequantization (ncu on the H200 measured 29 instructions per word before this layout):
// each activation load and permute serves 2 · TILES rows, full steps carry no bounds checks, rows
// and activations are clamped to live ones instead of predicated, and pointers advance by constants.
//
// Geometry: a tile is 16 rows; a block owns `per_block` consecutive tiles (gridDim.x · per_block ≥
// ceil(n / 16)) and runs them two at a time (TILES = 2) or one. Its blockDim.y warps split k into
// contiguous ranges of 128-k steps and add their partial tiles through shared memory at the end.
// In a warp, lane l = 4g + q loads, per step, the 32-k chunk 4·step + q of rows g and g + 8 of each
// tile (16 bytes each): a quad reads 64 contiguous bytes of a row, a warp 16 rows per tile.
//
// The mma's k order is free: a GEMV only needs A (weights) and B (activations) to agree. Lane q's
// logical k columns {2q, 2q+1, 2q+8, 2q+9} of each mma are filled with the actual k of its own chunk,
// as half2 pairs in the order the nibble layout gives them cheaply (packing.py: pair s of a word holds
// k offsets (NIBBLE_K[s], NIBBLE_K[s+4]) = (0,2), (4,6), (1,3), (5,7)); activations are permuted to match.
// B's column g is batch row min(g, m - 1): columns past m compute a copy nobody stores, so C's columns
// 2q, 2q+1 are batch rows 2q, 2q+1.
//
// Tuning: a warp loads HL_UNROLL steps per round, in two register stages, so one round is in flight
// while the previous one is computed; HL_STREAM=1 loads weights with L1::no_allocate so activations
// keep the L1; HL_PREFETCH (0, 64, 128 or 256) asks L2 to fetch that many bytes around each weight load,
// so a warp walking a row has the next steps on their way without holding registers for them.
#include "mma.cuh"

#ifndef HL_UNROLL
#define HL_UNROLL 1
#endif
#ifndef HL_STREAM
#define HL_STREAM 1
#endif
#ifndef HL_PREFETCH
#define HL_PREFETCH 0
#endif
#define HL_CHUNK_K 32     // k per lane per step: one 16-byte load of packed weights
#define HL_STEP_CHUNKS 4  // chunks per quad per step (its four lanes)

#if HL_PREFETCH == 256
#define HL_L2_HINT ".L2::256B"
#elif HL_PREFETCH == 128
#define HL_L2_HINT ".L2::128B"
#elif HL_PREFETCH == 64
#define HL_L2_HINT ".L2::64B"
#elif HL_PREFETCH == 0
#define HL_L2_HINT ""
#else
#error "HL_PREFETCH is 0, 64, 128 or 256 (bytes)"
#endif
#if HL_STREAM
#define HL_L1_HINT ".L1::no_allocate"
#else
#define HL_L1_HINT ""
#endif

__device__ __forceinline__ uint4 hl_load_row_weights(const uint4* p) {
  uint4 v;
  asm("ld.global.nc" HL_L1_HINT HL_L2_HINT ".v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
  return v;
}

// The four half2 pairs fl16(q · s) of one word, in the order (k 0, 2), (4, 6), (1, 3), (5, 7) (packing.py's
// nibbles 0/4, 1/5, 2/6, 3/7): one shift and four LOP3 per eight weights (mma.cuh).
__device__ __forceinline__ void hl_dequant(uint32_t word, __half2 scale, uint32_t (&pairs)[4]) {
  const uint32_t high = word >> 8;
  pairs[0] = hl_bits(__hmul2(hl_low_q(word), scale));
  pairs[1] = hl_bits(__hmul2(hl_high_q(word), scale));
  pairs[2] = hl_bits(__hmul2(hl_low_q(high), scale));
  pairs[3] = hl_bits(__hmul2(hl_high_q(high), scale));
}

// Activations of one word (8 consecutive k as four half2) in the pair order of hl_dequant.
__device__ __forceinline__ void hl_x_pairs(uint4 xv, uint32_t (&pairs)[4]) {
  pairs[0] = __byte_perm(xv.x, xv.y, 0x5410);  // k 0, 2
  pairs[1] = __byte_perm(xv.z, xv.w, 0x5410);  // k 4, 6
  pairs[2] = __byte_perm(xv.x, xv.y, 0x7632);  // k 1, 3
  pairs[3] = __byte_perm(xv.z, xv.w, 0x7632);  // k 5, 7
}

// A warp's view of its rows: ROWS = 2 · TILES rows (g and g + 8 of each tile), each at the lane's
// chunk of the warp's first step; pointers advance HL_STEP_CHUNKS uint4 per step.
template <int ROWS>
struct HlRows {
  const uint4* w[ROWS];
  const unsigned short* s[ROWS];
};

// One round of a lane's loads: HL_UNROLL steps of its rows and their scales. With EXACT (k a multiple
// of 128) every chunk of a step below `last` is inside k; otherwise chunks past k load packed zeros,
// which dequantize to 0, and scale 0.
template <int ROWS>
struct HlStage {
  uint4 w[HL_UNROLL][ROWS];
  __half2 s[HL_UNROLL][ROWS];
};

template <int ROWS, bool EXACT>
__device__ __forceinline__ void hl_load(HlStage<ROWS>& st, const HlRows<ROWS>& r, int step, int first, int last, int q, int chunks,
                                        int shift) {
#pragma unroll
  for (int u = 0; u < HL_UNROLL; ++u) {
    const int s = step + u, offset = HL_STEP_CHUNKS * (s - first);
    const bool live = (HL_UNROLL == 1 || s < last) && (EXACT || HL_STEP_CHUNKS * s + q < chunks);
    const int group = live ? (HL_STEP_CHUNKS * s + q) >> shift : 0;  // groups are powers of two: a shift, not a division
#pragma unroll
    for (int i = 0; i < ROWS; ++i) {
      st.w[u][i] = live ? hl_load_row_weights(r.w[i] + offset) : make_uint4(0, 0, 0, 0);
      st.s[u][i] = __half2half2(__ushort_as_half(__ldg(r.s[i] + group)));
    }
  }
}

// Dequantize a round and multiply it with the activations, which come from L1 as they are needed; each
// activation load and permute serves every row of the round.
template <int TILES, bool EXACT>
__device__ __forceinline__ void hl_compute(const HlStage<2 * TILES>& st, const uint4* xs, int step, int first, int last, int q, int chunks,
                                          float (&even)[TILES][4], float (&odd)[TILES][4]) {
#pragma unroll
  for (int u = 0; u < HL_UNROLL; ++u) {
    const int s = step + u;
    if (HL_UNROLL > 1 && s >= last) break;  // uniform across the warp
    const bool live = EXACT || HL_STEP_CHUNKS * s + q < chunks;
    const uint4* xp_base = xs + 4 * HL_STEP_CHUNKS * (s - first);
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      uint32_t xp[4];
      hl_x_pairs(live ? __ldg(xp_base + j) : make_uint4(0, 0, 0, 0), xp);
#pragma unroll
      for (int t = 0; t < TILES; ++t) {
        const uint4& wa = st.w[u][2 * t];
        const uint4& wb = st.w[u][2 * t + 1];
        const uint32_t word_a = j == 0 ? wa.x : j == 1 ? wa.y : j == 2 ? wa.z : wa.w;
        const uint32_t word_b = j == 0 ? wb.x : j == 1 ? wb.y : j == 2 ? wb.z : wb.w;
        uint32_t a[4], b[4];
        hl_dequant(word_a, st.s[u][2 * t], a);
        hl_dequant(word_b, st.s[u][2 * t + 1], b);
        hl_mma(even[t], a[0], b[0], a[1], b[1], xp[0], xp[1]);
        hl_mma(odd[t], a[2], b[2], a[3], b[3], xp[2], xp[3]);
      }
    }
  }
}

// TILES tiles from `tile` on: this warp's k range, then the block's sum over warps, stored.
template <int TILES, bool EXACT>
__device__ __forceinline__ void hl_tiles(const uint4* __restrict__ w, const unsigned short* __restrict__ w_scales, const uint4* __restrict__ x,
                                         float* __restrict__ y, int m, int n, int k, int group, int tile,
                                         const HlPartials& partial) {
  constexpr int ROWS = 2 * TILES;
  const int lane = threadIdx.x, g = lane >> 2, q = lane & 3;
  const int warp = threadIdx.y, warps = blockDim.y;
  const int chunks = k / HL_CHUNK_K, groups = k / group, steps = (chunks + HL_STEP_CHUNKS - 1) / HL_STEP_CHUNKS;
  const int shift = __ffs(group / HL_CHUNK_K) - 1;  // log2(group / 32), groups being powers of two (packing.GROUPS)
  const int first = warp * steps / warps, last = (warp + 1) * steps / warps;  // this warp's contiguous steps
  HlRows<ROWS> rows;
#pragma unroll
  for (int i = 0; i < ROWS; ++i) {
    const int row = tile * HL_TILE + (i / 2) * HL_TILE + (i % 2) * 8 + g;
    const size_t live_row = row < n ? row : n - 1;  // dead rows load a live one; their outputs are not stored
    rows.w[i] = w + live_row * chunks + HL_STEP_CHUNKS * first + q;
    rows.s[i] = w_scales + live_row * groups;
  }
  const int batch = g < m ? g : m - 1;
  const uint4* xs = x + (size_t)batch * (k / 8) + 4 * (HL_STEP_CHUNKS * first + q);
  float even[TILES][4], odd[TILES][4];  // two chains per tile for the tensor pipe
#pragma unroll
  for (int t = 0; t < TILES; ++t)
#pragma unroll
    for (int i = 0; i < 4; ++i) even[t][i] = odd[t][i] = 0.f;

  // Two register stages: the next round's loads are in flight while this round is computed.
  HlStage<ROWS> front, back;
  if (first < last) hl_load<ROWS, EXACT>(front, rows, first, first, last, q, chunks, shift);
  for (int step = first; step < last; step += 2 * HL_UNROLL) {
    if (step + HL_UNROLL < last) hl_load<ROWS, EXACT>(back, rows, step + HL_UNROLL, first, last, q, chunks, shift);
    hl_compute<TILES, EXACT>(front, xs, step, first, last, q, chunks, even, odd);
    if (step + HL_UNROLL >= last) break;  // uniform across the warp
    if (step + 2 * HL_UNROLL < last) hl_load<ROWS, EXACT>(front, rows, step + 2 * HL_UNROLL, first, last, q, chunks, shift);
    hl_compute<TILES, EXACT>(back, xs, step + HL_UNROLL, first, last, q, chunks, even, odd);
  }

  float acc[TILES][4];
#pragma unroll
  for (int t = 0; t < TILES; ++t)
#pragma unroll
    for (int i = 0; i < 4; ++i) acc[t][i] = even[t][i] + odd[t][i];
  hl_reduce_store<TILES>(acc, partial, y, m, n, tile);
}

template <bool EXACT>
__device__ __forceinline__ void hl_block(const uint4* w, const unsigned short* w_scales, const uint4* x, float* y, int m, int n, int k,
                                         int group, const HlPartials& partial) {
  const HlTileRun run = hl_tile_run(n);
  int tile = run.begin;
  for (; tile + 2 <= run.end; tile += 2) hl_tiles<2, EXACT>(w, w_scales, x, y, m, n, k, group, tile, partial);
  if (tile < run.end) hl_tiles<1, EXACT>(w, w_scales, x, y, m, n, k, group, tile, partial);
}

extern "C" __global__ void __launch_bounds__(32 * HL_MAX_WARPS) decode_w4a16_mma(
    const uint4* __restrict__ w, const unsigned short* __restrict__ w_scales, const uint4* __restrict__ x,
    float* __restrict__ y, int m, int n, int k, int group) {
  __shared__ float partials[HL_MAX_WARPS * HL_PARTIAL_FLOATS];
  const HlPartials partial = {partials, HL_PARTIAL_FLOATS};
  if (k % (HL_CHUNK_K * HL_STEP_CHUNKS) == 0)
    hl_block<true>(w, w_scales, x, y, m, n, k, group, partial);
  else
    hl_block<false>(w, w_scales, x, y, m, n, k, group, partial);
}
