#pragma once

// The precision flags of the binaries (--amp-level, --amp-dtype, --allreduce-dtype), shared by
// lockstep-train and lockstep-bench-resnet, and the start-up line that says what they chose.

#include <string>

#include "CLI/CLI.hpp"
#include "train/model.h"

namespace lockstep {

struct PrecisionFlags {
  std::string amp_level = "O0";
  std::string amp_dtype = "bf16";
  std::string allreduce_dtype = "f32";
};

void AddPrecisionFlags(CLI::App& app, PrecisionFlags& flags);

// Sets ModelOptions::amp_level, amp_dtype and parallel.allreduce_dtype (after the parallel
// options are filled in).
void ApplyPrecisionFlags(const PrecisionFlags& flags, train::ModelOptions& options);

// "O2 in bf16, float32 master weights" and, where the device has no native arithmetic for the
// dtype, why it will not be faster; "float32" at O0.
std::string PrecisionLine(const train::ModelOptions& options);

}  // namespace lockstep
