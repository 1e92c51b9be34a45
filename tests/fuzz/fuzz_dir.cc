#include "tests/fuzz/fuzz_dir.h"

#include <stdlib.h>

#include <filesystem>
#include <fstream>

#include "core/logging.h"

namespace lockstep::fuzz {

namespace {

// tmpfs when there is one: ext4 writes back a file truncated and rewritten at every close, which
// made the file-based targets over ten times slower.
std::filesystem::path TempRoot() {
  if (getenv("TMPDIR") == nullptr && std::filesystem::is_directory("/dev/shm")) return "/dev/shm";
  return std::filesystem::temp_directory_path();
}

}  // namespace

FuzzDir::FuzzDir() {
  std::string pattern = (TempRoot() / "lockstep-fuzz-XXXXXX").string();
  LS_CHECK(mkdtemp(pattern.data()) != nullptr) << "mkdtemp " << pattern;
  path_ = pattern;
}

FuzzDir::~FuzzDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

std::string FuzzDir::Write(absl::string_view name, const uint8_t* data, size_t size) const {
  std::string path = path_ + "/" + std::string(name);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  out.close();
  LS_CHECK(out.good()) << "writing " << path;
  return path;
}

}  // namespace lockstep::fuzz
