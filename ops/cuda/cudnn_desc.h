#pragma once

// cuDNN descriptors, built in two steps: plain functions compute their fields from the graph's
// shapes (CPU tests check those fields without a GPU), and RAII wrappers turn the fields into
// cuDNN descriptors once, when a kernel is built.

#include <cudnn.h>

#include <array>
#include <memory>

#include "core/status.h"
#include "core/tensor.h"
#include "graph/attr.h"

namespace lockstep::cuda {

// A 4-D tensor descriptor: dims (N, C, H, W) and their strides in elements.
struct TensorDescFields {
  cudnnDataType_t dtype = CUDNN_DATA_FLOAT;
  std::array<int, 4> dims = {1, 1, 1, 1};
  std::array<int, 4> strides = {1, 1, 1, 1};
  bool operator==(const TensorDescFields&) const = default;
};

absl::StatusOr<cudnnDataType_t> CudnnDataType(DType dtype);
// Plain NCHW: (N, C, H, W) as is, (N, C) as (N, C, 1, 1), (C) as (1, C, 1, 1) (per-channel
// vectors of batch norm).
absl::StatusOr<TensorDescFields> NchwFields(const Shape& shape, DType dtype);
// A 4-D (N, C, H, W) value stored NHWC (ops/cuda/cuda_layouts.h): the same dims, channels
// innermost.
absl::StatusOr<TensorDescFields> NhwcFields(const Shape& shape, DType dtype);
// NhwcFields where `nhwc`, else NchwFields.
absl::StatusOr<TensorDescFields> ActivationFields(const Shape& shape, DType dtype, bool nhwc);

class TensorDesc {
 public:
  static absl::StatusOr<TensorDesc> Create(const TensorDescFields& fields);
  static absl::StatusOr<TensorDesc> Nchw(const Shape& shape, DType dtype);
  cudnnTensorDescriptor_t get() const { return desc_.get(); }

 private:
  struct Destroy {
    void operator()(cudnnTensorStruct* desc) const { cudnnDestroyTensorDescriptor(desc); }
  };
  std::unique_ptr<cudnnTensorStruct, Destroy> desc_;
};

// A convolution: symmetric padding, stride and dilation per spatial dimension, groups, the
// accumulation type and the math cuDNN may use (the default allows TF32 tensor cores for float32,
// as PyTorch does; 16-bit convolutions ask for tensor cores). The kernel later sets the math type
// its chosen algorithm reports.
struct ConvDescFields {
  std::array<int, 2> padding = {0, 0};
  std::array<int, 2> stride = {1, 1};
  std::array<int, 2> dilation = {1, 1};
  int groups = 1;
  cudnnDataType_t compute = CUDNN_DATA_FLOAT;
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;
  bool operator==(const ConvDescFields&) const = default;
};
// From a Conv2D-family node's attributes (stride, padding, dilation, groups).
absl::StatusOr<ConvDescFields> ConvFields(const Attrs& attrs, DType dtype);
// What a convolution of `dtype` tensors accumulates in: float for the 16-bit types (PyTorch's
// choice; half accumulation loses precision and most algorithms reject it), else the dtype.
absl::StatusOr<cudnnDataType_t> ConvComputeType(DType dtype);

// A filter (O, C / groups, KH, KW): stored so (NCHW) or as (O, KH, KW, C / groups) (NHWC,
// cuDNN's KRSC, what its tensor-core kernels read).
struct FilterDescFields {
  cudnnDataType_t dtype = CUDNN_DATA_FLOAT;
  cudnnTensorFormat_t format = CUDNN_TENSOR_NCHW;
  std::array<int, 4> dims = {1, 1, 1, 1};
  bool operator==(const FilterDescFields&) const = default;
};
absl::StatusOr<FilterDescFields> FilterFields(const Shape& shape, DType dtype, bool nhwc = false);

class FilterDesc {
 public:
  static absl::StatusOr<FilterDesc> Create(const FilterDescFields& fields);
  cudnnFilterDescriptor_t get() const { return desc_.get(); }

 private:
  struct Destroy {
    void operator()(cudnnFilterStruct* desc) const { cudnnDestroyFilterDescriptor(desc); }
  };
  std::unique_ptr<cudnnFilterStruct, Destroy> desc_;
};

class ConvDesc {
 public:
  static absl::StatusOr<ConvDesc> Create(const ConvDescFields& fields);
  cudnnConvolutionDescriptor_t get() const { return desc_.get(); }

 private:
  struct Destroy {
    void operator()(cudnnConvolutionStruct* desc) const { cudnnDestroyConvolutionDescriptor(desc); }
  };
  std::unique_ptr<cudnnConvolutionStruct, Destroy> desc_;
};

// The output (N, O, OH, OW) cuDNN computes for x convolved with w: kernels compare it with the
// graph's shape, so the two conventions cannot drift apart. Needs no device.
absl::StatusOr<std::array<int, 4>> ConvForwardOutputDims(const ConvDesc& conv, const TensorDesc& x,
                                                         const FilterDesc& w);

}  // namespace lockstep::cuda
