#pragma once

// Whole-file reads and writes with errors that name the path.

#include <cstdint>
#include <string>

#include "absl/types/span.h"
#include "core/status.h"
#include "core/tensor.h"

namespace lockstep::dataset {

// The file's bytes as a 1-D uint8 tensor.
absl::StatusOr<Tensor> ReadFileBytes(const std::string& path);

absl::Status WriteFileBytes(const std::string& path, absl::Span<const uint8_t> bytes);

}  // namespace lockstep::dataset
