#pragma once

// Reading and writing files: whole-file reads bounded by the file's size and this process's
// memory, atomic writes (tmp file, fsync, rename, fsync of the directory), appends, and directory
// listings. Files are opened through core/paths.h's checks; every error names the path.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "core/status.h"
#include "core/tensor.h"

namespace lockstep {

// Writes `path` through a tmp file beside it: nothing appears under `path` until Commit, which
// fsyncs the file, renames it over `path` and fsyncs the directory. Uncommitted, the tmp file is
// removed. Only a regular file is ever replaced (CheckOutputPath): a directory, FIFO, device,
// socket or link at `path` or at the tmp path is refused, naming it.
class AtomicFile {
 public:
  // The tmp file is `path` + `tmp_suffix`: processes that may write one path at once need
  // suffixes of their own.
  static absl::StatusOr<AtomicFile> Create(std::string path, absl::string_view tmp_suffix = ".tmp");
  AtomicFile(AtomicFile&& other) noexcept;
  AtomicFile& operator=(AtomicFile&&) = delete;
  AtomicFile(const AtomicFile&) = delete;
  ~AtomicFile();

  absl::Status Write(absl::string_view bytes);
  absl::Status Commit();
  const std::string& path() const { return path_; }
  uint64_t bytes_written() const { return bytes_written_; }

 private:
  AtomicFile(std::string path, std::string tmp_path)
      : path_(std::move(path)), tmp_path_(std::move(tmp_path)) {}

  std::string path_;
  std::string tmp_path_;
  int fd_ = -1;
  uint64_t bytes_written_ = 0;
};

// A file that only grows (created where missing); every Append is one write(2), with nothing
// buffered in the process, so that a reader following the file sees each record at once.
class AppendOnlyFile {
 public:
  static absl::StatusOr<AppendOnlyFile> Open(std::string path);
  AppendOnlyFile(AppendOnlyFile&& other) noexcept;
  AppendOnlyFile& operator=(AppendOnlyFile&&) = delete;
  AppendOnlyFile(const AppendOnlyFile&) = delete;
  ~AppendOnlyFile();

  absl::Status Append(absl::string_view bytes);
  const std::string& path() const { return path_; }

 private:
  AppendOnlyFile(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}

  std::string path_;
  int fd_ = -1;
};

// A regular file opened for reading, with its size.
class ReadOnlyFile {
 public:
  static absl::StatusOr<ReadOnlyFile> Open(const std::string& path);
  ReadOnlyFile(ReadOnlyFile&& other) noexcept;
  ReadOnlyFile& operator=(ReadOnlyFile&&) = delete;
  ReadOnlyFile(const ReadOnlyFile&) = delete;
  ~ReadOnlyFile();

  int fd() const { return fd_; }
  uint64_t size() const { return size_; }
  const std::string& path() const { return path_; }
  // Exactly `length` bytes at `offset` (which the caller has bounded by size()).
  absl::Status ReadAt(uint64_t offset, uint64_t length, char* out) const;

 private:
  ReadOnlyFile(std::string path, int fd, uint64_t size)
      : path_(std::move(path)), fd_(fd), size_(size) {}

  std::string path_;
  int fd_ = -1;
  uint64_t size_ = 0;
};

// The whole file; the buffer is the file's size, nothing more.
absl::StatusOr<std::string> ReadWholeFile(const std::string& path);
// The whole file as a 1-D uint8 tensor on the CPU.
absl::StatusOr<Tensor> ReadWholeFileAsTensor(const std::string& path);
// Writes `bytes` to `path` atomically (AtomicFile).
absl::Status WriteFileAtomically(const std::string& path, absl::string_view bytes,
                                 absl::string_view tmp_suffix = ".tmp");
// Writes `bytes` to `path` in place, created or truncated, without AtomicFile's fsyncs: for files
// that are made visible as a whole later (a folder written aside, then renamed into place).
absl::Status WriteFile(const std::string& path, absl::string_view bytes);
// The names (not paths) of the regular files in `dir` but the hidden ones (a lock file), sorted.
absl::StatusOr<std::vector<std::string>> ListFiles(const std::string& dir);
// Creates `dir` and its parents where missing.
absl::Status MakeDirectories(const std::string& dir);
// Removes `path`; a file that is already gone is not an error.
absl::Status RemoveFile(const std::string& path);
// "dir/name" (or "name" when dir is empty).
std::string JoinPath(absl::string_view dir, absl::string_view name);

}  // namespace lockstep
