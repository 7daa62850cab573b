// Decode GEMV, int4 weights × fp16 activations (batch m = 1..8), on NVIDIA tensor cores (sm_80+), with
// weights and scales in packing.py's tensor-core tile layout: y[b, n] = Σ_k fl16(q · s) · x[b, k]
// (reference.py:w4a16_tiled, the contract of w4a16).
//
// Why the layout: in packing.py's row layout a warp's 16-byte-per-lane load touches 8 rows, 64 bytes
// each, because a lane must hold rows g and g + 8 of the mma fragment; ncu on the H200 (run 19) showed
// that pattern keeping L2 busier than DRAM (68 % against 50 %) with DRAM at half its bandwidth. Here a
// tile of 16 rows × 64 k is one contiguous 512-byte block, 16 bytes a lane, already in fragment order:
// one coalesced load per lane per block, one shift and four LOP3 give a0..a3 (mma.cuh), each lane's 16
// activations are one 32-byte load in the order the fragment wants (no permutes), and a lane's two
// rows' scales are one 32-bit load.
//
// Geometry: a block owns a run of tiles (hl_tile_run) and takes them TILES = 2 at a time (or 1); its
// blockDim.y warps split the 64-k blocks into contiguous ranges and add their partial tiles through
// shared memory. B's column g is batch row min(g, m - 1): columns past m compute a copy nobody
// stores. Tuning: HL_UNROLL blocks per round, in two register stages (one round's loads in flight
// while the previous one is computed).
//
// HL_TILE_GROUP = G reads grouped tiles instead (packing.group_tiles, spec w4a16_grouped): G tiles' blocks at
// one k side by side, so a warp taking G tiles at once reads one contiguous stream.
#include "mma.cuh"

#ifndef HL_UNROLL
#define HL_UNROLL 2
#endif
#ifndef HL_ASYNC4_MIN_BLOCKS
#define HL_ASYNC4_MIN_BLOCKS 1  // __launch_bounds__'s blocks of 256 threads per SM for decode_w4a16_tiled_async4: 3 caps it at 80 registers (it spills)
#endif
#define HL_BLOCK_K 64     // k per tile block: 512 bytes of weights
#define HL_BLOCK_UINT4 32 // uint4 per tile block: one per lane
#ifndef HL_TILE_GROUP
#define HL_TILE_GROUP 1  // the weights' layout: 1, tiles one after another; G, grouped tiles (packing.group_tiles)
#endif
#define HL_BLOCK_STRIDE (HL_BLOCK_UINT4 * HL_TILE_GROUP)  // uint4 from a tile's block to its next one

// A lane's loads of one round: HL_UNROLL blocks of each of its TILES tiles, their scales and activations.
template <int TILES, int U>
struct HlStage {
  uint4 w[U][TILES];
  uint32_t s[U][TILES];  // half2: scale of row g (low), of row g + 8 (high)
  uint4 x[U][2];         // k = 16q .. 16q + 15 of the block
};

// A lane's read cursor: where its next round starts (pointers advance by constants), and the warp's
// range of blocks [block, last).
template <int TILES>
struct HlCursor {
  const uint4* w[TILES];
  const uint32_t* s[TILES];
  const uint4* x;
  int block, last, k16q, shift;  // k16q: 64 · block + 16 q, the lane's first k; shift: log2(group) (groups are powers of two)

  __device__ __forceinline__ void advance(int blocks) {
#pragma unroll
    for (int t = 0; t < TILES; ++t) w[t] += blocks * HL_BLOCK_STRIDE;
    x += blocks * (HL_BLOCK_K / 8);
    block += blocks;
    k16q += blocks * HL_BLOCK_K;
  }
};

template <int TILES>
__device__ __forceinline__ void hl_load(HlStage<TILES, HL_UNROLL>& st, const HlCursor<TILES>& c) {
#pragma unroll
  for (int u = 0; u < HL_UNROLL; ++u) {
    if (HL_UNROLL > 1 && c.block + u >= c.last) break;  // uniform across the warp
    const int group = (c.k16q + u * HL_BLOCK_K) >> c.shift;  // a lane's 16 k never cross a group (groups ≥ 32)
#pragma unroll
    for (int t = 0; t < TILES; ++t) {
      st.w[u][t] = hl_load_weights(c.w[t] + u * HL_BLOCK_STRIDE);
      st.s[u][t] = __ldg(c.s[t] + group * (HL_TILE / 2));
    }
    st.x[u][0] = __ldg(c.x + u * (HL_BLOCK_K / 8));
    st.x[u][1] = __ldg(c.x + u * (HL_BLOCK_K / 8) + 1);
  }
}

template <int TILES, int U>
__device__ __forceinline__ void hl_compute(const HlStage<TILES, U>& st, int block, int last, float (&acc)[TILES][2][4]) {
#pragma unroll
  for (int u = 0; u < U; ++u) {
    if (U > 1 && block + u >= last) break;  // uniform across the warp
#pragma unroll
    for (int t = 0; t < TILES; ++t) {
      const __half2 scales = hl_half2(st.s[u][t]);
      const __half2 s_g = __low2half2(scales), s_g8 = __high2half2(scales);
      const uint32_t words[4] = {st.w[u][t].x, st.w[u][t].y, st.w[u][t].z, st.w[u][t].w};
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const uint32_t high = words[j] >> 8;
        const uint4& xv = st.x[u][j / 2];
        hl_mma(acc[t][TILES >= 4 ? 0 : j & 1],  // four tiles are four independent chains already: one accumulator each saves registers
               hl_bits(__hmul2(hl_low_q(words[j]), s_g)), hl_bits(__hmul2(hl_high_q(words[j]), s_g8)),  // rows g, g + 8 at k 0, 1
               hl_bits(__hmul2(hl_low_q(high), s_g)), hl_bits(__hmul2(hl_high_q(high), s_g8)),          // rows g, g + 8 at k 2, 3
               j % 2 == 0 ? xv.x : xv.z, j % 2 == 0 ? xv.y : xv.w);
      }
    }
  }
}

// Two register stages: the next round's HL_UNROLL blocks are in flight while this round is computed.
template <int TILES>
__device__ __forceinline__ void hl_stream_registers(HlCursor<TILES> c, float (&acc)[TILES][2][4]) {
  const int first = c.block, last = c.last;
  HlStage<TILES, HL_UNROLL> front, back;
  if (first < last) hl_load<TILES>(front, c);
  c.advance(HL_UNROLL);
  for (int block = first; block < last; block += 2 * HL_UNROLL) {
    if (block + HL_UNROLL < last) hl_load<TILES>(back, c);
    c.advance(HL_UNROLL);
    hl_compute<TILES, HL_UNROLL>(front, block, last, acc);
    if (block + HL_UNROLL >= last) break;  // uniform across the warp
    if (block + 2 * HL_UNROLL < last) hl_load<TILES>(front, c);
    c.advance(HL_UNROLL);
    hl_compute<TILES, HL_UNROLL>(back, block + HL_UNROLL, last, acc);
  }
}

// Asynchronous copies (sm_80+ cp.async) of each lane's own 16 bytes of weights and 4 bytes of scales into
// its slots of a shared-memory ring: STAGES - 1 blocks stay in flight without holding registers, and a
// lane only ever reads what it copied itself, so waiting on its own copy groups is all the ordering needed.
__device__ __forceinline__ void hl_copy16(uint4* shared, const uint4* global) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"((unsigned)__cvta_generic_to_shared(shared)), "l"(global) : "memory");
}
__device__ __forceinline__ void hl_copy4(uint32_t* shared, const uint32_t* global) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" ::"r"((unsigned)__cvta_generic_to_shared(shared)), "l"(global) : "memory");
}
__device__ __forceinline__ void hl_copy_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int PENDING>
__device__ __forceinline__ void hl_copy_wait() { asm volatile("cp.async.wait_group %0;" ::"n"(PENDING) : "memory"); }

// A lane's slots in its warp's ring of GT tiles a stage: weights at w[(stage · GT + tile) · 32], scales likewise.
template <int GT>
struct HlRing {
  uint4* w;
  uint32_t* s;
};

// Copies of the block at `ahead` into ring stage `stage`, then `ahead` moves one block on. Past the warp's
// last block nothing is copied, but a group is still committed: the count of groups in flight stays uniform.
template <int TILES, int GT>
__device__ __forceinline__ void hl_issue(HlCursor<TILES>& ahead, const HlRing<GT>& ring, int stage) {  // stage: a constant once unrolled
  if (ahead.block < ahead.last) {
    const int group = ahead.k16q >> ahead.shift;
#pragma unroll
    for (int t = 0; t < TILES; ++t) {
      hl_copy16(ring.w + (stage * GT + t) * 32, ahead.w[t]);
      hl_copy4(ring.s + (stage * GT + t) * 32, ahead.s[t] + group * (HL_TILE / 2));
    }
    ahead.advance(1);
  }
  hl_copy_commit();
}

// Round r reads ring stage r % STAGES; the loop runs the ring STAGES rounds at a time so that every stage
// index, and with it every shared-memory offset, is a constant.
template <int TILES, int STAGES, int GT>
__device__ __forceinline__ void hl_stream_async(const HlCursor<TILES>& c, const HlRing<GT>& ring, float (&acc)[TILES][2][4]) {
  HlCursor<TILES> ahead = c;
#pragma unroll
  for (int stage = 0; stage < STAGES - 1; ++stage) hl_issue<TILES, GT>(ahead, ring, stage);
  HlCursor<TILES> now = c;  // the round being computed: its activations
  for (int block = c.block; block < c.last; block += STAGES) {
#pragma unroll
    for (int stage = 0; stage < STAGES; ++stage) {
      if (block + stage >= c.last) break;  // uniform across the warp
      hl_issue<TILES, GT>(ahead, ring, (stage + STAGES - 1) % STAGES);  // into the stage read last round
      HlStage<TILES, 1> st;
      st.x[0][0] = __ldg(now.x);
      st.x[0][1] = __ldg(now.x + 1);
      now.advance(1);
      hl_copy_wait<STAGES - 1>();  // this round's group has landed
#pragma unroll
      for (int t = 0; t < TILES; ++t) {
        st.w[0][t] = ring.w[(stage * GT + t) * 32];
        st.s[0][t] = ring.s[(stage * GT + t) * 32];
      }
      hl_compute<TILES, 1>(st, block + stage, c.last, acc);
    }
  }
  hl_copy_wait<0>();  // nothing in flight when the ring serves the block's next tiles
}

// Where a block's sums go: y, or with a split of k over gridDim.y blocks (the *_split entries), each split's sums
// into `partials` (HL_MAX_SPLITS slots of 128 floats a tile) and, for the last split of a tile group to arrive
// (its counter, in `counters` at the group's first tile), their sum in split order into y. The workspace is
// the spec's scratch: zero when allocated, and the last split zeroes its counter again for the next launch.
#define HL_MAX_SPLITS 8
#define HL_SPLIT_SLOT 128  // floats of one tile's partial sums from one split: 4 C values a lane
struct HlOut {
  float* y;
  unsigned* counters;  // nullptr: no split
  float* partials;
};

template <int TILES>
__device__ __forceinline__ void hl_split_store(float (&sum)[TILES][4], const HlPartials& partial, const HlOut& out, int m, int n, int tile) {
  hl_reduce<TILES>(sum, partial);
  if (threadIdx.y != 0) return;
  const int lane = threadIdx.x;
  const unsigned splits = gridDim.y;
  float* slot = out.partials + (size_t)tile * HL_MAX_SPLITS * HL_SPLIT_SLOT + lane;  // tile t, split s, value i: + ((t · MAX) + s) · SLOT + 32 i
#pragma unroll
  for (int t = 0; t < TILES; ++t)
#pragma unroll
    for (int i = 0; i < 4; ++i) slot[(t * HL_MAX_SPLITS + blockIdx.y) * HL_SPLIT_SLOT + 32 * i] = sum[t][i];
  __threadfence();  // this split's sums reach the device before its arrival is counted
  __syncwarp();
  unsigned arrived = 0;
  if (lane == 0) arrived = atomicAdd(out.counters + tile, 1u);
  if (__shfl_sync(0xffffffffu, arrived, 0) + 1 < splits) return;
  __threadfence();  // the last to arrive: every split's sums are visible to it
#pragma unroll
  for (int t = 0; t < TILES; ++t)
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      float total = 0.f;  // in split order, whichever split arrived last: the same bits every launch
      for (unsigned s = 0; s < splits; ++s) total += __ldcg(slot + (t * HL_MAX_SPLITS + s) * HL_SPLIT_SLOT + 32 * i);
      sum[t][i] = total;
    }
  hl_store<TILES>(sum, out.y, m, n, tile);
  if (lane == 0) out.counters[tile] = 0;
}

// TILES tiles from `tile` on: this warp's blocks (through register stages when `stages` is 0, else through
// the ring of GT tiles a stage), then the block's sum over warps, stored (or, split, combined).
template <int TILES, int GT>
__device__ __forceinline__ void hl_tiles(const uint4* __restrict__ w, const uint32_t* __restrict__ w_scales, const uint4* __restrict__ x,
                                         const HlOut& out, int m, int n, int k, int group, int tile, int stages, const HlRing<GT>& ring,
                                         const HlPartials& partial) {
  const int lane = threadIdx.x, g = lane >> 2, q = lane & 3, warp = threadIdx.y, warps = blockDim.y;
  const int blocks = k / HL_BLOCK_K, groups = k / group;
  const int all = warps * gridDim.y, me = blockIdx.y * warps + warp;  // k is split over every warp of every split
  const int first = me * blocks / all, last = (me + 1) * blocks / all;  // this warp's contiguous blocks
  HlCursor<TILES> c;
#pragma unroll
  for (int t = 0; t < TILES; ++t) {
    const int at = tile + t;  // in grouped tiles: block `first` of tile `at` is slot at % G of its group's block
    c.w[t] = w + (((size_t)(at / HL_TILE_GROUP) * blocks + first) * HL_TILE_GROUP + at % HL_TILE_GROUP) * HL_BLOCK_UINT4 + lane;
    c.s[t] = w_scales + (size_t)(tile + t) * groups * (HL_TILE / 2) + g;
  }
  c.x = x + (size_t)(g < m ? g : m - 1) * (k / 8) + (size_t)first * (HL_BLOCK_K / 8) + 2 * q;
  c.block = first;
  c.last = last;
  c.k16q = HL_BLOCK_K * first + 16 * q;
  c.shift = __ffs(group) - 1;
  float acc[TILES][2][4];  // two chains per tile for the tensor pipe
#pragma unroll
  for (int t = 0; t < TILES; ++t)
#pragma unroll
    for (int i = 0; i < 4; ++i) acc[t][0][i] = acc[t][1][i] = 0.f;

  if (GT == 0)
    hl_stream_registers<TILES>(c, acc);
  else if (stages == 8)
    hl_stream_async<TILES, 8, GT>(c, ring, acc);
  else if (stages == 4)
    hl_stream_async<TILES, 4, GT>(c, ring, acc);
  else
    hl_stream_async<TILES, 2, GT>(c, ring, acc);

  float sum[TILES][4];
#pragma unroll
  for (int t = 0; t < TILES; ++t)
#pragma unroll
    for (int i = 0; i < 4; ++i) sum[t][i] = acc[t][0][i] + acc[t][1][i];
  if (out.counters == nullptr || gridDim.y == 1)  // one split stores y itself: no workspace round trip, no fence (run 27: 1.8 us at 4096², 4.8 us at 28672x8192)
    hl_reduce_store<TILES>(sum, partial, out.y, m, n, tile);
  else
    hl_split_store<TILES>(sum, partial, out, m, n, tile);
}

// The ring's depth comes from the launch: the async variants' shared_bytes is warps · stages · (bytes a stage),
// and the kernel reads the dynamic shared memory it was given back (2, 4 or 8 stages are built; more runs 8).
__device__ __forceinline__ unsigned hl_dynamic_shared_bytes() {
  unsigned bytes;
  asm("mov.u32 %0, %%dynamic_smem_size;" : "=r"(bytes));
  return bytes;
}

// The tiles of this block's run: GT at a time (two for the register stages), then the rest in a pair and a single.
template <int GT>
__device__ __forceinline__ void hl_run(const uint4* w, const uint32_t* w_scales, const uint4* x, const HlOut& y, int m, int n, int k, int group,
                                       int stages, const HlRing<GT>& ring, const HlPartials& partial) {
  constexpr int AT_ONCE = GT == 0 ? 2 : GT;
  if (gridDim.y > (y.counters == nullptr ? 1 : HL_MAX_SPLITS)) __trap();  // a split the entry cannot combine: a crash, not wrong sums
  const HlTileRun run = hl_tile_run(n);
  int tile = run.begin;
  for (; tile + AT_ONCE <= run.end; tile += AT_ONCE) hl_tiles<AT_ONCE, GT>(w, w_scales, x, y, m, n, k, group, tile, stages, ring, partial);
  if (AT_ONCE > 2 && tile + 2 <= run.end) {
    hl_tiles<2, GT>(w, w_scales, x, y, m, n, k, group, tile, stages, ring, partial);
    tile += 2;
  }
  if (tile < run.end) hl_tiles<1, GT>(w, w_scales, x, y, m, n, k, group, tile, stages, ring, partial);
}

// The register stages' body: static shared memory for the warps' partial sums.
__device__ __forceinline__ void hl_registers(const uint4* w, const uint32_t* w_scales, const uint4* x, const HlOut& out, int m, int n, int k, int group) {
  __shared__ float partials[HL_MAX_WARPS * HL_PARTIAL_FLOATS];
  hl_run<0>(w, w_scales, x, out, m, n, k, group, 0, HlRing<0>{nullptr, nullptr}, HlPartials{partials, HL_PARTIAL_FLOATS});
}

// Each warp's slice of the dynamic shared memory holds its ring; once the warp's copies of a tile run have
// landed (hl_stream_async drains them), the slice's start holds its partial sums (they fit in two stages),
// so the ring costs the block no static shared memory beside it.
template <int GT>
__device__ __forceinline__ void hl_async(const uint4* w, const uint32_t* w_scales, const uint4* x, const HlOut& out, int m, int n, int k, int group) {
  constexpr int STAGE_BYTES = GT * 32 * (16 + 4);  // per warp and stage: each lane's weights and scales of GT tiles
  static_assert(2 * STAGE_BYTES >= 4 * GT * 32 * 4, "a warp's partial sums must fit in its two-stage ring");
  extern __shared__ __align__(16) unsigned char hl_ring_bytes[];
  const int given = hl_dynamic_shared_bytes() / (blockDim.y * STAGE_BYTES);
  if (given < 2) __trap();  // the launch gave less than two stages: a crash bench reports, not a silent overrun
  const int stages = given >= 8 ? 8 : given >= 4 ? 4 : 2;
  const int slice_bytes = given * STAGE_BYTES;
  unsigned char* mine = hl_ring_bytes + threadIdx.y * slice_bytes;
  const HlRing<GT> ring = {reinterpret_cast<uint4*>(mine) + threadIdx.x, reinterpret_cast<uint32_t*>(mine + stages * GT * 32 * 16) + threadIdx.x};
  hl_run<GT>(w, w_scales, x, out, m, n, k, group, stages, ring, HlPartials{reinterpret_cast<float*>(hl_ring_bytes), slice_bytes / 4});
}

// Six entries over one body: register stages only (decode_w4a16_tiled), or the copy ring with two
// (decode_w4a16_tiled_async) or four (decode_w4a16_tiled_async4) tiles a stage, each also as *_split, which
// takes the split workspace (HlOut) and a grid of gridDim.y splits of k. Separate entries keep each one's
// register allocation its own: ptxas sizes a kernel for its hungriest path, and both stage kinds in one
// kernel cost the register one 24 more registers.
#define HL_ENTRIES(NAME, BOUNDS, BODY)                                                                                           \
  extern "C" __global__ void BOUNDS NAME(const uint4* __restrict__ w, const uint32_t* __restrict__ w_scales,                     \
                                         const uint4* __restrict__ x, float* __restrict__ y, int m, int n, int k, int group) {   \
    BODY(w, w_scales, x, HlOut{y, nullptr, nullptr}, m, n, k, group);                                                             \
  }                                                                                                                               \
  extern "C" __global__ void BOUNDS NAME##_split(const uint4* __restrict__ w, const uint32_t* __restrict__ w_scales,             \
                                                 const uint4* __restrict__ x, float* __restrict__ y, unsigned* __restrict__ counters, \
                                                 float* __restrict__ partials, int m, int n, int k, int group) {                 \
    BODY(w, w_scales, x, HlOut{y, counters, partials}, m, n, k, group);                                                           \
  }

HL_ENTRIES(decode_w4a16_tiled, __launch_bounds__(32 * HL_MAX_WARPS), hl_registers)
HL_ENTRIES(decode_w4a16_tiled_async, __launch_bounds__(32 * HL_MAX_WARPS), hl_async<2>)
HL_ENTRIES(decode_w4a16_tiled_async4, __launch_bounds__(32 * HL_MAX_WARPS, HL_ASYNC4_MIN_BLOCKS), hl_async<4>)
