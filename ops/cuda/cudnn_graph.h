#pragma once

// A forward convolution through cuDNN's graph (backend) API, for the shapes whose fastest
// engines the legacy API's algorithms do not reach: an image's first layer, 3 or 4 channels in
// 16 bits NHWC, where only the graph API's heuristics offer cuDNN's first-layer kernels
// (ResNet-50's stem in fp16 at batch 256 on an H200: 0.55 ms against the legacy API's best
// 3.0 ms, BENCHMARKS.md). As in cudnn_desc.h, plain functions compute the fields (CPU tests check
// them) and the plan is chosen once, when the kernel is built.

#include <cudnn.h>

#include <array>
#include <cstdint>
#include <memory>

#include "core/status.h"
#include "ops/cuda/cudnn_desc.h"

namespace lockstep::cuda {

// A tensor as the graph API describes it: dims (N, C, H, W) and their strides in elements.
struct GraphTensorFields {
  cudnnDataType_t dtype = CUDNN_DATA_FLOAT;
  std::array<int64_t, 4> dims = {1, 1, 1, 1};
  std::array<int64_t, 4> strides = {1, 1, 1, 1};
  bool operator==(const GraphTensorFields&) const = default;
};
GraphTensorFields GraphTensor(const TensorDescFields& tensor);
// A filter (O, C, KH, KW) with the strides of its format: KCRS or, for NHWC, KRSC.
GraphTensorFields GraphTensor(const FilterDescFields& filter);

// Whether a forward convolution of x (stored NHWC where `nhwc`) goes through the graph API:
// ungrouped, 16-bit, NHWC, over at most 4 input channels (the first-layer kernels' inputs).
// Elsewhere the legacy API's heuristics choose as well and need no plan.
bool ConvForwardUsesGraph(const TensorDescFields& x, bool nhwc, const ConvDescFields& conv);

// One backend descriptor, destroyed with its owner.
class BackendDesc {
 public:
  static absl::StatusOr<BackendDesc> Create(cudnnBackendDescriptorType_t type);
  cudnnBackendDescriptor_t get() const { return desc_.get(); }
  absl::Status Set(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type,
                   int64_t count, const void* values);
  absl::Status Finalize();

 private:
  struct Destroy {
    void operator()(void* desc) const { cudnnBackendDestroyDescriptor(desc); }
  };
  std::unique_ptr<void, Destroy> desc_;
};

class ConvForwardPlan {
 public:
  // The first engine configuration cuDNN's heuristics (mode A) rank that builds, needs at most
  // `max_workspace` bytes and, where `deterministic`, is not marked nondeterministic.
  static absl::StatusOr<ConvForwardPlan> Create(cudnnHandle_t handle, const GraphTensorFields& x,
                                                const GraphTensorFields& w,
                                                const GraphTensorFields& y,
                                                const ConvDescFields& conv, size_t max_workspace,
                                                bool deterministic);
  size_t workspace_bytes() const { return workspace_; }
  // y = conv(x, w) on the handle's stream; `workspace` holds workspace_bytes().
  absl::Status Run(cudnnHandle_t handle, const void* x, const void* w, void* y,
                   void* workspace) const;

 private:
  ConvForwardPlan(BackendDesc plan, size_t workspace)
      : plan_(std::move(plan)), workspace_(workspace) {}

  BackendDesc plan_;
  size_t workspace_;
};

}  // namespace lockstep::cuda
