// RMSNorm of bfloat16 rows with a bfloat16 weight, one block per row: y = x / sqrt(mean(x^2) + eps) * w.
// The block size is a template argument (entry rmsnorm_bf16<BLOCK>, BLOCK defined from the shape).
// Loads and stores are __nv_bfloat16 (the spec's dtype bfloat16); the sum of squares and the scale are float.
#include <cuda_bf16.h>

template <int block_size>
__global__ void rmsnorm_bf16(const __nv_bfloat16* __restrict__ x, const __nv_bfloat16* __restrict__ w, __nv_bfloat16* __restrict__ y,
                             int cols, float eps) {
  static_assert(block_size % 32 == 0 && block_size <= 1024, "the block is a multiple of the warp, at most 1024");
  const __nv_bfloat16* row = x + (size_t)blockIdx.x * cols;
  __nv_bfloat16* out = y + (size_t)blockIdx.x * cols;
  float sum = 0.0f;
  for (int c = threadIdx.x; c < cols; c += block_size) {
    const float v = __bfloat162float(row[c]);
    sum += v * v;
  }
  __shared__ float partial[block_size / 32];
  for (int offset = 16; offset > 0; offset >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, offset);
  if ((threadIdx.x & 31) == 0) partial[threadIdx.x >> 5] = sum;
  __syncthreads();
  if (threadIdx.x < 32) {
    float s = threadIdx.x < block_size / 32 ? partial[threadIdx.x] : 0.0f;
    for (int offset = 16; offset > 0; offset >>= 1) s += __shfl_xor_sync(0xffffffffu, s, offset);
    if (threadIdx.x == 0) partial[0] = s;
  }
  __syncthreads();
  const float scale = rsqrtf(partial[0] / (float)cols + eps);
  for (int c = threadIdx.x; c < cols; c += block_size) out[c] = __float2bfloat16(__bfloat162float(row[c]) * scale * __bfloat162float(w[c]));
}
