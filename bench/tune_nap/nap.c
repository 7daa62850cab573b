#define _DEFAULT_SOURCE
#include <unistd.h>
#ifndef NAP_US
#define NAP_US 2000
#endif
#ifndef VARIANT
#define VARIANT 0
#endif
/* y = 2x after a nap: device time without CPU time, to emulate a GPU-bound candidate on CPU workers. */
void nap(const float* x, float* y, long long n) {
  usleep(NAP_US + VARIANT);
  for (long long i = 0; i < n; ++i) y[i] = 2.0f * x[i];
}
