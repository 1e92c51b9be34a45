#include "ops/cuda/cudnn_cublas.h"

#include <map>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "ops/math_options.h"

namespace lockstep::cuda {
namespace {

int CurrentDevice() {
  int device = 0;
  cudaGetDevice(&device);
  return device;
}

}  // namespace

absl::Status CudnnErrorStatus(cudnnStatus_t status, const char* call, const char* file, int line) {
  return absl::InternalError(absl::StrCat("cuDNN call ", call, " failed at ", file, ":", line, ": ",
                                          cudnnGetErrorString(status)));
}

absl::Status CublasErrorStatus(cublasStatus_t status, const char* call, const char* file,
                               int line) {
  return absl::InternalError(absl::StrCat("cuBLAS call ", call, " failed at ", file, ":", line,
                                          ": ", cublasLtGetStatusName(status), " (",
                                          cublasLtGetStatusString(status), ")"));
}

bool AllowTf32(const KernelContext& ctx) {
  const MathOptions* math = ctx.config.Get<MathOptions>();
  return math == nullptr || math->allow_tf32;
}

bool Deterministic(const KernelContext& ctx) {
  const MathOptions* math = ctx.config.Get<MathOptions>();
  return math == nullptr || math->deterministic;
}

absl::StatusOr<cudnnHandle_t> CudnnHandle(cudaStream_t stream) {
  static std::mutex mutex;
  static auto* handles = new std::map<int, cudnnHandle_t>();
  std::lock_guard<std::mutex> lock(mutex);
  cudnnHandle_t& handle = (*handles)[CurrentDevice()];
  if (handle == nullptr) CUDNN_RETURN_IF_ERROR(cudnnCreate(&handle));
  CUDNN_RETURN_IF_ERROR(cudnnSetStream(handle, stream));
  return handle;
}

absl::StatusOr<cublasLtHandle_t> CublasLtHandle() {
  static std::mutex mutex;
  static auto* handles = new std::map<int, cublasLtHandle_t>();
  std::lock_guard<std::mutex> lock(mutex);
  cublasLtHandle_t& handle = (*handles)[CurrentDevice()];
  if (handle == nullptr) CUBLAS_RETURN_IF_ERROR(cublasLtCreate(&handle));
  return handle;
}

}  // namespace lockstep::cuda
