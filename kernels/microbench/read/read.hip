// DRAM read: 16-byte loads, UNROLL in flight per thread, one partial sum per block (writes are
// negligible). The DRAM read ceiling of the roofline.
#include <hip/hip_runtime.h>

#ifndef UNROLL
#define UNROLL 4
#endif
#define BLOCK 256

// per_thread: float4s a thread reads, which the launch's grid already encodes; the host twin (read.c) needs it.
extern "C" __global__ void __launch_bounds__(BLOCK) read_f4(const float4* __restrict__ src, float* __restrict__ partial, long long n4, int per_thread) {
  const long long stride = (long long)gridDim.x * blockDim.x;
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  float acc[UNROLL] = {};
  for (; i + (UNROLL - 1) * stride < n4; i += UNROLL * stride) {
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      float4 v = src[i + u * stride];
      acc[u] += (v.x + v.y) + (v.z + v.w);
    }
  }
  for (; i < n4; i += stride) {
    float4 v = src[i];
    acc[0] += (v.x + v.y) + (v.z + v.w);
  }
  float sum = 0.f;
#pragma unroll
  for (int u = 0; u < UNROLL; ++u) sum += acc[u];
  __shared__ float lanes[BLOCK];
  lanes[threadIdx.x] = sum;
  __syncthreads();
  for (int half = BLOCK / 2; half > 0; half /= 2) {
    if ((int)threadIdx.x < half) lanes[threadIdx.x] += lanes[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0) partial[blockIdx.x] = lanes[0];
}
