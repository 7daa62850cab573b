/* Hyperloom's fp8 for HIP device code built without ROCm headers (offline clang) or through nvcc: the four formats
 * as ROCm spells them, one byte each (member __x), decoded exactly and encoded to nearest even, saturating to the
 * largest finite value as ROCm's and CUDA's fp8 constructors do by default (NaN stays NaN).
 *   __hip_fp8_e4m3_fnuz  bias 8,  max 240,   no Inf, NaN 0x80 (AMD MI300, gfx942)
 *   __hip_fp8_e5m2_fnuz  bias 16, max 57344, no Inf, NaN 0x80
 *   __hip_fp8_e4m3       bias 7,  max 448,   no Inf, NaN 0x7f (OCP; NVIDIA's __nv_fp8_e4m3)
 *   __hip_fp8_e5m2       bias 15, max 57344, Inf 0x7c, NaN 0x7e (OCP; NVIDIA's __nv_fp8_e5m2)
 * Plain C++ (host and device): tests build it on the CPU and compare it with ml_dtypes. */
#pragma once
#ifndef HYPERLOOM_FP8
#define HYPERLOOM_FP8 1

#ifndef __device__
#define __device__
#endif
#ifndef __host__
#define __host__
#endif
#define __HL_FP8_HD __host__ __device__ inline
#if defined(__CUDACC__) && !defined(__clang__)
#define __HL_RINTF(x) rintf(x)
#else
#define __HL_RINTF(x) __builtin_rintf(x)
#endif

typedef unsigned char __hip_fp8_storage_t;

__HL_FP8_HD float __hl_float_of_bits(unsigned u) {
  float f;
  __builtin_memcpy(&f, &u, sizeof f);
  return f;
}

__HL_FP8_HD float __hl_pow2(int k) { return __hl_float_of_bits((unsigned)(k + 127) << 23); } /* 2^k, -126 <= k <= 127 */

template <int MANT, int BIAS, bool FNUZ, bool INF>
__HL_FP8_HD float __hl_fp8_decode(__hip_fp8_storage_t x) {
  const float nan = __hl_float_of_bits(0x7fc00000u);
  if (FNUZ && x == 0x80) return nan;
  const unsigned magnitude = x & 0x7fu;
  if (!FNUZ && INF && magnitude >= 0x7cu) return magnitude == 0x7cu ? __hl_float_of_bits(((x & 0x80u) << 24) | 0x7f800000u) : nan;
  if (!FNUZ && !INF && magnitude == 0x7fu) return nan;
  const int e = (int)(magnitude >> MANT);
  const unsigned m = magnitude & ((1u << MANT) - 1u);
  const float v = e == 0 ? (float)m * __hl_pow2(1 - BIAS - MANT) : (float)(m + (1u << MANT)) * __hl_pow2(e - BIAS - MANT);
  return (x & 0x80u) ? -v : v;
}

template <int MANT, int BIAS, bool FNUZ, unsigned MAX_BITS, unsigned NAN_BITS>
__HL_FP8_HD __hip_fp8_storage_t __hl_fp8_encode(float f) {
  unsigned u;
  __builtin_memcpy(&u, &f, sizeof u);
  const unsigned sign = FNUZ && (u & 0x7fffffffu) == 0 ? 0u : (u >> 24) & 0x80u; /* fnuz has no -0.0 */
  const unsigned au = u & 0x7fffffffu;
  if (au > 0x7f800000u) return (__hip_fp8_storage_t)NAN_BITS;
  if (au == 0x7f800000u) return (__hip_fp8_storage_t)(sign | MAX_BITS); /* saturate */
  const int exponent = (int)(au >> 23) - 127;
  if (exponent < -60) return (__hip_fp8_storage_t)(FNUZ ? 0u : sign); /* far below the smallest subnormal */
  const float a = __hl_float_of_bits(au);
  int q = (exponent < 1 - BIAS ? 1 - BIAS : exponent) - MANT; /* the quantum's exponent at this magnitude */
  unsigned n = (unsigned)__HL_RINTF(a * __hl_pow2(-q));   /* exact scaling by a power of two, then to nearest even */
  if (n == 0) return (__hip_fp8_storage_t)(FNUZ ? 0u : sign);
  if (n >= (2u << MANT)) { n >>= 1; ++q; }                  /* rounding carried into the next binade */
  const int e = n < (1u << MANT) ? 0 : q + MANT + BIAS;   /* the exponent field (0: subnormal) */
  const unsigned bits = e >= (1 << (7 - MANT)) ? MAX_BITS : ((unsigned)e << MANT) | (n & ((1u << MANT) - 1u));
  return (__hip_fp8_storage_t)(sign | (bits > MAX_BITS ? MAX_BITS : bits)); /* beyond the largest finite: saturate */
}

#define __HL_FP8_TYPE(NAME, MANT, BIAS, FNUZ, INF, MAX_BITS, NAN_BITS)                                         \
  struct NAME {                                                                                                \
    __hip_fp8_storage_t __x;                                                                                   \
    NAME() = default;                                                                                          \
    __HL_FP8_HD NAME(float f) : __x(__hl_fp8_encode<MANT, BIAS, FNUZ, MAX_BITS, NAN_BITS>(f)) {}              \
    __HL_FP8_HD operator float() const { return __hl_fp8_decode<MANT, BIAS, FNUZ, INF>(__x); }              \
  };
__HL_FP8_TYPE(__hip_fp8_e4m3_fnuz, 3, 8, true, false, 0x7fu, 0x80u)
__HL_FP8_TYPE(__hip_fp8_e5m2_fnuz, 2, 16, true, false, 0x7fu, 0x80u)
__HL_FP8_TYPE(__hip_fp8_e4m3, 3, 7, false, false, 0x7eu, 0x7fu)
__HL_FP8_TYPE(__hip_fp8_e5m2, 2, 15, false, true, 0x7bu, 0x7eu)
#undef __HL_FP8_TYPE

#endif /* HYPERLOOM_FP8 */
