#pragma once

#include <string>
#include <string_view>

namespace lockstep::testing {

// A fresh directory under the system's temporary directory, removed with everything in it.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string Join(std::string_view relative) const;

 private:
  std::string path_;
};

}  // namespace lockstep::testing
