/* Hyperloom's offline HIP device prelude: what kernels need from <hip/hip_runtime.h> when
 * compiling device code with a plain clang (no ROCm headers, no device libraries).
 * Used only when the HIP headers are absent; with ROCm installed, hipcc's own headers win.
 * Covers: qualifiers, launch bounds, thread/block indices, barriers, fences, warp shuffles,
 * half precision, and the math that maps to LLVM builtins. */
#pragma once
#ifndef HYPERLOOM_HIP_PRELUDE
#define HYPERLOOM_HIP_PRELUDE 1

#define __global__ __attribute__((global))
#define __device__ __attribute__((device))
#define __host__ __attribute__((host))
#define __shared__ __attribute__((shared))
#define __constant__ __attribute__((constant))
#define __forceinline__ inline __attribute__((always_inline))
#define __launch_bounds__(...) __attribute__((amdgpu_flat_work_group_size(1, __HL_FIRST(__VA_ARGS__, 1))))
#define __HL_FIRST(a, ...) a

typedef _Float16 __half;
typedef __half half;
typedef unsigned int uint;
typedef __SIZE_TYPE__ size_t;
typedef struct { unsigned x, y, z; } dim3;
typedef float float2 __attribute__((ext_vector_type(2)));
typedef float float4 __attribute__((ext_vector_type(4)));
typedef int int2 __attribute__((ext_vector_type(2)));
typedef int int4 __attribute__((ext_vector_type(4)));
typedef unsigned uint2 __attribute__((ext_vector_type(2)));
typedef unsigned uint4 __attribute__((ext_vector_type(4)));

#define __HL_AXIS(kind, axis, expr)                                                                \
  static __device__ __forceinline__ unsigned __hl_##kind##_##axis() { return (expr); }
__HL_AXIS(tid, x, __builtin_amdgcn_workitem_id_x())
__HL_AXIS(tid, y, __builtin_amdgcn_workitem_id_y())
__HL_AXIS(tid, z, __builtin_amdgcn_workitem_id_z())
__HL_AXIS(bid, x, __builtin_amdgcn_workgroup_id_x())
__HL_AXIS(bid, y, __builtin_amdgcn_workgroup_id_y())
__HL_AXIS(bid, z, __builtin_amdgcn_workgroup_id_z())
__HL_AXIS(bdim, x, __builtin_amdgcn_workgroup_size_x())
__HL_AXIS(bdim, y, __builtin_amdgcn_workgroup_size_y())
__HL_AXIS(bdim, z, __builtin_amdgcn_workgroup_size_z())
__HL_AXIS(gdim, x, (__builtin_amdgcn_grid_size_x() + __builtin_amdgcn_workgroup_size_x() - 1) / __builtin_amdgcn_workgroup_size_x())
__HL_AXIS(gdim, y, (__builtin_amdgcn_grid_size_y() + __builtin_amdgcn_workgroup_size_y() - 1) / __builtin_amdgcn_workgroup_size_y())
__HL_AXIS(gdim, z, (__builtin_amdgcn_grid_size_z() + __builtin_amdgcn_workgroup_size_z() - 1) / __builtin_amdgcn_workgroup_size_z())
#undef __HL_AXIS

/* threadIdx.x and friends, as properties that call the builtins (the same device HIP uses). */
#define __HL_INDEX_TYPE(type, kind)                                                                \
  struct type {                                                                                    \
    __declspec(property(get = __get_x)) unsigned x;                                                \
    __declspec(property(get = __get_y)) unsigned y;                                                \
    __declspec(property(get = __get_z)) unsigned z;                                                \
    static __device__ __forceinline__ unsigned __get_x() { return __hl_##kind##_x(); }             \
    static __device__ __forceinline__ unsigned __get_y() { return __hl_##kind##_y(); }             \
    static __device__ __forceinline__ unsigned __get_z() { return __hl_##kind##_z(); }             \
  };
__HL_INDEX_TYPE(__hl_thread_idx, tid)
__HL_INDEX_TYPE(__hl_block_idx, bid)
__HL_INDEX_TYPE(__hl_block_dim, bdim)
__HL_INDEX_TYPE(__hl_grid_dim, gdim)
#undef __HL_INDEX_TYPE
extern const __device__ __attribute__((weak)) __hl_thread_idx threadIdx;
extern const __device__ __attribute__((weak)) __hl_block_idx blockIdx;
extern const __device__ __attribute__((weak)) __hl_block_dim blockDim;
extern const __device__ __attribute__((weak)) __hl_grid_dim gridDim;

static __device__ __forceinline__ void __syncthreads() {
  __builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup");
  __builtin_amdgcn_s_barrier();
  __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "workgroup");
}
static __device__ __forceinline__ void __threadfence_block() { __builtin_amdgcn_fence(__ATOMIC_SEQ_CST, "workgroup"); }
static __device__ __forceinline__ void __threadfence() { __builtin_amdgcn_fence(__ATOMIC_SEQ_CST, "agent"); }

// atomicAdd as HIP declares it (device scope, relaxed order), for the common types.
#define HL_ATOMIC_ADD(T)                                                                      \
  static __device__ __forceinline__ T atomicAdd(T* address, T value) {                        \
    return __hip_atomic_fetch_add(address, value, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_AGENT); \
  }
HL_ATOMIC_ADD(int)
HL_ATOMIC_ADD(unsigned)
HL_ATOMIC_ADD(unsigned long long)
HL_ATOMIC_ADD(float)
#undef HL_ATOMIC_ADD

static __device__ __forceinline__ int warpSize_() { return __builtin_amdgcn_wavefrontsize(); }
#define warpSize (warpSize_())
static __device__ __forceinline__ unsigned __lane_id() {
  return __builtin_amdgcn_mbcnt_hi(~0u, __builtin_amdgcn_mbcnt_lo(~0u, 0u));
}

/* Shuffles through ds_bpermute (byte addresses of the source lane). */
static __device__ __forceinline__ int __shfl(int v, int src, int width = warpSize) {
  int lane = (int)__lane_id();
  int idx = (src & (width - 1)) + (lane & ~(width - 1));
  return __builtin_amdgcn_ds_bpermute(idx << 2, v);
}
static __device__ __forceinline__ int __shfl_xor(int v, int mask, int width = warpSize) {
  int lane = (int)__lane_id();
  int idx = lane ^ mask;
  idx = idx >= ((lane + width) & ~(width - 1)) ? lane : idx;
  return __builtin_amdgcn_ds_bpermute(idx << 2, v);
}
static __device__ __forceinline__ int __shfl_down(int v, unsigned delta, int width = warpSize) {
  int lane = (int)__lane_id();
  int idx = (int)((lane & (width - 1)) + delta) >= width ? lane : lane + (int)delta;
  return __builtin_amdgcn_ds_bpermute(idx << 2, v);
}
static __device__ __forceinline__ float __shfl(float v, int src, int width = warpSize) {
  return __builtin_bit_cast(float, __shfl(__builtin_bit_cast(int, v), src, width));
}
static __device__ __forceinline__ float __shfl_xor(float v, int mask, int width = warpSize) {
  return __builtin_bit_cast(float, __shfl_xor(__builtin_bit_cast(int, v), mask, width));
}
static __device__ __forceinline__ float __shfl_down(float v, unsigned delta, int width = warpSize) {
  return __builtin_bit_cast(float, __shfl_down(__builtin_bit_cast(int, v), delta, width));
}

/* Math that lowers to LLVM intrinsics, with no device library. */
static __device__ __forceinline__ float sqrtf(float x) { return __builtin_sqrtf(x); }
static __device__ __forceinline__ float rsqrtf(float x) { return __builtin_amdgcn_rsqf(x); }
static __device__ __forceinline__ float fabsf(float x) { return __builtin_fabsf(x); }
static __device__ __forceinline__ float fmaxf(float a, float b) { return __builtin_fmaxf(a, b); }
static __device__ __forceinline__ float fminf(float a, float b) { return __builtin_fminf(a, b); }
static __device__ __forceinline__ float fmaf(float a, float b, float c) { return __builtin_fmaf(a, b, c); }
static __device__ __forceinline__ float __int_as_float(int x) { return __builtin_bit_cast(float, x); }
static __device__ __forceinline__ int __float_as_int(float x) { return __builtin_bit_cast(int, x); }
static __device__ __forceinline__ float __half2float(__half h) { return (float)h; }
static __device__ __forceinline__ __half __float2half(float f) { return (__half)f; }
static __device__ __forceinline__ float __expf(float x) { return __builtin_amdgcn_exp2f(x * 1.4426950408889634f); }

/* Integer dot products by generation (feature dot8-insts on gfx11/gfx12). */

#endif /* HYPERLOOM_HIP_PRELUDE */
