/* Host twins of int6.hip for the c backend: the same wire layout and arithmetic, one loop each. */
#include <stdint.h>

/* The 24-bit word of group g, and its field i (0..3) sign-extended from 6 bits. */
static uint32_t int6_word(const uint8_t* data, long long g) {
  return (uint32_t)data[3 * g] | ((uint32_t)data[3 * g + 1] << 8) | ((uint32_t)data[3 * g + 2] << 16);
}
static int32_t int6_code(uint32_t word, int i) { return (int32_t)(word << (26 - 6 * i)) >> 26; }

void int6_pack(const int16_t* restrict codes, uint8_t* restrict data, long long groups) {
  for (long long g = 0; g < groups; ++g) {
    uint32_t word = 0;
    for (int i = 0; i < 4; ++i) word |= ((uint32_t)codes[4 * g + i] & 63u) << (6 * i);
    for (int b = 0; b < 3; ++b) data[3 * g + b] = (uint8_t)(word >> (8 * b));
  }
}

void int6_unpack_add(const uint8_t* restrict data, int16_t* restrict acc, long long groups, int store) {
  for (long long g = 0; g < groups; ++g) {
    const uint32_t word = int6_word(data, g);
    for (int i = 0; i < 4; ++i) acc[4 * g + i] = (int16_t)((store ? 0 : acc[4 * g + i]) + int6_code(word, i));
  }
}

void int6_unpack_accumulate(const uint8_t* restrict data, int16_t* restrict acc, const float* restrict scales, float* restrict out,
                            long long groups, int block) {
  for (long long g = 0; g < groups; ++g) {
    const uint32_t word = int6_word(data, g);
    for (int i = 0; i < 4; ++i) {
      const long long at = 4 * g + i;
      acc[at] = (int16_t)(acc[at] + int6_code(word, i));
      out[at] = (float)acc[at] * scales[at / block];
    }
  }
}
