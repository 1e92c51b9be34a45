#pragma once

// Checks of the paths a program reads and writes: readers open regular files only (a FIFO or a
// device would block them, a directory or a socket cannot be read), writers replace only regular
// files of their own kind, and no output may replace one of the program's inputs.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/status.h"

namespace lockstep {

struct RegularFile {
  int fd = -1;  // the caller closes it
  uint64_t size = 0;
};

// Opens `path` (links followed) for reading when it is a regular file; anything else is refused,
// naming the path and what it is, without blocking: a FIFO is refused before it is opened, and
// what `path` names when it is opened is checked again.
absl::StatusOr<RegularFile> OpenRegularFile(const std::string& path);

// The kind of file a writer makes, for paths a user names (`export --out`): its name in messages
// ("an ONNX model") and whether an existing regular file is one.
struct FileKind {
  std::string name;
  std::function<bool(const std::string& path)> recognizes;
};

// Whether a writer may put its output at `path`: yes when nothing is there, or a regular file
// (of `kind`, when given). Refused, naming the path and what it is: a directory, a FIFO, a
// device, a socket, a symbolic link (a rename would replace the link, not what it points to),
// or a regular file that is not of `kind`.
absl::Status CheckOutputPath(const std::string& path, const FileKind* kind = nullptr);

// Opens `path` for writing with `flags` (O_CREAT, O_TRUNC or O_APPEND, ...) when it is, or is
// created as, a regular file: without following a link and without blocking on a FIFO; anything
// else is refused as CheckOutputPath refuses it. The caller closes the descriptor.
absl::StatusOr<int> OpenOutputFile(const std::string& path, int flags);

// A path a program was given, and how to name it in a message ("--out", "--data").
struct NamedPath {
  std::string name;
  std::string path;
  // An input directory whose whole tree is read: an output inside it is refused too.
  bool tree = false;
};

// Refuses any of `outputs` that is one of `inputs`: the same file or directory (device and inode,
// through any link) where both exist, the same path once links and ".." are resolved where the
// output does not exist yet, or a path inside an input marked `tree`. Empty paths are skipped.
// The message names both paths.
absl::Status CheckOutputsAreNotInputs(const std::vector<NamedPath>& outputs,
                                      const std::vector<NamedPath>& inputs);

}  // namespace lockstep
