// Started without mpirun, Init gives a world of one whose collectives are identities.

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <optional>

#include "core/logging.h"
#include "parallel/context.h"

namespace lockstep::parallel {
namespace {

Tensor Iota(int64_t count, DType dtype) {
  Tensor tensor = Tensor::Empty({count}, dtype);
  for (int64_t i = 0; i < count; ++i) {
    if (dtype == DType::kF32) {
      tensor.data<float>()[i] = 0.5f * i;
    } else {
      tensor.data<int32_t>()[i] = static_cast<int32_t>(i);
    }
  }
  return tensor;
}

bool SameBytes(const Tensor& a, const Tensor& b) {
  return a.nbytes() == b.nbytes() && std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0;
}

class WorldOfOneTest : public testing::Test {
 protected:
  void SetUp() override {
    if (std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr) GTEST_SKIP() << "started by mpirun";
    absl::StatusOr<Context> context = Init(nullptr, nullptr);
    ASSERT_TRUE(context.ok()) << context.status();
    context_.emplace(*std::move(context));
  }
  const Context& context() const { return *context_; }

 private:
  std::optional<Context> context_;
};

TEST_F(WorldOfOneTest, InitWithoutMpirunIsAWorldOfOne) {
  const Context& ctx = context();
  // Every Init without MPI makes a world of one of its own.
  absl::StatusOr<Context> another = Init(nullptr, nullptr);
  ASSERT_TRUE(another.ok()) << another.status();
  EXPECT_EQ(another->size(), 1);
  EXPECT_NE(another->HostWorld(), ctx.HostWorld());
  EXPECT_FALSE(ctx.launched_by_mpi());
  EXPECT_EQ(ctx.rank(), 0);
  EXPECT_EQ(ctx.size(), 1);
  EXPECT_EQ(ctx.local_rank(), 0);
  EXPECT_EQ(ctx.local_size(), 1);
  std::shared_ptr<Communicator> world = ctx.HostWorld();
  ASSERT_NE(world, nullptr);
  EXPECT_STREQ(world->backend(), "self");
  EXPECT_EQ(world->size(), 1);
  EXPECT_EQ(LogRank(), -1);  // no rank in log lines
}

TEST_F(WorldOfOneTest, CollectivesAreIdentities) {
  Communicator& world = *context().HostWorld();
  for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMax, ReduceOp::kMin, ReduceOp::kAvg}) {
    Tensor tensor = Iota(6, DType::kF32);
    ASSERT_TRUE(world.AllReduce(tensor, op).ok()) << ReduceOpName(op);
    EXPECT_TRUE(SameBytes(tensor, Iota(6, DType::kF32))) << ReduceOpName(op);
  }
  Tensor input = Iota(5, DType::kI32);
  Tensor gathered = Tensor::Zeros({5}, DType::kI32);
  ASSERT_TRUE(world.AllGather(input, gathered).ok());
  EXPECT_TRUE(SameBytes(gathered, input));
  Tensor scattered = Tensor::Zeros({5}, DType::kI32);
  ASSERT_TRUE(world.ReduceScatter(input, scattered, ReduceOp::kSum).ok());
  EXPECT_TRUE(SameBytes(scattered, input));
  ASSERT_TRUE(world.Broadcast(input, 0).ok());
  EXPECT_TRUE(SameBytes(input, Iota(5, DType::kI32)));
  EXPECT_TRUE(world.Barrier().ok());
}

TEST_F(WorldOfOneTest, ChecksArgumentsLikeAnyWorld) {
  Communicator& world = *context().HostWorld();
  absl::Status status = world.AllGather(Iota(4, DType::kI32), Tensor::Zeros({3}, DType::kI32));
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(
      status.message(),
      "AllGather: output [3] holds 12 bytes but must hold size() x input = 1 x 16 = 16 bytes");
  status = world.Broadcast(Iota(4, DType::kI32), 1);
  EXPECT_EQ(status.message(), "Broadcast: root 1 is not a rank of this world of 1");
  status = world.AllReduce(Iota(4, DType::kI32), ReduceOp::kAvg);
  EXPECT_EQ(status.message(), "AllReduce avg needs a floating-point tensor, got i32");
}

TEST_F(WorldOfOneTest, NoCommunicatorForAMissingDevice) {
  const Context& ctx = context();
  if (ctx.device().type == DeviceType::kCUDA) GTEST_SKIP() << "this machine has a GPU";
  absl::StatusOr<std::shared_ptr<Communicator>> world = ctx.World(Device::CUDA(0));
  EXPECT_EQ(world.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(world.status().message().find("no communicator for cuda:0 on rank 0"),
            absl::string_view::npos)
      << world.status();
}

// The user's --device choice: cpu always, auto the rank's device, cuda only with a GPU.
TEST_F(WorldOfOneTest, DeviceForTheUsersChoice) {
  const Context& ctx = context();
  EXPECT_EQ(ctx.DeviceFor("cpu").value(), Device::CPU());
  EXPECT_EQ(ctx.DeviceFor("auto").value(), ctx.device());
  EXPECT_EQ(ctx.DeviceFor("tpu").status().code(), absl::StatusCode::kInvalidArgument);
  absl::StatusOr<Device> cuda = ctx.DeviceFor("cuda");
  if (ctx.device().type == DeviceType::kCUDA) {
    EXPECT_EQ(cuda.value(), ctx.device());
    return;
  }
  EXPECT_EQ(cuda.status().code(), absl::StatusCode::kFailedPrecondition);
  const std::string expected = LOCKSTEP_CMAKE_WITH_CUDA ? "no rank sees a GPU"
                                                        : "this build has no CUDA support";
  EXPECT_NE(cuda.status().message().find("--device cuda, but rank 0 has no GPU: " + expected),
            std::string::npos)
      << cuda.status();
}

TEST(ReduceOpTest, NamesRoundTrip) {
  for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMax, ReduceOp::kMin, ReduceOp::kAvg}) {
    absl::StatusOr<ReduceOp> parsed = ParseReduceOp(ReduceOpName(op));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, op);
  }
  absl::StatusOr<ReduceOp> unknown = ParseReduceOp("prod");
  EXPECT_EQ(unknown.status().message(), "unknown reduce op 'prod'; known: sum, max, min, avg");
}

// The library knows it was built with CUDA exactly when CMake says so (the define travels with
// lockstep_parallel's CUDA parts): without a GPU, a CUDA build has no GPU for the rank, a CPU-only
// build no CUDA at all.
TEST_F(WorldOfOneTest, KnowsWhetherTheBuildHasCuda) {
  absl::Status status = context().World(Device::CUDA(0)).status();
  if (context().device().type == DeviceType::kCUDA) {
    EXPECT_TRUE(status.ok()) << status;
    return;
  }
  const std::string expected = LOCKSTEP_CMAKE_WITH_CUDA ? "no GPU for this rank"
                                                        : "this build has no CUDA support";
  EXPECT_NE(status.message().find(expected), std::string::npos) << status;
}

}  // namespace
}  // namespace lockstep::parallel
