#pragma once

// Automatic mixed precision with MindSpore's amp levels. The AutoMixedPrecision pass
// (graph/passes/passes.h) reads AmpOptions from the compile options (PassConfig) and each op's
// precision policy, declared where the op is registered (OpDef::LowPrecisionFrom,
// OpDef::Float32Inputs, OpDef::FollowsInputPrecision in graph/op_def.h).

#include <string_view>

#include "core/dtype.h"
#include "core/status.h"

namespace lockstep {

// MindSpore's amp_level:
//   O0  float32 everywhere (the pass does not run);
//   O1  the ops that gain most (convolutions, matmuls) in the low dtype, the rest float32;
//   O2  the network in the low dtype except batch-norm parameters and statistics and the loss;
//   O3  everything in the low dtype but batch-norm statistics and the loss, which MindSpore
//       computes in float32 at every level (it casts the network's output to float32).
// Levels are ordered: an op low from O2 is low at O2 and O3.
enum class AmpLevel { kO0, kO1, kO2, kO3 };

struct AmpOptions {
  AmpLevel level = AmpLevel::kO0;
  DType dtype = DType::kBF16;  // the low dtype: bf16 or f16
};

// "O0" ... "O3".
const char* AmpLevelName(AmpLevel level);
// Inverse of AmpLevelName (also lowercase "o2"); false when the name is unknown.
bool ParseAmpLevel(std::string_view name, AmpLevel* level);
// InvalidArgument unless the low dtype is bf16 or f16.
absl::Status CheckAmpOptions(const AmpOptions& options);

}  // namespace lockstep
