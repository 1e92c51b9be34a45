// lockstep-allgather: the smoke test of the communicators. Every rank contributes --count
// elements holding its rank id; every rank prints the gathered blocks, "[[0] [1] [2] [3]]" for
// four ranks, checks every element and fails (exit 1) naming the first wrong block. --iters K
// then times K AllGathers and prints the bandwidth as nccl-tests define it.
//
//   mpirun -n 4 lockstep-allgather [--backend mpi|nccl] [--count N] [--dtype int32|float32]
//                                  [--iters K]

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdint>
#include <iostream>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/host_memory.h"
#include "examples/env_options.h"
#include "examples/flag_checks.h"
#include "parallel/agree.h"
#include "parallel/collective_util.h"
#include "parallel/context.h"

namespace lockstep::parallel {
namespace {

struct Options {
  std::string backend = "mpi";
  int64_t count = 1;
  std::string dtype = "int32";
  int iters = 0;
};

template <typename T>
absl::Status CheckBlocks(const Tensor& gathered, int ranks, int64_t count) {
  const T* data = gathered.data<T>();
  for (int block = 0; block < ranks; ++block) {
    for (int64_t i = 0; i < count; ++i) {
      T value = data[block * count + i];
      if (value != static_cast<T>(block)) {
        return absl::InternalError(absl::StrCat("AllGather result is wrong: the block of rank ",
                                                block, " holds ", value, " at element ", i,
                                                ", expected ", block));
      }
    }
  }
  return absl::OkStatus();
}

// "[[0] [1] [2] [3]]"; with more than one element per rank, "[[0 ...] [1 ...]]".
template <typename T>
std::string FormatBlocks(const Tensor& gathered, int ranks, int64_t count) {
  std::vector<std::string> blocks;
  for (int block = 0; block < ranks; ++block) {
    blocks.push_back(
        absl::StrCat("[", gathered.data<T>()[block * count], count > 1 ? " ...]" : "]"));
  }
  return absl::StrCat("[", absl::StrJoin(blocks, " "), "]");
}

// Times `iters` AllGathers; rank 0 prints the slowest rank's time and bandwidths.
absl::Status TimeAllGathers(Communicator& comm, Communicator& host_world, const Tensor& input,
                            const Tensor& output, int iters) {
  LS_RETURN_IF_ERROR(comm.Barrier());
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < iters; ++i) LS_RETURN_IF_ERROR(comm.AllGather(input, output));
  std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
  Tensor seconds = Tensor::Empty({1}, DType::kF64);
  *seconds.data<double>() = elapsed.count() / iters;
  LS_RETURN_IF_ERROR(host_world.AllReduce(seconds, ReduceOp::kMax));
  if (comm.rank() != 0) return absl::OkStatus();
  double time = *seconds.data<double>();
  // nccl-tests: algbw = bytes gathered / time; busbw = algbw * (n - 1) / n for AllGather.
  double algbw = static_cast<double>(output.nbytes()) / time / 1e9;
  double busbw = algbw * (comm.size() - 1) / comm.size();
  std::cout << absl::StrFormat(
                   "allgather: %d bytes x %d ranks, %.1f us, algbw %.3f GB/s, busbw %.3f GB/s",
                   input.nbytes(), comm.size(), time * 1e6, algbw, busbw)
            << std::endl;
  return absl::OkStatus();
}

template <typename T>
absl::Status GatherRankIds(Communicator& comm, Communicator& host_world, const Options& options) {
  DType dtype = DTypeOf<T>();
  Tensor host_input = Tensor::Empty({options.count}, dtype);
  for (int64_t i = 0; i < options.count; ++i) host_input.data<T>()[i] = static_cast<T>(comm.rank());
  Tensor input = Tensor::Empty({options.count}, dtype, comm.device());
  Tensor output = Tensor::Empty({comm.size() * options.count}, dtype, comm.device());
  LS_RETURN_IF_ERROR(CopyTensorBytes(input, host_input));
  LS_RETURN_IF_ERROR(comm.AllGather(input, output));
  Tensor gathered = Tensor::Empty(output.shape(), dtype);
  LS_RETURN_IF_ERROR(CopyTensorBytes(gathered, output));

  std::cout << FormatBlocks<T>(gathered, comm.size(), options.count) << std::endl;
  LS_RETURN_IF_ERROR(CheckBlocks<T>(gathered, comm.size(), options.count));
  if (options.iters == 0) return absl::OkStatus();
  return TimeAllGathers(comm, host_world, input, output, options.iters);
}

absl::Status Run(const Options& options, const Context& ctx) {
  Communicator& host_world = *ctx.HostWorld();
  // The input, the gathered blocks and their host copies, refused before any is allocated.
  const double bytes = static_cast<double>(options.count) * 4.0 * (1.0 + ctx.size()) *
                       2.0;  // int32 and float32 alike
  LS_RETURN_IF_ERROR(AgreeAcrossRanks(
      CheckHostMemory(bytes > 0x1p63 ? UINT64_MAX : static_cast<uint64_t>(bytes),
                      absl::StrCat("--count ", options.count, " with ", ctx.size(), " ranks")),
      host_world));
  // NCCL on the rank's own GPU as the context assigned it (the one visible GPU under
  // srun --gpus-per-task=1, not device local_rank); without one, World names why.
  Device device = Device::CPU();
  if (options.backend == "nccl") {
    device = ctx.device().type == DeviceType::kCUDA ? ctx.device() : Device::CUDA(0);
  }
  absl::StatusOr<std::shared_ptr<Communicator>> world = ctx.World(device);
  if (options.backend == "mpi") world = ctx.HostWorld();  // its collectives under the timeout
  if (!world.ok()) return Annotate(world.status(), absl::StrCat("--backend ", options.backend));
  return options.dtype == "int32" ? GatherRankIds<int32_t>(**world, host_world, options)
                                  : GatherRankIds<float>(**world, host_world, options);
}

}  // namespace
}  // namespace lockstep::parallel

int main(int argc, char** argv) {
  using lockstep::parallel::Options;
  absl::StatusOr<lockstep::StartedRank> started = lockstep::StartRank(&argc, &argv);
  if (!started.ok()) return lockstep::parallel::ReportFatal(started.status());
  const lockstep::parallel::Context& ctx = started->context;
  Options options;
  CLI::App app{"Every rank contributes its rank id; every rank prints and checks the AllGather."};
  app.add_option("--backend", options.backend, "mpi (host memory) or nccl (GPU memory)")
      ->check(CLI::IsMember({"mpi", "nccl"}));
  app.add_option("--count", options.count, "elements per rank")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40));
  app.add_option("--dtype", options.dtype, "element type")
      ->check(CLI::IsMember({"int32", "float32"}));
  app.add_option("--iters", options.iters, "timed AllGathers after the check (0: none)")
      ->check(CLI::Range(0, 1 << 30));
  // A usage error, the same on every rank, is printed once, with the usage status 2.
  absl::StatusOr<lockstep::ParseOutcome> parsed = lockstep::ParseCommandLine(app, argc, argv);
  const absl::Status agreed =
      lockstep::parallel::AgreeAcrossRanks(parsed.status(), *ctx.HostWorld());
  if (!agreed.ok()) {
    lockstep::parallel::ReportFatal(agreed);
    return 2;
  }
  if (*parsed == lockstep::ParseOutcome::kHelp) {
    if (ctx.rank() == 0) std::cout << app.help();
    return 0;
  }
  absl::Status status = lockstep::parallel::Run(options, ctx);
  if (!status.ok()) return lockstep::parallel::ReportFatal(status);
  return 0;
}
