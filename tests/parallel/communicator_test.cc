// The host communicator under mpirun -n 2 and -n 4 (MPI) and lockstep-run -n 2 and -n 4 (gloo):
// every collective and reduce op on rank-dependent values, checked exactly; MPI's chunked
// large-count paths; errors that every rank reports alike.

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <string>
#include <type_traits>

#include "core/logging.h"
#include "parallel/collective_queue.h"
#include "parallel/gloo_communicator.h"
#include "parallel/mpi_communicator.h"
#include "parallel/timed_communicator.h"
#include "tests/parallel/mpi_test_main.h"

namespace lockstep::parallel {
namespace {

Communicator& World() { return *TestContext().HostWorld(); }

// What rank `rank` holds at element `i`: small integers (quarters in floating types), so that
// every sum is exact whatever order MPI adds in.
template <typename T>
T ValueOf(int rank, int64_t i) {
  T value = static_cast<T>((rank * 7 + i * 3) % 11 - 5);
  if constexpr (std::is_floating_point_v<T>) value += static_cast<T>(0.25 * rank);
  return value;
}

template <typename T>
Tensor RankValues(int rank, int64_t count, int64_t first = 0) {
  Tensor tensor = Tensor::Empty({count}, DTypeOf<T>());
  for (int64_t i = 0; i < count; ++i) tensor.data<T>()[i] = ValueOf<T>(rank, first + i);
  return tensor;
}

// Element i reduced over every rank of `size`, as the communicator must compute it.
template <typename T>
T Reduced(ReduceOp op, int size, int64_t i) {
  T result = ValueOf<T>(0, i);
  for (int rank = 1; rank < size; ++rank) {
    T value = ValueOf<T>(rank, i);
    result = op == ReduceOp::kMax   ? std::max(result, value)
             : op == ReduceOp::kMin ? std::min(result, value)
                                    : result + value;
  }
  return op == ReduceOp::kAvg ? result / static_cast<T>(size) : result;
}

template <typename T>
std::vector<ReduceOp> OpsFor() {
  if (std::is_floating_point_v<T>) {
    return {ReduceOp::kSum, ReduceOp::kMax, ReduceOp::kMin, ReduceOp::kAvg};
  }
  return {ReduceOp::kSum, ReduceOp::kMax, ReduceOp::kMin};
}

bool Mentions(const absl::Status& status, absl::string_view text) {
  return absl::string_view(status.message()).find(text) != absl::string_view::npos;
}

template <typename T>
class CommunicatorTypedTest : public testing::Test {};
using ElementTypes = testing::Types<float, double, int32_t, int64_t>;
TYPED_TEST_SUITE(CommunicatorTypedTest, ElementTypes);

TYPED_TEST(CommunicatorTypedTest, AllReduceEveryOp) {
  using T = TypeParam;
  Communicator& world = World();
  for (ReduceOp op : OpsFor<T>()) {
    Tensor tensor = RankValues<T>(world.rank(), 37);
    ASSERT_TRUE(world.AllReduce(tensor, op).ok());
    for (int64_t i = 0; i < 37; ++i) {
      ASSERT_EQ(tensor.data<T>()[i], Reduced<T>(op, world.size(), i))
          << ReduceOpName(op) << " element " << i;
    }
  }
}

TYPED_TEST(CommunicatorTypedTest, ReduceScatterEveryOp) {
  using T = TypeParam;
  Communicator& world = World();
  constexpr int64_t kBlock = 5;
  for (ReduceOp op : OpsFor<T>()) {
    Tensor input = RankValues<T>(world.rank(), world.size() * kBlock);
    Tensor output = Tensor::Empty({kBlock}, DTypeOf<T>());
    ASSERT_TRUE(world.ReduceScatter(input, output, op).ok());
    for (int64_t i = 0; i < kBlock; ++i) {
      ASSERT_EQ(output.data<T>()[i], Reduced<T>(op, world.size(), world.rank() * kBlock + i))
          << ReduceOpName(op) << " element " << i;
    }
  }
}

TYPED_TEST(CommunicatorTypedTest, AllGather) {
  using T = TypeParam;
  Communicator& world = World();
  Tensor input = RankValues<T>(world.rank(), 3);
  Tensor output = Tensor::Empty({world.size(), 3}, DTypeOf<T>());
  ASSERT_TRUE(world.AllGather(input, output).ok());
  for (int rank = 0; rank < world.size(); ++rank) {
    for (int64_t i = 0; i < 3; ++i) EXPECT_EQ(output.data<T>()[rank * 3 + i], ValueOf<T>(rank, i));
  }
}

TYPED_TEST(CommunicatorTypedTest, BroadcastFromLastRank) {
  using T = TypeParam;
  Communicator& world = World();
  int root = world.size() - 1;
  Tensor tensor = RankValues<T>(world.rank(), 9);
  ASSERT_TRUE(world.Broadcast(tensor, root).ok());
  for (int64_t i = 0; i < 9; ++i) EXPECT_EQ(tensor.data<T>()[i], ValueOf<T>(root, i));
}

// The world is the launcher's: mpirun's MPI, or the env:// contract of lockstep-run over gloo.
TEST(CommunicatorTest, WorldMatchesTheLauncher) {
  const Context& ctx = TestContext();
  const bool mpi = ctx.launched_by_mpi();
  EXPECT_EQ(ctx.size(), std::atoi(std::getenv(mpi ? "OMPI_COMM_WORLD_SIZE" : "WORLD_SIZE")));
  EXPECT_EQ(ctx.rank(), std::atoi(std::getenv(mpi ? "OMPI_COMM_WORLD_RANK" : "RANK")));
  EXPECT_EQ(ctx.local_size(), ctx.size());  // one host
  EXPECT_EQ(ctx.local_rank(), ctx.rank());
  EXPECT_EQ(LogRank(), ctx.rank());
  EXPECT_STREQ(World().backend(), mpi ? "mpi" : "gloo");
  absl::StatusOr<std::shared_ptr<Communicator>> cpu_world = ctx.World(Device::CPU());
  ASSERT_TRUE(cpu_world.ok());
  if (mpi) {
    EXPECT_NE(dynamic_cast<MpiCommunicator*>(cpu_world->get()), nullptr);
  } else {
    EXPECT_NE(dynamic_cast<GlooCommunicator*>(cpu_world->get()), nullptr);
  }
  // The host world outside the graph is the same world, each collective under the timeout.
  EXPECT_NE(dynamic_cast<TimedCommunicator*>(ctx.HostWorld().get()), nullptr);
}

TEST(CommunicatorTest, MillionElementAllReduce) {
  Communicator& world = World();
  constexpr int64_t kCount = 1 << 20;
  Tensor tensor = Tensor::Empty({kCount}, DType::kF32);
  float* data = tensor.data<float>();
  for (int64_t i = 0; i < kCount; ++i) data[i] = static_cast<float>(i % 1000 + world.rank());
  ASSERT_TRUE(world.AllReduce(tensor, ReduceOp::kSum).ok());
  float rank_sum = world.size() * (world.size() - 1) / 2.0f;
  for (int64_t i = 0; i < kCount; ++i) {
    ASSERT_EQ(data[i], world.size() * static_cast<float>(i % 1000) + rank_sum) << "element " << i;
  }
}

TEST(CommunicatorTest, BarrierSucceeds) { EXPECT_TRUE(World().Barrier().ok()); }

// Counts above the chunk limit take the chunked paths; a limit of 1000 elements reaches them
// with small tensors (2500 = two full chunks and a partial one).
TEST(CommunicatorTest, ChunkedCollectives) {
  LOCKSTEP_SKIP_UNLESS_MPI();
  absl::StatusOr<std::shared_ptr<MpiCommunicator>> created =
      MpiCommunicator::Create(MPI_COMM_WORLD, /*max_count=*/1000);
  ASSERT_TRUE(created.ok()) << created.status();
  Communicator& comm = **created;
  int size = comm.size();
  constexpr int64_t kCount = 2500;

  Tensor reduced = RankValues<double>(comm.rank(), kCount);
  ASSERT_TRUE(comm.AllReduce(reduced, ReduceOp::kAvg).ok());
  for (int64_t i = 0; i < kCount; ++i) {
    ASSERT_EQ(reduced.data<double>()[i], Reduced<double>(ReduceOp::kAvg, size, i)) << i;
  }
  Tensor broadcast = RankValues<int32_t>(comm.rank(), kCount);
  ASSERT_TRUE(comm.Broadcast(broadcast, size - 1).ok());
  for (int64_t i = 0; i < kCount; ++i)
    ASSERT_EQ(broadcast.data<int32_t>()[i], ValueOf<int32_t>(size - 1, i));

  Tensor gathered = Tensor::Empty({size * kCount}, DType::kI64);
  ASSERT_TRUE(comm.AllGather(RankValues<int64_t>(comm.rank(), kCount), gathered).ok());
  for (int rank = 0; rank < size; ++rank) {
    for (int64_t i = 0; i < kCount; ++i) {
      ASSERT_EQ(gathered.data<int64_t>()[rank * kCount + i], ValueOf<int64_t>(rank, i));
    }
  }
  Tensor scattered = Tensor::Empty({kCount}, DType::kF32);
  ASSERT_TRUE(
      comm.ReduceScatter(RankValues<float>(comm.rank(), size * kCount), scattered, ReduceOp::kMax)
          .ok());
  for (int64_t i = 0; i < kCount; ++i) {
    ASSERT_EQ(scattered.data<float>()[i],
              Reduced<float>(ReduceOp::kMax, size, comm.rank() * kCount + i));
  }
}

// An AllReduce larger than the segment size goes as several calls (MpiCommunicator's
// segment_bytes): 2500 doubles in segments of 1000 (two full and a partial one), of one element
// (a segment smaller than an element), and capped by a max_count below the segment.
TEST(CommunicatorTest, SegmentedAllReduce) {
  LOCKSTEP_SKIP_UNLESS_MPI();
  constexpr int64_t kCount = 2500;
  for (auto [max_count, segment_bytes] :
       {std::pair<int64_t, size_t>{MpiCommunicator::kMaxCount, 8000},
        {MpiCommunicator::kMaxCount, 3},
        {700, 8000}}) {
    absl::StatusOr<std::shared_ptr<MpiCommunicator>> created =
        MpiCommunicator::Create(MPI_COMM_WORLD, max_count);
    ASSERT_TRUE(created.ok()) << created.status();
    MpiCommunicator& comm = **created;
    comm.set_segment_bytes(segment_bytes);
    Tensor reduced = RankValues<double>(comm.rank(), kCount);
    ASSERT_TRUE(comm.AllReduce(reduced, ReduceOp::kSum).ok());
    for (int64_t i = 0; i < kCount; ++i) {
      ASSERT_EQ(reduced.data<double>()[i], Reduced<double>(ReduceOp::kSum, comm.size(), i))
          << "element " << i << ", segments of " << segment_bytes << " bytes";
    }
  }
}

TEST(CommunicatorTest, AllGatherInPlace) {
  Communicator& world = World();
  Tensor output = Tensor::Zeros({world.size(), 4}, DType::kI32);
  Tensor own = output.View(world.rank() * 16, {4}, DType::kI32);
  for (int64_t i = 0; i < 4; ++i) own.data<int32_t>()[i] = ValueOf<int32_t>(world.rank(), i);
  ASSERT_TRUE(world.AllGather(own, output).ok());
  for (int rank = 0; rank < world.size(); ++rank) {
    for (int64_t i = 0; i < 4; ++i) {
      EXPECT_EQ(output.data<int32_t>()[rank * 4 + i], ValueOf<int32_t>(rank, i));
    }
  }
}

// Bad calls fail on every rank alike before anything is sent, so the ranks stay in step: the
// AllReduce after them still matches up.
TEST(CommunicatorTest, BadCallsFailAlikeOnEveryRank) {
  Communicator& world = World();
  absl::Status status = world.AllGather(Tensor::Zeros({4}, DType::kF32),
                                        Tensor::Zeros({world.size() * 4 - 1}, DType::kF32));
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(Mentions(status, absl::StrCat("AllGather: output [", world.size() * 4 - 1, "] holds ",
                                            (world.size() * 4 - 1) * 4,
                                            " bytes but must hold size() x input = ", world.size(),
                                            " x 16 = ", world.size() * 16)))
      << status;
  status = world.AllReduce(Tensor::Zeros({2}, DType::kI32), ReduceOp::kAvg);
  EXPECT_TRUE(Mentions(status, "AllReduce avg needs a floating-point tensor, got i32")) << status;
  status = world.ReduceScatter(Tensor::Zeros({world.size() * 2}, DType::kF32),
                               Tensor::Zeros({2}, DType::kF64), ReduceOp::kSum);
  EXPECT_TRUE(Mentions(status, "ReduceScatter: input is f32 but output is f64")) << status;
  status = world.Broadcast(Tensor::Zeros({2}, DType::kF32), world.size());
  EXPECT_TRUE(Mentions(status, "is not a rank of this world")) << status;
  float on_host = 0;
  status =
      world.AllReduce(Tensor::Wrap(&on_host, {1}, DType::kF32, Device::CUDA(0)), ReduceOp::kSum);
  EXPECT_TRUE(Mentions(status, absl::StrCat("tensor is on cuda:0 but the ", world.backend(),
                                            " communicator moves cpu memory")))
      << status;

  Tensor one = Tensor::Empty({1}, DType::kI32);
  *one.data<int32_t>() = 1;
  ASSERT_TRUE(world.AllReduce(one, ReduceOp::kSum).ok());
  EXPECT_EQ(*one.data<int32_t>(), world.size());
}

TEST(CommunicatorTest, MpiErrorsBecomeStatus) {
  LOCKSTEP_SKIP_UNLESS_MPI();
  auto* comm = dynamic_cast<MpiCommunicator*>(TestContext().World(Device::CPU())->get());
  ASSERT_NE(comm, nullptr);
  int value = 0;
  // MPI checks the root before communicating, so every rank fails alike.
  absl::Status status = [&]() -> absl::Status {
    MPI_RETURN_IF_ERROR(MPI_Bcast(&value, 1, MPI_INT, comm->size() + 3, comm->comm()));
    return absl::OkStatus();
  }();
  EXPECT_EQ(status.code(), absl::StatusCode::kInternal);
  EXPECT_TRUE(Mentions(status, "MPI call MPI_Bcast(&value, 1, MPI_INT, comm->size() + 3, "))
      << status;
  EXPECT_TRUE(Mentions(status, "invalid root")) << status;
}

TEST(CommunicatorTest, CollectivesRunInOrderOnAQueue) {
  Communicator& world = World();
  CollectiveQueue queue;
  std::vector<Tensor> tensors;
  std::vector<CollectiveHandle> handles;
  for (int k = 0; k < 3; ++k) {
    tensors.push_back(Tensor::Empty({1}, DType::kI64));
    *tensors.back().data<int64_t>() = world.rank() + k;
    Tensor tensor = tensors.back();
    handles.push_back(queue.Submit(absl::StrCat("AllReduce #", k), [&world, tensor] {
      return world.AllReduce(tensor, ReduceOp::kSum);
    }));
  }
  int64_t rank_sum = int64_t{world.size()} * (world.size() - 1) / 2;
  for (int k = 0; k < 3; ++k) {
    ASSERT_TRUE(handles[k].Wait(std::chrono::seconds(60)).ok());
    EXPECT_EQ(*tensors[k].data<int64_t>(), rank_sum + int64_t{world.size()} * k);
  }
}

}  // namespace
}  // namespace lockstep::parallel
