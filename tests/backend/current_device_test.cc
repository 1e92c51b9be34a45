// Threads that never make the device current, on a device other than 0, as rank 1 computes on
// GPU 1: the tests' device at index 1, whose backend (test_backend.h) refuses a call on a thread
// where another device is current, as a thread of rank 1 that calls CUDA without cudaSetDevice
// would act on GPU 0 (a context there, ~500 MB, and work meant for GPU 1). Every thread starts
// with device 0 current. The components that act on a device make it current for the thread that
// calls them: the host buffer pool (whose frees run wherever its last buffer goes), the data
// pipeline's batch allocator, the input feed, kernel building and the executor.

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/host_buffer_pool.h"
#include "dataset/dataset.h"
#include "graph/builder.h"
#include "graph/compile.h"
#include "tests/backend/test_backend.h"
#include "tests/train/shapes_data.h"
#include "tests/train/shapes_source.h"
#include "train/dataset_source.h"
#include "train/input_feed.h"
#include "train/model.h"
#include "train/models.h"

namespace lockstep::test_backend {
namespace {

constexpr int64_t kBatch = 4;
constexpr int64_t kSize = 32;  // LeNet-5's input
constexpr int64_t kImages = 4 * kBatch;

const Device kRankOneDevice{kTestDeviceType, 1};

// Runs `work` on a new thread, which starts, as every thread does, with device 0 current.
template <typename F>
void OnNewThread(F work) {
  std::thread(std::move(work)).join();
}

// The calls the tests' device refused since the last TakeMisuses, one a line.
void ExpectNoMisuse() {
  const std::vector<std::string> misuses = TakeMisuses();
  EXPECT_TRUE(misuses.empty()) << absl::StrJoin(misuses, "\n");
}

// Batches from the pipeline's worker threads, in host memory of `device`'s pool, allocated on
// the thread that asks for the next batch.
std::unique_ptr<train::DatasetSource> Batches(Device device) {
  dataset::Dataset data(
      std::make_shared<train::testing::ShapeSource>(kImages, 1, kSize, /*seed=*/9), {});
  return std::make_unique<train::DatasetSource>(
      data.Batch(kBatch, /*drop_remainder=*/true)
          .Workers(2)
          .AllocateWith(train::HostBatchAllocator(device)));
}

std::unique_ptr<train::Model> LeNet(Device device) {
  return std::make_unique<train::Model>(
      train::models::LeNet5(train::testing::kShapeClasses, 1), train::SoftmaxCrossEntropy(),
      train::Momentum{.lr = 0.05, .momentum = 0.9},
      train::ModelOptions{
          .batch_size = kBatch, .image_shape = {1, kSize, kSize}, .seed = 3, .device = device});
}

// The check itself: without it, the tests below would pass whatever the components did.
TEST(CurrentDeviceTest, TheTestDeviceRefusesAThreadWhereAnotherDeviceIsCurrent) {
  TakeMisuses();
  OnNewThread([] {
    Backend& backend = BackendOf(kRankOneDevice);
    absl::StatusOr<void*> refused = backend.Allocate(64, 1);
    EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_NE(refused.status().message().find("device 0 is current"), std::string::npos)
        << refused.status();
    ASSERT_TRUE(MakeDeviceCurrent(kRankOneDevice).ok());
    absl::StatusOr<void*> memory = backend.Allocate(64, 1);
    ASSERT_TRUE(memory.ok()) << memory.status();
    backend.Free(*memory, 1);
  });
  EXPECT_EQ(TakeMisuses().size(), 1u);
}

// Page-locked memory on CUDA: taken on one thread, freed with the pool on another, neither of
// which made the device current.
TEST(CurrentDeviceTest, HostBuffersAreTakenAndFreedOnThreadsThatNeverMadeTheDeviceCurrent) {
  TakeMisuses();
  const int64_t host_live = Memory().host_live;
  std::shared_ptr<HostBufferPool> pool = *HostBufferPool::Create(kRankOneDevice);
  Tensor buffer;
  OnNewThread([&] {
    absl::StatusOr<Tensor> taken = pool->Take({256}, DType::kF32);
    ASSERT_TRUE(taken.ok()) << taken.status();
    buffer = *std::move(taken);
  });
  EXPECT_EQ(Memory().host_live, host_live + 1);
  // The pool's last owners let go there: its destructor frees the buffer on that thread.
  OnNewThread([&] {
    buffer = Tensor();
    pool.reset();
  });
  EXPECT_EQ(Memory().host_live, host_live);
  ExpectNoMisuse();
}

// A model of rank 1 built, trained and read on three threads that never made its device current,
// from batches the pipeline's workers make in the device's host memory, and dropped on a fourth:
// it computes what the same model on device 0 computes on the main thread.
TEST(CurrentDeviceTest, AModelOnDeviceOneRunsFromThreadsThatNeverMadeItCurrent) {
  std::unique_ptr<train::Model> reference = LeNet(TestDevice());
  auto reference_data = Batches(TestDevice());
  ASSERT_TRUE(reference->Train(2, *reference_data).ok());

  TakeMisuses();
  std::unique_ptr<train::Model> model;
  std::unique_ptr<train::DatasetSource> data;
  OnNewThread([&] {
    model = LeNet(kRankOneDevice);
    data = Batches(kRankOneDevice);
    absl::Status compiled = model->Compile();
    ASSERT_TRUE(compiled.ok()) << compiled;
  });
  ASSERT_NE(model, nullptr);
  OnNewThread([&] {
    absl::Status trained = model->Train(2, *data);
    ASSERT_TRUE(trained.ok()) << trained;
  });
  std::vector<std::pair<std::string, absl::StatusOr<Tensor>>> parameters;
  OnNewThread([&] {
    for (const auto& spec : model->parameters()) {
      parameters.emplace_back(spec.name, model->Variable(spec.name));
    }
  });
  OnNewThread([&] {
    model.reset();
    data.reset();
  });
  ExpectNoMisuse();
  EXPECT_EQ(reference->global_step(), 2 * kImages / kBatch);
  ASSERT_FALSE(parameters.empty());
  for (const auto& [name, got] : parameters) {
    ASSERT_TRUE(got.ok()) << name << ": " << got.status();
    const Tensor want = *reference->Variable(name);
    ASSERT_EQ(got->nbytes(), want.nbytes()) << name;
    EXPECT_EQ(std::memcmp(got->raw_data(), want.raw_data(), want.nbytes()), 0) << name;
  }
}

// y = x w on device 1, compiled, written, run, read and dropped on five threads that never made
// the device current: the executor makes it current for each (its kernels' library handles and
// launches are the current device's on CUDA).
TEST(CurrentDeviceTest, AnExecutorOnDeviceOneRunsFromThreadsThatNeverMadeItCurrent) {
  TakeMisuses();
  std::unique_ptr<Executor> executor;
  OnNewThread([&] {
    auto graph = std::make_unique<Graph>();
    Builder b(graph.get());
    Value* x = b.Input("x", {2, 3});
    Value* w = b.Parameter("w", {3, 2});
    Value* y = b.Op1("MatMul", {x, w}, {{"transpose_a", false}, {"transpose_b", false}});
    graph->AddOutput("y", y, OutputKind::kResult);
    ASSERT_TRUE(b.status().ok()) << b.status();
    absl::StatusOr<std::unique_ptr<Executor>> compiled =
        Compile(std::move(graph), {.device = kRankOneDevice});
    ASSERT_TRUE(compiled.ok()) << compiled.status();
    executor = *std::move(compiled);
  });
  ASSERT_NE(executor, nullptr);
  OnNewThread([&] {
    Tensor x = Tensor::Empty({2, 3}, DType::kF32), w = Tensor::Empty({3, 2}, DType::kF32);
    for (int i = 0; i < 6; ++i) {
      x.data<float>()[i] = static_cast<float>(i);  // (2, 3)
      w.data<float>()[i] = 1.0f;                   // (3, 2)
    }
    ASSERT_TRUE(executor->WriteInput("x", x).ok());
    ASSERT_TRUE(executor->WriteInput("w", w).ok());
  });
  OnNewThread([&] { ASSERT_TRUE(executor->Run().ok()); });
  absl::StatusOr<Tensor> y;
  OnNewThread([&] { y = executor->ReadOutput("y"); });
  OnNewThread([&] { executor.reset(); });
  ExpectNoMisuse();
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->data<float>()[0], 0.0f + 1.0f + 2.0f);
  EXPECT_EQ(y->data<float>()[3], 3.0f + 4.0f + 5.0f);
}

// The feed's copies and events, called on a thread that never made the device current.
TEST(CurrentDeviceTest, TheInputFeedStagesAndFeedsFromAThreadThatNeverMadeTheDeviceCurrent) {
  TakeMisuses();
  OnNewThread([] {
    train::InputFeed feed(kRankOneDevice, std::nullopt);
    const Tensor images = Tensor::Zeros({2, 1, 4, 4}, DType::kF32);
    const Tensor labels = Tensor::Zeros({2}, DType::kI32);
    ASSERT_TRUE(feed.Stage(images, labels, 0.1f).ok());
    ASSERT_TRUE(feed.AwaitCopies().ok());
    // The graph's inputs, as an executor on that device would hold them.
    ASSERT_TRUE(MakeDeviceCurrent(kRankOneDevice).ok());
    const Tensor into_images = Tensor::Zeros({2, 1, 4, 4}, DType::kF32, kRankOneDevice);
    const Tensor into_labels = Tensor::Zeros({2}, DType::kI32, kRankOneDevice);
    const Tensor into_control = Tensor::Zeros({}, DType::kF32, kRankOneDevice);
    // Another thread's habits: device 0 current again.
    ASSERT_TRUE(MakeDeviceCurrent(TestDevice()).ok());
    absl::StatusOr<int64_t> fed = feed.Feed(into_images, into_labels, into_control);
    ASSERT_TRUE(fed.ok()) << fed.status();
    EXPECT_EQ(*into_control.data<float>(), 0.1f);
  });
  ExpectNoMisuse();
}

}  // namespace
}  // namespace lockstep::test_backend
