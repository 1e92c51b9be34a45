#include "dataset/transforms.h"

#include <gtest/gtest.h>

#include <cstring>

#include "dataset/encode.h"
#include "dataset/image_ops.h"
#include "tests/dataset/test_util.h"

namespace lockstep::dataset {
namespace {

using testing::GradientImage;

TransformContext Context(int64_t position = 0, const Transform* next = nullptr) {
  return TransformContext(/*seed=*/1, /*epoch=*/0, position, /*step=*/0, next);
}

Tensor ApplyOk(const TransformPtr& transform, const Tensor& input, int64_t position = 0) {
  EXPECT_TRUE(transform->Validate().ok()) << transform->Validate();
  absl::StatusOr<Tensor> out = transform->Apply(input, Context(position));
  EXPECT_TRUE(out.ok()) << out.status();
  return out.ok() ? *out : Tensor();
}

bool SameBytes(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && a.dtype() == b.dtype() &&
         std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0;
}

Tensor FromValues(Shape shape, const std::vector<uint8_t>& values) {
  Tensor t = Tensor::Empty(std::move(shape), DType::kU8);
  std::memcpy(t.raw_data(), values.data(), values.size());
  return t;
}

TEST(DatasetTransformsTest, ResizeIsBilinearWithHalfPixelCentres) {
  Tensor image = FromValues({1, 2, 1}, {0, 100});
  Tensor out = ApplyOk(Resize(1, 4), image);
  ASSERT_EQ(out.shape(), (Shape{1, 4, 1}));
  const uint8_t* p = out.data<uint8_t>();
  EXPECT_EQ(p[0], 0);
  EXPECT_EQ(p[1], 25);
  EXPECT_EQ(p[2], 75);
  EXPECT_EQ(p[3], 100);

  Tensor wide = GradientImage(40, 80);
  EXPECT_EQ(ApplyOk(Resize(20), wide).shape(), (Shape{20, 40, 3}));
  EXPECT_EQ(ApplyOk(Resize(20), GradientImage(80, 40)).shape(), (Shape{40, 20, 3}));
  // Same size: unchanged.
  EXPECT_TRUE(SameBytes(ApplyOk(Resize(40, 80), wide), wide));
}

TEST(DatasetTransformsTest, CenterCropTakesTheMiddleAndPadsSmallImages) {
  Tensor image = GradientImage(10, 12);
  Tensor out = ApplyOk(CenterCrop(4), image);
  EXPECT_TRUE(SameBytes(out, Crop(image, {3, 4, 4, 4})));
  Tensor padded = ApplyOk(CenterCrop(14), image);
  ASSERT_EQ(padded.shape(), (Shape{14, 14, 3}));
  EXPECT_EQ(padded.data<uint8_t>()[0], 0);
  EXPECT_EQ(padded.data<uint8_t>()[(2 * 14 + 1) * 3], image.data<uint8_t>()[0]);
}

TEST(DatasetTransformsTest, RandomCropIsAShiftedWindowOfThePaddedImage) {
  Tensor image = GradientImage(8, 8);
  for (int64_t position = 0; position < 20; ++position) {
    Tensor out = ApplyOk(RandomCrop(8, 2), image, position);
    bool found = false;
    for (int64_t top = -2; top <= 2 && !found; ++top) {
      for (int64_t left = -2; left <= 2 && !found; ++left) {
        found = SameBytes(out, Crop(image, {top, left, 8, 8}));
      }
    }
    EXPECT_TRUE(found) << "position " << position;
  }
  absl::StatusOr<Tensor> too_big = RandomCrop(20, 2)->Apply(image, Context());
  EXPECT_FALSE(too_big.ok());
}

TEST(DatasetTransformsTest, RandomResizedCropIsKeyedBySample) {
  Tensor image = GradientImage(60, 80);
  TransformPtr crop = RandomResizedCrop(32);
  Tensor a = ApplyOk(crop, image, 3);
  EXPECT_EQ(a.shape(), (Shape{32, 32, 3}));
  EXPECT_TRUE(SameBytes(a, ApplyOk(crop, image, 3)));
  int differing = 0;
  for (int64_t position = 4; position < 10; ++position) {
    differing += !SameBytes(a, ApplyOk(crop, image, position));
  }
  EXPECT_GE(differing, 5);
}

TEST(DatasetTransformsTest, FlipNormalizeLayoutAndCast) {
  Tensor image = FromValues({1, 2, 2}, {1, 2, 3, 4});
  EXPECT_TRUE(
      SameBytes(ApplyOk(RandomHorizontalFlip(1.0f), image), FromValues({1, 2, 2}, {3, 4, 1, 2})));
  EXPECT_TRUE(SameBytes(ApplyOk(RandomHorizontalFlip(0.0f), image), image));

  Tensor normalized = ApplyOk(Normalize({1, 2}, {0.5f, 2}), image);
  ASSERT_EQ(normalized.dtype(), DType::kF32);
  const float* n = normalized.data<float>();
  EXPECT_FLOAT_EQ(n[0], 0.0f);  // (1 - 1) / 0.5
  EXPECT_FLOAT_EQ(n[1], 0.0f);  // (2 - 2) / 2
  EXPECT_FLOAT_EQ(n[2], 4.0f);  // (3 - 1) / 0.5
  EXPECT_FLOAT_EQ(n[3], 1.0f);  // (4 - 2) / 2

  Tensor chw = ApplyOk(HWC2CHW(), image);
  EXPECT_TRUE(SameBytes(chw, FromValues({2, 1, 2}, {1, 3, 2, 4})));

  Tensor floats = Tensor::Empty({1, 1, 4}, DType::kF32);
  std::vector<float> values = {300.0f, -5.0f, 1.6f, 7.0f};
  std::memcpy(floats.raw_data(), values.data(), floats.nbytes());
  EXPECT_TRUE(
      SameBytes(ApplyOk(TypeCast(DType::kU8), floats), FromValues({1, 1, 4}, {255, 0, 2, 7})));
  Tensor back = ApplyOk(TypeCast(DType::kF32), image);
  EXPECT_FLOAT_EQ(back.data<float>()[3], 4.0f);
}

TEST(DatasetTransformsTest, DecodeUsesDctScalingWhenTheNextStepShrinks) {
  absl::StatusOr<std::vector<uint8_t>> jpeg = EncodeJpeg(GradientImage(64, 64));
  ASSERT_TRUE(jpeg.ok());
  Tensor bytes = Tensor::Empty({static_cast<int64_t>(jpeg->size())}, DType::kU8);
  std::memcpy(bytes.raw_data(), jpeg->data(), jpeg->size());
  TransformPtr decode = Decode();
  TransformPtr resize = Resize(16, 16);
  absl::StatusOr<Tensor> shrunk = decode->Apply(bytes, Context(0, resize.get()));
  ASSERT_TRUE(shrunk.ok()) << shrunk.status();
  EXPECT_EQ(shrunk->shape(), (Shape{16, 16, 3}));
  TransformPtr crop = CenterCrop(16);
  EXPECT_EQ(decode->Apply(bytes, Context(0, crop.get()))->shape(), (Shape{64, 64, 3}));
}

TEST(DatasetTransformsTest, BadArgumentsAndInputsAreErrors) {
  EXPECT_FALSE(RandomCrop(0)->Validate().ok());
  EXPECT_FALSE(RandomCrop(8, -1)->Validate().ok());
  EXPECT_FALSE(Resize(0, 4)->Validate().ok());
  EXPECT_FALSE(Normalize({1, 2}, {1})->Validate().ok());
  EXPECT_FALSE(Normalize({1}, {0})->Validate().ok());
  EXPECT_FALSE(RandomResizedCrop(8, {0.5f, 0.1f})->Validate().ok());
  EXPECT_FALSE(RandomHorizontalFlip(2.0f)->Validate().ok());
  EXPECT_FALSE(TypeCast(DType::kBool)->Validate().ok());

  Tensor bytes = Tensor::Zeros({10}, DType::kU8);
  absl::Status status = CenterCrop(4)->Apply(bytes, Context()).status();
  EXPECT_TRUE(absl::IsInvalidArgument(status));
  EXPECT_NE(status.message().find("put Decode first"), std::string_view::npos) << status;
  EXPECT_FALSE(Decode()->Apply(GradientImage(4, 4), Context()).ok());
  EXPECT_FALSE(Normalize({1, 2}, {1, 1})->Apply(GradientImage(4, 4), Context()).ok());
}

}  // namespace
}  // namespace lockstep::dataset
