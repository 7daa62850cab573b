// Peak FP16 matrix-core rate on AMD: WMMA 16x16x16 (gfx11, gfx12; 8192 flops per wave32
// instruction) or MFMA 32x32x8 (gfx9 CDNA; 16384 flops per wave64 instruction): both 256 flops
// per lane and instruction, so one metric serves every generation. A and B come from memory at run
// time (zeros), so every accumulator keeps its start value and nothing folds.
#include <hip/hip_runtime.h>

#ifndef CHAINS
#define CHAINS 4
#endif

typedef _Float16 h4 __attribute__((ext_vector_type(4)));
typedef _Float16 h8 __attribute__((ext_vector_type(8)));
typedef _Float16 h16 __attribute__((ext_vector_type(16)));
typedef float f8 __attribute__((ext_vector_type(8)));
typedef float f16v __attribute__((ext_vector_type(16)));

#if defined(__GFX12__)
typedef h8 operand;
typedef f8 accumulator;
#define ACC_LEN 8
#define MATRIX_OP(a, b, c) __builtin_amdgcn_wmma_f32_16x16x16_f16_w32_gfx12(a, b, c)
#elif defined(__GFX11__)
typedef h16 operand;
typedef f8 accumulator;
#define ACC_LEN 8
#define MATRIX_OP(a, b, c) __builtin_amdgcn_wmma_f32_16x16x16_f16_w32(a, b, c)
#elif defined(__gfx908__) || defined(__gfx90a__) || defined(__gfx940__) || defined(__gfx941__) || defined(__gfx942__) || defined(__gfx950__)
typedef h4 operand;
typedef f16v accumulator;
#define ACC_LEN 16
#define MATRIX_OP(a, b, c) __builtin_amdgcn_mfma_f32_32x32x8f16(a, b, c, 0, 0, 0)
#else
#error "matrix_f16: no FP16 matrix instruction on this target (needs gfx908+ CDNA, gfx11 or gfx12)"
#endif

extern "C" __global__ void matrix_f16(const operand* __restrict__ ab, float* __restrict__ out, int iters) {
  const operand a = ab[0], b = ab[1];
  accumulator c[CHAINS];
#pragma unroll
  for (int k = 0; k < CHAINS; ++k)
#pragma unroll
    for (int j = 0; j < ACC_LEN; ++j) c[k][j] = (float)(threadIdx.x + k);
  for (int it = 0; it < iters; ++it) {
#pragma unroll
    for (int k = 0; k < CHAINS; ++k) c[k] = MATRIX_OP(a, b, c[k]);
  }
  float s = 0.f;
#pragma unroll
  for (int k = 0; k < CHAINS; ++k)
#pragma unroll
    for (int j = 0; j < ACC_LEN; ++j) s += c[k][j];
  out[(long long)blockIdx.x * blockDim.x + threadIdx.x] = s / ACC_LEN;  // exact: small integers
}
