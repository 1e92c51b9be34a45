#include "train/summary/tfrecord.h"

#include <isa-l/crc.h>

#include <bit>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace lockstep::train::summary {
namespace {

static_assert(std::endian::native == std::endian::little,
              "TFRecord lengths and CRCs are little-endian and copied as they are");

template <typename T>
std::string Bytes(T value) {
  std::string bytes(sizeof(T), '\0');
  std::memcpy(bytes.data(), &value, sizeof(T));
  return bytes;
}

}  // namespace

uint32_t Crc32c(absl::string_view data) {
  // ISA-L's crc32_iscsi neither inverts the initial value nor the result; CRC-32C does both.
  // Records hold one event each, far below its int length.
  const uint32_t crc = crc32_iscsi(reinterpret_cast<unsigned char*>(const_cast<char*>(data.data())),
                                   static_cast<int>(data.size()), 0xFFFFFFFFu);
  return ~crc;
}

uint32_t MaskedCrc32c(absl::string_view data) {
  const uint32_t crc = Crc32c(data);
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

std::string EncodeTfRecord(absl::string_view data) {
  const std::string length = Bytes<uint64_t>(data.size());
  return absl::StrCat(length, Bytes<uint32_t>(MaskedCrc32c(length)), data,
                      Bytes<uint32_t>(MaskedCrc32c(data)));
}

}  // namespace lockstep::train::summary
