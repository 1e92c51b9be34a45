#include "dataset/file_io.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <memory>

namespace lockstep::dataset {

absl::StatusOr<Tensor> ReadFileBytes(const std::string& path) {
  auto read_error = [&path] {
    // A short read without an errno (the file shrank) is still an I/O error.
    return absl::ErrnoToStatus(errno != 0 ? errno : EIO, absl::StrCat("cannot read '", path, "'"));
  };
  errno = 0;
  std::unique_ptr<FILE, int (*)(FILE*)> file(std::fopen(path.c_str(), "rb"), std::fclose);
  struct stat info;
  if (file == nullptr || fstat(fileno(file.get()), &info) != 0) return read_error();
  Tensor bytes = Tensor::Empty({static_cast<int64_t>(info.st_size)}, DType::kU8);
  size_t size = static_cast<size_t>(info.st_size);
  if (std::fread(bytes.raw_data(), 1, size, file.get()) != size) return read_error();
  return bytes;
}

absl::Status WriteFileBytes(const std::string& path, absl::Span<const uint8_t> bytes) {
  errno = 0;
  FILE* file = std::fopen(path.c_str(), "wb");
  if (file == nullptr)
    return absl::ErrnoToStatus(errno, absl::StrCat("cannot create '", path, "'"));
  bool written = std::fwrite(bytes.data(), 1, bytes.size(), file) == bytes.size();
  // fclose flushes: its failure is a failed write too.
  if (std::fclose(file) != 0 || !written) {
    return absl::ErrnoToStatus(errno != 0 ? errno : EIO, absl::StrCat("cannot write '", path, "'"));
  }
  return absl::OkStatus();
}

}  // namespace lockstep::dataset
