#include "dataset/image_folder.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_join.h"
#include "core/file_io.h"
#include "core/logging.h"
#include "dataset/folder_walk.h"
#include "dataset/sample_random.h"
#include "dataset/sharding.h"
#include "dataset/transforms.h"

namespace lockstep::dataset {
namespace {

namespace fs = std::filesystem;

// Labels by class name: class_indexing's, or the sorted names' order.
absl::StatusOr<std::map<std::string, int32_t>> Labels(const std::vector<WalkedClass>& classes,
                                                      const ImageFolderOptions& options,
                                                      const std::string& root) {
  if (classes.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("ImageFolder root '", root, "' has no class sub-directories"));
  }
  if (!options.class_indexing.empty()) return options.class_indexing;
  std::map<std::string, int32_t> labels;
  for (const WalkedClass& walked : classes) {
    labels.emplace(walked.name, static_cast<int32_t>(labels.size()));
  }
  return labels;
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
  std::vector<std::string> named;
  for (const auto& [name, label] : options.class_indexing) {
    if (label < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("class_indexing gives '", name, "' the negative label ", label));
    }
    named.push_back(name);
  }
  std::vector<std::string> extensions;
  for (const std::string& ext : options.extensions)
    extensions.push_back(absl::AsciiStrToLower(ext));
  LS_ASSIGN_OR_RETURN(FolderTree tree, WalkFolderTree(root, named, extensions));
  if (!tree.skipped.empty()) {
    LS_LOG(Warning) << "ImageFolder '" << root << "': " << DescribeSkipped(tree.skipped);
  }
  using LabelMap = std::map<std::string, int32_t>;
  LS_ASSIGN_OR_RETURN(const LabelMap labels, Labels(tree.classes, options, root));

  std::shared_ptr<ImageFolderSource> source(new ImageFolderSource());
  std::vector<std::pair<std::string, int32_t>> samples;
  for (WalkedClass& walked : tree.classes) {
    const fs::path dir = fs::path(root) / walked.name;
    if (walked.files.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("class folder '", dir.string(),
                                                     "' has no image files (",
                                                     absl::StrJoin(options.extensions, " "), ")"));
    }
    const int32_t label = labels.at(walked.name);
    LS_ASSIGN_OR_RETURN(std::vector<std::string> files,
                        SideOfHoldOut(std::move(walked.files), options.hold_out, label, dir));
    for (std::string& file : files) samples.emplace_back(std::move(file), label);
    if (source->class_names_.size() <= static_cast<size_t>(label)) {
      source->class_names_.resize(label + 1);
    }
    source->class_names_[label] = walked.name;
  }
  std::sort(samples.begin(), samples.end());
  for (auto& [path, label] : samples) {
    source->paths_.push_back(std::move(path));
    source->labels_.push_back(label);
  }
  return source;
}

absl::StatusOr<Sample> ImageFolderSource::Load(int64_t index) const {
  absl::StatusOr<Tensor> bytes = ReadWholeFileAsTensor(paths_[index]);
  // A file that vanished, lost its permissions or claims more than memory since the folder was
  // listed is a bad image file as an undecodable one is: BadFilePolicy decides (skip and count,
  // or fail), on every rank alike.
  if (!bytes.ok()) return absl::DataLossError(bytes.status().message());
  return Sample{*std::move(bytes), labels_[index]};
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
