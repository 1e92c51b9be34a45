#include "dataset/file_io.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include "core/host_memory.h"
#include "core/paths.h"

namespace lockstep::dataset {

namespace {

// Fills `out` with the file's bytes; a short read (the file shrank) is still an I/O error.
absl::Status ReadAll(int fd, const std::string& path, uint8_t* out, uint64_t size) {
  for (uint64_t done = 0; done < size;) {
    const ssize_t n = read(fd, out + done, size - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      return absl::ErrnoToStatus(n < 0 ? errno : EIO, absl::StrCat("cannot read '", path, "'"));
    }
    done += static_cast<uint64_t>(n);
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Tensor> ReadFileBytes(const std::string& path) {
  LS_ASSIGN_OR_RETURN(RegularFile file, OpenRegularFile(path));
  const std::string what = absl::StrCat("reading '", path, "'");
  absl::Status status = CheckHostMemory(file.size, what);
  absl::StatusOr<Tensor> bytes = absl::InternalError("not read");
  if (status.ok()) {
    bytes = Tensor::Allocate({static_cast<int64_t>(file.size)}, DType::kU8, Device::CPU(),
                             /*zeroed=*/false);
    status = bytes.ok() ? ReadAll(file.fd, path, bytes->data<uint8_t>(), file.size)
                        : Annotate(bytes.status(), what);
  }
  close(file.fd);
  if (!status.ok()) return status;
  return bytes;
}

absl::Status WriteFileBytes(const std::string& path, absl::Span<const uint8_t> bytes) {
  LS_ASSIGN_OR_RETURN(const int fd, OpenOutputFile(path, O_CREAT | O_TRUNC));
  errno = 0;
  FILE* file = fdopen(fd, "wb");
  if (file == nullptr) {
    close(fd);
    return absl::ErrnoToStatus(errno, absl::StrCat("cannot create '", path, "'"));
  }
  bool written = std::fwrite(bytes.data(), 1, bytes.size(), file) == bytes.size();
  // fclose flushes: its failure is a failed write too.
  if (std::fclose(file) != 0 || !written) {
    return absl::ErrnoToStatus(errno != 0 ? errno : EIO, absl::StrCat("cannot write '", path, "'"));
  }
  return absl::OkStatus();
}

}  // namespace lockstep::dataset
