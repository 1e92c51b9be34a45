#include "core/rng.h"

#include <cmath>
#include <numbers>

namespace lockstep {
namespace {

constexpr uint32_t kMul0 = 0xD2511F53;
constexpr uint32_t kMul1 = 0xCD9E8D57;
constexpr uint32_t kWeyl0 = 0x9E3779B9;
constexpr uint32_t kWeyl1 = 0xBB67AE85;
constexpr int kRounds = 10;

inline void MulHiLo(uint32_t a, uint32_t b, uint32_t* hi, uint32_t* lo) {
  uint64_t product = static_cast<uint64_t>(a) * b;
  *hi = static_cast<uint32_t>(product >> 32);
  *lo = static_cast<uint32_t>(product);
}

}  // namespace

std::array<uint32_t, 4> Philox::Block(uint64_t counter) const {
  std::array<uint32_t, 4> c = {static_cast<uint32_t>(counter), static_cast<uint32_t>(counter >> 32),
                               static_cast<uint32_t>(stream_),
                               static_cast<uint32_t>(stream_ >> 32)};
  uint32_t k0 = static_cast<uint32_t>(seed_);
  uint32_t k1 = static_cast<uint32_t>(seed_ >> 32);
  for (int round = 0; round < kRounds; ++round) {
    uint32_t hi0, lo0, hi1, lo1;
    MulHiLo(kMul0, c[0], &hi0, &lo0);
    MulHiLo(kMul1, c[2], &hi1, &lo1);
    c = {hi1 ^ c[1] ^ k0, lo1, hi0 ^ c[3] ^ k1, lo0};
    k0 += kWeyl0;
    k1 += kWeyl1;
  }
  return c;
}

void Philox::Uniform(float* out, int64_t n, uint64_t offset) const {
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    uint64_t element = offset + i;
    out[i] = ToUnitFloat(Block(element / 4)[element % 4]);
  }
}

void Philox::Normal(float* out, int64_t n, float mean, float stddev, uint64_t offset) const {
  // Element e uses words (2*(e%2), 2*(e%2)+1) of block e/2: one Box-Muller pair per word pair.
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    uint64_t element = offset + i;
    std::array<uint32_t, 4> block = Block(element / 2);
    int pair = static_cast<int>(element % 2) * 2;
    double u1 = (static_cast<double>(block[pair]) + 1.0) / 4294967296.0;  // (0, 1]
    double u2 = static_cast<double>(block[pair + 1]) / 4294967296.0;
    double z = std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
    out[i] = static_cast<float>(mean + stddev * z);
  }
}

uint64_t Philox::UniformInt(uint64_t counter, uint64_t bound) const {
  std::array<uint32_t, 4> block = Block(counter);
  uint64_t x = (static_cast<uint64_t>(block[0]) << 32) | block[1];
  // 64 random bits against a bound far below 2^64: the modulo bias is negligible.
  return x % bound;
}

}  // namespace lockstep
