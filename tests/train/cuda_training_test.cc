// Whole training steps on CUDA: against the CPU (loss, every gradient, the running statistics),
// data parallel over NCCL in a world of one against stand-alone CUDA training (bit for bit),
// pipelined training from page-locked batches against one step at a time and steps launched as
// CUDA graphs against kernel by kernel (bit for bit), and
// variables moving between a CPU and a CUDA model (how a checkpoint crosses devices). Skipped
// where no GPU is present.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"
#include "core/rng.h"
#include "graph/pass.h"
#include "ops/math_options.h"
#include "tests/testing/backend_compare.h"
#include "train/model.h"
#include "train/models.h"

namespace lockstep::train {
namespace {

constexpr int64_t kBatch = 8;
constexpr int64_t kClasses = 10;

struct StepCase {
  std::string model = "resnet18";
  int64_t size = 32;
  bool fuse = true;  // the fused kernels (BatchNormRelu, MaxPoolWithArgmax, AddRelu, ...)
  parallel::ParallelMode mode = parallel::ParallelMode::kStandAlone;
};

Model ModelOn(Device device, const StepCase& c, const MathOptions& math = {}) {
  ModelOptions options{.batch_size = kBatch,
                       .image_shape = {3, c.size, c.size},
                       .seed = 7,
                       .fuse_kernels = c.fuse,
                       .device = device};
  options.parallel.mode = c.mode;
  // Data parallel in a world of one: NCCL with one rank.
  if (c.mode == parallel::ParallelMode::kDataParallel) {
    options.context = parallel::Init(nullptr, nullptr).value();
  }
  options.config.Set(math);
  return Model(*models::ModelByName(c.model, kClasses), SoftmaxCrossEntropy(),
               Momentum{.lr = 0.05, .momentum = 0.9, .weight_decay = 1e-4}, options);
}

Batch RandomBatch(uint64_t seed, int64_t size = 32) {
  Batch batch{Tensor::Empty({kBatch, 3, size, size}, DType::kF32),
              Tensor::Empty({kBatch}, DType::kI32)};
  Philox rng(seed, 0);
  rng.Normal(batch.images.data<float>(), batch.images.numel(), 0.0f, 1.0f);
  for (int64_t i = 0; i < kBatch; ++i) {
    batch.labels.data<int32_t>()[i] = static_cast<int32_t>(rng.UniformInt(i, kClasses));
  }
  return batch;
}

// ||a - b|| / max(||b||, tiny): TF32 convolutions and matmuls (as PyTorch allows them) round
// operands to 10 mantissa bits, so CUDA and CPU agree to about 1e-3, not to float32 rounding.
double RelativeDifference(const Tensor& a, const Tensor& b) {
  double diff = 0.0, norm = 0.0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    const double x = a.data<float>()[i], y = b.data<float>()[i];
    diff += (x - y) * (x - y);
    norm += y * y;
  }
  return std::sqrt(diff) / std::max(std::sqrt(norm), 1e-12);
}

// A parameter's gradient, or a state's value (running statistics), as a plain host copy.
absl::StatusOr<Tensor> GradientOrState(const Model& model, const ParameterSpec& spec) {
  if (spec.role != InputRole::kParameter) return model.Variable(spec.name);
  return model.train_executor()->ReadOutput(GradientName(spec.name));
}

// With TF32 off (MathOptions, read when kernels are built) the GPU computes in full
// float32 and agrees with the CPU to 1e-2 of every gradient's norm. With TF32 on (the default, as
// PyTorch's for convolutions) rounding compounds through the backward: up to 20% on ResNet-18's
// stem at 32x32, measured on an H100.
class CudaStepTest : public ::testing::TestWithParam<StepCase> {};

// One training step: the loss, every gradient and every running statistic.
TEST_P(CudaStepTest, MatchesTheCpu) {
  LS_SKIP_WITHOUT_GPU();
  Model cpu = ModelOn(Device::CPU(), GetParam());
  Model gpu = ModelOn(Device::CUDA(0), GetParam(), {.allow_tf32 = false});
  const Batch batch = RandomBatch(3, GetParam().size);
  absl::StatusOr<double> cpu_loss = cpu.TrainStep(batch);
  absl::StatusOr<double> gpu_loss = gpu.TrainStep(batch);
  ASSERT_TRUE(cpu_loss.ok()) << cpu_loss.status();
  ASSERT_TRUE(gpu_loss.ok()) << gpu_loss.status();
  EXPECT_NEAR(*gpu_loss, *cpu_loss, 1e-3 * std::abs(*cpu_loss));
  for (const ParameterSpec& spec : cpu.parameters()) {
    absl::StatusOr<Tensor> want = GradientOrState(cpu, spec);
    absl::StatusOr<Tensor> got = GradientOrState(gpu, spec);
    ASSERT_TRUE(want.ok() && got.ok()) << spec.name << ": " << want.status() << got.status();
    EXPECT_LT(RelativeDifference(*got, *want), 1e-2) << spec.name;
  }
}

INSTANTIATE_TEST_SUITE_P(Models, CudaStepTest,
                         ::testing::Values(StepCase{}, StepCase{.fuse = false},
                                           StepCase{.size = 64}, StepCase{.model = "lenet"},
                                           StepCase{.model = "resnet8"},
                                           StepCase{.model = "resnet8", .fuse = false}),
                         [](const auto& info) {
                           return absl::StrCat(info.param.model, "_", info.param.size,
                                               info.param.fuse ? "_fused" : "_unfused");
                         });

TEST(CudaTrainingTest, DataParallelWorldOfOneOverNcclIsBitIdenticalToStandAlone) {
  LS_SKIP_WITHOUT_GPU();
  Model alone = ModelOn(Device::CUDA(0), {});
  Model parallel = ModelOn(Device::CUDA(0), {.mode = parallel::ParallelMode::kDataParallel});
  for (int step = 0; step < 10; ++step) {
    const Batch batch = RandomBatch(100 + step);
    ASSERT_TRUE(alone.TrainStep(batch).ok());
    absl::StatusOr<double> loss = parallel.TrainStep(batch);
    ASSERT_TRUE(loss.ok()) << loss.status();
  }
  for (const ParameterSpec& spec : alone.parameters()) {
    const Tensor a = *alone.Variable(spec.name), b = *parallel.Variable(spec.name);
    EXPECT_EQ(std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()), 0) << spec.name;
  }
}

// Batches in page-locked memory from HostBatchAllocator, a buffer each (recycled by its pool once
// the model lets go of it), as the dataset pipeline hands them out on a GPU.
class PinnedBatches : public DataSource {
 public:
  explicit PinnedBatches(int count)
      : allocator_(HostBatchAllocator(Device::CUDA(0))), count_(count) {}
  absl::Status Reset(int64_t) override {
    next_ = 0;
    return absl::OkStatus();
  }
  absl::StatusOr<bool> Next(Batch* batch) override {
    if (next_ == count_) return false;
    const Batch from = RandomBatch(200 + next_++);
    *batch = {allocator_(from.images.shape(), DType::kF32), allocator_({kBatch}, DType::kI32)};
    batch->images.CopyFrom(from.images);
    batch->labels.CopyFrom(from.labels);
    return true;
  }

 private:
  dataset::BatchAllocator allocator_;
  int count_;
  int next_ = 0;
};

// Train copies batch N+1 on the copy stream while step N computes (train/input_feed.h); the
// parameters come out bit for bit as from one TrainStep at a time.
TEST(CudaTrainingTest, PipelinedTrainingFromPinnedBatchesEqualsOneStepAtATime) {
  LS_SKIP_WITHOUT_GPU();
  constexpr int kSteps = 6;
  Model pipelined = ModelOn(Device::CUDA(0), {.model = "resnet8"});
  Model stepped = ModelOn(Device::CUDA(0), {.model = "resnet8"});
  PinnedBatches data(kSteps);
  absl::Status trained = pipelined.Train(1, data);
  ASSERT_TRUE(trained.ok()) << trained;
  for (int step = 0; step < kSteps; ++step) {
    ASSERT_TRUE(stepped.TrainStep(RandomBatch(200 + step)).ok());
  }
  for (const ParameterSpec& spec : stepped.parameters()) {
    const Tensor a = *stepped.Variable(spec.name), b = *pipelined.Variable(spec.name);
    EXPECT_EQ(std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()), 0) << spec.name;
  }
}

// From the third step on, a step is one CUDA graph launch (Executor::ReplayAfter), the NCCL
// AllReduce of data parallel included; training comes out bit for bit as kernel by kernel.
TEST(CudaTrainingTest, StepsLaunchedAsOneCudaGraphTrainBitForBitAsKernelByKernel) {
  LS_SKIP_WITHOUT_GPU();
  Model replayed = ModelOn(Device::CUDA(0), {.model = "resnet8"});
  ModelOptions off = replayed.options();
  off.replay_steps = false;
  Model kernels(*models::ModelByName("resnet8", kClasses), SoftmaxCrossEntropy(),
                Momentum{.lr = 0.05, .momentum = 0.9, .weight_decay = 1e-4}, off);
  Model parallel =
      ModelOn(Device::CUDA(0), {.model = "resnet8", .mode = parallel::ParallelMode::kDataParallel});
  for (int step = 0; step < 6; ++step) {
    const Batch batch = RandomBatch(300 + step);
    absl::StatusOr<double> a = replayed.TrainStep(batch), b = kernels.TrainStep(batch);
    ASSERT_TRUE(a.ok() && b.ok()) << a.status() << b.status();
    EXPECT_EQ(*a, *b) << "step " << step;
    ASSERT_TRUE(parallel.TrainStep(batch).ok());
  }
  EXPECT_TRUE(replayed.train_executor()->replaying());
  EXPECT_FALSE(kernels.train_executor()->replaying());
  EXPECT_TRUE(parallel.train_executor()->replaying());
  for (const ParameterSpec& spec : kernels.parameters()) {
    const Tensor want = *kernels.Variable(spec.name);
    for (const Model* model : {&replayed, &parallel}) {
      const Tensor got = *model->Variable(spec.name);
      EXPECT_EQ(std::memcmp(got.raw_data(), want.raw_data(), want.nbytes()), 0) << spec.name;
    }
  }
}

TEST(CudaTrainingTest, VariablesMoveBetweenCpuAndCudaModels) {
  LS_SKIP_WITHOUT_GPU();
  Model cpu = ModelOn(Device::CPU(), {});
  ASSERT_TRUE(cpu.TrainStep(RandomBatch(5)).ok());
  Model gpu = ModelOn(Device::CUDA(0), {});
  ASSERT_TRUE(gpu.Compile().ok());
  for (const ParameterSpec& spec : cpu.parameters()) {
    ASSERT_TRUE(gpu.SetVariable(spec.name, *cpu.Variable(spec.name)).ok()) << spec.name;
    const Tensor back = *gpu.Variable(spec.name), want = *cpu.Variable(spec.name);
    EXPECT_EQ(std::memcmp(back.raw_data(), want.raw_data(), want.nbytes()), 0) << spec.name;
  }
}

}  // namespace
}  // namespace lockstep::train
