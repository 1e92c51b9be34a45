#include "dataset/sample_random.h"

#include "core/logging.h"

namespace lockstep::dataset {

uint64_t StreamId(StreamPurpose purpose, int64_t epoch, int64_t index) {
  LS_CHECK(epoch >= 0 && epoch < kMaxEpochs) << "epoch " << epoch;
  LS_CHECK(index >= 0 && index < kMaxStreamIndex) << "index " << index;
  return (static_cast<uint64_t>(purpose) << 60) | (static_cast<uint64_t>(epoch) << 40) |
         static_cast<uint64_t>(index);
}

float SampleRandom::Uniform() { return ToUnitFloat(philox_.Block(counter_++)[0]); }

int64_t SampleRandom::UniformInt(int64_t bound) {
  LS_CHECK(bound > 0) << "bound " << bound;
  return static_cast<int64_t>(philox_.UniformInt(counter_++, static_cast<uint64_t>(bound)));
}

}  // namespace lockstep::dataset
