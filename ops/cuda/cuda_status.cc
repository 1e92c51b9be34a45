#include "ops/cuda/cuda_status.h"

#include "absl/strings/str_cat.h"

namespace lockstep {

absl::Status CudaErrorStatus(cudaError_t error, const char* call, const char* file, int line) {
  return absl::InternalError(absl::StrCat("CUDA call ", call, " failed at ", file, ":", line, ": ",
                                          cudaGetErrorString(error)));
}

bool CudaAvailable() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
}

}  // namespace lockstep
