#pragma once

// A generated, learnable image task: each image shows one shape of a random colour, size and
// place on a noisy background, and its class is the shape (horizontal bar, vertical bar, hollow
// square, plus sign). Deterministic in (seed, index).

#include <cstdint>

#include "core/tensor.h"

namespace lockstep::train::testing {

inline constexpr int kShapeClasses = 4;

struct ShapeImages {
  Tensor images;  // (count, channels, size, size) f32
  Tensor labels;  // (count) i32, balanced: index % kShapeClasses
};

ShapeImages MakeShapeImages(int64_t count, int64_t channels, int64_t size, uint64_t seed);

}  // namespace lockstep::train::testing
