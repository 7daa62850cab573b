// Peak INT8 tensor-core rate on NVIDIA through mma.sync.m16n8k32 (s8 inputs, s32 accumulate).
// A and B come from memory at run time (zeros), so every accumulator keeps its start value.
#ifndef CHAINS
#define CHAINS 8
#endif

extern "C" __global__ void mma_i8(const unsigned* __restrict__ ab, int* __restrict__ out, int iters) {
  const unsigned a0 = ab[0], a1 = ab[1], a2 = ab[2], a3 = ab[3], b0 = ab[4], b1 = ab[5];
  int c[CHAINS][4];
#pragma unroll
  for (int k = 0; k < CHAINS; ++k)
#pragma unroll
    for (int j = 0; j < 4; ++j) c[k][j] = (int)threadIdx.x + 4 * k + j;
  for (int it = 0; it < iters; ++it) {
#pragma unroll
    for (int k = 0; k < CHAINS; ++k)
      asm volatile(
          "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
          : "+r"(c[k][0]), "+r"(c[k][1]), "+r"(c[k][2]), "+r"(c[k][3])
          : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
  }
  int s = 0;
#pragma unroll
  for (int k = 0; k < CHAINS; ++k)
#pragma unroll
    for (int j = 0; j < 4; ++j) s += c[k][j];
  out[(long long)blockIdx.x * blockDim.x + threadIdx.x] = s;
}
