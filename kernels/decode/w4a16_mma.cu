// Decode GEMV, int4 weights × fp16 activations (batch m = 1..8), on NVIDIA tensor cores (sm_80+):
// y[b, n] = Σ_k fl16(q · s) · x[b, k], the same contract as w4a16.hip (reference.py:w4a16).
//
// Why tensor cores for a memory-bound GEMV: dequantizing and accumulating in fp32 on the SIMT pipes
// costs about four instructions per weight, which is as much as an H200 can issue at its DRAM rate.
// Here the SIMT pipes only dequantize (per eight weights: five integer instructions and eight half2
// ones, see hl_dequant), and mma.m16n8k16 does the products, exact for two fp16 values, with fp32
// accumulation. ncu on the H200 showed the integer (ALU) pipe as the limit before the dequantization
// was cut to one LOP3 per two weights.
//
// Geometry: a block owns a tile of 16 rows; its blockDim.y warps split k between them (each a
// strided share of 128-k steps) and add their partial tiles through shared memory at the end.
// In a warp, lane l = 4g + q loads, per step, the 32-k chunk 4·step + q of rows g and g + 8 of the
// tile (16 bytes each): a quad reads 64 contiguous bytes of a row, a warp 16 rows.
//
// The mma's k order is free: a GEMV only needs A (weights) and B (activations) to agree. Lane q's
// logical k columns {2q, 2q+1, 2q+8, 2q+9} of each mma are filled with the actual k of its own chunk,
// as half2 pairs in the order the nibble layout gives them cheaply (packing.py: pair s of a word holds
// k offsets (NIBBLE_K[s], NIBBLE_K[s+4]) = (0,2), (4,6), (1,3), (5,7)); activations are permuted to match.
// B's column g is batch row g (zero when g ≥ m), so C's columns 2q, 2q+1 are batch rows 2q, 2q+1.
//
// Tuning: a warp loads HL_UNROLL steps per round, in two register stages, so one round is in
// flight while the previous one is computed (bytes in flight per lane: 32 · HL_UNROLL, up to twice
// that); HL_STREAM=1 loads weights with L1::no_allocate so activations keep the L1.
#include <cuda_fp16.h>
#include <stdint.h>

#ifndef HL_UNROLL
#define HL_UNROLL 1  // tune's choice on the H200 (results/h200/decode, run 16), as is HL_STREAM 1
#endif
#ifndef HL_STREAM
#define HL_STREAM 1
#endif
#define HL_TILE 16        // rows per block (one mma's M)
#define HL_CHUNK_K 32     // k per lane per step: one 16-byte load of packed weights
#define HL_MAX_WARPS 8    // blockDim.y at most: 256 threads, so a thread may hold up to 255 registers

__device__ __forceinline__ uint4 hl_load_weights(const uint4* p) {
#if HL_STREAM
  uint4 v;
  asm("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
  return v;
#else
  return __ldg(p);
#endif
}

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

// The four half2 pairs fl16(q · s) of one word, in the order (k 0, 2), (4, 6), (1, 3), (5, 7) (packing.py's
// nibbles 0/4, 1/5, 2/6, 3/7). Each LOP3 masks two nibbles, flips their sign bits (q + 8 in [0, 15]) and
// puts them in an fp16 mantissa: 1024 + (q + 8) for low nibbles, 1024 + 16 (q + 8) for high ones.
// Taking 1032 off, or scaling by 1/16 and taking 72 off, gives q exactly; one rounding in the multiply
// then gives the reference's fl16(q · s). One shift and four LOP3 per eight weights.
__device__ __forceinline__ void hl_dequant(uint32_t word, __half2 scale, uint32_t (&pairs)[4]) {
  const uint32_t high = word >> 8;
  const __half2 low_offset = hl_half2(0x64086408u);   // 1032, 1032
  const __half2 sixteenth = hl_half2(0x2C002C00u);    // 1/16, 1/16
  const __half2 high_offset = hl_half2(0xD480D480u);  // -72, -72
  pairs[0] = hl_bits(__hmul2(__hsub2(hl_half2(hl_and_xor<0x000F000Fu, 0x64086408u>(word)), low_offset), scale));
  pairs[1] = hl_bits(__hmul2(__hfma2(hl_half2(hl_and_xor<0x00F000F0u, 0x64806480u>(word)), sixteenth, high_offset), scale));
  pairs[2] = hl_bits(__hmul2(__hsub2(hl_half2(hl_and_xor<0x000F000Fu, 0x64086408u>(high)), low_offset), scale));
  pairs[3] = hl_bits(__hmul2(__hfma2(hl_half2(hl_and_xor<0x00F000F0u, 0x64806480u>(high)), sixteenth, high_offset), scale));
}

// Activations of one word (8 consecutive k as four half2) in the pair order of hl_dequant.
__device__ __forceinline__ void hl_x_pairs(uint4 xv, uint32_t (&pairs)[4]) {
  pairs[0] = __byte_perm(xv.x, xv.y, 0x5410);  // k 0, 2
  pairs[1] = __byte_perm(xv.z, xv.w, 0x5410);  // k 4, 6
  pairs[2] = __byte_perm(xv.x, xv.y, 0x7632);  // k 1, 3
  pairs[3] = __byte_perm(xv.z, xv.w, 0x7632);  // k 5, 7
}

// One round of a warp's loads: HL_UNROLL steps of rows g and g + 8, their scales. Steps past the end
// (or chunks past k) load nothing and hold packed zeros, which dequantize to 0.
struct HlStage {
  uint4 a[HL_UNROLL], b[HL_UNROLL];
  __half2 sa[HL_UNROLL], sb[HL_UNROLL];
};

struct HlRows {
  const uint4* w0;
  const uint4* w1;
  const unsigned short* s0;
  const unsigned short* s1;
  int steps, chunks, group_shift, q;  // group_shift: log2(group / 32), groups being powers of two (packing.GROUPS)
};

__device__ __forceinline__ void hl_load(HlStage& st, const HlRows& r, int base) {
#pragma unroll
  for (int u = 0; u < HL_UNROLL; ++u) {
    const int c = 4 * (base + u) + r.q;
    const bool live = base + u < r.steps && c < r.chunks;
    const uint4 zero = make_uint4(0, 0, 0, 0);
    st.a[u] = live ? hl_load_weights(r.w0 + c) : zero;
    st.b[u] = live ? hl_load_weights(r.w1 + c) : zero;
    const int s = live ? c >> r.group_shift : 0;  // a shift: a division here costs ~20 integer instructions
    st.sa[u] = __half2half2(__ushort_as_half(__ldg(r.s0 + s)));
    st.sb[u] = __half2half2(__ushort_as_half(__ldg(r.s1 + s)));
  }
}

// Dequantize a round and multiply it with the activations, which come from L1 as they are needed.
__device__ __forceinline__ void hl_compute(const HlStage& st, const HlRows& r, int base, const uint4* xg, bool x_live,
                                          float (&even)[4], float (&odd)[4]) {
#pragma unroll
  for (int u = 0; u < HL_UNROLL; ++u) {
    const int c = 4 * (base + u) + r.q;
    const bool live = x_live && base + u < r.steps && c < r.chunks;
    const uint32_t words_a[4] = {st.a[u].x, st.a[u].y, st.a[u].z, st.a[u].w}, words_b[4] = {st.b[u].x, st.b[u].y, st.b[u].z, st.b[u].w};
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      uint32_t a[4], b[4], xp[4];
      hl_x_pairs(live ? __ldg(xg + 4 * c + j) : make_uint4(0, 0, 0, 0), xp);
      hl_dequant(words_a[j], st.sa[u], a);
      hl_dequant(words_b[j], st.sb[u], b);
      hl_mma(even, a[0], b[0], a[1], b[1], xp[0], xp[1]);
      hl_mma(odd, a[2], b[2], a[3], b[3], xp[2], xp[3]);
    }
  }
}

extern "C" __global__ void __launch_bounds__(32 * HL_MAX_WARPS) decode_w4a16_mma(
    const uint4* __restrict__ w, const unsigned short* __restrict__ w_scales, const uint4* __restrict__ x,
    float* __restrict__ y, int m, int n, int k, int group) {
  __shared__ float partial[HL_MAX_WARPS][32][4];
  const int lane = threadIdx.x, g = lane >> 2, q = lane & 3;
  const int warp = threadIdx.y, warps = blockDim.y;
  const int chunks = k / HL_CHUNK_K, groups = k / group, steps = (chunks + 3) / 4;
  const int row0 = blockIdx.x * HL_TILE + g, row1 = row0 + 8;
  const size_t r0 = row0 < n ? row0 : n - 1, r1 = row1 < n ? row1 : n - 1;  // dead rows load a live one
  const HlRows rows = {w + r0 * chunks, w + r1 * chunks, w_scales + r0 * groups, w_scales + r1 * groups, steps, chunks,
                      __ffs(group / HL_CHUNK_K) - 1, q};
  const bool x_live = g < m;
  const uint4* xg = x + (size_t)(x_live ? g : 0) * (k / 8);
  float even[4] = {0.f, 0.f, 0.f, 0.f}, odd[4] = {0.f, 0.f, 0.f, 0.f};  // two chains for the tensor pipe

  // Two register stages: the next round's loads are in flight while this round is computed.
  const int stride = warps * HL_UNROLL;
  HlStage front, back;
  hl_load(front, rows, warp * HL_UNROLL);
  for (int base = warp * HL_UNROLL; base < steps; base += 2 * stride) {
    hl_load(back, rows, base + stride);
    hl_compute(front, rows, base, xg, x_live, even, odd);
    if (base + stride >= steps) break;  // uniform across the warp
    hl_load(front, rows, base + 2 * stride);
    hl_compute(back, rows, base + stride, xg, x_live, even, odd);
  }

  float acc[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) acc[i] = even[i] + odd[i];
  if (warps > 1) {
#pragma unroll
    for (int i = 0; i < 4; ++i) partial[warp][lane][i] = acc[i];
    __syncthreads();
    if (warp != 0) return;
    for (int v = 1; v < warps; ++v)
#pragma unroll
      for (int i = 0; i < 4; ++i) acc[i] += partial[v][lane][i];
  }
  // C fragment: acc[0], acc[1] are rows g, batches 2q, 2q + 1; acc[2], acc[3] rows g + 8.
  const int b0 = 2 * q, b1 = 2 * q + 1;
  if (row0 < n) {
    if (b0 < m) y[(size_t)b0 * n + row0] = acc[0];
    if (b1 < m) y[(size_t)b1 * n + row0] = acc[1];
  }
  if (row1 < n) {
    if (b0 < m) y[(size_t)b0 * n + row1] = acc[2];
    if (b1 < m) y[(size_t)b1 * n + row1] = acc[3];
  }
}
