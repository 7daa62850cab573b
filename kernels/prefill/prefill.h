// Shared tile framework of the prefill GEMMs (sparse_w4a4.hip, dense_w8a8.hip): y[m, n] = x[m, k] · w[n, k]ᵀ,
// int32 results, for RDNA4 (gfx1200/gfx1201) wave32 matrix instructions.
//
// Geometry: a block is blockDim = (32, waves); wave threadIdx.y owns the 16 × 16 output tile of
// features f0 = (blockIdx.x · waves + threadIdx.y) · 16 and tokens t0 = blockIdx.y · 16, walking k in
// steps of HL_K_STEP. m % 16, n % (16 · waves) and k % HL_K_STEP are checked on the host
// (packing.check_shape): there is no edge code. Each lane loads its operands straight from global
// memory, one contiguous vector each, because packing.py stores them in the instructions' register
// layouts (the layouts and their source are quoted there: ROCm/amd_matrix_instruction_calculator,
// rdna4, "Wave32 matrix element to register mapping").
//
// No RDNA4 GPU has run these kernels: they are compile- and disassembly-verified only.
#pragma once
#include <hip/hip_runtime.h>

#define HL_MAX_WAVES 8

#if defined(HYPERLOOM_HIP_ON_CUDA) || !(defined(__gfx1200__) || defined(__gfx1201__))
#define HL_PREFILL_UNAVAILABLE 1
#endif

typedef int hl_v2i __attribute__((ext_vector_type(2)));
typedef int hl_v4i __attribute__((ext_vector_type(4)));
typedef int hl_v8i __attribute__((ext_vector_type(8)));

struct hl_tile {
  int lane;  // 0..31
  int i;     // lane % 16: the A row (feature) this lane loads, and the B/D column (token)
  int kb;    // lane / 16: which half of the instruction's k this lane loads
  int f0, t0;
};

__device__ __forceinline__ hl_tile hl_tile_of_wave() {
  hl_tile t;
  t.lane = threadIdx.x;
  t.i = t.lane & 15;
  t.kb = t.lane >> 4;
  t.f0 = (blockIdx.x * blockDim.y + threadIdx.y) * 16;
  t.t0 = blockIdx.y * 16;
  return t;
}

// D[i][j] sits in lane 16·⌊i/8⌋ + j, VGPR i mod 8: this lane's 8 values are features f0 + 8·kb + 0..7
// of token t0 + (lane mod 16), i.e. 32 contiguous bytes of y (two 16-byte stores).
__device__ __forceinline__ void hl_store_tile(const hl_tile& t, hl_v8i acc, int* __restrict__ y, int n) {
  hl_v4i* out = (hl_v4i*)(y + (size_t)(t.t0 + t.i) * n + t.f0 + 8 * t.kb);
  out[0] = acc.lo;
  out[1] = acc.hi;
}
