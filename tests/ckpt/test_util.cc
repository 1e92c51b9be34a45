#include "tests/ckpt/test_util.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "core/logging.h"

namespace lockstep::ckpt::testing {

namespace fs = std::filesystem;

std::string ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << path;
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void WriteBytes(const std::string& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(out.good()) << path;
}

Tensor PatternTensor(Shape shape, DType dtype, int seed) {
  Tensor tensor = Tensor::Empty(std::move(shape), dtype);
  auto* bytes = static_cast<uint8_t*>(tensor.raw_data());
  for (size_t i = 0; i < tensor.nbytes(); ++i)
    bytes[i] = static_cast<uint8_t>((i * 7 + seed) % 251);
  return tensor;
}

std::string_view Bytes(const Tensor& tensor) {
  return std::string_view(static_cast<const char*>(tensor.raw_data()), tensor.nbytes());
}

std::string ValueBytes(const proto::Checkpoint::Value& value) {
  proto::Checkpoint message;
  *message.add_value() = value;
  return message.SerializePartialAsString();  // partial: tests write invalid Values too
}

std::string WithCrcTrailer(std::string_view content) {
  const uLong crc = crc32(0, reinterpret_cast<const Bytef*>(content.data()), content.size());
  std::string out(content);
  out += "crc_num";
  for (int i = 9; i >= 0; --i)
    out.push_back(static_cast<char>(i < 4 ? (crc >> (8 * i)) & 0xff : 0));
  return out;
}

}  // namespace lockstep::ckpt::testing
