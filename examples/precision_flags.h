#pragma once

// The precision flags of the binaries (--amp-level, --amp-dtype, --allreduce-dtype), shared by
// lockstep-train and lockstep-bench-resnet, and the start-up line that says what they chose.

#include <map>
#include <string>

#include "CLI/CLI.hpp"
#include "graph/amp.h"
#include "train/model.h"

namespace lockstep {

// As written on the command line (checked by CLI11 against the names below).
struct PrecisionFlags {
  std::string amp_level = "O0";
  std::string amp_dtype = "bf16";
  std::string allreduce_dtype = "f32";
};

// The float dtypes by their flag names: f32, bf16, and fp16 as PyTorch users write it.
const std::map<std::string, DType>& FloatDTypeFlags();
// The flag name of a dtype of FloatDTypeFlags.
std::string FloatDTypeFlagName(DType dtype);
// A flag taking one of FloatDTypeFlags' names (CLI11 refuses others, listing these).
CLI::Option* AddFloatDTypeOption(CLI::App& app, const std::string& name, std::string& value,
                                 const std::string& description, bool low_only = false);

void AddPrecisionFlags(CLI::App& app, PrecisionFlags& flags);

// Sets ModelOptions::amp_level, amp_dtype and parallel.allreduce_dtype (after the parallel
// options are filled in).
void ApplyPrecisionFlags(const PrecisionFlags& flags, train::ModelOptions& options);

// "O2 in bf16, float32 master weights" and, where the device has no native arithmetic for the
// dtype, why it will not be faster; "float32" at O0.
std::string PrecisionLine(const train::ModelOptions& options);

}  // namespace lockstep
