#pragma once

// CUDA runtime calls go through CUDA_RETURN_IF_ERROR, which turns a failure into a Status with
// the call text and file:line. Part of the CUDA backend (ops/cuda).

#include <cuda_runtime.h>

#include "core/status.h"

namespace lockstep {

absl::Status CudaErrorStatus(cudaError_t error, const char* call, const char* file, int line);
// True when the CUDA runtime sees at least one device.
bool CudaAvailable();

}  // namespace lockstep

#define CUDA_RETURN_IF_ERROR(expr)                                                   \
  do {                                                                               \
    cudaError_t ls_cuda_error_ = (expr);                                             \
    if (ls_cuda_error_ != cudaSuccess) {                                             \
      return ::lockstep::CudaErrorStatus(ls_cuda_error_, #expr, __FILE__, __LINE__); \
    }                                                                                \
  } while (0)
