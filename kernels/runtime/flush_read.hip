// The cache flush of bench's `flush_mode: read`: read every 16 bytes of a buffer twice the size of
// the last-level cache once (grid-stride) and keep nothing, so the cache ends up holding clean lines
// of this buffer and the timed kernel finds none of its own data and no dirty lines to write back.
// The xor-fold is stored only when it equals a value a memset buffer never folds to (it folds to 0),
// so the loads cannot be optimised away.
#include <hip/hip_runtime.h>

extern "C" __global__ void hyperloom_flush_read(const uint4* __restrict__ buffer, long long vectors, unsigned* __restrict__ sink) {
  unsigned fold = 0;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < vectors; i += (long long)gridDim.x * blockDim.x) {
    const uint4 v = buffer[i];
    fold ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (fold == 0x9E3779B9u) *sink = fold;
}
