#pragma once

// Checks of the paths a program reads and writes: readers open regular files only (a FIFO or a
// device would block them, a directory or a socket cannot be read), and no output may replace
// one of the program's inputs.

#include <cstdint>
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
