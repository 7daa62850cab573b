/* The C twin of rmsnorm_bf16.cu for the host CPU. C has no bfloat16: the buffers arrive as their storage, uint16_t
 * (the top half of a float32), decoded and encoded here (to nearest, ties to even), as the GPU kernel's
 * __bfloat162float and __float2bfloat16 do. launch_args: the grid (one row per block) comes last. */
#include <math.h>
#include <stdint.h>
#include <string.h>

static float bf16_to_float(uint16_t bits) {
  uint32_t u = (uint32_t)bits << 16;
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

static uint16_t float_to_bf16(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}

void rmsnorm_bf16(const uint16_t* x, const uint16_t* w, uint16_t* y, int cols, float eps,
                  int grid_x, int grid_y, int grid_z, int block_x, int block_y, int block_z) {
  (void)grid_y; (void)grid_z; (void)block_x; (void)block_y; (void)block_z;
  for (int r = 0; r < grid_x; ++r) {
    const uint16_t* row = x + (size_t)r * cols;
    float sum = 0.0f;
    for (int c = 0; c < cols; ++c) {
      const float v = bf16_to_float(row[c]);
      sum += v * v;
    }
    const float scale = 1.0f / sqrtf(sum / (float)cols + eps);
    for (int c = 0; c < cols; ++c) y[(size_t)r * cols + c] = float_to_bf16(bf16_to_float(row[c]) * scale * bf16_to_float(w[c]));
  }
}
