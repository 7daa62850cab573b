/* Hyperloom's bfloat16 for HIP device code built by a plain clang (no ROCm headers): __hip_bfloat16 as ROCm
 * spells it, two bytes, the top half of a float32. Conversions round to nearest even (NaN stays NaN); arithmetic
 * goes through float, as ROCm's own does. Plain C++ (host and device): tests build it on the CPU. */
#pragma once
#ifndef HYPERLOOM_BF16
#define HYPERLOOM_BF16 1

#ifndef __device__
#define __device__
#endif
#ifndef __host__
#define __host__
#endif
#define __HL_BF16_HD __host__ __device__ inline

__HL_BF16_HD unsigned short __hl_float_to_bf16_bits(float f) {
  unsigned u;
  __builtin_memcpy(&u, &f, sizeof u);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((u >> 16) | 0x40u); /* a quiet NaN */
  u += 0x7fffu + ((u >> 16) & 1u);                                                /* to nearest, ties to even */
  return (unsigned short)(u >> 16);
}

__HL_BF16_HD float __hl_bf16_bits_to_float(unsigned short bits) {
  unsigned u = (unsigned)bits << 16;
  float f;
  __builtin_memcpy(&f, &u, sizeof f);
  return f;
}

struct __hip_bfloat16 {
  unsigned short data;
  __hip_bfloat16() = default;
  __HL_BF16_HD __hip_bfloat16(float f) : data(__hl_float_to_bf16_bits(f)) {}
  __HL_BF16_HD operator float() const { return __hl_bf16_bits_to_float(data); }
};

struct __hip_bfloat162 {
  __hip_bfloat16 x, y;
};

__HL_BF16_HD float __bfloat162float(__hip_bfloat16 x) { return (float)x; }
__HL_BF16_HD __hip_bfloat16 __float2bfloat16(float f) { return __hip_bfloat16(f); }
__HL_BF16_HD __hip_bfloat16 __float2bfloat16_rn(float f) { return __hip_bfloat16(f); }

#endif /* HYPERLOOM_BF16 */
