// Peak INT8 matrix-core rate on AMD, 256 integer ops per lane and instruction on every generation:
// WMMA i32 16x16x16 iu8 (gfx11, gfx12; wave32), MFMA i32 16x16x32 i8 (gfx942/gfx950; wave64) and
// MFMA i32 32x32x8 i8 (gfx908/gfx90a; wave64). A and B come from memory at run time (zeros), so every
// accumulator keeps its start value and nothing folds.
#include <hip/hip_runtime.h>

#ifndef CHAINS
#define CHAINS 4
#endif

typedef int i2 __attribute__((ext_vector_type(2)));
typedef int i4 __attribute__((ext_vector_type(4)));
typedef int i8v __attribute__((ext_vector_type(8)));
typedef int i16v __attribute__((ext_vector_type(16)));

#if defined(__GFX12__)
typedef i2 operand;
typedef i8v accumulator;
#define ACC_LEN 8
#define MATRIX_OP(a, b, c) __builtin_amdgcn_wmma_i32_16x16x16_iu8_w32_gfx12(true, a, true, b, c, false)
#elif defined(__GFX11__)
typedef i4 operand;
typedef i8v accumulator;
#define ACC_LEN 8
#define MATRIX_OP(a, b, c) __builtin_amdgcn_wmma_i32_16x16x16_iu8_w32(true, a, true, b, c, false)
#elif defined(__gfx940__) || defined(__gfx941__) || defined(__gfx942__) || defined(__gfx950__)
typedef long operand;
typedef i4 accumulator;
#define ACC_LEN 4
#define MATRIX_OP(a, b, c) __builtin_amdgcn_mfma_i32_16x16x32_i8(a, b, c, 0, 0, 0)
#elif defined(__gfx908__) || defined(__gfx90a__)
typedef int operand;
typedef i16v accumulator;
#define ACC_LEN 16
#define MATRIX_OP(a, b, c) __builtin_amdgcn_mfma_i32_32x32x8i8(a, b, c, 0, 0, 0)
#else
#error "matrix_i8: no INT8 matrix instruction on this target (needs gfx908+ CDNA, gfx11 or gfx12)"
#endif

extern "C" __global__ void matrix_i8(const operand* __restrict__ ab, int* __restrict__ out, int iters) {
  const operand a = ab[0], b = ab[1];
  accumulator c[CHAINS];
#pragma unroll
  for (int k = 0; k < CHAINS; ++k)
#pragma unroll
    for (int j = 0; j < ACC_LEN; ++j) c[k][j] = (int)threadIdx.x + k;
  for (int it = 0; it < iters; ++it) {
#pragma unroll
    for (int k = 0; k < CHAINS; ++k) c[k] = MATRIX_OP(a, b, c[k]);
  }
  int s = 0;
#pragma unroll
  for (int k = 0; k < CHAINS; ++k)
#pragma unroll
    for (int j = 0; j < ACC_LEN; ++j) s += c[k][j];
  out[(long long)blockIdx.x * blockDim.x + threadIdx.x] = s / ACC_LEN;  // exact: every element is equal
}
