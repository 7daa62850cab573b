// DRAM write: 16-byte stores of one value, grid-stride. The DRAM write ceiling of the roofline.
#include <hip/hip_runtime.h>

#ifndef UNROLL
#define UNROLL 4
#endif

extern "C" __global__ void fill_f4(float4* __restrict__ dst, float value, long long n4) {
  const float4 v = {value, value, value, value};
  const long long stride = (long long)gridDim.x * blockDim.x;
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  for (; i + (UNROLL - 1) * stride < n4; i += UNROLL * stride) {
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) dst[i + u * stride] = v;
  }
  for (; i < n4; i += stride) dst[i] = v;
}
