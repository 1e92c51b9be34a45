#include "core/file_io.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <new>
#include <system_error>
#include <utility>

#include "core/host_memory.h"
#include "core/logging.h"
#include "core/paths.h"

namespace lockstep {
namespace {

absl::Status ErrnoError(absl::string_view what, const std::string& path) {
  return absl::ErrnoToStatus(errno, absl::StrCat(what, " ", path));
}

// All of `bytes`, however many write(2) calls it takes.
absl::Status WriteAll(int fd, absl::string_view bytes, const std::string& path) {
  while (!bytes.empty()) {
    const ssize_t n = write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoError("writing", path);
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return absl::OkStatus();
}

std::string ParentDirectory(const std::string& path) {
  std::string parent = std::filesystem::path(path).parent_path().string();
  return parent.empty() ? "." : parent;
}

// A rename is durable once the directory holding the new name is on disk.
absl::Status SyncDirectory(const std::string& dir) {
  int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return ErrnoError("opening directory", dir);
  int rc = fsync(fd);
  absl::Status status = rc == 0 ? absl::OkStatus() : ErrnoError("fsync of directory", dir);
  close(fd);
  return status;
}

// Opens `path` to be read whole: its size must fit in the memory this process may use.
absl::StatusOr<ReadOnlyFile> OpenToReadWhole(const std::string& path) {
  LS_ASSIGN_OR_RETURN(ReadOnlyFile file, ReadOnlyFile::Open(path));
  LS_RETURN_IF_ERROR(CheckHostMemory(file.size(), absl::StrCat("reading '", path, "'")));
  return file;
}

}  // namespace

absl::StatusOr<AtomicFile> AtomicFile::Create(std::string path, absl::string_view tmp_suffix) {
  LS_RETURN_IF_ERROR(CheckOutputPath(path));
  std::string tmp_path = absl::StrCat(path, tmp_suffix);
  AtomicFile file(std::move(path), std::move(tmp_path));
  LS_ASSIGN_OR_RETURN(file.fd_, OpenOutputFile(file.tmp_path_, O_CREAT | O_TRUNC));
  return file;
}

AtomicFile::AtomicFile(AtomicFile&& other) noexcept
    : path_(std::move(other.path_)),
      tmp_path_(std::move(other.tmp_path_)),
      fd_(std::exchange(other.fd_, -1)),
      bytes_written_(other.bytes_written_) {}

AtomicFile::~AtomicFile() {
  if (fd_ < 0) return;
  close(fd_);
  unlink(tmp_path_.c_str());
}

absl::Status AtomicFile::Write(absl::string_view bytes) {
  LS_CHECK(fd_ >= 0) << "write to " << path_ << " after Commit";
  LS_RETURN_IF_ERROR(WriteAll(fd_, bytes, tmp_path_));
  bytes_written_ += bytes.size();
  return absl::OkStatus();
}

absl::Status AtomicFile::Commit() {
  LS_CHECK(fd_ >= 0) << path_ << " committed twice";
  if (fsync(fd_) != 0) return ErrnoError("fsync of", tmp_path_);
  int rc = close(std::exchange(fd_, -1));
  if (rc != 0) {
    unlink(tmp_path_.c_str());
    return ErrnoError("closing", tmp_path_);
  }
  if (rename(tmp_path_.c_str(), path_.c_str()) != 0) {
    absl::Status status = ErrnoError("renaming the tmp file to", path_);
    unlink(tmp_path_.c_str());
    return status;
  }
  return SyncDirectory(ParentDirectory(path_));
}

absl::StatusOr<AppendOnlyFile> AppendOnlyFile::Open(std::string path) {
  LS_ASSIGN_OR_RETURN(const int fd, OpenOutputFile(path, O_CREAT | O_APPEND));
  return AppendOnlyFile(std::move(path), fd);
}

AppendOnlyFile::AppendOnlyFile(AppendOnlyFile&& other) noexcept
    : path_(std::move(other.path_)), fd_(std::exchange(other.fd_, -1)) {}

AppendOnlyFile::~AppendOnlyFile() {
  if (fd_ >= 0) close(fd_);
}

absl::Status AppendOnlyFile::Append(absl::string_view bytes) { return WriteAll(fd_, bytes, path_); }

absl::StatusOr<ReadOnlyFile> ReadOnlyFile::Open(const std::string& path) {
  LS_ASSIGN_OR_RETURN(RegularFile file, OpenRegularFile(path));
  return ReadOnlyFile(path, file.fd, file.size);
}

ReadOnlyFile::ReadOnlyFile(ReadOnlyFile&& other) noexcept
    : path_(std::move(other.path_)), fd_(std::exchange(other.fd_, -1)), size_(other.size_) {}

ReadOnlyFile::~ReadOnlyFile() {
  if (fd_ >= 0) close(fd_);
}

absl::Status ReadOnlyFile::ReadAt(uint64_t offset, uint64_t length, char* out) const {
  while (length > 0) {
    ssize_t n = pread(fd_, out, length, static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoError("reading", path_);
    if (n == 0) {
      return absl::DataLossError(absl::StrCat(path_, " ended early: it shrank while being read"));
    }
    out += n;
    offset += static_cast<uint64_t>(n);
    length -= static_cast<uint64_t>(n);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReadWholeFile(const std::string& path) {
  LS_ASSIGN_OR_RETURN(ReadOnlyFile file, OpenToReadWhole(path));
  std::string bytes;
  try {
    bytes.resize(file.size());
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError(
        absl::StrCat("out of memory for the ", file.size(), " bytes of ", path));
  }
  LS_RETURN_IF_ERROR(file.ReadAt(0, bytes.size(), bytes.data()));
  return bytes;
}

absl::StatusOr<Tensor> ReadWholeFileAsTensor(const std::string& path) {
  LS_ASSIGN_OR_RETURN(ReadOnlyFile file, OpenToReadWhole(path));
  absl::StatusOr<Tensor> bytes = Tensor::Allocate({static_cast<int64_t>(file.size())}, DType::kU8,
                                                  Device::CPU(), /*zeroed=*/false);
  if (!bytes.ok()) return Annotate(bytes.status(), absl::StrCat("reading '", path, "'"));
  LS_RETURN_IF_ERROR(file.ReadAt(0, file.size(), reinterpret_cast<char*>(bytes->data<uint8_t>())));
  return bytes;
}

absl::Status WriteFileAtomically(const std::string& path, absl::string_view bytes,
                                 absl::string_view tmp_suffix) {
  LS_ASSIGN_OR_RETURN(AtomicFile file, AtomicFile::Create(path, tmp_suffix));
  LS_RETURN_IF_ERROR(file.Write(bytes));
  return file.Commit();
}

absl::Status WriteFile(const std::string& path, absl::string_view bytes) {
  LS_ASSIGN_OR_RETURN(const int fd, OpenOutputFile(path, O_CREAT | O_TRUNC));
  absl::Status status = WriteAll(fd, bytes, path);
  // Some file systems (NFS) report a failed write only when the file is closed.
  if (close(fd) != 0 && status.ok()) status = ErrnoError("closing", path);
  return status;
}

absl::StatusOr<std::vector<std::string>> ListFiles(const std::string& dir) {
  std::error_code error;
  std::filesystem::directory_iterator it(dir, error);
  if (error) return absl::NotFoundError(absl::StrCat("listing ", dir, ": ", error.message()));
  std::vector<std::string> names;
  for (; !error && it != std::filesystem::directory_iterator(); it.increment(error)) {
    std::error_code type_error;
    std::string name = it->path().filename().string();
    if (it->is_regular_file(type_error) && !name.starts_with('.')) names.push_back(std::move(name));
  }
  if (error) return absl::UnavailableError(absl::StrCat("listing ", dir, ": ", error.message()));
  std::sort(names.begin(), names.end());
  return names;
}

absl::Status MakeDirectories(const std::string& dir) {
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error) return absl::UnavailableError(absl::StrCat("creating ", dir, ": ", error.message()));
  return absl::OkStatus();
}

absl::Status RemoveFile(const std::string& path) {
  if (unlink(path.c_str()) != 0 && errno != ENOENT) return ErrnoError("removing", path);
  return absl::OkStatus();
}

std::string JoinPath(absl::string_view dir, absl::string_view name) {
  if (dir.empty()) return std::string(name);
  if (dir.back() == '/') return absl::StrCat(dir, name);
  return absl::StrCat(dir, "/", name);
}

}  // namespace lockstep
