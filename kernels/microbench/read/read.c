/* Host twin of read.hip: the same per-block partial sums (grid-stride ownership of float4s over the grid
   the launch gives read.hip, ceil(n4 / (256 per_thread)) blocks). */
void read_f4(const float* restrict src, float* restrict partial, long long n4, int per_thread) {
  const long long blocks = (n4 + 256LL * per_thread - 1) / (256LL * per_thread);
  const long long stride = blocks * 256;
  for (long long b = 0; b < blocks; ++b) partial[b] = 0.f;
  for (long long i = 0; i < n4; ++i) {
    const float* v = src + 4 * i;
    partial[(i % stride) / 256] += (v[0] + v[1]) + (v[2] + v[3]);
  }
}
