#include "ops/cuda/cudnn_graph.h"

#include <algorithm>
#include <vector>

#include "ops/cuda/cudnn_cublas.h"

namespace lockstep::cuda {
namespace {

// The tensors' ids in a plan's variant pack.
constexpr int64_t kX = 1, kW = 2, kY = 3;
// What the executor's buffers promise at least (they are 256-byte aligned); cuDNN's vectorized
// kernels ask for 16.
constexpr int64_t kByteAlignment = 16;

absl::StatusOr<BackendDesc> Tensor(const GraphTensorFields& fields, int64_t id) {
  LS_ASSIGN_OR_RETURN(BackendDesc desc, BackendDesc::Create(CUDNN_BACKEND_TENSOR_DESCRIPTOR));
  LS_RETURN_IF_ERROR(desc.Set(CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &fields.dtype));
  LS_RETURN_IF_ERROR(
      desc.Set(CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, fields.dims.data()));
  LS_RETURN_IF_ERROR(
      desc.Set(CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, fields.strides.data()));
  LS_RETURN_IF_ERROR(desc.Set(CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &id));
  LS_RETURN_IF_ERROR(
      desc.Set(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &kByteAlignment));
  LS_RETURN_IF_ERROR(desc.Finalize());
  return desc;
}

absl::StatusOr<BackendDesc> Convolution(const ConvDescFields& fields) {
  LS_ASSIGN_OR_RETURN(BackendDesc desc, BackendDesc::Create(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR));
  const int64_t spatial_dims = 2;
  const cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  const std::array<int64_t, 2> padding = {fields.padding[0], fields.padding[1]};
  const std::array<int64_t, 2> stride = {fields.stride[0], fields.stride[1]};
  const std::array<int64_t, 2> dilation = {fields.dilation[0], fields.dilation[1]};
  LS_RETURN_IF_ERROR(
      desc.Set(CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &fields.compute));
  LS_RETURN_IF_ERROR(
      desc.Set(CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode));
  LS_RETURN_IF_ERROR(
      desc.Set(CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &spatial_dims));
  LS_RETURN_IF_ERROR(
      desc.Set(CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, 2, dilation.data()));
  LS_RETURN_IF_ERROR(
      desc.Set(CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, 2, stride.data()));
  LS_RETURN_IF_ERROR(
      desc.Set(CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, 2, padding.data()));
  LS_RETURN_IF_ERROR(
      desc.Set(CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, 2, padding.data()));
  LS_RETURN_IF_ERROR(desc.Finalize());
  return desc;
}

// The operation graph of the one forward convolution y = conv(x, w).
absl::StatusOr<BackendDesc> ForwardGraph(cudnnHandle_t handle, const GraphTensorFields& x,
                                         const GraphTensorFields& w, const GraphTensorFields& y,
                                         const ConvDescFields& conv) {
  LS_ASSIGN_OR_RETURN(BackendDesc x_desc, Tensor(x, kX));
  LS_ASSIGN_OR_RETURN(BackendDesc w_desc, Tensor(w, kW));
  LS_ASSIGN_OR_RETURN(BackendDesc y_desc, Tensor(y, kY));
  LS_ASSIGN_OR_RETURN(BackendDesc conv_desc, Convolution(conv));
  LS_ASSIGN_OR_RETURN(BackendDesc op,
                      BackendDesc::Create(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR));
  const float one = 1.0f, zero = 0.0f;  // y = conv(...), overwriting what was there
  for (const auto& [name, desc] :
       {std::pair{CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, x_desc.get()},
        {CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, w_desc.get()},
        {CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, y_desc.get()},
        {CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, conv_desc.get()}}) {
    LS_RETURN_IF_ERROR(op.Set(name, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &desc));
  }
  LS_RETURN_IF_ERROR(
      op.Set(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_TYPE_FLOAT, 1, &one));
  LS_RETURN_IF_ERROR(
      op.Set(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, CUDNN_TYPE_FLOAT, 1, &zero));
  LS_RETURN_IF_ERROR(op.Finalize());
  LS_ASSIGN_OR_RETURN(BackendDesc graph,
                      BackendDesc::Create(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR));
  cudnnBackendDescriptor_t op_raw = op.get();
  LS_RETURN_IF_ERROR(
      graph.Set(CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &op_raw));
  LS_RETURN_IF_ERROR(graph.Set(CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle));
  LS_RETURN_IF_ERROR(graph.Finalize());
  return graph;
}

// The engine configurations cuDNN's heuristics (mode A) rank for `graph`, fastest first.
absl::StatusOr<std::vector<BackendDesc>> RankedConfigs(const BackendDesc& graph) {
  LS_ASSIGN_OR_RETURN(BackendDesc heuristics,
                      BackendDesc::Create(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR));
  cudnnBackendDescriptor_t graph_raw = graph.get();
  const cudnnBackendHeurMode_t mode = CUDNN_HEUR_MODE_A;
  LS_RETURN_IF_ERROR(heuristics.Set(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH,
                                    CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &graph_raw));
  LS_RETURN_IF_ERROR(heuristics.Set(CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode));
  LS_RETURN_IF_ERROR(heuristics.Finalize());
  int64_t count = 0;
  CUDNN_RETURN_IF_ERROR(cudnnBackendGetAttribute(heuristics.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                                 CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count,
                                                 nullptr));
  std::vector<BackendDesc> configs;
  std::vector<cudnnBackendDescriptor_t> raw;
  for (int64_t i = 0; i < count; ++i) {
    LS_ASSIGN_OR_RETURN(BackendDesc config,
                        BackendDesc::Create(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR));
    raw.push_back(config.get());
    configs.push_back(std::move(config));
  }
  CUDNN_RETURN_IF_ERROR(cudnnBackendGetAttribute(heuristics.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                                 CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &count,
                                                 raw.data()));
  configs.resize(std::min<size_t>(configs.size(), count));
  return configs;
}

// Whether the configuration's engine may sum in another order each run (atomics).
absl::StatusOr<bool> Nondeterministic(const BackendDesc& config) {
  LS_ASSIGN_OR_RETURN(BackendDesc engine, BackendDesc::Create(CUDNN_BACKEND_ENGINE_DESCRIPTOR));
  cudnnBackendDescriptor_t engine_raw = engine.get();
  int64_t got = 0;
  CUDNN_RETURN_IF_ERROR(cudnnBackendGetAttribute(config.get(), CUDNN_ATTR_ENGINECFG_ENGINE,
                                                 CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &got,
                                                 &engine_raw));
  std::array<cudnnBackendNumericalNote_t, CUDNN_NUMERICAL_NOTE_TYPE_COUNT> notes;
  CUDNN_RETURN_IF_ERROR(cudnnBackendGetAttribute(engine.get(), CUDNN_ATTR_ENGINE_NUMERICAL_NOTE,
                                                 CUDNN_TYPE_NUMERICAL_NOTE, notes.size(), &got,
                                                 notes.data()));
  return std::find(notes.begin(), notes.begin() + got, CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC) !=
         notes.begin() + got;
}

}  // namespace

GraphTensorFields GraphTensor(const TensorDescFields& tensor) {
  GraphTensorFields fields{.dtype = tensor.dtype};
  std::copy(tensor.dims.begin(), tensor.dims.end(), fields.dims.begin());
  std::copy(tensor.strides.begin(), tensor.strides.end(), fields.strides.begin());
  return fields;
}

GraphTensorFields GraphTensor(const FilterDescFields& filter) {
  GraphTensorFields fields{.dtype = filter.dtype};
  std::copy(filter.dims.begin(), filter.dims.end(), fields.dims.begin());
  const auto [o, c, kh, kw] = fields.dims;
  fields.strides = filter.format == CUDNN_TENSOR_NHWC
                       ? std::array<int64_t, 4>{kh * kw * c, 1, kw * c, c}
                       : std::array<int64_t, 4>{c * kh * kw, kh * kw, kw, 1};
  return fields;
}

bool ConvForwardUsesGraph(const TensorDescFields& x, bool nhwc, const ConvDescFields& conv) {
  const bool sixteen_bits = x.dtype == CUDNN_DATA_HALF || x.dtype == CUDNN_DATA_BFLOAT16;
  return sixteen_bits && nhwc && x.dims[1] <= 4 && conv.groups == 1;
}

absl::StatusOr<BackendDesc> BackendDesc::Create(cudnnBackendDescriptorType_t type) {
  cudnnBackendDescriptor_t raw = nullptr;
  CUDNN_RETURN_IF_ERROR(cudnnBackendCreateDescriptor(type, &raw));
  BackendDesc desc;
  desc.desc_.reset(raw);
  return desc;
}

absl::Status BackendDesc::Set(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type,
                              int64_t count, const void* values) {
  CUDNN_RETURN_IF_ERROR(cudnnBackendSetAttribute(get(), name, type, count, values));
  return absl::OkStatus();
}

absl::Status BackendDesc::Finalize() {
  CUDNN_RETURN_IF_ERROR(cudnnBackendFinalize(get()));
  return absl::OkStatus();
}

absl::StatusOr<ConvForwardPlan> ConvForwardPlan::Create(cudnnHandle_t handle,
                                                        const GraphTensorFields& x,
                                                        const GraphTensorFields& w,
                                                        const GraphTensorFields& y,
                                                        const ConvDescFields& conv,
                                                        size_t max_workspace, bool deterministic) {
  LS_ASSIGN_OR_RETURN(BackendDesc graph, ForwardGraph(handle, x, w, y, conv));
  LS_ASSIGN_OR_RETURN(std::vector<BackendDesc> configs, RankedConfigs(graph));
  for (const BackendDesc& config : configs) {
    if (deterministic) {
      LS_ASSIGN_OR_RETURN(bool nondeterministic, Nondeterministic(config));
      if (nondeterministic) continue;
    }
    LS_ASSIGN_OR_RETURN(BackendDesc plan,
                        BackendDesc::Create(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR));
    cudnnBackendDescriptor_t config_raw = config.get();
    LS_RETURN_IF_ERROR(plan.Set(CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle));
    LS_RETURN_IF_ERROR(plan.Set(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG,
                                CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &config_raw));
    if (!plan.Finalize().ok()) continue;  // this engine cannot run the shape; the next may
    int64_t workspace = 0, got = 0;
    CUDNN_RETURN_IF_ERROR(cudnnBackendGetAttribute(plan.get(),
                                                   CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                                                   CUDNN_TYPE_INT64, 1, &got, &workspace));
    if (static_cast<size_t>(workspace) > max_workspace) continue;
    return ConvForwardPlan(std::move(plan), static_cast<size_t>(workspace));
  }
  return absl::UnimplementedError(
      absl::StrCat("cuDNN's graph API offers no ", deterministic ? "deterministic " : "",
                   "engine for this convolution within ", max_workspace >> 20,
                   " MiB of workspace (of ", configs.size(), " ranked)"));
}

absl::Status ConvForwardPlan::Run(cudnnHandle_t handle, const void* x, const void* w, void* y,
                                  void* workspace) const {
  LS_ASSIGN_OR_RETURN(BackendDesc pack, BackendDesc::Create(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR));
  const std::array<int64_t, 3> ids = {kX, kW, kY};
  const std::array<void*, 3> pointers = {const_cast<void*>(x), const_cast<void*>(w), y};
  LS_RETURN_IF_ERROR(pack.Set(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 3, ids.data()));
  LS_RETURN_IF_ERROR(
      pack.Set(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 3, pointers.data()));
  LS_RETURN_IF_ERROR(
      pack.Set(CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &workspace));
  LS_RETURN_IF_ERROR(pack.Finalize());
  CUDNN_RETURN_IF_ERROR(cudnnBackendExecute(handle, plan_.get(), pack.get()));
  return absl::OkStatus();
}

}  // namespace lockstep::cuda
