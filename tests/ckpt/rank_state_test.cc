// Saving one rank's state and restoring it by name, with the errors a resume can meet.

#include "ckpt/rank_state.h"

#include <gtest/gtest.h>

#include "tests/ckpt/test_util.h"

namespace lockstep::ckpt {
namespace {

using testing::Bytes;
using testing::PatternTensor;
using testing::TempDir;

RankState SampleState() {
  RankState state;
  state.epoch = 2;
  state.global_step = 57;
  state.tensors = {{"conv.weight", PatternTensor({4, 3, 3, 3}, DType::kF32, 1)},
                   {"moments.conv.weight", PatternTensor({4, 3, 3, 3}, DType::kF32, 2)},
                   {"bn.running_mean", PatternTensor({4}, DType::kF32, 3)}};
  state.scalars = {{"rng_counter", 123456789}, {"data_position", 912}};
  return state;
}

// A state with the same names, shapes and dtypes as `like` and zeroed values.
RankState EmptyLike(const RankState& like) {
  RankState state;
  for (const NamedTensor& tensor : like.tensors) {
    state.tensors.push_back(
        {tensor.name, Tensor::Zeros(tensor.tensor.shape(), tensor.tensor.dtype())});
  }
  for (const auto& [name, value] : like.scalars) state.scalars[name] = 0;
  return state;
}

std::string Saved(const TempDir& dir, const RankState& state) {
  const std::string path = dir.Join("rank.ckpt");
  absl::StatusOr<WrittenFile> file = SaveRankState(path, state);
  EXPECT_TRUE(file.ok()) << file.status();
  return path;
}

TEST(CkptRankStateTest, RestoresTensorsScalarsEpochAndStep) {
  TempDir dir;
  const RankState saved = SampleState();
  RankState loaded = EmptyLike(saved);
  ASSERT_TRUE(LoadRankState(Saved(dir, saved), &loaded).ok());
  EXPECT_EQ(loaded.epoch, 2);
  EXPECT_EQ(loaded.global_step, 57);
  EXPECT_EQ(loaded.scalars, saved.scalars);
  for (size_t i = 0; i < saved.tensors.size(); ++i) {
    EXPECT_EQ(Bytes(loaded.tensors[i].tensor), Bytes(saved.tensors[i].tensor));
  }
}

TEST(CkptRankStateTest, EpochAndStepAreMindSporeInt64Scalars) {
  TempDir dir;
  absl::StatusOr<CheckpointData> data = ReadCheckpoint(Saved(dir, SampleState()));
  ASSERT_TRUE(data.ok());
  for (const char* name : {"epoch_num", "step_num"}) {
    const Entry* entry = data->Find(name);
    ASSERT_NE(entry, nullptr) << name;
    EXPECT_STREQ(entry->type->name, "Int64");
    EXPECT_EQ(entry->shape, Shape{});
  }
}

void ExpectLoadError(const RankState& saved, RankState target, const std::string& message) {
  TempDir dir;
  const std::string path = Saved(dir, saved);
  const RankState before = target;
  absl::Status status = LoadRankState(path, &target);
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find(path), std::string::npos) << status;
  EXPECT_NE(status.message().find(message), std::string::npos) << status;
  EXPECT_EQ(target.scalars, before.scalars) << "a failed restore changes nothing";
}

TEST(CkptRankStateTest, MissingTensorIsNamed) {
  RankState target = EmptyLike(SampleState());
  target.tensors.push_back({"fc.bias", Tensor::Zeros({10}, DType::kF32)});
  ExpectLoadError(SampleState(), target, "no tensor 'fc.bias' (the model expects Float32[10])");
}

TEST(CkptRankStateTest, UnexpectedTensorIsNamed) {
  RankState target = EmptyLike(SampleState());
  target.tensors.erase(target.tensors.begin() + 1);
  target.scalars.erase("rng_counter");
  ExpectLoadError(SampleState(), target,
                  "tensors the model does not expect: 'moments.conv.weight', 'rng_counter'");
}

TEST(CkptRankStateTest, ShapeMismatchNamesTheTensorAndBothShapes) {
  RankState target = EmptyLike(SampleState());
  target.tensors[0].tensor = Tensor::Zeros({4, 3, 5, 5}, DType::kF32);
  ExpectLoadError(SampleState(), target,
                  "tensor 'conv.weight' is Float32[4, 3, 3, 3] in the checkpoint but "
                  "Float32[4, 3, 5, 5] in the model");
}

TEST(CkptRankStateTest, DTypeMismatchNamesBothTypes) {
  RankState target = EmptyLike(SampleState());
  target.tensors[2].tensor = Tensor::Zeros({4}, DType::kF16);
  ExpectLoadError(SampleState(), target,
                  "tensor 'bn.running_mean' is Float32[4] in the checkpoint but Float16[4]");
}

TEST(CkptRankStateTest, FailedRestoreLeavesTensorsUntouched) {
  TempDir dir;
  const std::string path = Saved(dir, SampleState());
  RankState target = EmptyLike(SampleState());
  target.tensors.push_back({"missing", Tensor::Zeros({1}, DType::kF32)});
  ASSERT_FALSE(LoadRankState(path, &target).ok());
  const float* values = target.tensors[0].tensor.data<float>();
  for (int64_t i = 0; i < target.tensors[0].tensor.numel(); ++i) ASSERT_EQ(values[i], 0.0f);
}

TEST(CkptRankStateTest, ScalarNamesMayNotCollideWithEpochOrStep) {
  TempDir dir;
  RankState state = SampleState();
  state.scalars["step_num"] = 1;
  absl::StatusOr<WrittenFile> file = SaveRankState(dir.Join("x.ckpt"), state);
  ASSERT_FALSE(file.ok());
  EXPECT_NE(file.status().message().find("'step_num': added twice"), std::string::npos);
}

}  // namespace
}  // namespace lockstep::ckpt
