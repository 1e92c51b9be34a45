// CUDA kernels of Momentum and Accumulate, element-wise and in place, and of dynamic loss
// scaling; the launchers are in ops/cuda/optimizer.cu. A Momentum node updates every tensor of
// its AllReduce bucket in one launch, and AllFinite checks every gradient in one (after setting
// its flag): the fixed cost of a step does not grow with the number of parameters.

#include <algorithm>
#include <cstring>
#include <vector>

#include "graph/kernel.h"
#include "ops/cuda/cudnn_cublas.h"
#include "ops/cuda/optimizer_kernels.h"
#include "ops/optimizer_attrs.h"

namespace lockstep {
namespace cuda {

std::vector<TensorChunk> ChunkTensors(const std::vector<int64_t>& sizes) {
  std::vector<TensorChunk> chunks;
  for (size_t t = 0; t < sizes.size(); ++t) {
    for (int64_t begin = 0; begin < sizes[t]; begin += kChunkElements) {
      chunks.push_back(
          {static_cast<int32_t>(t), begin, std::min(sizes[t], begin + kChunkElements)});
    }
  }
  return chunks;
}

}  // namespace cuda

namespace {

using cuda::StreamOf;

// Copies `bytes` of host memory into `buffer` (device memory, allocated on first use) on
// `stream`. The buffer is kept: a kernel queued earlier may still read it, and the copy, queued
// after that kernel on the same stream, waits for it.
absl::Status CopyTableToDevice(const void* host, size_t bytes, Device device, cudaStream_t stream,
                               Tensor* buffer) {
  const int64_t size = static_cast<int64_t>(std::max<size_t>(bytes, 1));
  if (!buffer->defined() || buffer->numel() != size) {
    *buffer = Tensor::Empty({size}, DType::kU8, device);
  }
  CUDA_RETURN_IF_ERROR(
      cudaMemcpyAsync(buffer->raw_data(), host, bytes, cudaMemcpyHostToDevice, stream));
  return absl::OkStatus();
}

// A table of tensor addresses a grouped kernel reads on the device, uploaded on the first run
// and again only when its rows change (the memory plan keeps tensor addresses fixed from run to
// run). Rows are pointers, compared as bytes.
template <typename Row>
class AddressTable {
 public:
  absl::StatusOr<const Row*> Upload(const std::vector<Row>& rows, Device device,
                                    cudaStream_t stream) {
    if (!device_.defined() || rows.size() != host_.size() ||
        std::memcmp(rows.data(), host_.data(), rows.size() * sizeof(Row)) != 0) {
      host_ = rows;
      LS_RETURN_IF_ERROR(
          CopyTableToDevice(host_.data(), host_.size() * sizeof(Row), device, stream, &device_));
    }
    return static_cast<const Row*>(device_.raw_data());
  }

 private:
  std::vector<Row> host_;
  Tensor device_;  // (bytes) u8
};

// The chunks of tensors of the given element counts (fixed by the node's shapes), uploaded on
// the first run.
class ChunkTable {
 public:
  explicit ChunkTable(std::vector<int64_t> sizes) : chunks_(cuda::ChunkTensors(sizes)) {}
  absl::StatusOr<const cuda::TensorChunk*> Upload(Device device, cudaStream_t stream) {
    if (!device_.defined()) {
      LS_RETURN_IF_ERROR(CopyTableToDevice(
          chunks_.data(), chunks_.size() * sizeof(cuda::TensorChunk), device, stream, &device_));
    }
    return static_cast<const cuda::TensorChunk*>(device_.raw_data());
  }
  int64_t size() const { return static_cast<int64_t>(chunks_.size()); }

 private:
  std::vector<cuda::TensorChunk> chunks_;
  Tensor device_;
};

std::vector<int64_t> MomentumSizes(const Node& node) {
  const math::MomentumInputs in(node.inputs.size());
  std::vector<int64_t> sizes;
  for (size_t t = 0; t < in.tensors; ++t)
    sizes.push_back(NumElements(node.inputs[in.param(t)]->shape()));
  return sizes;
}

class MomentumKernel : public Kernel {
 public:
  explicit MomentumKernel(const Node& node)
      : params_(MomentumParamsOf(node)), chunks_(MomentumSizes(node)) {}
  absl::Status Run(const KernelIO& io) override {
    const math::MomentumInputs in(io.inputs.size());
    const cudaStream_t stream = StreamOf(io);
    std::vector<cuda::MomentumTensor> tensors;
    for (size_t t = 0; t < in.tensors; ++t) {
      tensors.push_back({.param = io.inputs[in.param(t)].data<float>(),    // any shape
                         .grad = io.inputs[in.grad(t)].data<float>(),      // param's shape
                         .moment = io.inputs[in.moment(t)].data<float>(),  // param's shape
                         .new_param = io.outputs[2 * t].data<float>(),     // param's memory
                         .new_moment = io.outputs[2 * t + 1].data<float>()});
    }
    const Device device = io.outputs[0].device();
    LS_ASSIGN_OR_RETURN(const cuda::MomentumTensor* table,
                        tensors_.Upload(tensors, device, stream));
    LS_ASSIGN_OR_RETURN(const cuda::TensorChunk* chunks, chunks_.Upload(device, stream));
    cuda::DynamicScaleInputs dynamic;
    if (in.dynamic) {
      dynamic = {io.inputs[in.loss_scale()].data<float>(), io.inputs[in.finite()].data<float>()};
    }
    CUDA_RETURN_IF_ERROR(cuda::LaunchMomentum(params_, dynamic, io.inputs[in.lr()].data<float>(),
                                              table, chunks, chunks_.size(), stream));
    return absl::OkStatus();
  }

 private:
  math::MomentumParams params_;
  AddressTable<cuda::MomentumTensor> tensors_;
  ChunkTable chunks_;
};

class AccumulateKernel : public Kernel {
 public:
  explicit AccumulateKernel(const Node&) {}
  absl::Status Run(const KernelIO& io) override {
    CUDA_RETURN_IF_ERROR(cuda::LaunchAccumulate(io.inputs[2].data<float>(),   // beta []
                                                io.inputs[0].data<float>(),   // accum, any shape
                                                io.inputs[1].data<float>(),   // grad, same shape
                                                io.outputs[0].data<float>(),  // accum's memory
                                                io.outputs[0].numel(), StreamOf(io)));
    return absl::OkStatus();
  }
};

std::vector<int64_t> InputSizes(const Node& node) {
  std::vector<int64_t> sizes;
  for (const Value* input : node.inputs) sizes.push_back(NumElements(input->shape()));
  return sizes;
}

class AllFiniteKernel : public Kernel {
 public:
  explicit AllFiniteKernel(const Node& node) : chunks_(InputSizes(node)) {}
  absl::Status Run(const KernelIO& io) override {
    const cudaStream_t stream = StreamOf(io);
    std::vector<const float*> inputs;
    for (const Tensor& input : io.inputs) inputs.push_back(input.data<float>());
    const Device device = io.outputs[0].device();
    LS_ASSIGN_OR_RETURN(const float* const* table, inputs_.Upload(inputs, device, stream));
    LS_ASSIGN_OR_RETURN(const cuda::TensorChunk* chunks, chunks_.Upload(device, stream));
    CUDA_RETURN_IF_ERROR(
        cuda::LaunchAllFinite(table, chunks, chunks_.size(), io.outputs[0].data<float>(), stream));
    return absl::OkStatus();
  }

 private:
  AddressTable<const float*> inputs_;
  ChunkTable chunks_;
};

class UpdateLossScaleKernel : public Kernel {
 public:
  explicit UpdateLossScaleKernel(const Node& node) : rule_(LossScaleRuleOf(node)) {}
  absl::Status Run(const KernelIO& io) override {
    CUDA_RETURN_IF_ERROR(cuda::LaunchUpdateLossScale(io.outputs[0].data<float>(),    // scale []
                                                     io.outputs[1].data<int32_t>(),  // steps []
                                                     io.inputs[2].data<float>(),     // finite []
                                                     rule_.factor, rule_.window, StreamOf(io)));
    return absl::OkStatus();
  }

 private:
  LossScaleRule rule_;
};

REGISTER_KERNEL({.op = "Momentum",
                 .device = DeviceType::kCUDA,
                 .create = MakeFactory<MomentumKernel>()});
REGISTER_KERNEL({.op = "Accumulate",
                 .device = DeviceType::kCUDA,
                 .create = MakeFactory<AccumulateKernel>()});
REGISTER_KERNEL({.op = "AllFinite",
                 .device = DeviceType::kCUDA,
                 .create = MakeFactory<AllFiniteKernel>()});
REGISTER_KERNEL({.op = "UpdateLossScale",
                 .device = DeviceType::kCUDA,
                 .create = MakeFactory<UpdateLossScaleKernel>()});

}  // namespace
}  // namespace lockstep
