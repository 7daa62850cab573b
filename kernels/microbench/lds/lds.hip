// LDS / shared-memory bandwidth: every thread reads 16-byte vectors from a workgroup-shared array,
// ITERS times, at addresses that step a full wave apart (no bank conflicts). The sum is written
// once per thread so nothing is optimised away, and each iteration reads a window 512 bytes further
// on, so no load is loop-invariant (a compiler may hoist those). The values are zero: the result is 0.
#include <hip/hip_runtime.h>

#define BLOCK 256
#define WORDS 2048  // float4 per block: 32 KiB of LDS (NVIDIA allows 48 KiB of static shared memory)

extern "C" __global__ void __launch_bounds__(BLOCK) lds_read(const float4* __restrict__ init, float* __restrict__ out, int iters) {
  __shared__ float4 tile[WORDS];
  for (int i = threadIdx.x; i < WORDS; i += BLOCK) tile[i] = init[i];
  __syncthreads();
  float4 acc = {0.f, 0.f, 0.f, 0.f};
  int index = threadIdx.x;
  for (int it = 0; it < iters; ++it) {
#pragma unroll
    for (int u = 0; u < 8; ++u) {
      const float4 v = tile[(index + u * BLOCK) & (WORDS - 1)];
      acc.x += v.x; acc.y += v.y; acc.z += v.z; acc.w += v.w;
    }
    index = (index + 8 * BLOCK + 32) & (WORDS - 1);  // a new window each iteration: nothing to hoist
  }
  out[(long long)blockIdx.x * BLOCK + threadIdx.x] = (acc.x + acc.y) + (acc.z + acc.w);
}
