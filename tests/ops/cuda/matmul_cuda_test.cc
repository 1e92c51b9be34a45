// The cuBLASLt MatMul against the oneDNN one (skipped without a GPU), and the row-major to
// column-major description it is built from (runs everywhere).

#include <gtest/gtest.h>

#include <string>

#include "ops/cuda/matmul_lt.h"
#include "tests/testing/backend_compare.h"

namespace lockstep {
namespace {

using cuda::LtLayoutFields;

// TF32 keeps 10 mantissa bits of each product's factors (relative error ~5e-4 per product);
// over K ~ 500 random terms the sum's error stays well under 5e-3 of the largest output.
constexpr double kTf32Tolerance = 5e-3;

// a and b stored as op() needs them for y (m, n) = op(a) (m, k) * op(b) (k, n).
void ExpectMatMulMatches(int64_t m, int64_t k, int64_t n, bool transpose_a, bool transpose_b) {
  SCOPED_TRACE(::testing::Message() << "m=" << m << " k=" << k << " n=" << n << " transpose_a="
                                    << transpose_a << " transpose_b=" << transpose_b);
  const Shape a = transpose_a ? Shape{k, m} : Shape{m, k};
  const Shape b = transpose_b ? Shape{n, k} : Shape{k, n};
  testing::ExpectCudaOpMatchesCpu("MatMul", {{"a", a}, {"b", b}},
                                  {{"transpose_a", transpose_a}, {"transpose_b", transpose_b}},
                                  kTf32Tolerance);
}

TEST(MatMulCudaTest, EveryTransposeCombination) {
  LS_SKIP_WITHOUT_GPU();
  for (bool transpose_a : {false, true}) {
    for (bool transpose_b : {false, true})
      ExpectMatMulMatches(33, 47, 29, transpose_a, transpose_b);
  }
}

// A Dense layer of 512 -> 1000 on a batch of 64, forward and both gradients, as autodiff
// writes them (ops/matmul.cc).
TEST(MatMulCudaTest, DenseLayerAndItsGradients) {
  LS_SKIP_WITHOUT_GPU();
  ExpectMatMulMatches(64, 512, 1000, false, false);  // y = x w
  ExpectMatMulMatches(64, 1000, 512, false, true);   // dx = dy w^T
  ExpectMatMulMatches(512, 64, 1000, true, false);   // dw = x^T dy
}

TEST(MatMulLtFieldsTest, NoTranspose) {
  // a (2, 3) * b (3, 5): cuBLASLt computes y^T (5, 2) = b^T (5, 3) a^T (3, 2).
  const cuda::MatMulLtFields f = cuda::RowMajorMatMulFields({2, 3}, {3, 5}, false, false);
  EXPECT_EQ(f.trans_a, CUBLAS_OP_N);
  EXPECT_EQ(f.trans_b, CUBLAS_OP_N);
  EXPECT_EQ(f.a, (LtLayoutFields{.rows = 5, .cols = 3, .ld = 5}));
  EXPECT_EQ(f.b, (LtLayoutFields{.rows = 3, .cols = 2, .ld = 3}));
  EXPECT_EQ(f.d, (LtLayoutFields{.rows = 5, .cols = 2, .ld = 5}));
}

TEST(MatMulLtFieldsTest, TransposeFlagsSwapWithTheOperands) {
  // a (3, 2) transposed, b (5, 3) transposed: y (2, 5) still.
  const cuda::MatMulLtFields f = cuda::RowMajorMatMulFields({3, 2}, {5, 3}, true, true);
  EXPECT_EQ(f.trans_a, CUBLAS_OP_T);
  EXPECT_EQ(f.trans_b, CUBLAS_OP_T);
  EXPECT_EQ(f.a, (LtLayoutFields{.rows = 3, .cols = 5, .ld = 3}));
  EXPECT_EQ(f.b, (LtLayoutFields{.rows = 2, .cols = 3, .ld = 2}));
  EXPECT_EQ(f.d, (LtLayoutFields{.rows = 5, .cols = 2, .ld = 5}));
}

TEST(MatMulLtFieldsTest, OneTransposed) {
  // Only b transposed: cuBLASLt's A; only a transposed: cuBLASLt's B.
  const cuda::MatMulLtFields tb = cuda::RowMajorMatMulFields({2, 3}, {5, 3}, false, true);
  EXPECT_EQ(tb.trans_a, CUBLAS_OP_T);
  EXPECT_EQ(tb.trans_b, CUBLAS_OP_N);
  EXPECT_EQ(tb.d, (LtLayoutFields{.rows = 5, .cols = 2, .ld = 5}));
  const cuda::MatMulLtFields ta = cuda::RowMajorMatMulFields({3, 2}, {3, 5}, true, false);
  EXPECT_EQ(ta.trans_a, CUBLAS_OP_N);
  EXPECT_EQ(ta.trans_b, CUBLAS_OP_T);
  EXPECT_EQ(ta.d, (LtLayoutFields{.rows = 5, .cols = 2, .ld = 5}));
}

// 16-bit operands accumulate in float32 (tensor cores, no TF32 question); float32 uses TF32
// only where allowed; other dtypes are errors naming the dtype.
TEST(MatMulLtFieldsTest, TypesByDType) {
  const auto types = [](DType dtype, bool tf32) {
    absl::StatusOr<cuda::LtTypeFields> fields = cuda::MatMulLtTypes(dtype, tf32);
    EXPECT_TRUE(fields.ok()) << fields.status();
    return fields.value_or(cuda::LtTypeFields{});
  };
  EXPECT_EQ(types(DType::kF32, true).compute, CUBLAS_COMPUTE_32F_FAST_TF32);
  EXPECT_EQ(types(DType::kF32, false).compute, CUBLAS_COMPUTE_32F);
  for (bool tf32 : {false, true}) {
    const cuda::LtTypeFields bf16 = types(DType::kBF16, tf32);
    EXPECT_EQ(bf16.data, CUDA_R_16BF);
    EXPECT_EQ(bf16.compute, CUBLAS_COMPUTE_32F);
    EXPECT_EQ(bf16.scale, CUDA_R_32F);
    const cuda::LtTypeFields f16 = types(DType::kF16, tf32);
    EXPECT_EQ(f16.data, CUDA_R_16F);
    EXPECT_EQ(f16.compute, CUBLAS_COMPUTE_32F);
    EXPECT_EQ(f16.scale, CUDA_R_32F);
  }
  absl::StatusOr<cuda::LtTypeFields> i32 = cuda::MatMulLtTypes(DType::kI32, true);
  ASSERT_FALSE(i32.ok());
  EXPECT_NE(i32.status().message().find("i32"), std::string::npos) << i32.status();
}

}  // namespace
}  // namespace lockstep
