// TimedCommunicator under mpirun -n 2 and -n 4: a collective outside the graph that a rank is late
// for ends on the others after the timeout with the report naming it, instead of waiting; the
// late rank's arrival then completes it, so the ranks stay in step.

#include "parallel/timed_communicator.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "absl/strings/match.h"
#include "tests/parallel/mpi_test_main.h"

namespace lockstep::parallel {
namespace {

using std::chrono::milliseconds;

TEST(TimedCommunicatorTest, ACollectiveALateRankMissesTimesOutWithAReport) {
  const Context& ctx = TestContext();
  TimedCommunicator world(*ctx.World(Device::CPU()), milliseconds(500), ctx.watchdog());
  const int late = ctx.size() - 1;
  Tensor mine = Tensor::Empty({1}, DType::kI32);
  *mine.data<int32_t>() = ctx.rank();
  Tensor all = Tensor::Zeros({ctx.size()}, DType::kI32);
  if (ctx.rank() == late) std::this_thread::sleep_for(milliseconds(2000));  // as if stopped
  const absl::Status status = world.AllGather(mine, all);
  if (ctx.rank() == late) {
    EXPECT_TRUE(status.ok()) << status;  // the others' calls are still waiting for it
  } else {
    EXPECT_TRUE(absl::IsDeadlineExceeded(status)) << status;
    EXPECT_TRUE(absl::StrContains(status.message(),
                                  "AllGather of 4 bytes outside the graph did not finish within "
                                  "0.5 s: a rank died or took another path"))
        << status;
  }
  // The late rank's arrival completes the AllGather on every rank; then the ranks meet again.
  if (ctx.rank() != late) std::this_thread::sleep_for(milliseconds(2500));
  TimedCommunicator patient(*ctx.World(Device::CPU()), milliseconds(60'000), ctx.watchdog());
  ASSERT_TRUE(patient.Barrier().ok());
  for (int rank = 0; rank < ctx.size(); ++rank) EXPECT_EQ(all.data<int32_t>()[rank], rank);
}

}  // namespace
}  // namespace lockstep::parallel
