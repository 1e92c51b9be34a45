// AgreeOnMean under mpirun -n 2 and -n 4: every rank ends with the same bits, the mean of the
// ranks' values summed in rank order, and a second agreement changes nothing.

#include <gtest/gtest.h>

#include <cstring>

#include "parallel/replicas.h"
#include "tests/parallel/mpi_test_main.h"

namespace lockstep::parallel {
namespace {

Communicator& World() { return *TestContext().HostWorld(); }

TEST(AgreeOnMeanTest, EveryRankGetsTheMeanOfTheRanksValues) {
  Communicator& world = World();
  const int rank = world.rank();
  // Values whose float32 sums round, so that a sum in another order could differ in the last bit.
  Tensor values = Tensor::Empty({3}, DType::kF32);
  values.data<float>()[0] = static_cast<float>(rank);
  values.data<float>()[1] = 0.1f * static_cast<float>(rank + 1);
  values.data<float>()[2] = 1.0f + static_cast<float>(rank) * 1e-7f;
  absl::StatusOr<bool> changed = AgreeOnMean(world, values);
  ASSERT_TRUE(changed.ok()) << changed.status();
  EXPECT_TRUE(*changed);
  for (int i = 0; i < 3; ++i) {
    double sum = 0.0;
    for (int r = 0; r < world.size(); ++r) {
      const float mine[3] = {static_cast<float>(r), 0.1f * static_cast<float>(r + 1),
                             1.0f + static_cast<float>(r) * 1e-7f};
      sum += mine[i];
    }
    EXPECT_EQ(values.data<float>()[i], static_cast<float>(sum / world.size())) << i;
  }
  Tensor all = Tensor::Empty({world.size(), 3}, DType::kF32);
  ASSERT_TRUE(world.AllGather(values, all).ok());
  for (int r = 1; r < world.size(); ++r) {
    EXPECT_EQ(std::memcmp(all.data<float>(), all.data<float>() + 3 * r, 3 * sizeof(float)), 0)
        << "rank " << r;
  }

  const Tensor agreed = values.Clone();
  changed = AgreeOnMean(world, values);
  ASSERT_TRUE(changed.ok()) << changed.status();
  EXPECT_FALSE(*changed);
  EXPECT_EQ(std::memcmp(agreed.raw_data(), values.raw_data(), values.nbytes()), 0);
}

}  // namespace
}  // namespace lockstep::parallel
