#pragma once

// Helpers of the checkpoint tests: temporary directories, raw file bytes, tensors with known
// content, and hand-made checkpoint files for the corruption tests.

#include <cstdint>
#include <string>
#include <string_view>

#include "ckpt/checkpoint.pb.h"
#include "core/tensor.h"
#include "tests/testing/temp_dir.h"

namespace lockstep::ckpt::testing {

using ::lockstep::testing::TempDir;

std::string ReadBytes(const std::string& path);
void WriteBytes(const std::string& path, std::string_view bytes);

// A tensor whose byte i is (i * 7 + seed) % 251: every dtype, any bit pattern.
Tensor PatternTensor(Shape shape, DType dtype, int seed = 0);
std::string_view Bytes(const Tensor& tensor);

// One serialized single-Value Checkpoint message.
std::string ValueBytes(const proto::Checkpoint::Value& value);
// `content` followed by the trailer MindSpore writes: "crc_num" and zlib's CRC32, big-endian.
std::string WithCrcTrailer(std::string_view content);

}  // namespace lockstep::ckpt::testing
