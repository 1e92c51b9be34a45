#include "tests/testing/temp_dir.h"

#include <stdlib.h>

#include <filesystem>

#include "core/logging.h"

namespace lockstep::testing {

namespace fs = std::filesystem;

TempDir::TempDir() {
  std::string pattern = (fs::temp_directory_path() / "lockstep_test_XXXXXX").string();
  LS_CHECK(mkdtemp(pattern.data()) != nullptr) << "mkdtemp " << pattern;
  path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code error;
  fs::remove_all(path_, error);
}

std::string TempDir::Join(std::string_view relative) const {
  return (fs::path(path_) / relative).string();
}

}  // namespace lockstep::testing
