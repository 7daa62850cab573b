/* Hyperloom's HIP-on-CUDA compatibility header: lets HIP device code compile with nvcc.
 * Device code only: thread indices, barriers and __shared__ are already common to both;
 * this maps HIP's mask-less warp shuffles and types onto CUDA's. */
#pragma once
#include <cuda_runtime.h>
#include <cuda_fp16.h>

#define HYPERLOOM_HIP_ON_CUDA 1
typedef __half half;

template <typename T> __device__ __forceinline__ T __shfl(T v, int src, int width = warpSize) {
  return __shfl_sync(0xffffffffu, v, src, width);
}
template <typename T> __device__ __forceinline__ T __shfl_xor(T v, int mask, int width = warpSize) {
  return __shfl_xor_sync(0xffffffffu, v, mask, width);
}
template <typename T> __device__ __forceinline__ T __shfl_down(T v, unsigned delta, int width = warpSize) {
  return __shfl_down_sync(0xffffffffu, v, delta, width);
}
__device__ __forceinline__ unsigned __lane_id() { return threadIdx.x & (warpSize - 1); }
