#include "tests/testing/backend_compare.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#ifdef LOCKSTEP_WITH_CUDA
#include "ops/cuda/cuda_status.h"
#endif

namespace lockstep::testing {

bool HasGpu() {
#ifdef LOCKSTEP_WITH_CUDA
  return CudaAvailable();
#else
  return false;
#endif
}

void ExpectOutputsMatch(const std::vector<std::vector<float>>& cpu,
                        const std::vector<std::vector<float>>& gpu, double tolerance) {
  ASSERT_EQ(cpu.size(), gpu.size());
  ASSERT_FALSE(cpu.empty()) << "the subgraph has no f32 or i32 output to compare";
  for (size_t k = 0; k < cpu.size(); ++k) {
    ASSERT_EQ(cpu[k].size(), gpu[k].size()) << "output " << k;
    float largest = 1.0f;
    for (float v : cpu[k]) largest = std::max(largest, std::abs(v));
    int failures = 0;
    for (size_t i = 0; i < cpu[k].size() && failures < 5; ++i) {
      if (std::abs(cpu[k][i] - gpu[k][i]) <= tolerance * largest) continue;  // NaN fails too
      ++failures;
      ADD_FAILURE() << "output " << k << "[" << i << "]: CPU " << cpu[k][i] << ", CUDA "
                    << gpu[k][i] << " (tolerance " << tolerance * largest << ")";
    }
  }
}

void ExpectCudaMatchesCpu(const std::vector<GradCheckInput>& inputs, const BuildFn& build,
                          double tolerance, const PassConfig& config) {
  ExpectOutputsMatch(RunForward(inputs, build, Device::CPU(), config),
                     RunForward(inputs, build, Device::CUDA(0), config), tolerance);
}

void ExpectCudaOpMatchesCpu(const std::string& op, const std::vector<GradCheckInput>& inputs,
                            const Attrs& attrs, double tolerance, const PassConfig& config) {
  ExpectCudaMatchesCpu(
      inputs,
      [&](Builder& b, const std::vector<Value*>& values) { return b.Op(op, values, attrs); },
      tolerance, config);
}

}  // namespace lockstep::testing
