#pragma once

// Random numbers of the input pipeline, all drawn from core's counter-based Philox. Every draw is
// a pure function of (seed, purpose, epoch, index, counter), so the same numbers come out on every
// rank and for any number of worker threads.

#include <cstdint>

#include "core/rng.h"

namespace lockstep::dataset {

// What a Philox stream is used for; part of the stream id so that purposes never share numbers.
// kSampleImage (the sample data set generator) and kHoldOut (ImageFolder's held-out share) put
// the class where the epoch goes.
enum class StreamPurpose : uint64_t {
  kPermutation = 1,
  kShuffleBuffer = 2,
  kSample = 3,
  kSampleImage = 4,
  kHoldOut = 5,
};

// Stream id: purpose in bits 60..63, epoch in bits 40..59, index (sample position) in bits 0..39.
inline constexpr int64_t kMaxEpochs = int64_t{1} << 20;
inline constexpr int64_t kMaxStreamIndex = int64_t{1} << 40;
uint64_t StreamId(StreamPurpose purpose, int64_t epoch, int64_t index);

// Sequential draws from one Philox stream; a copy replays the same numbers.
class SampleRandom {
 public:
  SampleRandom(uint64_t seed, uint64_t stream, uint64_t first_counter)
      : philox_(seed, stream), counter_(first_counter) {}

  // Uniform in [0, 1).
  float Uniform();
  // Uniform in [low, high).
  float Uniform(float low, float high) { return low + (high - low) * Uniform(); }
  // Uniform integer in [0, bound); bound > 0.
  int64_t UniformInt(int64_t bound);

 private:
  Philox philox_;
  uint64_t counter_;
};

}  // namespace lockstep::dataset
