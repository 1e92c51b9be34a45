#pragma once

// The interface of a per-sample transform, and what a transform sees while it runs.

#include <memory>
#include <string>

#include "core/status.h"
#include "core/tensor.h"
#include "dataset/sample_random.h"

namespace lockstep::dataset {

class Transform;

// Where a transform runs: which sample (its epoch and position in the epoch's global order) and
// which step of the map chain. Random transforms draw from a Philox stream keyed by (seed, epoch,
// position), at counters reserved for their step, so the result is the same for any number of
// worker threads.
class TransformContext {
 public:
  TransformContext(uint64_t seed, int64_t epoch, int64_t position, int step, const Transform* next)
      : seed_(seed), epoch_(epoch), position_(position), step_(step), next_(next) {}

  // This step's random numbers.
  SampleRandom Random() const { return RandomForStep(step_); }
  // The numbers the next step will draw (lets Decode ask the next step about its input).
  SampleRandom NextRandom() const { return RandomForStep(step_ + 1); }
  // The transform that runs after this one, or null.
  const Transform* next() const { return next_; }

 private:
  SampleRandom RandomForStep(int step) const {
    return SampleRandom(seed_, StreamId(StreamPurpose::kSample, epoch_, position_),
                        static_cast<uint64_t>(step) << 32);
  }

  uint64_t seed_;
  int64_t epoch_;
  int64_t position_;
  int step_;
  const Transform* next_;
};

class Transform {
 public:
  virtual ~Transform() = default;

  // "RandomResizedCrop(224)": for messages.
  virtual std::string Name() const = 0;
  // Rejects bad arguments (sizes, probabilities); called once when an iterator starts.
  virtual absl::Status Validate() const { return absl::OkStatus(); }
  virtual absl::StatusOr<Tensor> Apply(const Tensor& input,
                                       const TransformContext& context) const = 0;

  // How many times smaller per side this transform's (height, width) input may arrive without
  // losing detail in its output: Decode then decodes a JPEG at a reduced DCT scale. `random` is
  // a copy of the stream Apply will draw from. 1 when the input must come at full size.
  virtual double MaxInputShrink(int64_t /*height*/, int64_t /*width*/,
                                SampleRandom /*random*/) const {
    return 1.0;
  }
};

using TransformPtr = std::shared_ptr<const Transform>;

}  // namespace lockstep::dataset
