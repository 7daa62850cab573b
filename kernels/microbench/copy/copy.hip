// Device copy: 16-byte loads and stores, UNROLL independent loads in flight per thread,
// grid-stride. The DRAM copy ceiling of the roofline.
#include <hip/hip_runtime.h>

#ifndef UNROLL
#define UNROLL 4
#endif

extern "C" __global__ void copy_f4(const float4* __restrict__ src, float4* __restrict__ dst, long long n4) {
  const long long stride = (long long)gridDim.x * blockDim.x;
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  for (; i + (UNROLL - 1) * stride < n4; i += UNROLL * stride) {
    float4 v[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) v[u] = src[i + u * stride];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) dst[i + u * stride] = v[u];
  }
  for (; i < n4; i += stride) dst[i] = src[i];
}
