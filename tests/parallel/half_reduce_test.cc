// bf16 and f16 reductions over MPI under mpirun -n 2 and -n 4: MPI has no 16-bit float
// arithmetic, so the communicator's own operations combine each pair of elements in float32 and
// round the result (to nearest even) to the 16-bit dtype, one rounding per hop, as NCCL does.
//
// Bounds, with u the unit roundoff (2^-8 for bf16, 2^-11 for f16) and gamma(k) = k u / (1 - k u):
// a sum over n ranks takes n - 1 additions in some tree, each rounded once, so it is within
// gamma(n - 1) * sum|x| of the exact sum (Higham, "Accuracy and Stability of Numerical
// Algorithms", 4.2), and with two ranks it is exactly the float32 sum rounded once; the average
// rounds once more (gamma(n) * sum|x| / n); max and min are exact. Every rank gets the same bits.

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "core/half.h"
#include "parallel/mpi_communicator.h"
#include "tests/parallel/mpi_test_main.h"

namespace lockstep::parallel {
namespace {

// Rank `rank`'s element i: signs mixed, magnitudes over seven binades up to 8.
template <typename Half>
Half ValueOf(int rank, int64_t i) {
  const float x = std::sin(0.37f * static_cast<float>(i) + 1.3f * static_cast<float>(rank)) *
                  std::exp2(static_cast<float>((i + rank) % 7 - 3));
  return FloatTo<Half>(x);
}

template <typename Half>
Tensor RankValues(int rank, int64_t count) {
  Tensor tensor = Tensor::Empty({count}, DTypeOf<Half>());
  for (int64_t i = 0; i < count; ++i) tensor.data<Half>()[i] = ValueOf<Half>(rank, i);
  return tensor;
}

template <typename Half>
double UnitRoundoff() {
  return std::is_same_v<Half, BFloat16> ? 0x1p-8 : 0x1p-11;
}

template <typename Half>
double Gamma(int k) {
  const double ku = k * UnitRoundoff<Half>();
  return ku / (1.0 - ku);
}

// `result` element i is element first + i reduced over `size` ranks, within the bounds above.
template <typename Half>
void ExpectReduced(const Tensor& result, ReduceOp op, int size, int64_t first = 0) {
  for (int64_t i = 0; i < result.numel(); ++i) {
    double sum = 0.0, magnitude = 0.0;
    float high = -std::numeric_limits<float>::infinity(), low = -high;
    for (int rank = 0; rank < size; ++rank) {
      const float x = ToFloat(ValueOf<Half>(rank, first + i));
      sum += x;
      magnitude += std::fabs(x);
      high = std::max(high, x);
      low = std::min(low, x);
    }
    const float got = ToFloat(result.data<Half>()[i]);
    const std::string where = absl::StrCat(ReduceOpName(op), " element ", first + i);
    switch (op) {
      case ReduceOp::kMax:
        ASSERT_EQ(got, high) << where;
        break;
      case ReduceOp::kMin:
        ASSERT_EQ(got, low) << where;
        break;
      case ReduceOp::kSum:
        if (size == 2) {
          const float pair =
              ToFloat(ValueOf<Half>(0, first + i)) + ToFloat(ValueOf<Half>(1, first + i));
          ASSERT_EQ(got, ToFloat(FloatTo<Half>(pair))) << where;
        }
        ASSERT_LE(std::fabs(got - sum), Gamma<Half>(size - 1) * magnitude) << where;
        break;
      case ReduceOp::kAvg:
        ASSERT_LE(std::fabs(got - sum / size), Gamma<Half>(size) * magnitude / size) << where;
        break;
    }
  }
}

// Every rank holds rank 0's bits.
void ExpectSameOnEveryRank(Communicator& comm, const Tensor& result) {
  Tensor all = Tensor::Empty({comm.size(), result.numel()}, result.dtype());
  ASSERT_TRUE(comm.AllGather(result, all).ok());
  for (int rank = 1; rank < comm.size(); ++rank) {
    EXPECT_EQ(
        std::memcmp(all.raw_data(), static_cast<char*>(all.raw_data()) + rank * result.nbytes(),
                    result.nbytes()),
        0)
        << "rank " << rank << " reduced to other bits than rank 0";
  }
}

template <typename Half>
class HalfReduceTest : public testing::Test {};
using HalfTypes = testing::Types<BFloat16, Float16>;
TYPED_TEST_SUITE(HalfReduceTest, HalfTypes);

TYPED_TEST(HalfReduceTest, AllReduceEveryOp) {
  using Half = TypeParam;
  Communicator& world = *TestContext().HostWorld();
  for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAvg, ReduceOp::kMax, ReduceOp::kMin}) {
    Tensor tensor = RankValues<Half>(world.rank(), 1001);
    ASSERT_TRUE(world.AllReduce(tensor, op).ok()) << ReduceOpName(op);
    ExpectReduced<Half>(tensor, op, world.size());
    ExpectSameOnEveryRank(world, tensor);
  }
}

// In segments of 1000 bytes (500 elements: two full and a partial one), and in chunks of at
// most 700 elements under segments of 8000 bytes.
TYPED_TEST(HalfReduceTest, SegmentedAllReduce) {
  LOCKSTEP_SKIP_UNLESS_MPI();
  using Half = TypeParam;
  for (auto [max_count, segment_bytes] :
       {std::pair<int64_t, size_t>{MpiCommunicator::kMaxCount, 1000}, {700, 8000}}) {
    absl::StatusOr<std::shared_ptr<MpiCommunicator>> created =
        MpiCommunicator::Create(MPI_COMM_WORLD, max_count, segment_bytes);
    ASSERT_TRUE(created.ok()) << created.status();
    MpiCommunicator& comm = **created;
    Tensor tensor = RankValues<Half>(comm.rank(), 1250);
    ASSERT_TRUE(comm.AllReduce(tensor, ReduceOp::kSum).ok());
    ExpectReduced<Half>(tensor, ReduceOp::kSum, comm.size());
    ExpectSameOnEveryRank(comm, tensor);
  }
}

TYPED_TEST(HalfReduceTest, ReduceScatterSums) {
  using Half = TypeParam;
  Communicator& world = *TestContext().HostWorld();
  constexpr int64_t kBlock = 9;
  Tensor output = Tensor::Empty({kBlock}, DTypeOf<Half>());
  ASSERT_TRUE(world
                  .ReduceScatter(RankValues<Half>(world.rank(), world.size() * kBlock), output,
                                 ReduceOp::kSum)
                  .ok());
  ExpectReduced<Half>(output, ReduceOp::kSum, world.size(), world.rank() * kBlock);
}

}  // namespace
}  // namespace lockstep::parallel
