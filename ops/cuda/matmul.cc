// MatMul on cuBLASLt: descriptors and the algorithm are chosen once, when the kernel is built;
// Run is one cublasLtMatmul on the compute stream. f32 inputs use TF32 tensor cores
// (CUBLAS_COMPUTE_32F_FAST_TF32), as PyTorch does with allow_tf32 for matmuls, unless
// cuda::AllowTf32 says no; bf16 and f16 inputs run on tensor cores accumulating in float32
// (CUBLAS_COMPUTE_32F).

#include <memory>
#include <type_traits>

#include "core/allocator.h"
#include "graph/kernel.h"
#include "ops/cuda/cudnn_cublas.h"
#include "ops/cuda/matmul_lt.h"

namespace lockstep {
namespace cuda {
namespace {

// The column-major view of a row-major (rows, cols) array.
LtLayoutFields ColumnMajorView(const Shape& row_major) {
  return {.rows = static_cast<uint64_t>(row_major[1]),
          .cols = static_cast<uint64_t>(row_major[0]),
          .ld = row_major[1]};
}

}  // namespace

MatMulLtFields RowMajorMatMulFields(const Shape& a, const Shape& b, bool transpose_a,
                                    bool transpose_b) {
  const int64_t m = a[transpose_a ? 1 : 0];
  const int64_t n = b[transpose_b ? 0 : 1];
  return {.trans_a = transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N,
          .trans_b = transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N,
          .a = ColumnMajorView(b),
          .b = ColumnMajorView(a),
          .d = ColumnMajorView({m, n})};
}

absl::StatusOr<LtTypeFields> MatMulLtTypes(DType dtype, bool allow_tf32) {
  switch (dtype) {
    case DType::kF32:
      return LtTypeFields{
          .data = CUDA_R_32F,
          .compute = allow_tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F};
    case DType::kBF16:
      return LtTypeFields{.data = CUDA_R_16BF};
    case DType::kF16:
      return LtTypeFields{.data = CUDA_R_16F};
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("cuBLASLt MatMul of dtype ", DTypeName(dtype), " is not implemented"));
  }
}

}  // namespace cuda

namespace {

// Owners of cuBLASLt descriptors, destroyed with their cublasLt*Destroy function.
template <typename Handle, cublasStatus_t (*kDestroy)(Handle)>
struct LtDestroy {
  void operator()(Handle handle) const { kDestroy(handle); }
};
template <typename Handle, cublasStatus_t (*kDestroy)(Handle)>
using LtOwner = std::unique_ptr<std::remove_pointer_t<Handle>, LtDestroy<Handle, kDestroy>>;
using MatmulDesc = LtOwner<cublasLtMatmulDesc_t, cublasLtMatmulDescDestroy>;
using MatrixLayout = LtOwner<cublasLtMatrixLayout_t, cublasLtMatrixLayoutDestroy>;
using Preference = LtOwner<cublasLtMatmulPreference_t, cublasLtMatmulPreferenceDestroy>;

// The most scratch the algorithm search may ask for; NVIDIA suggests 32 MiB on Hopper. The
// kernel asks the arena only for what the chosen algorithm needs.
constexpr size_t kMaxWorkspaceBytes = size_t{32} << 20;

absl::StatusOr<MatrixLayout> MakeLayout(const cuda::LtLayoutFields& fields, cudaDataType_t type) {
  cublasLtMatrixLayout_t layout = nullptr;
  CUBLAS_RETURN_IF_ERROR(
      cublasLtMatrixLayoutCreate(&layout, type, fields.rows, fields.cols, fields.ld));
  return MatrixLayout(layout);
}

absl::StatusOr<MatmulDesc> MakeMatmulDesc(const cuda::MatMulLtFields& fields,
                                          const cuda::LtTypeFields& types) {
  cublasLtMatmulDesc_t desc = nullptr;
  CUBLAS_RETURN_IF_ERROR(cublasLtMatmulDescCreate(&desc, types.compute, types.scale));
  MatmulDesc owned(desc);
  CUBLAS_RETURN_IF_ERROR(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA,
                                                        &fields.trans_a, sizeof(fields.trans_a)));
  CUBLAS_RETURN_IF_ERROR(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB,
                                                        &fields.trans_b, sizeof(fields.trans_b)));
  return owned;
}

class MatMulKernel : public Kernel {
 public:
  static absl::StatusOr<std::unique_ptr<Kernel>> Create(const Node& node, const KernelContext& ctx);
  size_t WorkspaceBytes() const override { return workspace_bytes_; }
  absl::Status Run(const KernelIO& io) override;

 private:
  absl::Status ChooseAlgorithm();

  cublasLtHandle_t handle_ = nullptr;
  MatmulDesc desc_;
  MatrixLayout a_, b_, d_;  // cuBLASLt's A (our b), B (our a) and C = D (our y)
  cublasLtMatmulAlgo_t algo_{};
  size_t workspace_bytes_ = 0;
};

absl::StatusOr<std::unique_ptr<Kernel>> MatMulKernel::Create(const Node& node,
                                                             const KernelContext& ctx) {
  const cuda::MatMulLtFields fields = cuda::RowMajorMatMulFields(
      node.inputs[0]->shape(), node.inputs[1]->shape(), node.attrs.GetBool("transpose_a"),
      node.attrs.GetBool("transpose_b"));
  const absl::StatusOr<cuda::LtTypeFields> types =
      cuda::MatMulLtTypes(node.output()->dtype(), cuda::AllowTf32(ctx));
  if (!types.ok()) return Annotate(types.status(), node.Describe());
  auto kernel = std::make_unique<MatMulKernel>();
  LS_ASSIGN_OR_RETURN(kernel->handle_, cuda::CublasLtHandle());
  LS_ASSIGN_OR_RETURN(kernel->desc_, MakeMatmulDesc(fields, *types));
  LS_ASSIGN_OR_RETURN(kernel->a_, MakeLayout(fields.a, types->data));
  LS_ASSIGN_OR_RETURN(kernel->b_, MakeLayout(fields.b, types->data));
  LS_ASSIGN_OR_RETURN(kernel->d_, MakeLayout(fields.d, types->data));
  LS_RETURN_IF_ERROR(Annotate(kernel->ChooseAlgorithm(), node.Describe()));
  return kernel;
}

// The search's limits: kMaxWorkspaceBytes of scratch, and operands aligned only as the memory
// plan guarantees (views into the arena and flat buffers start at kCpuAlignment multiples);
// left unset, cuBLASLt would assume 256 bytes.
absl::StatusOr<Preference> MakePreference() {
  cublasLtMatmulPreference_t preference = nullptr;
  CUBLAS_RETURN_IF_ERROR(cublasLtMatmulPreferenceCreate(&preference));
  Preference owned(preference);
  CUBLAS_RETURN_IF_ERROR(
      cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                           &kMaxWorkspaceBytes, sizeof(kMaxWorkspaceBytes)));
  const uint32_t alignment = kCpuAlignment;
  for (cublasLtMatmulPreferenceAttributes_t operand :
       {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES}) {
    CUBLAS_RETURN_IF_ERROR(
        cublasLtMatmulPreferenceSetAttribute(preference, operand, &alignment, sizeof(alignment)));
  }
  return owned;
}

// cuBLASLt's first heuristic pick.
absl::Status MatMulKernel::ChooseAlgorithm() {
  LS_ASSIGN_OR_RETURN(Preference preference, MakePreference());
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  CUBLAS_RETURN_IF_ERROR(cublasLtMatmulAlgoGetHeuristic(handle_, desc_.get(), a_.get(), b_.get(),
                                                        d_.get(), d_.get(), preference.get(), 1,
                                                        &result, &found));
  if (found == 0) return absl::NotFoundError("cuBLASLt has no algorithm for this MatMul");
  algo_ = result.algo;
  workspace_bytes_ = result.workspaceSize;
  return absl::OkStatus();
}

absl::Status MatMulKernel::Run(const KernelIO& io) {
  const float alpha = 1.0f, beta = 0.0f;
  CUBLAS_RETURN_IF_ERROR(cublasLtMatmul(handle_, desc_.get(), &alpha,
                                        io.inputs[1].raw_data(),  // b: (K, N) or (N, K)
                                        a_.get(),
                                        io.inputs[0].raw_data(),  // a: (M, K) or (K, M)
                                        b_.get(), &beta,
                                        io.outputs[0].raw_data(),  // y: (M, N), unread (beta 0)
                                        d_.get(),
                                        io.outputs[0].raw_data(),  // y: (M, N)
                                        d_.get(), &algo_, io.workspace, workspace_bytes_,
                                        cuda::StreamOf(io)));
  return absl::OkStatus();
}

[[maybe_unused]] const bool kRegistered = RegisterFloatKernels(
    {.op = "MatMul", .device = DeviceType::kCUDA, .create = &MatMulKernel::Create});

}  // namespace
}  // namespace lockstep
