#include "graph/amp.h"

#include <array>

#include "absl/strings/str_cat.h"

namespace lockstep {
namespace {

constexpr std::array<const char*, 4> kLevelNames = {"O0", "O1", "O2", "O3"};

}  // namespace

const char* AmpLevelName(AmpLevel level) { return kLevelNames[static_cast<size_t>(level)]; }

bool ParseAmpLevel(std::string_view name, AmpLevel* level) {
  for (size_t i = 0; i < kLevelNames.size(); ++i) {
    if (name.size() == 2 && (name[0] == 'O' || name[0] == 'o') && name[1] == kLevelNames[i][1]) {
      *level = static_cast<AmpLevel>(i);
      return true;
    }
  }
  return false;
}

absl::Status CheckAmpOptions(const AmpOptions& options) {
  if (IsLowPrecision(options.dtype)) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("amp_dtype must be bf16 or f16, got ", DTypeName(options.dtype)));
}

}  // namespace lockstep
