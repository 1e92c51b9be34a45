// lockstep-test-host-ranks: where each rank runs, as the bootstrap sees it. Rank 0 prints one line
// per rank in rank order,
//   rank 2 on lockstep-host-b: local rank 0 of 2, 1 thread(s) by default, 2 core(s), 1 bound
// and every rank checks that its local rank and size follow its host (the ranks before it on the
// same hostname, and all of them), whatever order mpirun placed them in, and that the default
// threads are the host's cores over those ranks, but no more than the cores the rank is bound
// to; exit 1 otherwise.

#include <sched.h>

#include <algorithm>
#include <cstring>
#include <iostream>
#include <string>
#include <thread>

#include "absl/strings/str_format.h"
#include "core/host_name.h"
#include "core/threads.h"
#include "examples/env_options.h"
#include "parallel/context.h"

namespace lockstep::parallel {
namespace {

constexpr int kNameBytes = 64;
enum Field { kLocalRank, kLocalSize, kThreads, kCores, kBound, kFields };

absl::Status Report(const Context& ctx) {
  Communicator& world = *ctx.HostWorld();
  const int ranks = world.size();
  Tensor name = Tensor::Empty({kNameBytes}, DType::kU8);
  std::memset(name.data<uint8_t>(), 0, kNameBytes);
  HostName().copy(reinterpret_cast<char*>(name.data<uint8_t>()), kNameBytes - 1);
  cpu_set_t bound;
  sched_getaffinity(0, sizeof(bound), &bound);
  Tensor fields = Tensor::Empty({kFields}, DType::kI64);
  int64_t* f = fields.data<int64_t>();
  f[kLocalRank] = ctx.local_rank();
  f[kLocalSize] = ctx.local_size();
  f[kThreads] = DefaultThreads(ctx.local_size());
  f[kCores] = std::thread::hardware_concurrency();
  f[kBound] = CPU_COUNT(&bound);
  Tensor names = Tensor::Empty({ranks, kNameBytes}, DType::kU8);
  Tensor all = Tensor::Empty({ranks, kFields}, DType::kI64);
  LS_RETURN_IF_ERROR(world.AllGather(name, names));
  LS_RETURN_IF_ERROR(world.AllGather(fields, all));
  auto host = [&](int r) {
    return std::string(reinterpret_cast<const char*>(names.data<uint8_t>() + r * kNameBytes));
  };
  int before = 0, same = 0;
  for (int r = 0; r < ranks; ++r) {
    if (host(r) != host(world.rank())) continue;
    ++same;
    if (r < world.rank()) ++before;
  }
  if (world.rank() == 0) {
    for (int r = 0; r < ranks; ++r) {
      const int64_t* a = all.data<int64_t>() + r * kFields;
      std::cout << absl::StrFormat(
          "rank %d on %s: local rank %d of %d, %d thread(s) by default, %d core(s), %d bound\n", r,
          host(r), a[kLocalRank], a[kLocalSize], a[kThreads], a[kCores], a[kBound]);
    }
    std::cout.flush();
  }
  if (f[kLocalRank] != before || f[kLocalSize] != same) {
    return absl::InternalError(absl::StrFormat(
        "on %s: local rank %d of %d, but %d rank(s) before this one of %d share the hostname",
        host(world.rank()), f[kLocalRank], f[kLocalSize], before, same));
  }
  if (f[kThreads] != std::max<int64_t>(1, std::min<int64_t>(f[kCores] / same, f[kBound]))) {
    return absl::InternalError(
        absl::StrFormat("on %s: %d thread(s) by default for %d core(s), %d bound, and "
                        "%d rank(s) on the host",
                        host(world.rank()), f[kThreads], f[kCores], f[kBound], same));
  }
  return absl::OkStatus();
}

}  // namespace
}  // namespace lockstep::parallel

int main(int argc, char** argv) {
  absl::StatusOr<lockstep::StartedRank> started = lockstep::StartRank(&argc, &argv);
  if (!started.ok()) return lockstep::parallel::ReportFatal(started.status());
  const lockstep::parallel::Context& ctx = started->context;
  absl::Status status = lockstep::parallel::Report(ctx);
  if (!status.ok()) return lockstep::parallel::ReportFatal(status);
  return 0;
}
