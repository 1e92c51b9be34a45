#include "examples/end_job.h"

#include <chrono>
#include <cstdlib>
#include <thread>

#include "parallel/context.h"

namespace lockstep {
namespace {

// With the report's few seconds, this keeps the end within the timeout plus 10 s.
constexpr auto kGrace = std::chrono::seconds(3);

}  // namespace

void EndJobAfterGrace(const absl::Status& failure) {
  std::this_thread::sleep_for(kGrace);
  parallel::ReportFatal(failure);  // aborts MPI, which ends every rank
  // A world of one, or a job without MPI, has nothing to abort: the rank's exit ends it (the
  // other ranks' timeouts or the launcher see it go).
  std::_Exit(1);
}

}  // namespace lockstep
