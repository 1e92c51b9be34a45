#include "dataset/mnist.h"

#include <cstring>

#include "core/file_io.h"

namespace lockstep::dataset {
namespace {

// An IDX file of unsigned bytes: big-endian dimensions, then the data.
struct IdxArray {
  std::vector<int64_t> dims;
  Tensor file;
  size_t data_offset = 0;
};

absl::StatusOr<IdxArray> ReadIdx(const std::string& path, int rank) {
  IdxArray idx;
  LS_ASSIGN_OR_RETURN(idx.file, ReadWholeFileAsTensor(path));
  const uint8_t* bytes = idx.file.data<uint8_t>();
  size_t size = static_cast<size_t>(idx.file.numel());
  idx.data_offset = 4 + 4 * static_cast<size_t>(rank);
  if (size < idx.data_offset || bytes[0] != 0 || bytes[1] != 0 || bytes[2] != 0x08 ||
      bytes[3] != rank) {
    return absl::InvalidArgumentError(absl::StrCat(
        "'", path, "' is not an IDX file of unsigned bytes with ", rank, " dimensions"));
  }
  // Three 32-bit dimensions may multiply past 64 bits: the product is checked, not trusted.
  uint64_t elements = 1;
  bool overflow = false;
  for (int d = 0; d < rank; ++d) {
    const uint8_t* p = bytes + 4 + 4 * d;
    idx.dims.push_back((int64_t{p[0]} << 24) | (p[1] << 16) | (p[2] << 8) | p[3]);
    overflow |= __builtin_mul_overflow(elements, static_cast<uint64_t>(idx.dims.back()), &elements);
  }
  if (overflow || size - idx.data_offset != elements) {
    return absl::InvalidArgumentError(absl::StrCat(
        "'", path, "' holds ", size - idx.data_offset, " data bytes, its header promises ",
        overflow ? "over 2^64" : absl::StrCat(elements)));
  }
  return idx;
}

}  // namespace

absl::StatusOr<std::shared_ptr<MnistSource>> MnistSource::Open(const std::string& dir,
                                                               const std::string& usage) {
  if (usage != "train" && usage != "test" && usage != "all") {
    return absl::InvalidArgumentError(
        absl::StrCat("MNIST usage must be train, test or all, got '", usage, "'"));
  }
  std::shared_ptr<MnistSource> source(new MnistSource());
  if (usage != "test") {
    LS_RETURN_IF_ERROR(source->Append(absl::StrCat(dir, "/train-images-idx3-ubyte"),
                                      absl::StrCat(dir, "/train-labels-idx1-ubyte")));
  }
  if (usage != "train") {
    LS_RETURN_IF_ERROR(source->Append(absl::StrCat(dir, "/t10k-images-idx3-ubyte"),
                                      absl::StrCat(dir, "/t10k-labels-idx1-ubyte")));
  }
  return source;
}

absl::Status MnistSource::Append(const std::string& images_path, const std::string& labels_path) {
  LS_ASSIGN_OR_RETURN(IdxArray images, ReadIdx(images_path, 3));
  LS_ASSIGN_OR_RETURN(IdxArray labels, ReadIdx(labels_path, 1));
  if (images.dims[0] != labels.dims[0]) {
    return absl::InvalidArgumentError(absl::StrCat("'", images_path, "' holds ", images.dims[0],
                                                   " images but '", labels_path, "' ",
                                                   labels.dims[0], " labels"));
  }
  if (!parts_.empty() && (images.dims[1] != rows_ || images.dims[2] != cols_)) {
    return absl::InvalidArgumentError(absl::StrCat("'", images_path, "' has ", images.dims[1], "x",
                                                   images.dims[2], " images, not ", rows_, "x",
                                                   cols_));
  }
  rows_ = images.dims[1];
  cols_ = images.dims[2];
  parts_.emplace_back(size(), images_path);
  const uint8_t* pixels = images.file.data<uint8_t>() + images.data_offset;
  const uint8_t* labels_data = labels.file.data<uint8_t>() + labels.data_offset;
  pixels_.insert(pixels_.end(), pixels, pixels + images.file.numel() - images.data_offset);
  labels_.insert(labels_.end(), labels_data, labels_data + labels.dims[0]);
  return absl::OkStatus();
}

absl::StatusOr<Sample> MnistSource::Load(int64_t index) const {
  Tensor image = Tensor::Empty({rows_, cols_, 1}, DType::kU8);
  std::memcpy(image.raw_data(), pixels_.data() + index * rows_ * cols_, image.nbytes());
  return Sample{std::move(image), labels_[index]};
}

std::string MnistSource::Describe(int64_t index) const {
  size_t part = parts_.size() - 1;
  while (parts_[part].first > index) --part;
  return absl::StrCat(parts_[part].second, "[", index - parts_[part].first, "]");
}

std::vector<std::string> MnistSource::class_names() const {
  return {"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"};
}

absl::StatusOr<Dataset> Mnist(const std::string& dir, const MnistOptions& options) {
  LS_ASSIGN_OR_RETURN(std::shared_ptr<MnistSource> source, MnistSource::Open(dir, options.usage));
  ShardOptions shard = ShardOptionsOf(options);
  LS_RETURN_IF_ERROR(ValidateShardOptions(shard));
  return Dataset(std::move(source), shard);
}

}  // namespace lockstep::dataset
