#include "core/paths.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <system_error>

namespace lockstep {
namespace {

namespace fs = std::filesystem;

const char* Kind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

absl::Status NotRegular(const std::string& path, mode_t mode) {
  return absl::InvalidArgumentError(
      absl::StrCat(path, " is ", Kind(mode), ", not a regular file: it cannot be read as one"));
}

absl::Status NotWritable(const std::string& path, mode_t mode) {
  return absl::FailedPreconditionError(absl::StrCat("refusing to write ", path, ": it is ",
                                                    S_ISLNK(mode) ? "a symbolic link" : Kind(mode),
                                                    ", not a regular file this program writes"));
}

// `path` with links, "." and ".." resolved as far as it exists; the rest appended as written.
fs::path Resolved(const std::string& path) {
  std::error_code error;
  fs::path resolved = fs::weakly_canonical(fs::absolute(path, error), error);
  return error ? fs::path(path).lexically_normal() : resolved;
}

bool Inside(const fs::path& path, const fs::path& dir) {
  const fs::path relative = path.lexically_relative(dir);
  return !relative.empty() && *relative.begin() != "..";
}

bool SameFile(const std::string& a, const std::string& b) {
  std::error_code error;
  const bool same = fs::equivalent(a, b, error);
  return !error && same;
}

}  // namespace

absl::StatusOr<RegularFile> OpenRegularFile(const std::string& path) {
  struct stat info;
  if (stat(path.c_str(), &info) != 0) {
    return absl::ErrnoToStatus(errno, absl::StrCat("cannot open ", path));
  }
  if (!S_ISREG(info.st_mode)) return NotRegular(path, info.st_mode);
  // O_NONBLOCK: if a FIFO replaced the file since the stat, open must not wait for a writer.
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return absl::ErrnoToStatus(errno, absl::StrCat("cannot open ", path));
  const bool stated = fstat(fd, &info) == 0;
  if (!stated || !S_ISREG(info.st_mode)) {
    const absl::Status status = stated ? NotRegular(path, info.st_mode)
                                       : absl::ErrnoToStatus(errno, absl::StrCat("stat of ", path));
    close(fd);
    return status;
  }
  // Regular files ignore O_NONBLOCK; it is cleared so that nothing later depends on it.
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return RegularFile{fd, static_cast<uint64_t>(info.st_size)};
}

absl::Status CheckOutputPath(const std::string& path, const FileKind* kind) {
  struct stat info;
  if (lstat(path.c_str(), &info) != 0) {
    if (errno == ENOENT) return absl::OkStatus();
    return absl::ErrnoToStatus(errno, absl::StrCat("cannot check ", path));
  }
  if (!S_ISREG(info.st_mode)) return NotWritable(path, info.st_mode);
  if (kind == nullptr || kind->recognizes(path)) return absl::OkStatus();
  return absl::FailedPreconditionError(
      absl::StrCat("refusing to replace ", path, ": it is not ", kind->name,
                   " (another kind of file); choose another path, or remove it first"));
}

absl::StatusOr<int> OpenOutputFile(const std::string& path, int flags) {
  // O_NONBLOCK: opening a FIFO for writing fails (ENXIO) instead of waiting for a reader.
  const int fd = open(path.c_str(), flags | O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644);
  if (fd < 0) {
    struct stat info;
    const int open_error = errno;
    if (lstat(path.c_str(), &info) == 0 && !S_ISREG(info.st_mode)) {
      return NotWritable(path, info.st_mode);
    }
    return absl::ErrnoToStatus(open_error, absl::StrCat("cannot open ", path, " for writing"));
  }
  struct stat info;
  if (fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
    const absl::Status status = NotWritable(path, info.st_mode);
    close(fd);
    return status;
  }
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return fd;
}

absl::Status CheckOutputsAreNotInputs(const std::vector<NamedPath>& outputs,
                                      const std::vector<NamedPath>& inputs) {
  for (const NamedPath& output : outputs) {
    if (output.path.empty()) continue;
    const fs::path out = Resolved(output.path);
    for (const NamedPath& input : inputs) {
      if (input.path.empty()) continue;
      const fs::path in = Resolved(input.path);
      const bool same = SameFile(output.path, input.path) || out == in;
      if (!same && !(input.tree && Inside(out, in))) continue;
      return absl::InvalidArgumentError(absl::StrCat(
          output.name, " ", output.path, same ? " is " : " lies inside ", input.name, " ",
          input.path, same ? "" : ", which is read", ": an output may not replace an input"));
    }
  }
  return absl::OkStatus();
}

}  // namespace lockstep
