#include "dataset/transforms.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "dataset/decode.h"
#include "dataset/image_ops.h"

namespace lockstep::dataset {
namespace {

absl::Status CheckImage(const Tensor& input, const Transform& transform) {
  bool pixels = input.dtype() == DType::kU8 || input.dtype() == DType::kF32;
  if (input.rank() != 3 || !pixels) {
    return absl::InvalidArgumentError(
        absl::StrCat(transform.Name(), " expects an (H, W, C) uint8 or float32 image, got ",
                     DTypeName(input.dtype()), " ", ShapeToString(input.shape()),
                     input.rank() == 1 ? " (encoded bytes: put Decode first)" : ""));
  }
  return absl::OkStatus();
}

absl::Status CheckPositive(const Transform& transform, absl::string_view what, int64_t value) {
  if (value > 0) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(transform.Name(), ": ", what, " must be positive, got ", value));
}

class DecodeTransform : public Transform {
 public:
  std::string Name() const override { return "Decode"; }

  absl::StatusOr<Tensor> Apply(const Tensor& input,
                               const TransformContext& context) const override {
    if (input.rank() != 1 || input.dtype() != DType::kU8) {
      return absl::InvalidArgumentError(
          absl::StrCat("Decode expects encoded file bytes (1-D uint8), got ",
                       DTypeName(input.dtype()), " ", ShapeToString(input.shape())));
    }
    absl::Span<const uint8_t> bytes(input.data<uint8_t>(), input.numel());
    double shrink = 1.0;
    if (context.next() != nullptr) {
      LS_ASSIGN_OR_RETURN(ImageInfo info, ReadImageInfo(bytes));
      shrink = context.next()->MaxInputShrink(info.height, info.width, context.NextRandom());
    }
    return DecodeImage(bytes, shrink);
  }
};

class ResizeTransform : public Transform {
 public:
  // shorter_side: `width` is the target of the image's shorter side; `height` is unused.
  ResizeTransform(int64_t height, int64_t width, bool shorter_side)
      : height_(height), width_(width), shorter_side_(shorter_side) {}

  std::string Name() const override {
    return shorter_side_ ? absl::StrCat("Resize(", width_, ")")
                         : absl::StrCat("Resize(", height_, ", ", width_, ")");
  }
  absl::Status Validate() const override {
    if (!shorter_side_) LS_RETURN_IF_ERROR(CheckPositive(*this, "height", height_));
    return CheckPositive(*this, "size", width_);
  }
  absl::StatusOr<Tensor> Apply(const Tensor& input, const TransformContext&) const override {
    LS_RETURN_IF_ERROR(CheckImage(input, *this));
    auto [height, width] = OutputSize(input.dim(0), input.dim(1));
    return ResizeBilinear(input, {0, 0, input.dim(0), input.dim(1)}, height, width);
  }
  double MaxInputShrink(int64_t height, int64_t width, SampleRandom) const override {
    auto [out_height, out_width] = OutputSize(height, width);
    return std::min(static_cast<double>(height) / out_height,
                    static_cast<double>(width) / out_width);
  }

 private:
  std::pair<int64_t, int64_t> OutputSize(int64_t height, int64_t width) const {
    if (!shorter_side_) return {height_, width_};
    // As torchvision and MindSpore: the longer side is truncated, never below 1.
    if (height <= width) return {width_, std::max<int64_t>(1, width_ * width / height)};
    return {std::max<int64_t>(1, width_ * height / width), width_};
  }

  int64_t height_;
  int64_t width_;
  bool shorter_side_;
};

class RandomCropTransform : public Transform {
 public:
  RandomCropTransform(int64_t size, int64_t padding) : size_(size), padding_(padding) {}

  std::string Name() const override {
    return absl::StrCat("RandomCrop(", size_, ", padding=", padding_, ")");
  }
  absl::Status Validate() const override {
    if (padding_ < 0) {
      return absl::InvalidArgumentError(absl::StrCat(Name(), ": padding must not be negative"));
    }
    return CheckPositive(*this, "size", size_);
  }
  absl::StatusOr<Tensor> Apply(const Tensor& input,
                               const TransformContext& context) const override {
    LS_RETURN_IF_ERROR(CheckImage(input, *this));
    int64_t padded_height = input.dim(0) + 2 * padding_;
    int64_t padded_width = input.dim(1) + 2 * padding_;
    if (padded_height < size_ || padded_width < size_) {
      return absl::InvalidArgumentError(absl::StrCat(Name(), " needs an image of at least ", size_,
                                                     "x", size_, " after padding, got ",
                                                     padded_width, "x", padded_height));
    }
    SampleRandom random = context.Random();
    int64_t top = random.UniformInt(padded_height - size_ + 1) - padding_;
    int64_t left = random.UniformInt(padded_width - size_ + 1) - padding_;
    return Crop(input, {top, left, size_, size_});
  }

 private:
  int64_t size_;
  int64_t padding_;
};

class RandomResizedCropTransform : public Transform {
 public:
  RandomResizedCropTransform(int64_t size, std::pair<float, float> scale,
                             std::pair<float, float> ratio)
      : size_(size), scale_(scale), ratio_(ratio) {}

  std::string Name() const override { return absl::StrCat("RandomResizedCrop(", size_, ")"); }
  absl::Status Validate() const override {
    LS_RETURN_IF_ERROR(CheckPositive(*this, "size", size_));
    bool ok = scale_.first > 0 && scale_.first <= scale_.second && ratio_.first > 0 &&
              ratio_.first <= ratio_.second;
    if (ok) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrCat(
        Name(), ": scale and ratio must be positive (low, high) ranges, got (", scale_.first, ", ",
        scale_.second, ") and (", ratio_.first, ", ", ratio_.second, ")"));
  }
  absl::StatusOr<Tensor> Apply(const Tensor& input,
                               const TransformContext& context) const override {
    LS_RETURN_IF_ERROR(CheckImage(input, *this));
    CropBox box = SampleBox(input.dim(0), input.dim(1), context.Random());
    return ResizeBilinear(input, box, size_, size_);
  }
  double MaxInputShrink(int64_t height, int64_t width, SampleRandom random) const override {
    CropBox box = SampleBox(height, width, random);
    return static_cast<double>(std::min(box.height, box.width)) / size_;
  }

 private:
  // torchvision's get_params.
  CropBox SampleBox(int64_t height, int64_t width, SampleRandom random) const {
    double area = static_cast<double>(height) * width;
    double log_low = std::log(ratio_.first), log_high = std::log(ratio_.second);
    for (int attempt = 0; attempt < 10; ++attempt) {
      double target_area = area * random.Uniform(scale_.first, scale_.second);
      double aspect = std::exp(log_low + (log_high - log_low) * random.Uniform());
      int64_t w = std::lround(std::sqrt(target_area * aspect));
      int64_t h = std::lround(std::sqrt(target_area / aspect));
      if (w > 0 && w <= width && h > 0 && h <= height) {
        int64_t top = random.UniformInt(height - h + 1);
        int64_t left = random.UniformInt(width - w + 1);
        return {top, left, h, w};
      }
    }
    double in_ratio = static_cast<double>(width) / height;
    int64_t w = width, h = height;
    if (in_ratio < ratio_.first) {
      h = std::max<int64_t>(1, std::lround(w / ratio_.first));
    } else if (in_ratio > ratio_.second) {
      w = std::max<int64_t>(1, std::lround(h * ratio_.second));
    }
    return {(height - h) / 2, (width - w) / 2, h, w};
  }

  int64_t size_;
  std::pair<float, float> scale_;
  std::pair<float, float> ratio_;
};

class CenterCropTransform : public Transform {
 public:
  explicit CenterCropTransform(int64_t size) : size_(size) {}

  std::string Name() const override { return absl::StrCat("CenterCrop(", size_, ")"); }
  absl::Status Validate() const override { return CheckPositive(*this, "size", size_); }
  absl::StatusOr<Tensor> Apply(const Tensor& input, const TransformContext&) const override {
    LS_RETURN_IF_ERROR(CheckImage(input, *this));
    // Floor division: a smaller image gets the extra padding row at the bottom and right.
    auto offset = [this](int64_t length) {
      return static_cast<int64_t>(std::floor((length - size_) / 2.0));
    };
    return Crop(input, {offset(input.dim(0)), offset(input.dim(1)), size_, size_});
  }

 private:
  int64_t size_;
};

class RandomHorizontalFlipTransform : public Transform {
 public:
  explicit RandomHorizontalFlipTransform(float probability) : probability_(probability) {}

  std::string Name() const override {
    return absl::StrCat("RandomHorizontalFlip(", probability_, ")");
  }
  absl::Status Validate() const override {
    if (probability_ >= 0 && probability_ <= 1) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrCat(Name(), ": probability must be in [0, 1]"));
  }
  absl::StatusOr<Tensor> Apply(const Tensor& input,
                               const TransformContext& context) const override {
    LS_RETURN_IF_ERROR(CheckImage(input, *this));
    if (context.Random().Uniform() >= probability_) return input;
    return FlipHorizontal(input);
  }

 private:
  float probability_;
};

class NormalizeTransform : public Transform {
 public:
  NormalizeTransform(std::vector<float> mean, std::vector<float> std)
      : mean_(std::move(mean)), std_(std::move(std)) {}

  std::string Name() const override {
    return absl::StrCat("Normalize(mean={", absl::StrJoin(mean_, ", "), "}, std={",
                        absl::StrJoin(std_, ", "), "})");
  }
  absl::Status Validate() const override {
    bool ok = !mean_.empty() && mean_.size() == std_.size() &&
              std::none_of(std_.begin(), std_.end(), [](float s) { return s == 0.0f; });
    if (ok) return absl::OkStatus();
    return absl::InvalidArgumentError(
        absl::StrCat(Name(), ": mean and std need the same number of values and no zero std"));
  }
  absl::StatusOr<Tensor> Apply(const Tensor& input, const TransformContext&) const override {
    LS_RETURN_IF_ERROR(CheckImage(input, *this));
    size_t channels = static_cast<size_t>(input.dim(2));
    if (mean_.size() == channels) return NormalizeChannels(input, mean_, std_);
    if (mean_.size() != 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          Name(), " has ", mean_.size(), " values for an image of ", channels, " channels"));
    }
    std::vector<float> mean(channels, mean_[0]), std(channels, std_[0]);
    return NormalizeChannels(input, mean, std);
  }

 private:
  std::vector<float> mean_;
  std::vector<float> std_;
};

class HWC2CHWTransform : public Transform {
 public:
  std::string Name() const override { return "HWC2CHW"; }
  absl::StatusOr<Tensor> Apply(const Tensor& input, const TransformContext&) const override {
    if (input.rank() != 3 || !IsCastSupported(input.dtype())) {
      return absl::InvalidArgumentError(absl::StrCat("HWC2CHW expects an (H, W, C) image, got ",
                                                     DTypeName(input.dtype()), " ",
                                                     ShapeToString(input.shape())));
    }
    return HwcToChw(input);
  }
};

class TypeCastTransform : public Transform {
 public:
  explicit TypeCastTransform(DType dtype) : dtype_(dtype) {}

  std::string Name() const override { return absl::StrCat("TypeCast(", DTypeName(dtype_), ")"); }
  absl::Status Validate() const override {
    if (IsCastSupported(dtype_)) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrCat(Name(), ": supported are u8, i32, f32, f64"));
  }
  absl::StatusOr<Tensor> Apply(const Tensor& input, const TransformContext&) const override {
    if (!IsCastSupported(input.dtype())) {
      return absl::InvalidArgumentError(
          absl::StrCat(Name(), " cannot convert from ", DTypeName(input.dtype())));
    }
    if (input.dtype() == dtype_) return input;
    return CastTo(input, dtype_);
  }

 private:
  DType dtype_;
};

}  // namespace

TransformPtr Decode() { return std::make_shared<DecodeTransform>(); }
TransformPtr Resize(int64_t size) { return std::make_shared<ResizeTransform>(0, size, true); }
TransformPtr Resize(int64_t height, int64_t width) {
  return std::make_shared<ResizeTransform>(height, width, false);
}
TransformPtr RandomCrop(int64_t size, int64_t padding) {
  return std::make_shared<RandomCropTransform>(size, padding);
}
TransformPtr RandomResizedCrop(int64_t size, std::pair<float, float> scale,
                               std::pair<float, float> ratio) {
  return std::make_shared<RandomResizedCropTransform>(size, scale, ratio);
}
TransformPtr CenterCrop(int64_t size) { return std::make_shared<CenterCropTransform>(size); }
TransformPtr RandomHorizontalFlip(float probability) {
  return std::make_shared<RandomHorizontalFlipTransform>(probability);
}
TransformPtr Normalize(std::vector<float> mean, std::vector<float> std) {
  return std::make_shared<NormalizeTransform>(std::move(mean), std::move(std));
}
TransformPtr HWC2CHW() { return std::make_shared<HWC2CHWTransform>(); }
TransformPtr TypeCast(DType dtype) { return std::make_shared<TypeCastTransform>(dtype); }

}  // namespace lockstep::dataset
