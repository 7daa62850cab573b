// RMSNorm, one block per row: y[r, c] = x[r, c] / sqrt(mean_c(x[r, c]^2) + eps).
// Templated on its block size, as many production norms are: the block is a tuning value that
// kernel.yaml passes both as the launch's block and as the template argument (entry rmsnorm_f32<BLOCK>).
#include <hip/hip_runtime.h>

template <int block_size>
__global__ void rmsnorm_f32(const float* __restrict__ x, float* __restrict__ y, int cols, float eps) {
    static_assert(block_size >= 1 && block_size <= 1024 && (block_size & (block_size - 1)) == 0, "a power of two up to 1024");
    __shared__ float sums[block_size];
    const float* row_x = x + (size_t)blockIdx.x * cols;
    float* row_y = y + (size_t)blockIdx.x * cols;
    float sum = 0.0f;
    for (int c = threadIdx.x; c < cols; c += block_size) sum += row_x[c] * row_x[c];
    sums[threadIdx.x] = sum;
    __syncthreads();
    for (int stride = block_size / 2; stride > 0; stride >>= 1) {  // a tree: the twin adds in the same order
        if (threadIdx.x < stride) sums[threadIdx.x] += sums[threadIdx.x + stride];
        __syncthreads();
    }
    const float scale = rsqrtf(sums[0] / cols + eps);
    for (int c = threadIdx.x; c < cols; c += block_size) row_y[c] = row_x[c] * scale;
}
