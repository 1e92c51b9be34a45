#pragma once

// TFRecord framing, the container of TensorBoard's event files: each record is
//   uint64 length (little-endian), uint32 masked CRC-32C of those 8 bytes,
//   data[length], uint32 masked CRC-32C of the data.

#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"

namespace lockstep::train::summary {

// CRC-32C (Castagnoli, as iSCSI uses it): Crc32c("123456789") == 0xE3069283.
uint32_t Crc32c(absl::string_view data);
// TensorFlow's masking, which keeps a CRC stored next to the data it covers from looking like
// data: rotate right by 15 bits and add 0xa282ead8.
uint32_t MaskedCrc32c(absl::string_view data);
// One record holding `data`.
std::string EncodeTfRecord(absl::string_view data);

}  // namespace lockstep::train::summary
