/* Host twin of read.hip: the same per-block partial sums (grid-stride ownership of float4s over the grid
   the launch gives read.hip, ceil(n4 / (256 per_thread)) blocks). Float4s are read in address order, 256 at a
   time: each run of 256 belongs to one block (the grid's stride is a multiple of 256), summed by component. */
void read_f4(const float* restrict src, float* restrict partial, long long n4, int per_thread) {
  const long long blocks = (n4 + 256LL * per_thread - 1) / (256LL * per_thread);
  const long long stride = blocks * 256;
  for (long long b = 0; b < blocks; ++b) partial[b] = 0.f;
  for (long long start = 0; start < n4; start += 256) {
    const long long end = start + 256 < n4 ? start + 256 : n4;
    float s0 = 0.f, s1 = 0.f, s2 = 0.f, s3 = 0.f;
    for (long long i = start; i < end; ++i) {
      const float* v = src + 4 * i;
      s0 += v[0], s1 += v[1], s2 += v[2], s3 += v[3];
    }
    partial[(start % stride) / 256] += (s0 + s1) + (s2 + s3);
  }
}
