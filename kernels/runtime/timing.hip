// Device helpers of bench's timing loop (tools/runtime/gpu.py), built for the target with the kernel.
//
// hyperloom_flush_read: the cache flush of `flush_mode: read`. Read every 16 bytes of a buffer twice the
// size of the last-level cache once (grid-stride) and keep nothing, so the cache ends up holding clean
// lines of this buffer and the timed kernel finds none of its own data and no dirty lines to write back.
// The xor-fold is stored only when it equals a value a memset buffer never folds to (it folds to 0),
// so the loads cannot be optimised away.
//
// hyperloom_spin: one thread busy-waits `ns` nanoseconds on the device's constant-rate clock (NVIDIA's
// globaltimer in ns; AMD's steady counter, 100 MHz on gfx9-gfx12, not the shader-cycle counter, which is
// 20 bits on gfx11 and wraps). Launched after the flush, it keeps the device busy while the host enqueues
// the start event, the kernel and the end event, so the events bracket the kernel alone and never the
// host's launch latency.
//
// hyperloom_checksum: the sum of a buffer's 32-bit words, each times an odd weight (2i + 1), mod 2^64
// (grid-stride, one atomic add a thread). A warm worker keeps its inputs on the device between trials and
// copies them into each trial's fresh buffers; this sum, taken when a copy is made and again after every
// trial that used it, shows a kernel that wrote outside its own buffers into a kept copy (any one changed
// word changes the sum: its weight is odd).
#include <hip/hip_runtime.h>

extern "C" __global__ void hyperloom_flush_read(const uint4* __restrict__ buffer, long long vectors, unsigned* __restrict__ sink) {
  unsigned fold = 0;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < vectors; i += (long long)gridDim.x * blockDim.x) {
    const uint4 v = buffer[i];
    fold ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (fold == 0x9E3779B9u) *sink = fold;
}

#if defined(HYPERLOOM_HIP_ON_CUDA)
__device__ __forceinline__ unsigned long long hl_steady_ns() {
  unsigned long long ns;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(ns));
  return ns;
}
#else
__device__ __forceinline__ unsigned long long hl_steady_ns() { return 10ull * __builtin_readsteadycounter(); }  // 100 MHz ticks
#endif

extern "C" __global__ void hyperloom_spin(long long ns, unsigned* __restrict__ sink) {
  const unsigned long long start = hl_steady_ns();
  unsigned long long now = start;
  while (now - start < (unsigned long long)ns) now = hl_steady_ns();
  if (now == ~0ull) *sink = 1;  // never true: keeps the loop from being removed
}

extern "C" __global__ void hyperloom_checksum(const unsigned* __restrict__ words, long long count, unsigned long long* __restrict__ sum) {
  unsigned long long local = 0;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < count; i += (long long)gridDim.x * blockDim.x)
    local += (unsigned long long)words[i] * (unsigned long long)(2 * i + 1);
  atomicAdd(sum, local);
}
