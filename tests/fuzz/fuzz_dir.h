#pragma once

// The checkpoint, manifest and graph .meta readers take paths, not bytes, and the manifest
// readers list a directory: a fuzz target writes each input as a file in a directory of its own.

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"

namespace lockstep::fuzz {

// A fresh directory under $TMPDIR (or /dev/shm, or /tmp), removed with its files when the process
// exits.
class FuzzDir {
 public:
  FuzzDir();
  ~FuzzDir();
  FuzzDir(const FuzzDir&) = delete;
  FuzzDir& operator=(const FuzzDir&) = delete;

  const std::string& path() const { return path_; }
  // Replaces DIR/name with the bytes; returns its path.
  std::string Write(absl::string_view name, const uint8_t* data, size_t size) const;

 private:
  std::string path_;
};

}  // namespace lockstep::fuzz
