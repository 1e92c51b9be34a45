#pragma once

// The cuBLASLt description of a row-major MatMul, as plain fields that CPU tests check.
//
// cuBLASLt is column-major, and a row-major (R, C) array is the column-major (C, R) matrix: its
// transpose. So y = op(a) op(b) is computed as y^T = op(b)^T op(a)^T, with our b as cuBLASLt's
// A and our a as its B, each keeping its own transpose flag. No data moves.

#include <cublasLt.h>

#include <cstdint>

#include "core/status.h"
#include "core/tensor.h"

namespace lockstep::cuda {

// A column-major matrix layout: rows, columns and the leading dimension, as stored.
struct LtLayoutFields {
  uint64_t rows = 0;
  uint64_t cols = 0;
  int64_t ld = 0;
  bool operator==(const LtLayoutFields&) const = default;
};

struct MatMulLtFields {
  cublasOperation_t trans_a = CUBLAS_OP_N;  // applied to `a` (our b)
  cublasOperation_t trans_b = CUBLAS_OP_N;  // applied to `b` (our a)
  LtLayoutFields a;                         // our b: (K, N), or (N, K) when transposed
  LtLayoutFields b;                         // our a: (M, K), or (K, M) when transposed
  LtLayoutFields d;                         // y (M, N), also the C layout (beta is 0)
};

// The types of a MatMul on `dtype` operands: A, B, C and D all `dtype`, the products accumulated
// and alpha/beta given in float32 (for the 16-bit types that is what runs on tensor cores,
// PyTorch's choice; float32 uses TF32 tensor cores where allowed).
struct LtTypeFields {
  cudaDataType_t data = CUDA_R_32F;
  cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
  cudaDataType_t scale = CUDA_R_32F;
  bool operator==(const LtTypeFields&) const = default;
};
absl::StatusOr<LtTypeFields> MatMulLtTypes(DType dtype, bool allow_tf32);

// a and b are the row-major shapes of MatMul's inputs (2-D, inner dimensions agreeing).
MatMulLtFields RowMajorMatMulFields(const Shape& a, const Shape& b, bool transpose_a,
                                    bool transpose_b);

}  // namespace lockstep::cuda
