#pragma once

// How the host side of the CUDA kernels calls cuDNN and cuBLASLt: the per-device library handles
// bound to the kernel's stream, error wrappers that name the call and file:line, and the math
// options that pick their algorithms (TF32, determinism). The device side's building blocks are
// in device_loops.cuh. Only compiled into CUDA builds.

#include <cublasLt.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <cstdint>

#include "core/status.h"
#include "graph/kernel.h"
#include "ops/cuda/cuda_status.h"

namespace lockstep::cuda {

absl::Status CudnnErrorStatus(cudnnStatus_t status, const char* call, const char* file, int line);
absl::Status CublasErrorStatus(cublasStatus_t status, const char* call, const char* file, int line);

// Whether float32 convolutions and matmuls may use TF32 tensor cores: the compilation's
// MathOptions (ops/math_options.h), allowed when it sets none. Read when a kernel is
// built.
bool AllowTf32(const KernelContext& ctx);
// Whether kernels must repeat their bits run after run (MathOptions::deterministic); yes when
// the compilation sets nothing.
bool Deterministic(const KernelContext& ctx);

inline cudaStream_t StreamOf(const KernelIO& io) { return static_cast<cudaStream_t>(io.stream); }

// The current device's cuDNN handle (one per device, made on first use), set to `stream`.
absl::StatusOr<cudnnHandle_t> CudnnHandle(cudaStream_t stream);
// The current device's cuBLASLt handle (one per device, made on first use).
absl::StatusOr<cublasLtHandle_t> CublasLtHandle();

}  // namespace lockstep::cuda

#define CUDNN_RETURN_IF_ERROR(expr)                                                           \
  do {                                                                                        \
    cudnnStatus_t ls_cudnn_status_ = (expr);                                                  \
    if (ls_cudnn_status_ != CUDNN_STATUS_SUCCESS) {                                           \
      return ::lockstep::cuda::CudnnErrorStatus(ls_cudnn_status_, #expr, __FILE__, __LINE__); \
    }                                                                                         \
  } while (0)

#define CUBLAS_RETURN_IF_ERROR(expr)                                                            \
  do {                                                                                          \
    cublasStatus_t ls_cublas_status_ = (expr);                                                  \
    if (ls_cublas_status_ != CUBLAS_STATUS_SUCCESS) {                                           \
      return ::lockstep::cuda::CublasErrorStatus(ls_cublas_status_, #expr, __FILE__, __LINE__); \
    }                                                                                           \
  } while (0)

// After a kernel launch: a bad configuration or an earlier asynchronous fault, as a Status.
#define CUDA_RETURN_IF_LAUNCH_FAILED() CUDA_RETURN_IF_ERROR(cudaGetLastError())
