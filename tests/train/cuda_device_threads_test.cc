// Threads that never call cudaSetDevice, on the last GPU: a model built, trained and evaluated on
// three new threads, from batches the pipeline's allocator takes in page-locked memory on the
// thread that asks for the next batch, and dropped (its events, its pool's frees) on a fourth.
// With two GPUs or more this is rank 1 on GPU 1, and GPU 0's primary context must never start:
// a thread that calls CUDA with no device made current acts on GPU 0, which costs a context
// there (~500 MB) and puts work on another rank's GPU. With one GPU it checks that the
// components work from such threads. Skipped without a GPU.

#include <cuda.h>
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <thread>
#include <utility>

#include "tests/train/shapes_data.h"
#include "tests/train/shapes_source.h"
#include "train/dataset_source.h"
#include "train/input_feed.h"
#include "train/model.h"
#include "train/models.h"

namespace lockstep::train {
namespace {

constexpr int64_t kBatch = 8;
constexpr int64_t kSize = 32;  // LeNet-5's input

template <typename F>
void OnNewThread(F work) {
  std::thread(std::move(work)).join();
}

// Whether the driver's primary context of `device` is running; asking starts none. The driver
// is the runtime's own libcuda, looked up rather than linked, so that the test binary still loads
// (and lists its tests) on a machine without a driver.
bool PrimaryContextActive(int device) {
  void* driver = dlopen("libcuda.so.1", RTLD_NOW);
  EXPECT_NE(driver, nullptr) << dlerror();
  if (driver == nullptr) return true;
  using Init = CUresult (*)(unsigned int);
  using GetDevice = CUresult (*)(CUdevice*, int);
  using GetState = CUresult (*)(CUdevice, unsigned int*, int*);
  const auto init = reinterpret_cast<Init>(dlsym(driver, "cuInit"));
  const auto get_device = reinterpret_cast<GetDevice>(dlsym(driver, "cuDeviceGet"));
  const auto get_state = reinterpret_cast<GetState>(dlsym(driver, "cuDevicePrimaryCtxGetState"));
  CUdevice handle = 0;
  unsigned int flags = 0;
  int active = 1;
  EXPECT_TRUE(init != nullptr && get_device != nullptr && get_state != nullptr);
  if (init != nullptr && get_device != nullptr && get_state != nullptr) {
    EXPECT_EQ(init(0), CUDA_SUCCESS);
    EXPECT_EQ(get_device(&handle, device), CUDA_SUCCESS);
    EXPECT_EQ(get_state(handle, &flags, &active), CUDA_SUCCESS);
  }
  dlclose(driver);
  return active != 0;
}

TEST(CudaDeviceThreadsTest, AModelOnTheLastGpuLeavesGpuZeroAlone) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) GTEST_SKIP() << "no GPU";
  const Device device = Device::CUDA(count - 1);
  const bool rank_one = device.index != 0;
  if (rank_one) {
    ASSERT_FALSE(PrimaryContextActive(0)) << "GPU 0's context ran before the test";
  }

  std::unique_ptr<Model> model;
  std::unique_ptr<DatasetSource> data;
  OnNewThread([&] {
    dataset::Dataset shapes(
        std::make_shared<testing::ShapeSource>(4 * kBatch, 1, kSize, /*seed=*/9), {});
    data = std::make_unique<DatasetSource>(shapes.Batch(kBatch, /*drop_remainder=*/true)
                                               .Workers(2)
                                               .AllocateWith(HostBatchAllocator(device)));
    model = std::make_unique<Model>(
        models::LeNet5(testing::kShapeClasses, 1), SoftmaxCrossEntropy(),
        Momentum{.lr = 0.05, .momentum = 0.9},
        ModelOptions{
            .batch_size = kBatch, .image_shape = {1, kSize, kSize}, .seed = 3, .device = device});
    absl::Status compiled = model->Compile();
    ASSERT_TRUE(compiled.ok()) << compiled;
  });
  ASSERT_NE(model, nullptr);
  OnNewThread([&] {
    absl::Status trained = model->Train(2, *data);
    EXPECT_TRUE(trained.ok()) << trained;
  });
  absl::StatusOr<EvalResult> evaluated;
  OnNewThread([&] { evaluated = model->Eval(*data); });
  OnNewThread([&] {
    model.reset();
    data.reset();
  });
  ASSERT_TRUE(evaluated.ok()) << evaluated.status();
  EXPECT_TRUE(std::isfinite(evaluated->loss));
  EXPECT_EQ(evaluated->samples, 4 * kBatch);
  if (rank_one) {
    EXPECT_FALSE(PrimaryContextActive(0)) << "a thread acted on GPU 0";
  }
}

}  // namespace
}  // namespace lockstep::train
