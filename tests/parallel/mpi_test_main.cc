// The main of every lockstep_mpi_test binary: starts the parallel context, runs the tests on
// every rank, prints rank 0's report and the other ranks' failures only, and makes every rank
// exit non-zero when any rank failed (so mpirun does).

#include "tests/parallel/mpi_test_main.h"

#include <gtest/gtest.h>

#include <iostream>
#include <vector>

#include "absl/strings/str_join.h"
#include "core/logging.h"
#include "examples/env_options.h"

namespace lockstep {
namespace {

const parallel::Context* g_context = nullptr;  // RunAllRanks's, while the tests run

}  // namespace

const parallel::Context& TestContext() { return *g_context; }

}  // namespace lockstep

namespace lockstep::parallel {
namespace {

// Prints failed assertions with the rank in front; stands in for gtest's report on ranks > 0.
class FailurePrinter : public ::testing::EmptyTestEventListener {
 public:
  void OnTestPartResult(const ::testing::TestPartResult& result) override {
    if (!result.failed()) return;
    std::cerr << LogPrefix() << result.file_name() << ":" << result.line_number() << ": "
              << result.summary() << std::endl;
  }
  void OnTestEnd(const ::testing::TestInfo& info) override {
    if (info.result()->Failed()) {
      std::cerr << LogPrefix() << "FAILED " << info.test_suite_name() << "." << info.name()
                << std::endl;
    }
  }
};

int RunAllRanks(int argc, char** argv) {
  absl::StatusOr<StartedRank> started = StartRank(&argc, &argv);
  if (!started.ok()) return ReportFatal(started.status());
  const Context& ctx = started->context;
  lockstep::g_context = &ctx;
  ::testing::InitGoogleTest(&argc, argv);
  if (ctx.rank() != 0) {
    ::testing::TestEventListeners& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new FailurePrinter);
  }
  Tensor failed = Tensor::Empty({1}, DType::kI32);
  *failed.data<int32_t>() = RUN_ALL_TESTS() == 0 ? 0 : 1;
  Tensor failed_by_rank = Tensor::Empty({ctx.size()}, DType::kI32);
  absl::Status status = ctx.HostWorld()->AllGather(failed, failed_by_rank);
  if (!status.ok()) return ReportFatal(status);
  std::vector<int> failed_ranks;
  for (int rank = 0; rank < ctx.size(); ++rank) {
    if (failed_by_rank.data<int32_t>()[rank] != 0) failed_ranks.push_back(rank);
  }
  if (failed_ranks.empty()) return 0;
  if (ctx.rank() == 0) {
    std::cerr << LogPrefix() << "tests failed on rank(s) " << absl::StrJoin(failed_ranks, ", ")
              << std::endl;
  }
  return 1;
}

}  // namespace
}  // namespace lockstep::parallel

int main(int argc, char** argv) { return lockstep::parallel::RunAllRanks(argc, argv); }
