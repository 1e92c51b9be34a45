// WriteSampleDataset (sample_dataset.h): checks, then draws and writes the images in parallel into
// a folder beside the destination, moved there once complete.

#include <omp.h>
#include <stdlib.h>
#include <sys/statvfs.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <filesystem>
#include <mutex>
#include <new>
#include <system_error>

#include "absl/strings/str_format.h"
#include "core/file_io.h"
#include "core/host_memory.h"
#include "dataset/encode.h"
#include "dataset/sample_dataset.h"

namespace lockstep::dataset {
namespace {

namespace fs = std::filesystem;

// Validation images use indices far from the training ones, so the two never share an image.
constexpr int64_t kValIndexOffset = int64_t{1} << 30;
// Drawing one image holds its noise (3 floats a pixel), its pixels (3 bytes) and TurboJPEG's
// worst-case output buffer (under 6 bytes a pixel), with room to spare.
constexpr uint64_t kDrawBytesPerPixel = 24;
// libjpeg's JPEG_MAX_DIMENSION.
constexpr int kMaxJpegSide = 65500;

struct Split {
  const char* name;
  int per_class;
  int64_t first_index;
};

int64_t NumClasses() { return static_cast<int64_t>(SampleClassNames().size()); }

// Saturates rather than overflows: both sides may be as large as an int.
uint64_t DrawBytes(const SampleDatasetOptions& o) {
  uint64_t bytes = 0;
  const uint64_t pixels = static_cast<uint64_t>(o.height) * static_cast<uint64_t>(o.width);
  return __builtin_mul_overflow(pixels, kDrawBytesPerPixel, &bytes) ? UINT64_MAX : bytes;
}

absl::Status CheckOptions(const SampleDatasetOptions& o) {
  if (o.height < 8 || o.width < 8 || o.train_per_class < 0 || o.val_per_class < 0 ||
      o.quality < 1 || o.quality > 100) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "sample data set needs images of at least 8x8, counts >= 0 and quality in 1..100; got "
        "%dx%d, %d, %d, %d",
        o.width, o.height, o.train_per_class, o.val_per_class, o.quality));
  }
  LS_RETURN_IF_ERROR(CheckHostMemory(
      DrawBytes(o),
      absl::StrFormat("--height %d --width %d: drawing one image", o.height, o.width)));
  if (o.height > kMaxJpegSide || o.width > kMaxJpegSide) {
    return absl::InvalidArgumentError(
        absl::StrFormat("--height %d --width %d: a JPEG image has at most %d pixels a side",
                        o.height, o.width, kMaxJpegSide));
  }
  return absl::OkStatus();
}

// The nearest folder of `path`, or `path` itself, that exists.
fs::path ExistingAncestor(fs::path path) {
  path = fs::absolute(path).lexically_normal();
  std::error_code error;
  while (!fs::exists(path, error) && path.has_relative_path()) path = path.parent_path();
  return path;
}

// The data set's size on disk, estimated from its first image (images differ in size: half of
// the estimate must fit), against the free space of the file system it goes to.
absl::Status CheckDiskSpace(const std::string& dir, const SampleDatasetOptions& o) {
  const int64_t images = NumClasses() * (int64_t{o.train_per_class} + o.val_per_class);
  if (images == 0) return absl::OkStatus();
  const Tensor first = RenderSampleImage(0, o.seed, 0, o.height, o.width);
  LS_ASSIGN_OR_RETURN(std::vector<uint8_t> jpeg, EncodeJpeg(first, {.quality = o.quality}));
  const fs::path where = ExistingAncestor(dir);
  struct statvfs disk;
  if (statvfs(where.c_str(), &disk) != 0) return absl::OkStatus();  // unknown: let writes tell
  const uint64_t free_bytes = uint64_t{disk.f_bavail} * disk.f_frsize;
  const double needed = 0.5 * static_cast<double>(jpeg.size()) * static_cast<double>(images);
  if (needed <= static_cast<double>(free_bytes)) return absl::OkStatus();
  return absl::ResourceExhaustedError(absl::StrFormat(
      "--train-per-class %d --val-per-class %d: %d images of about %d bytes each (--height %d "
      "--width %d --quality %d) need at least %.0f bytes, more than the %d bytes free on %s",
      o.train_per_class, o.val_per_class, images, jpeg.size(), o.height, o.width, o.quality, needed,
      free_bytes, where.string()));
}

absl::Status WriteImage(const fs::path& class_dir, int label, int64_t i, int64_t first_index,
                        const SampleDatasetOptions& options) {
  const std::string path =
      absl::StrFormat("%s/%s_%05d.jpg", class_dir.string(), SampleClassNames()[label], i);
  std::vector<uint8_t> jpeg;
  // Memory checked for one image may still run out with other programs running.
  try {
    Tensor image =
        RenderSampleImage(label, options.seed, first_index + i, options.height, options.width);
    LS_ASSIGN_OR_RETURN(jpeg, EncodeJpeg(image, {.quality = options.quality}));
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError(
        absl::StrFormat("out of memory drawing %s (--height %d --width %d: %d bytes)", path,
                        options.height, options.width, DrawBytes(options)));
  }
  return WriteFile(path,
                   absl::string_view(reinterpret_cast<const char*>(jpeg.data()), jpeg.size()));
}

absl::Status WriteSplit(const fs::path& dir, const Split& split,
                        const SampleDatasetOptions& options) {
  std::vector<fs::path> class_dirs;
  for (const std::string& name : SampleClassNames()) {
    class_dirs.push_back(dir / split.name / name);
    std::error_code error;
    fs::create_directories(class_dirs.back(), error);
    if (error) {
      return absl::InternalError(
          absl::StrCat("cannot create '", class_dirs.back().string(), "': ", error.message()));
    }
  }
  // Every image is a pure function of its index, so they are drawn in parallel, by no more
  // threads than half of the memory can draw at once.
  const uint64_t fit = std::max<uint64_t>(1, HostMemoryLimit() / (2 * DrawBytes(options)));
  const int threads = static_cast<int>(std::min<uint64_t>(omp_get_max_threads(), fit));
  const int64_t total = NumClasses() * split.per_class;
  std::atomic<bool> failed{false};
  absl::Status first_error;
  std::mutex mutex;
#pragma omp parallel for schedule(dynamic) num_threads(threads)
  for (int64_t k = 0; k < total; ++k) {
    if (failed.load()) continue;
    const int label = static_cast<int>(k / split.per_class);
    absl::Status status =
        WriteImage(class_dirs[label], label, k % split.per_class, split.first_index, options);
    if (!status.ok() && !failed.exchange(true)) {
      std::lock_guard<std::mutex> lock(mutex);
      first_error = std::move(status);
    }
  }
  return first_error;
}

// Moves the complete splits from `staging` to `dir`: the whole folder when `dir` does not exist.
absl::Status MoveInto(const fs::path& staging, const fs::path& dir,
                      const std::vector<Split>& splits) {
  std::error_code error;
  if (!fs::exists(dir, error)) {
    fs::rename(staging, dir, error);
  } else {
    for (size_t moved = 0; moved < splits.size() && !error; ++moved) {
      fs::rename(staging / splits[moved].name, dir / splits[moved].name, error);
      // A split moved before the failure goes too: the data set is there whole or not at all.
      for (size_t i = 0; error && i < moved; ++i) {
        std::error_code ignored;
        fs::remove_all(dir / splits[i].name, ignored);
      }
    }
  }
  if (error) {
    return absl::InternalError(
        absl::StrCat("cannot move the data set into '", dir.string(), "': ", error.message()));
  }
  return absl::OkStatus();
}

// Writes into a new folder beside `dir` (created with its missing parents), then moves it.
absl::Status WriteStaged(const fs::path& dir, const std::vector<Split>& splits,
                         const SampleDatasetOptions& options, fs::path* staging) {
  std::error_code error;
  fs::create_directories(dir.parent_path(), error);
  if (error) {
    return absl::InternalError(
        absl::StrCat("cannot create '", dir.parent_path().string(), "': ", error.message()));
  }
  std::string pattern = dir.string() + ".partial-XXXXXX";
  if (mkdtemp(pattern.data()) == nullptr) {
    return absl::ErrnoToStatus(errno,
                               absl::StrCat("cannot create a folder beside '", dir.string(), "'"));
  }
  *staging = pattern;
  for (const Split& split : splits) LS_RETURN_IF_ERROR(WriteSplit(*staging, split, options));
  return MoveInto(*staging, dir, splits);
}

}  // namespace

absl::Status WriteSampleDataset(const std::string& dir, const SampleDatasetOptions& options) {
  LS_RETURN_IF_ERROR(CheckOptions(options));
  fs::path target = fs::absolute(dir).lexically_normal();
  if (!target.has_filename()) target = target.parent_path();  // "out/"
  std::error_code error;
  if (fs::exists(target, error) && !fs::is_directory(target, error)) {
    return absl::AlreadyExistsError(absl::StrCat("'", dir, "' exists and is not a folder"));
  }
  std::vector<Split> splits;
  for (const Split& split : {Split{"train", options.train_per_class, 0},
                             Split{"val", options.val_per_class, kValIndexOffset}}) {
    if (split.per_class == 0) continue;
    if (fs::symlink_status(target / split.name, error).type() != fs::file_type::not_found) {
      return absl::AlreadyExistsError(
          absl::StrCat("'", (target / split.name).string(),
                       "' exists: a new data set is never written over one"));
    }
    splits.push_back(split);
  }
  if (splits.empty()) return absl::OkStatus();
  LS_RETURN_IF_ERROR(CheckDiskSpace(dir, options));
  // What this call creates, removed again on failure: the staging folder and missing parents.
  const fs::path existing = ExistingAncestor(target.parent_path());
  const fs::path created_parent = existing == target.parent_path()
                                      ? fs::path()
                                      : existing / *target.lexically_relative(existing).begin();
  fs::path staging;
  const absl::Status status = WriteStaged(target, splits, options, &staging);
  if (!staging.empty()) fs::remove_all(staging, error);
  if (!status.ok() && !created_parent.empty()) fs::remove_all(created_parent, error);
  return status;
}

}  // namespace lockstep::dataset
