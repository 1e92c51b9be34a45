#pragma once

// ImageFolder, as MindSpore's ImageFolderDataset and torchvision's ImageFolder: root/<class>/...
// holds the images of one class. Classes are the sorted sub-directory names (or class_indexing),
// samples are all matching files under them (recursively), sorted by path. Links are followed
// without loops and without carrying one class's images into another (folder_walk.h); the links
// skipped are named in one warning per walk.

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "dataset/dataset.h"
#include "dataset/source.h"

namespace lockstep::dataset {

// A fixed share of every class held out for validation, for a tree with train/ and no val/:
// round(fraction x files) of each class (at least one, never all), chosen by a seeded shuffle of
// the class's sorted file names, so every rank and every run holds out the same files.
struct HoldOut {
  double fraction = 0.0;       // 0: no split
  bool read_held_out = false;  // the held-out files instead of the others
  uint64_t seed = 0;
};

struct ImageFolderOptions {
  bool shuffle = true;
  int num_shards = 1;
  int shard_id = 0;
  // File name endings to read, compared without case; empty reads every file.
  std::vector<std::string> extensions = {".jpg", ".jpeg", ".png"};
  // Folder name -> label; only these folders are read. Empty: every folder, labels by sorted name.
  std::map<std::string, int32_t> class_indexing;
  // At most this many samples per shard and epoch; 0 reads them all.
  int64_t num_samples = 0;
  // Decode as the first map step; otherwise samples are the files' bytes (map Decode yourself).
  bool decode = false;
  BadFilePolicy on_bad_file = BadFilePolicy::kSkip;
  // Drop the last, incomplete round of samples instead of padding it by wrapping.
  bool drop_tail = false;
  // Neither pad nor drop: the shards together read every sample once (ShardOptions).
  bool uneven_tail = false;
  uint64_t seed = 0;
  HoldOut hold_out;
};

// The sorted file list and labels of an ImageFolder tree; Load reads a file's bytes.
class ImageFolderSource : public Source {
 public:
  static absl::StatusOr<std::shared_ptr<ImageFolderSource>> Open(const std::string& root,
                                                                 const ImageFolderOptions& options);

  int64_t size() const override { return static_cast<int64_t>(paths_.size()); }
  absl::StatusOr<Sample> Load(int64_t index) const override;
  std::string Describe(int64_t index) const override { return paths_[index]; }
  std::vector<std::string> class_names() const override { return class_names_; }
  int32_t label(int64_t index) const { return labels_[index]; }

 private:
  ImageFolderSource() = default;

  std::vector<std::string> paths_;
  std::vector<int32_t> labels_;
  std::vector<std::string> class_names_;  // by label
};

absl::StatusOr<Dataset> ImageFolder(const std::string& root,
                                    const ImageFolderOptions& options = {});

}  // namespace lockstep::dataset
