// The CUDA backend is complete: every (op, dtype) with a CPU kernel has a CUDA kernel too, so a
// graph that compiles for the CPU compiles for CUDA. Runs without a GPU (registrations only),
// as does the check that the CUDA tests would see a GPU.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "graph/kernel.h"
#include "ops/cuda/cuda_status.h"
#include "tests/testing/backend_compare.h"

namespace lockstep {
namespace {

TEST(CudaCoverageTest, EveryCpuKernelHasACudaTwin) {
  const KernelRegistry& registry = KernelRegistry::Global();
  std::vector<std::string> missing;
  for (const auto& [op, dtype] : registry.Registered(DeviceType::kCPU)) {
    if (!registry.Has(op, DeviceType::kCUDA, dtype)) {
      missing.push_back(op + "/" + DTypeName(dtype));
    }
  }
  EXPECT_TRUE(missing.empty()) << "no CUDA kernel for: " << ::testing::PrintToString(missing);
  EXPECT_GT(registry.Registered(DeviceType::kCUDA).size(), 30u);
}

// The CUDA tests skip through testing::HasGpu: it must see the GPU the runtime sees, or every
// one of them skips on a GPU machine unnoticed (as they once did).
TEST(CudaCoverageTest, TheTestsSeeTheGpuTheRuntimeSees) {
  EXPECT_EQ(testing::HasGpu(), CudaAvailable());
}

}  // namespace
}  // namespace lockstep
