// Device copy: 16-byte loads and stores, grid-stride. The DRAM copy ceiling of the roofline.
#include <hip/hip_runtime.h>

extern "C" __global__ void copy_f4(const float4* __restrict__ src, float4* __restrict__ dst, long long n4) {
  long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += stride) dst[i] = src[i];
}
