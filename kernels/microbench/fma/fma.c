/* Host twin of fma.hip: each of the blocks x block "threads" runs CHAINS fmaf chains with runtime m and a,
   thread t starting at t % block as GPU thread threadIdx.x does. */
#include <math.h>

void fma_f32(float* restrict out, float m, float a, int iters, int blocks, int block) {
  for (long long t = 0; t < (long long)blocks * block; ++t) {
    float x[CHAINS];
    for (int c = 0; c < CHAINS; ++c) x[c] = (float)(t % block + c);
    for (int k = 0; k < iters; ++k)
      for (int c = 0; c < CHAINS; ++c) x[c] = fmaf(x[c], m, a);
    float s = 0.f;
    for (int c = 0; c < CHAINS; ++c) s += x[c];
    out[t] = s;
  }
}
