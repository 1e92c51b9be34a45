#pragma once

// The parts of MindSpore's .ckpt format that are not in checkpoint.proto: tensor_type strings,
// the scalar convention, slicing and the CRC trailer.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "core/dtype.h"
#include "core/tensor.h"

namespace lockstep::ckpt {

struct TensorTypeInfo {
  const char* name;  // "Float32"
  size_t size;       // bytes per element
  std::optional<DType> dtype;
  // Reads one element (little-endian, any alignment) as a double; null for "str" (text).
  double (*load)(const char* element);

  bool numeric() const { return load != nullptr; }
};

// Null when `name` is not a MindSpore tensor_type.
const TensorTypeInfo* FindTensorType(absl::string_view name);
const TensorTypeInfo& TensorTypeOf(DType dtype);
// "Int8, UInt8, ..." for error messages.
std::string KnownTensorTypes();

// The name MindSpore gives a Lockstep dtype ("Float32" for f32).
inline const char* TensorTypeName(DType dtype) { return TensorTypeOf(dtype).name; }

// MindSpore writes a scalar's dims as [0] (and reads [0] back as one element).
std::vector<int64_t> DimsOnDisk(const Shape& shape);
// The shape of stored dims: [0] holding exactly one element is a scalar.
Shape ShapeFromDisk(const std::vector<int64_t>& dims, size_t content_bytes,
                    const TensorTypeInfo& type);

// Tensors over this many bytes (512 MB) are split into several Values with the same tag and the
// full dims, each holding a run of the flattened elements, as MindSpore does with
// numpy.array_split.
inline constexpr uint64_t kMindSporeSliceBytes = uint64_t{512} << 20;

// The file ends in "crc_num" and the zlib CRC32 of everything before it as a 10-byte big-endian
// unsigned integer.
inline constexpr absl::string_view kCrcMagic = "crc_num";
inline constexpr size_t kCrcTrailerBytes = 17;
std::string EncodeCrcTrailer(uint32_t crc);
// The CRC when `trailer` (the last 17 bytes) is one; nullopt when the file has none. A value
// over 32 bits is returned as it is for the caller to reject.
std::optional<uint64_t> DecodeCrcTrailer(absl::string_view trailer);

}  // namespace lockstep::ckpt
