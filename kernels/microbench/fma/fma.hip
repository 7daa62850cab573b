// Peak FP32 FMA rate: CHAINS independent fmaf chains per thread with runtime multiplier and addend
// (1 and 0), so nothing folds at compile time and every result equals its start value.
#include <hip/hip_runtime.h>

#ifndef CHAINS
#define CHAINS 8
#endif

// blocks and block are the grid, which a GPU knows already: they are there for the host twin (fma.c).
extern "C" __global__ void fma_f32(float* __restrict__ out, float m, float a, int iters, int blocks, int block) {
  float x[CHAINS];
#pragma unroll
  for (int c = 0; c < CHAINS; ++c) x[c] = (float)(threadIdx.x + c);
  for (int k = 0; k < iters; ++k) {
#pragma unroll
    for (int c = 0; c < CHAINS; ++c) x[c] = fmaf(x[c], m, a);
  }
  float s = 0.f;
#pragma unroll
  for (int c = 0; c < CHAINS; ++c) s += x[c];
  out[(long long)blockIdx.x * blockDim.x + threadIdx.x] = s;
}
