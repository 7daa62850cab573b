/* Host twin of w4a16.hip for the c backend: the same contract (packing.py's nibble order, fl16(q · s)
 * dequantization, fp32 products), accumulated sequentially in fp32: the worst order the gate allows. */
#include <stdint.h>
#include <string.h>

static float h2f(uint16_t bits) {
  _Float16 h;
  memcpy(&h, &bits, sizeof h);
  return (float)h;
}

static int nibble(uint32_t w, int e) { /* k offset e of the word: byte e%4, low nibble for e < 4 */
  return e < 4 ? (int32_t)(w << (28 - 8 * e)) >> 28 : (int32_t)(w << (24 - 8 * (e - 4))) >> 28;
}

void decode_w4a16(const uint32_t* restrict w, const uint16_t* restrict w_scales, const uint16_t* restrict x, float* restrict y,
                  int m, int n, int k, int group) {
  for (int b = 0; b < m; ++b)
    for (int row = 0; row < n; ++row) {
      float acc = 0.f;
      for (int kk = 0; kk < k; ++kk) {
        const float s = h2f(w_scales[(size_t)row * (k / group) + kk / group]);
        const _Float16 wd = (_Float16)((float)nibble(w[(size_t)row * (k / 8) + kk / 8], kk % 8) * s); /* exact, then one rounding */
        acc += (float)wd * h2f(x[(size_t)b * k + kk]);
      }
      y[(size_t)b * n + row] = acc;
    }
}
