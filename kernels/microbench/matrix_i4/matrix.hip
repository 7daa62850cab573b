// Peak INT4 matrix-core rate on AMD, RDNA only (CDNA has no int4 matrix instruction): WMMA i32
// 16x16x16 iu4 on gfx11 and gfx12, wave32, 256 integer operations per lane and instruction. A and B
// come from memory at run time (zeros), so every accumulator keeps its start value.
#include <hip/hip_runtime.h>

#ifndef CHAINS
#define CHAINS 4
#endif

typedef int i2 __attribute__((ext_vector_type(2)));
typedef int i4 __attribute__((ext_vector_type(4)));
typedef int i8v __attribute__((ext_vector_type(8)));
typedef int i16v __attribute__((ext_vector_type(16)));

#if defined(__GFX12__)
typedef int operand;
typedef i8v accumulator;
#define ACC_LEN 8
#define MATRIX_OP(a, b, c) __builtin_amdgcn_wmma_i32_16x16x16_iu4_w32_gfx12(true, a, true, b, c, false)
#elif defined(__GFX11__)
typedef i2 operand;
typedef i8v accumulator;
#define ACC_LEN 8
#define MATRIX_OP(a, b, c) __builtin_amdgcn_wmma_i32_16x16x16_iu4_w32(true, a, true, b, c, false)
#else
#error "matrix_i4: no INT4 matrix instruction on this target (needs gfx11 or gfx12)"
#endif

extern "C" __global__ void matrix_i4(const operand* __restrict__ ab, int* __restrict__ out, int iters) {
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
