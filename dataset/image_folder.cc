#include "dataset/image_folder.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "dataset/file_io.h"
#include "dataset/sample_random.h"
#include "dataset/sharding.h"
#include "dataset/transforms.h"

namespace lockstep::dataset {
namespace {

namespace fs = std::filesystem;

struct ClassDir {
  std::string name;
  int32_t label;
};

absl::Status FsError(absl::string_view what, const fs::path& path, const std::error_code& error) {
  return absl::Status(absl::ErrnoToStatusCode(error.value()),
                      absl::StrCat(what, " '", path.string(), "': ", error.message()));
}

bool Hidden(const fs::path& path) { return path.filename().string().starts_with("."); }

absl::Status CheckRoot(const fs::path& root) {
  std::error_code error;
  fs::file_status status = fs::status(root, error);
  if (status.type() == fs::file_type::not_found) {
    return absl::NotFoundError(
        absl::StrCat("ImageFolder root '", root.string(), "' does not exist"));
  }
  if (error) return FsError("cannot read ImageFolder root", root, error);
  if (status.type() != fs::file_type::directory) {
    return absl::InvalidArgumentError(
        absl::StrCat("ImageFolder root '", root.string(), "' is not a directory"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<ClassDir>> ListClasses(const fs::path& root,
                                                  const ImageFolderOptions& options) {
  std::vector<ClassDir> classes;
  std::error_code error;
  for (const auto& [name, label] : options.class_indexing) {
    fs::path dir = root / name;
    if (!fs::is_directory(dir, error)) {
      return absl::NotFoundError(
          absl::StrCat("class folder '", dir.string(), "' (from class_indexing) does not exist"));
    }
    if (label < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("class_indexing gives '", name, "' the negative label ", label));
    }
    classes.push_back({name, label});
  }
  if (!classes.empty()) return classes;

  std::vector<std::string> names;
  fs::directory_iterator it(root, error);
  for (; !error && it != fs::directory_iterator(); it.increment(error)) {
    if (it->is_directory(error) && !Hidden(it->path()))
      names.push_back(it->path().filename().string());
  }
  if (error) return FsError("cannot list ImageFolder root", root, error);
  if (names.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("ImageFolder root '", root.string(), "' has no class sub-directories"));
  }
  std::sort(names.begin(), names.end());
  for (size_t i = 0; i < names.size(); ++i) classes.push_back({names[i], static_cast<int32_t>(i)});
  return classes;
}

bool Matches(const fs::path& file, const std::vector<std::string>& lowered_extensions) {
  if (lowered_extensions.empty()) return true;
  std::string name = absl::AsciiStrToLower(file.filename().string());
  return std::any_of(lowered_extensions.begin(), lowered_extensions.end(),
                     [&](const std::string& ext) { return absl::EndsWith(name, ext); });
}

// Every matching, non-hidden regular file under `dir`, recursively.
absl::StatusOr<std::vector<std::string>> ListFiles(const fs::path& dir,
                                                   const std::vector<std::string>& extensions) {
  std::vector<std::string> files;
  std::error_code error;
  fs::recursive_directory_iterator it(dir, fs::directory_options::follow_directory_symlink, error);
  for (; !error && it != fs::recursive_directory_iterator(); it.increment(error)) {
    if (Hidden(it->path())) {
      if (it->is_directory(error)) it.disable_recursion_pending();
      continue;
    }
    if (it->is_regular_file(error) && Matches(it->path(), extensions)) {
      files.push_back(it->path().string());
    }
  }
  if (error) return FsError("cannot list class folder", dir, error);
  return files;
}

// The files of one class on the side of the split `hold_out` asks for.
absl::StatusOr<std::vector<std::string>> SideOfHoldOut(std::vector<std::string> files,
                                                       const HoldOut& hold_out, int32_t label,
                                                       const fs::path& dir) {
  if (hold_out.fraction == 0.0) return files;
  if (files.size() < 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("class folder '", dir.string(), "' has ", files.size(),
                     " image file(s): holding out a share for validation needs at least 2"));
  }
  std::sort(files.begin(), files.end());
  const int64_t n = static_cast<int64_t>(files.size());
  const int64_t held = std::clamp<int64_t>(std::llround(hold_out.fraction * n), 1, n - 1);
  SampleRandom random(hold_out.seed, StreamId(StreamPurpose::kHoldOut, label, 0), 0);
  const std::vector<int64_t> order = Permutation(n, &random);
  std::vector<std::string> side;
  for (int64_t i = 0; i < n; ++i) {
    if ((i < held) == hold_out.read_held_out) side.push_back(files[order[i]]);
  }
  return side;
}

}  // namespace

absl::StatusOr<std::shared_ptr<ImageFolderSource>> ImageFolderSource::Open(
    const std::string& root, const ImageFolderOptions& options) {
  if (!(options.hold_out.fraction >= 0.0 && options.hold_out.fraction < 1.0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("the share of ", root, " held out for validation must be in [0, 1), got ",
                     options.hold_out.fraction));
  }
  LS_RETURN_IF_ERROR(CheckRoot(root));
  LS_ASSIGN_OR_RETURN(std::vector<ClassDir> classes, ListClasses(root, options));
  std::vector<std::string> extensions;
  for (const std::string& ext : options.extensions)
    extensions.push_back(absl::AsciiStrToLower(ext));

  std::shared_ptr<ImageFolderSource> source(new ImageFolderSource());
  std::vector<std::pair<std::string, int32_t>> samples;
  for (const ClassDir& class_dir : classes) {
    fs::path dir = fs::path(root) / class_dir.name;
    LS_ASSIGN_OR_RETURN(std::vector<std::string> files, ListFiles(dir, extensions));
    if (files.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("class folder '", dir.string(),
                                                     "' has no image files (",
                                                     absl::StrJoin(options.extensions, " "), ")"));
    }
    LS_ASSIGN_OR_RETURN(files,
                        SideOfHoldOut(std::move(files), options.hold_out, class_dir.label, dir));
    for (std::string& file : files) samples.emplace_back(std::move(file), class_dir.label);
    size_t label = static_cast<size_t>(class_dir.label);
    if (source->class_names_.size() <= label) source->class_names_.resize(label + 1);
    source->class_names_[label] = class_dir.name;
  }
  std::sort(samples.begin(), samples.end());
  for (auto& [path, label] : samples) {
    source->paths_.push_back(std::move(path));
    source->labels_.push_back(label);
  }
  return source;
}

absl::StatusOr<Sample> ImageFolderSource::Load(int64_t index) const {
  LS_ASSIGN_OR_RETURN(Tensor bytes, ReadFileBytes(paths_[index]));
  return Sample{std::move(bytes), labels_[index]};
}

absl::StatusOr<Dataset> ImageFolder(const std::string& root, const ImageFolderOptions& options) {
  LS_ASSIGN_OR_RETURN(std::shared_ptr<ImageFolderSource> source,
                      ImageFolderSource::Open(root, options));
  ShardOptions shard = ShardOptionsOf(options);
  LS_RETURN_IF_ERROR(ValidateShardOptions(shard));
  Dataset dataset(std::move(source), shard, options.on_bad_file);
  return options.decode ? dataset.Map({Decode()}) : dataset;
}

}  // namespace lockstep::dataset
