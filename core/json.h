#pragma once

// Text for JSON written by hand (RFC 8259): lockstep-ckpt's --json, the ONNX export's metadata.

#include <string>

#include "absl/strings/string_view.h"

namespace lockstep {

// `text` as a JSON string, quotes included: '"' and '\' escaped, control characters as \u00XX,
// well-formed UTF-8 kept as it is, and each byte that is not part of well-formed UTF-8 (a name
// from a Latin-1 file system) as \ufffd, so that the result is always valid JSON.
std::string JsonString(absl::string_view text);

}  // namespace lockstep
