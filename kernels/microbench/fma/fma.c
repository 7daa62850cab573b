/* Host twin of fma.hip: every "thread" runs CHAINS fmaf chains with runtime m and a. */
#include <math.h>

void fma_f32(float* restrict out, float m, float a, int iters) {
  for (long long t = 0; t < (long long)BLOCKS * BLOCK; ++t) {
    float x[CHAINS];
    for (int c = 0; c < CHAINS; ++c) x[c] = (float)(t % BLOCK + c);
    for (int k = 0; k < iters; ++k)
      for (int c = 0; c < CHAINS; ++c) x[c] = fmaf(x[c], m, a);
    float s = 0.f;
    for (int c = 0; c < CHAINS; ++c) s += x[c];
    out[t] = s;
  }
}
