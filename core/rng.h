#pragma once

// Counter-based Philox 4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3").
// A value depends only on (seed, stream, counter), so every rank, device and thread count
// draws the same numbers: element i of a fill always comes from counter block i / 4.

#include <array>
#include <cstdint>

namespace lockstep {

class Philox {
 public:
  Philox(uint64_t seed, uint64_t stream) : seed_(seed), stream_(stream) {}

  // Four independent 32-bit words for one counter value.
  std::array<uint32_t, 4> Block(uint64_t counter) const;

  // out[i] = uniform in [0, 1) for element offset + i; any split over threads gives the same.
  void Uniform(float* out, int64_t n, uint64_t offset = 0) const;
  // Normally distributed (Box-Muller over the block's words), same counter rule as Uniform.
  void Normal(float* out, int64_t n, float mean, float stddev, uint64_t offset = 0) const;
  // Uniform integer in [0, bound) for counter value `counter` (bound > 0).
  uint64_t UniformInt(uint64_t counter, uint64_t bound) const;

  uint64_t seed() const { return seed_; }
  uint64_t stream() const { return stream_; }

 private:
  uint64_t seed_;
  uint64_t stream_;
};

// [0, 1) from the top 24 bits: exactly representable in float.
inline float ToUnitFloat(uint32_t x) { return static_cast<float>(x >> 8) * (1.0f / 16777216.0f); }

}  // namespace lockstep
