// Device side of the INT6 all-reduce: pack 4 signed 6-bit codes (held in the int16 partial sums) into
// 3 bytes; unpack and add them into (or store them as) int16 partial sums, the ring's two kinds of step;
// unpack, accumulate and dequantize with the shared per-block float32 scale in one pass.
// Wire layout (the allreduce reference, tools/allreduce/packing.py): codes a, b, c, d in [-32, 31]
// form the 24-bit word a | b<<6 | c<<12 | d<<18 (6-bit two's complement each), low byte first.
#include <hip/hip_runtime.h>

// The 24-bit word of group g, and its field i (0..3) sign-extended from 6 bits.
__device__ __forceinline__ unsigned int6_word(const unsigned char* __restrict__ data, long long g) {
  return (unsigned)data[3 * g] | ((unsigned)data[3 * g + 1] << 8) | ((unsigned)data[3 * g + 2] << 16);
}
__device__ __forceinline__ int int6_code(unsigned word, int i) { return (int)(word << (26 - 6 * i)) >> 26; }

extern "C" __global__ void int6_pack(const short* __restrict__ codes, unsigned char* __restrict__ data, long long groups) {
  const long long g = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (g >= groups) return;
  const unsigned word = ((unsigned)codes[4 * g] & 63u) | (((unsigned)codes[4 * g + 1] & 63u) << 6) |
                        (((unsigned)codes[4 * g + 2] & 63u) << 12) | (((unsigned)codes[4 * g + 3] & 63u) << 18);
  data[3 * g] = (unsigned char)word;
  data[3 * g + 1] = (unsigned char)(word >> 8);
  data[3 * g + 2] = (unsigned char)(word >> 16);
}

// acc[i] = (store ? 0 : acc[i]) + code i of data: a reduce-scatter step adds, an all-gather step stores.
extern "C" __global__ void int6_unpack_add(const unsigned char* __restrict__ data, short* __restrict__ acc, long long groups, int store) {
  const long long g = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (g >= groups) return;
  const unsigned word = int6_word(data, g);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const long long at = 4 * g + i;
    acc[at] = (short)((store ? 0 : acc[at]) + int6_code(word, i));
  }
}

// acc[i] += code i of data; then out[i] = fl32((float)acc[i] · scales[i / block]).
extern "C" __global__ void int6_unpack_accumulate(const unsigned char* __restrict__ data, short* __restrict__ acc,
                                                  const float* __restrict__ scales, float* __restrict__ out, long long groups,
                                                  int block) {
  const long long g = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (g >= groups) return;
  const unsigned word = int6_word(data, g);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const long long at = 4 * g + i;
    const short sum = (short)(acc[at] + int6_code(word, i));
    acc[at] = sum;
    out[at] = (float)sum * scales[at / block];
  }
}
