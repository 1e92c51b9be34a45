// lockstep-bench-allreduce: the fused gradient AllReduce of ResNet-50 (161 tensors, about 102 MB)
// against one AllReduce per tensor and, under MPI, against one raw MPI_Allreduce of the same
// bytes, over a sweep of fusion thresholds. Run it under mpirun or lockstep-run (or torchrun):
//
//   mpirun -n 2 lockstep-bench-allreduce [--thresholds 1,4,16,25,64] [--segments 0,1,2,4,8]
//                                        [--reps 10] [--warmup 2] [--dtype f32|bf16|fp16]
//   lockstep-run -n 2 lockstep-bench-allreduce [--thresholds ...] [--reps ...] [--warmup ...]
//
// For every threshold it compiles ResNet-50's data-parallel training graph (batch 2, 32x32: the
// gradient sizes do not depend on them) and takes the buckets from its AllReduce nodes: byte
// ranges of the flat gradient buffer. On that buffer it then times, through the world's host
// communicator (MPI under mpirun, gloo under a launcher of the env:// contract),
//   fused:      the buckets as the executor runs them: in order through the group's
//               CollectiveQueue, each one Communicator::AllReduce with the graph's op, then a
//               wait for all; with --dtype bf16 or fp16 (ParallelOptions::allreduce_dtype) each
//               bucket converted into that dtype, reduced and converted back, as the kernel does
//               (wire_bytes: what crosses the wire);
//   per-tensor: one AllReduce per gradient tensor through the same queue;
// and under MPI only
//   raw:        one MPI_Allreduce(MPI_IN_PLACE, every gradient float, MPI_SUM, MPI_COMM_WORLD),
//               the reference, and so the one place outside parallel/ that calls MPI.
// Under MPI, fused and per-tensor are timed once per AllReduce segment size (MpiCommunicator's
// segment_bytes, 0: one call per AllReduce); gloo's AllReduce has no such setting (its ring
// cuts each one into pieces of its own), so --segments does not apply there and the lines say
// segment_mb=none. Every rep runs
// them all, each after a barrier, interleaved so that a change in the load of the machine hits
// all alike. Rank 0 first prints the transport (hosts, ranks per host, Open MPI's btl and pml
// selections or backend=gloo), then the medians.

#include <mpi.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>
#include <iostream>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "bench/bench_util.h"
#include "bench/transport.h"
#include "examples/env_options.h"
#include "examples/precision_flags.h"
#include "parallel/comm_group.h"
#include "parallel/context.h"
#include "parallel/mpi_communicator.h"
#include "parallel/ops/wire_bucket.h"
#include "train/model.h"
#include "train/models.h"

namespace lockstep::bench {
namespace {

using Clock = std::chrono::steady_clock;
using parallel::CommGroup;
using parallel::ReduceOp;

struct Config {
  std::vector<double> thresholds_mb = {1, 4, 16, 25, 64};
  std::vector<double> segments_mb = {0, 1, 2, 4, 8};
  int reps = 10;
  int warmup = 2;
  DType dtype = DType::kF32;  // of the fused buckets on the wire
};

// Bytes [offset, offset + bytes) of the flat gradient buffer.
struct ByteRange {
  size_t offset = 0;
  size_t bytes = 0;
};

Tensor FloatView(const Tensor& gradients, const ByteRange& range) {
  return gradients.View(range.offset, {static_cast<int64_t>(range.bytes / sizeof(float))},
                        DType::kF32);
}

// What the compiled graph reduces: one range per AllReduce node (a bucket, its inputs back to
// back up to alignment, as FuseAllReduce lays them out), with its wire buffer when it crosses
// in a narrower dtype, and one range per gradient tensor.
struct Reduction {
  std::vector<ByteRange> buckets;
  std::vector<std::shared_ptr<parallel::WireBucket>> wires;  // null: in float32
  std::vector<ByteRange> tensors;
  ReduceOp op = ReduceOp::kSum;
  int64_t wire_bytes = 0;  // the sum of the nodes' "bytes"
};

absl::StatusOr<Reduction> ReductionOf(const Graph& graph, const Tensor& gradients) {
  Reduction reduction;
  for (const auto& node : graph.nodes()) {
    if (node->op->name() != "AllReduce") continue;
    LS_ASSIGN_OR_RETURN(reduction.op, parallel::ParseReduceOp(node->attrs.GetString("op")));
    size_t begin = SIZE_MAX;
    size_t end = 0;
    for (const Value* input : node->inputs) {
      if (input->alloc.region != Region::kGradients) {
        return absl::FailedPreconditionError(
            absl::StrCat(node->Describe(), " reduces a value outside the gradient buffer"));
      }
      reduction.tensors.push_back({input->alloc.offset, input->bytes()});
      begin = std::min(begin, input->alloc.offset);
      end = std::max(end, input->alloc.offset + input->bytes());
    }
    reduction.buckets.push_back({begin, end - begin});
    const parallel::Span span =
        parallel::ContiguousSpan(*node, BackendOf(Device::CPU()).alignment());
    LS_ASSIGN_OR_RETURN(std::shared_ptr<parallel::WireBucket> wire,
                        parallel::WireBucket::For(*node, span, Device::CPU()));
    if (wire != nullptr) wire->Bind({FloatView(gradients, reduction.buckets.back())});
    reduction.wires.push_back(std::move(wire));
    reduction.wire_bytes += node->attrs.GetInt("bytes");
  }
  if (reduction.buckets.empty()) {
    return absl::FailedPreconditionError("the data-parallel training graph has no AllReduce node");
  }
  return reduction;
}

absl::Status RawAllReduce(const Tensor& gradients) {
  MPI_RETURN_IF_ERROR(MPI_Allreduce(MPI_IN_PLACE, gradients.raw_data(),
                                    static_cast<int>(gradients.nbytes() / sizeof(float)), MPI_FLOAT,
                                    MPI_SUM, MPI_COMM_WORLD));
  return absl::OkStatus();
}

// One AllReduce per range (through its wire buffer where `wires` has one), queued in order as
// the AllReduce kernel queues its bucket, then a wait for all of them, as the executor waits
// before the optimizer.
absl::Status QueuedAllReduce(CommGroup& group, const Tensor& gradients,
                             const std::vector<ByteRange>& ranges,
                             const std::vector<std::shared_ptr<parallel::WireBucket>>& wires,
                             ReduceOp op) {
  std::vector<parallel::CollectiveHandle> handles;
  handles.reserve(ranges.size());
  for (size_t i = 0; i < ranges.size(); ++i) {
    const Tensor view = FloatView(gradients, ranges[i]);
    std::shared_ptr<parallel::WireBucket> wire = i < wires.size() ? wires[i] : nullptr;
    handles.push_back(group.queue->Submit("benchmark AllReduce", [&group, view, wire, op] {
      if (wire != nullptr) return wire->AllReduceOnHost(*group.communicator, op);
      return group.communicator->AllReduce(view, op);
    }));
  }
  absl::Status status;
  for (parallel::CollectiveHandle& handle : handles) {
    status.Update(handle.Wait(group.options.collective_timeout));
  }
  return status;
}

// Seconds of one call of `collective`, started after a barrier.
absl::StatusOr<double> TimeAfterBarrier(CommGroup& group,
                                        const std::function<absl::Status()>& collective) {
  LS_RETURN_IF_ERROR(Barrier(group));
  const Clock::time_point start = Clock::now();
  LS_RETURN_IF_ERROR(collective());
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// How the communicator is set for each timing of fused and per tensor, and the reference timed
// beside them: what differs between MPI and the others.
struct Variants {
  struct Setting {
    std::string segment_mb;  // "none": the communicator has no segments
    std::function<void()> apply;
  };
  std::vector<Setting> settings;
  std::function<absl::Status()> reference;  // the raw MPI_Allreduce; null without MPI
  std::function<void()> restore = [] {};    // sets the communicator back as it was
  std::string default_segment_mb = "none";
};

// Under MPI, one setting per segment size (MpiCommunicator::segment_bytes, 0: one call per
// AllReduce) and the raw MPI_Allreduce as the reference. Without MPI (gloo, which has no segment
// setting), the communicator as it is and no reference.
absl::StatusOr<Variants> VariantsFor(const Config& config, const parallel::Context& context,
                                     CommGroup& group, const Tensor& gradients) {
  Variants variants;
  if (!context.launched_by_mpi()) {
    variants.settings.push_back({"none", [] {}});
    return variants;
  }
  auto* mpi = dynamic_cast<parallel::MpiCommunicator*>(group.communicator.get());
  if (mpi == nullptr) return absl::FailedPreconditionError("the world communicator is not MPI's");
  for (double segment_mb : config.segments_mb) {
    const auto bytes = static_cast<size_t>(segment_mb * (1 << 20));
    variants.settings.push_back(
        {absl::StrFormat("%g", segment_mb), [mpi, bytes] { mpi->set_segment_bytes(bytes); }});
  }
  variants.reference = [&gradients] { return RawAllReduce(gradients); };
  const size_t before = mpi->segment_bytes();
  variants.restore = [mpi, before] { mpi->set_segment_bytes(before); };
  variants.default_segment_mb = absl::StrFormat("%g", static_cast<double>(before) / (1 << 20));
  return variants;
}

absl::Status RunThreshold(const Config& config, double threshold_mb, CommGroup& group,
                          const parallel::Context& context) {
  train::Model model(train::models::ResNet50(1000), train::SoftmaxCrossEntropy(), train::Momentum{},
                     {.batch_size = 2,
                      .image_shape = {3, 32, 32},
                      .num_threads = 1,
                      .parallel = {.mode = parallel::ParallelMode::kDataParallel,
                                   .fusion_threshold_mb = threshold_mb,
                                   .allreduce_dtype = config.dtype},
                      .context = context});
  LS_RETURN_IF_ERROR(
      Annotate(model.Compile(), absl::StrCat("fusion threshold ", threshold_mb, " MB")));
  const Tensor& gradients = model.train_executor()->gradients();
  std::memset(gradients.raw_data(), 0, gradients.nbytes());
  LS_ASSIGN_OR_RETURN(Reduction reduction, ReductionOf(model.train_executor()->graph(), gradients));
  LS_ASSIGN_OR_RETURN(const Variants variants, VariantsFor(config, context, group, gradients));
  // (fused, per tensor) for each setting, then the reference.
  std::vector<std::function<absl::Status()>> collectives;
  for (const Variants::Setting& setting : variants.settings) {
    collectives.push_back([&, apply = setting.apply] {
      apply();
      return QueuedAllReduce(group, gradients, reduction.buckets, reduction.wires, reduction.op);
    });
    collectives.push_back([&, apply = setting.apply] {
      apply();
      return QueuedAllReduce(group, gradients, reduction.tensors, {}, reduction.op);
    });
  }
  if (variants.reference) collectives.push_back(variants.reference);
  std::vector<std::vector<double>> times(collectives.size());
  for (int rep = 0; rep < config.warmup + config.reps; ++rep) {
    for (size_t i = 0; i < collectives.size(); ++i) {
      LS_ASSIGN_OR_RETURN(double seconds, TimeAfterBarrier(group, collectives[i]));
      if (rep >= config.warmup) times[i].push_back(seconds);
    }
  }
  variants.restore();
  if (group.communicator->rank() != 0) return absl::OkStatus();
  const bool has_raw = variants.reference != nullptr;
  const double raw = has_raw ? Median(times.back()) : 0.0;
  // The rule: the segment size with the fastest fused buckets, against the fastest per-tensor
  // run of any segment size and the raw call.
  std::vector<double> fused(variants.settings.size());
  double best_per_tensor = std::numeric_limits<double>::infinity();
  for (size_t s = 0; s < variants.settings.size(); ++s) {
    fused[s] = Median(times[2 * s]);
    const double per_tensor = Median(times[2 * s + 1]);
    best_per_tensor = std::min(best_per_tensor, per_tensor);
    std::string line = absl::StrFormat(
        "threshold_mb=%-4g segment_mb=%-4s buckets=%-3d tensors=%d bytes=%d dtype=%s "
        "wire_bytes=%d op=%s ",
        threshold_mb, variants.settings[s].segment_mb, reduction.buckets.size(),
        reduction.tensors.size(), gradients.nbytes(), DTypeName(config.dtype), reduction.wire_bytes,
        parallel::ReduceOpName(reduction.op));
    if (has_raw) {
      absl::StrAppendFormat(&line, "raw_ms=%.2f raw_GB/s=%.2f ", raw * 1e3,
                            gradients.nbytes() / raw * 1e-9);
    }
    absl::StrAppendFormat(&line, "fused_ms=%.2f per_tensor_ms=%.2f ", fused[s] * 1e3,
                          per_tensor * 1e3);
    if (has_raw) absl::StrAppendFormat(&line, "fused/raw=%.3f ", fused[s] / raw);
    absl::StrAppendFormat(&line, "per_tensor/fused=%.2f", per_tensor / fused[s]);
    std::cout << line << "\n" << std::flush;
  }
  if (!has_raw) return absl::OkStatus();  // one setting and no reference: no rule to print
  const size_t best = std::min_element(fused.begin(), fused.end()) - fused.begin();
  std::cout << absl::StrFormat(
                   "best: threshold_mb=%g segment_mb=%s fused_ms=%.2f fused/raw=%.3f "
                   "fused/best_per_tensor=%.3f (default segment_mb=%s)\n",
                   threshold_mb, variants.settings[best].segment_mb, fused[best] * 1e3,
                   fused[best] / raw, fused[best] / best_per_tensor, variants.default_segment_mb)
            << std::flush;
  return absl::OkStatus();
}

absl::Status Run(const Config& config, const parallel::Context& context) {
  parallel::CommGroups groups(context);
  LS_ASSIGN_OR_RETURN(CommGroup * group, groups.Find(parallel::kWorldGroup, Device::CPU()));
  LS_ASSIGN_OR_RETURN(const std::string transport, DescribeTransport(context, *group));
  if (group->communicator->rank() == 0) {
    std::cout << transport << "\n";
    std::cout << absl::StrFormat(
        "ResNet-50 gradient AllReduce over %d ranks (%s): medians of %d reps after %d warm-up\n",
        group->communicator->size(), group->communicator->backend(), config.reps, config.warmup);
    if (!context.launched_by_mpi()) {
      std::cout << absl::StrFormat(
          "no raw MPI_Allreduce and no segment sizes: both are MPI's (started without MPI, the "
          "host collectives go over %s)\n",
          group->communicator->backend());
    }
  }
  for (double threshold_mb : config.thresholds_mb) {
    LS_RETURN_IF_ERROR(RunThreshold(config, threshold_mb, *group, context));
  }
  return absl::OkStatus();
}

}  // namespace
}  // namespace lockstep::bench

int main(int argc, char** argv) {
  absl::StatusOr<lockstep::StartedRank> started = lockstep::StartRank(&argc, &argv);
  if (!started.ok()) return lockstep::parallel::ReportFatal(started.status());
  const lockstep::parallel::Context& context = started->context;
  lockstep::bench::Config config;
  CLI::App app{
      "ResNet-50's fused gradient AllReduce against one AllReduce per tensor and, under mpirun, "
      "one raw MPI_Allreduce (run it under mpirun or lockstep-run)."};
  app.add_option("--thresholds", config.thresholds_mb, "fusion thresholds in MB")
      ->delimiter(',')
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option(
         "--segments", config.segments_mb,
         "AllReduce segment sizes in MB to time fused and per tensor with (0: unsegmented); "
         "under MPI only")
      ->delimiter(',')
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--reps", config.reps, "timed repetitions")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
  app.add_option("--warmup", config.warmup, "untimed repetitions first")
      ->check(CLI::Range(0, 1 << 20))
      ->capture_default_str();
  std::string dtype = "f32";
  lockstep::AddFloatDTypeOption(
      app, "--dtype", dtype,
      "the dtype the fused buckets cross the wire in (ParallelOptions::allreduce_dtype)");
  CLI11_PARSE(app, argc, argv);
  config.dtype = lockstep::FloatDTypeFlags().at(dtype);
  absl::Status status = lockstep::bench::Run(config, context);
  if (!status.ok()) return lockstep::parallel::ReportFatal(status);
  return 0;
}
