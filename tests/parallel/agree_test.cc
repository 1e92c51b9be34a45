// One error, once: AgreeAcrossRanks under mpirun -n 2 and -n 4 gives every rank the same error,
// naming the ranks that failed and why.

#include "parallel/agree.h"

#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "tests/parallel/mpi_test_main.h"

namespace lockstep::parallel {
namespace {

Communicator& World() { return *TestContext().HostWorld(); }

TEST(AgreeAcrossRanksTest, OkWhenEveryRankIsOk) {
  EXPECT_TRUE(AgreeAcrossRanks(absl::OkStatus(), World()).ok());
}

TEST(AgreeAcrossRanksTest, TheSameErrorOnEveryRankIsToldOnce) {
  absl::Status agreed =
      AgreeAcrossRanks(absl::InvalidArgumentError("--batch-size 32 does not divide"), World());
  EXPECT_EQ(agreed.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(agreed.message(), "--batch-size 32 does not divide");
  EXPECT_TRUE(IsAgreedError(agreed));
}

TEST(AgreeAcrossRanksTest, EveryRankLearnsWhichRanksFailedAndWhy) {
  const int rank = World().rank();
  // The last rank fails alone with its own message; the odd ranks before it with a shared one.
  absl::Status local = absl::OkStatus();
  if (rank == World().size() - 1) {
    local = absl::NotFoundError(absl::StrCat("no GPU on rank ", rank));
  } else if (rank % 2 == 1) {
    local = absl::NotFoundError("no data");
  }
  absl::Status agreed = AgreeAcrossRanks(local, World());
  ASSERT_TRUE(IsAgreedError(agreed));
  EXPECT_EQ(agreed.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(agreed.message(), World().size() == 2 ? "rank 1: no GPU on rank 1"
                                                  : "rank 1: no data; rank 3: no GPU on rank 3");
}

TEST(DescribeRankErrorsTest, GroupsRanksByMessage) {
  EXPECT_EQ(DescribeRankErrors({absl::OkStatus(), absl::InternalError("a"), absl::OkStatus(),
                                absl::InternalError("a"), absl::InternalError("b")}),
            "ranks 1, 3: a; rank 4: b");
  EXPECT_EQ(DescribeRankErrors({absl::InternalError("a"), absl::InternalError("a")}), "a");
  EXPECT_EQ(DescribeRankErrors({absl::InternalError("a"), absl::OkStatus()}), "rank 0: a");
}

TEST(AgreeOnSettingsTest, OkWhenEveryRankHasTheSameSettings) {
  EXPECT_TRUE(AgreeOnSettings({{"--lr", "0.1"}, {"--seed", "1"}}, World(), "options").ok());
}

TEST(AgreeOnSettingsTest, EveryRankLearnsWhichSettingsDifferOnWhichRanks) {
  const int rank = World().rank();
  // The last rank has its own --lr; --seed and --model match everywhere.
  const std::string lr = rank == World().size() - 1 ? "0.2" : "0.1";
  absl::Status agreed =
      AgreeOnSettings({{"--model", "lenet"}, {"--lr", lr}, {"--seed", "1"}}, World(), "options");
  ASSERT_TRUE(IsAgreedError(agreed));
  EXPECT_EQ(agreed.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(agreed.message(), World().size() == 2
                                  ? "options: --lr (0.1 on rank 0; 0.2 on rank 1)"
                                  : "options: --lr (0.1 on ranks 0, 1, 2; 0.2 on rank 3)");
}

TEST(AgreeOnSettingsTest, ASettingOnlySomeRanksHaveIsNamed) {
  std::vector<Setting> settings = {{"--lr", "0.1"}};
  if (World().rank() == 0) settings.emplace_back("--resume", "yes");
  absl::Status agreed = AgreeOnSettings(settings, World(), "options");
  EXPECT_EQ(agreed.message(),
            absl::StrCat("options: --resume (",
                         World().size() == 2 ? "(none) on rank 1" : "(none) on ranks 1, 2, 3",
                         "; yes on rank 0)"));
}

TEST(AgreeAcrossRanksTest, OtherErrorsAreNotAgreed) {
  EXPECT_FALSE(IsAgreedError(absl::InternalError("one rank's own")));
}

}  // namespace
}  // namespace lockstep::parallel
