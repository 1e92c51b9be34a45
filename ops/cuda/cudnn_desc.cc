#include "ops/cuda/cudnn_desc.h"

#include "ops/cuda/cudnn_cublas.h"

namespace lockstep::cuda {

absl::StatusOr<cudnnDataType_t> CudnnDataType(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return CUDNN_DATA_FLOAT;
    case DType::kF16:
      return CUDNN_DATA_HALF;
    case DType::kBF16:
      return CUDNN_DATA_BFLOAT16;
    case DType::kF64:
      return CUDNN_DATA_DOUBLE;
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("cuDNN has no tensors of dtype ", DTypeName(dtype)));
  }
}

absl::StatusOr<TensorDescFields> NchwFields(const Shape& shape, DType dtype) {
  TensorDescFields fields;
  LS_ASSIGN_OR_RETURN(fields.dtype, CudnnDataType(dtype));
  switch (shape.size()) {
    case 4:
      for (int i = 0; i < 4; ++i) fields.dims[i] = static_cast<int>(shape[i]);
      break;
    case 2:
      fields.dims = {static_cast<int>(shape[0]), static_cast<int>(shape[1]), 1, 1};
      break;
    case 1:
      fields.dims = {1, static_cast<int>(shape[0]), 1, 1};
      break;
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("a cuDNN tensor must be 1-, 2- or 4-D, got ", ShapeToString(shape)));
  }
  fields.strides[3] = 1;
  for (int i = 2; i >= 0; --i) fields.strides[i] = fields.strides[i + 1] * fields.dims[i + 1];
  return fields;
}

absl::StatusOr<TensorDescFields> NhwcFields(const Shape& shape, DType dtype) {
  if (shape.size() != 4) {
    return absl::InvalidArgumentError(
        absl::StrCat("an NHWC cuDNN tensor must be 4-D, got ", ShapeToString(shape)));
  }
  LS_ASSIGN_OR_RETURN(TensorDescFields fields, NchwFields(shape, dtype));
  const int c = fields.dims[1], h = fields.dims[2], w = fields.dims[3];
  fields.strides = {h * w * c, 1, w * c, c};
  return fields;
}

absl::StatusOr<TensorDescFields> ActivationFields(const Shape& shape, DType dtype, bool nhwc) {
  return nhwc ? NhwcFields(shape, dtype) : NchwFields(shape, dtype);
}

absl::StatusOr<TensorDesc> TensorDesc::Create(const TensorDescFields& fields) {
  cudnnTensorDescriptor_t raw = nullptr;
  CUDNN_RETURN_IF_ERROR(cudnnCreateTensorDescriptor(&raw));
  TensorDesc desc;
  desc.desc_.reset(raw);
  CUDNN_RETURN_IF_ERROR(cudnnSetTensor4dDescriptorEx(
      raw, fields.dtype, fields.dims[0], fields.dims[1], fields.dims[2], fields.dims[3],
      fields.strides[0], fields.strides[1], fields.strides[2], fields.strides[3]));
  return desc;
}

absl::StatusOr<TensorDesc> TensorDesc::Nchw(const Shape& shape, DType dtype) {
  LS_ASSIGN_OR_RETURN(TensorDescFields fields, NchwFields(shape, dtype));
  return Create(fields);
}

namespace {

absl::StatusOr<std::array<int, 2>> PairAttr(const Attrs& attrs, const char* name, int min) {
  const std::vector<int64_t>& pair = attrs.GetInts(name);
  if (pair.size() != 2 || pair[0] < min || pair[1] < min) {
    return absl::InvalidArgumentError(absl::StrCat(name, " must be [h, w] with entries >= ", min,
                                                   ", got ", AttrToString(attrs.Get(name))));
  }
  return std::array<int, 2>{static_cast<int>(pair[0]), static_cast<int>(pair[1])};
}

}  // namespace

absl::StatusOr<ConvDescFields> ConvFields(const Attrs& attrs, DType dtype) {
  ConvDescFields fields;
  LS_ASSIGN_OR_RETURN(fields.padding, PairAttr(attrs, "padding", 0));
  LS_ASSIGN_OR_RETURN(fields.stride, PairAttr(attrs, "stride", 1));
  LS_ASSIGN_OR_RETURN(fields.dilation, PairAttr(attrs, "dilation", 1));
  fields.groups = static_cast<int>(attrs.GetInt("groups"));
  if (fields.groups < 1) {
    return absl::InvalidArgumentError(absl::StrCat("groups must be >= 1, got ", fields.groups));
  }
  LS_ASSIGN_OR_RETURN(fields.compute, ConvComputeType(dtype));
  if (IsLowPrecision(dtype)) fields.math = CUDNN_TENSOR_OP_MATH;
  return fields;
}

absl::StatusOr<cudnnDataType_t> ConvComputeType(DType dtype) {
  LS_ASSIGN_OR_RETURN(cudnnDataType_t type, CudnnDataType(dtype));
  if (type == CUDNN_DATA_HALF || type == CUDNN_DATA_BFLOAT16) return CUDNN_DATA_FLOAT;
  return type;
}

absl::StatusOr<FilterDescFields> FilterFields(const Shape& shape, DType dtype, bool nhwc) {
  if (shape.size() != 4) {
    return absl::InvalidArgumentError(
        absl::StrCat("a filter must be (O, C / groups, KH, KW), got ", ShapeToString(shape)));
  }
  FilterDescFields fields;
  LS_ASSIGN_OR_RETURN(fields.dtype, CudnnDataType(dtype));
  if (nhwc) fields.format = CUDNN_TENSOR_NHWC;
  for (int i = 0; i < 4; ++i) fields.dims[i] = static_cast<int>(shape[i]);
  return fields;
}

absl::StatusOr<FilterDesc> FilterDesc::Create(const FilterDescFields& fields) {
  cudnnFilterDescriptor_t raw = nullptr;
  CUDNN_RETURN_IF_ERROR(cudnnCreateFilterDescriptor(&raw));
  FilterDesc desc;
  desc.desc_.reset(raw);
  CUDNN_RETURN_IF_ERROR(cudnnSetFilter4dDescriptor(raw, fields.dtype, fields.format, fields.dims[0],
                                                   fields.dims[1], fields.dims[2], fields.dims[3]));
  return desc;
}

absl::StatusOr<ConvDesc> ConvDesc::Create(const ConvDescFields& fields) {
  cudnnConvolutionDescriptor_t raw = nullptr;
  CUDNN_RETURN_IF_ERROR(cudnnCreateConvolutionDescriptor(&raw));
  ConvDesc desc;
  desc.desc_.reset(raw);
  CUDNN_RETURN_IF_ERROR(cudnnSetConvolution2dDescriptor(
      raw, fields.padding[0], fields.padding[1], fields.stride[0], fields.stride[1],
      fields.dilation[0], fields.dilation[1], CUDNN_CROSS_CORRELATION, fields.compute));
  CUDNN_RETURN_IF_ERROR(cudnnSetConvolutionGroupCount(raw, fields.groups));
  CUDNN_RETURN_IF_ERROR(cudnnSetConvolutionMathType(raw, fields.math));
  return desc;
}

absl::StatusOr<std::array<int, 4>> ConvForwardOutputDims(const ConvDesc& conv, const TensorDesc& x,
                                                         const FilterDesc& w) {
  std::array<int, 4> dims = {0, 0, 0, 0};
  CUDNN_RETURN_IF_ERROR(cudnnGetConvolution2dForwardOutputDim(
      conv.get(), x.get(), w.get(), &dims[0], &dims[1], &dims[2], &dims[3]));
  return dims;
}

}  // namespace lockstep::cuda
