// lockstep-bench-resnet: training-step time of ResNet-50 / ResNet-18 (and LeNet-5) on one
// process, the same recipe as ../shared/peers/torch_resnet_step.py (SGD momentum 0.9, lr 0.01,
// softmax cross-entropy, 10 classes, NCHW f32, one random batch drawn once, 2 warm-up steps, the
// median of the timed steps).
//
//   [mpirun -n 2] lockstep-bench-resnet [--model resnet50,resnet18] [--size 64,224] [--batch 8]
//                         [--steps 5] [--threads 2] [--profile [--profile-nodes 12]] [--conv]
//                         [--no-fuse] [--paced]
//                         [--data-parallel] [--device cpu|cuda]
//                         [--fusion-threshold-mb 25]
//
// --data-parallel trains over every rank of mpirun, as ../shared/peers/torch_ddp_step.py does:
// --batch images per rank, a different random batch on each rank (seeded by the rank), a barrier
// before each step. Rank 0 prints the global images/s and the communication the backward did not
// hide (the executor's exposed wait), per step and as a share of the median step, and the median
// time of agreeing the batch-norm running statistics across the ranks (agree_stats_s), as before
// each evaluation and checkpoint save.
//
// --paced runs each step (warm-up included) when a line arrives on stdin and prints its time:
// bench/paced_vs_torch.py alternates these steps with torch's, so both meet the same machine.
//
// --profile times every kernel of the step and prints where the time goes, by op and by the
// --profile-nodes slowest nodes.
// --conv compares each convolution inside the graph (GFLOP/s) with the bare oneDNN primitive on
// the same shapes and layouts, its weights already in the primitive's preferred layout, timed
// twice: rerun back to back (hot: its operands stay in the caches, which a step never has for
// long) and after evicting the caches each time (cold: its operands come from DRAM).

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstring>
#include <iostream>
#include <map>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "absl/strings/str_format.h"
#include "bench/bench_util.h"
#include "core/rng.h"
#include "examples/env_options.h"
#include "examples/precision_flags.h"
#include "ops/cpu/dnnl_util.h"
#include "parallel/comm_group.h"
#include "parallel/context.h"
#include "train/model.h"
#include "train/models.h"

namespace lockstep::train {
namespace {

using bench::Median;
using Clock = std::chrono::steady_clock;

struct BenchConfig {
  std::vector<std::string> models = {"resnet50", "resnet18"};
  std::vector<int64_t> sizes = {64, 224};
  int64_t batch = 8;
  int steps = 5;
  int warmup = 2;
  int threads = 2;
  int64_t classes = 10;
  bool profile = false;
  int profile_nodes = 12;
  bool conv = false;
  bool no_fuse = false;
  bool paced = false;
  bool data_parallel = false;
  double fusion_threshold_mb = parallel::ParallelOptions().fusion_threshold_mb;
  std::string device = "cpu";
  std::string cuda_graph = "on";
  PrecisionFlags precision;
};

Batch RandomBatch(int64_t batch, int64_t size, int64_t classes, uint64_t seed) {
  Batch data{Tensor::Empty({batch, 3, size, size}, DType::kF32),
             Tensor::Empty({batch}, DType::kI32)};
  Philox rng(seed, 0);
  rng.Normal(data.images.data<float>(), data.images.numel(), 0.0f, 1.0f);
  for (int64_t i = 0; i < batch; ++i) {
    data.labels.data<int32_t>()[i] = static_cast<int32_t>(rng.UniformInt(i, classes));
  }
  return data;
}

// The batch in `device` memory: on a GPU it stays there, as the GPU peer's does, and a step
// copies it device to device.
Batch OnDevice(const Batch& host, Device device) {
  Batch batch{Tensor::Empty(host.images.shape(), DType::kF32, device),
              Tensor::Empty(host.labels.shape(), DType::kI32, device)};
  batch.images.CopyFrom(host.images);
  batch.labels.CopyFrom(host.labels);
  return batch;
}

// Floating-point operations of a convolution node (forward and both backprops count the same).
double ConvFlops(const Node& node) {
  const bool filter = node.op->name() == "Conv2DBackpropFilter";
  const bool data = node.op->name() == "Conv2DBackpropInput";
  const Shape& y = filter ? node.inputs[1]->shape()
                   : data ? node.inputs[0]->shape()
                          : node.output()->shape();
  const Shape& w = filter ? node.output()->shape() : node.inputs[1]->shape();
  return 2.0 * static_cast<double>(NumElements(y)) * static_cast<double>(w[1] * w[2] * w[3]);
}

bool IsConv(const Node& node) { return node.op->name().starts_with("Conv2D"); }

// A bare oneDNN primitive for a convolution node: the same activation layouts, weights in the
// primitive's preferred layout, oneDNN's own memory and scratchpad.
class BareConv {
 public:
  explicit BareConv(const Node& node) {
    using dnnl::memory;
    const std::string& op = node.op->name();
    const bool filter = op == "Conv2DBackpropFilter";
    const bool data = op == "Conv2DBackpropInput";
    const Value& x = data ? *node.output() : *node.inputs[0];
    const Value& y = filter ? *node.inputs[1] : data ? *node.inputs[0] : *node.output();
    const Shape& w = filter ? node.output()->shape() : node.inputs[1]->shape();
    const memory::desc src = dnnl_util::Desc(x.shape(), x.dtype(), x.layout);
    const memory::desc dst = dnnl_util::Desc(y.shape(), y.dtype(), y.layout);
    const memory::desc weights(dnnl_util::Dims(w), memory::data_type::f32, memory::format_tag::any);
    const memory::dims strides = dnnl_util::Dims(node.attrs.GetInts("stride"));
    const memory::dims padding = dnnl_util::Dims(node.attrs.GetInts("padding"));
    memory::dims dilates = dnnl_util::Dims(node.attrs.GetInts("dilation"));
    for (auto& d : dilates) d -= 1;
    const auto direct = dnnl::algorithm::convolution_direct;
    dnnl::convolution_forward::primitive_desc forward(
        {dnnl::prop_kind::forward_training, direct, src, weights, dst, strides, dilates, padding,
         padding},
        engine_);
    if (filter) {
      dnnl::convolution_backward_weights::primitive_desc pd(
          {direct, src, weights, dst, strides, dilates, padding, padding}, engine_, forward);
      primitive_ = dnnl::convolution_backward_weights(pd);
      Bind({{DNNL_ARG_SRC, pd.src_desc()},
            {DNNL_ARG_DIFF_DST, pd.diff_dst_desc()},
            {DNNL_ARG_DIFF_WEIGHTS, pd.diff_weights_desc()},
            {DNNL_ARG_SCRATCHPAD, pd.scratchpad_desc()}});
    } else if (data) {
      dnnl::convolution_backward_data::primitive_desc pd(
          {direct, src, weights, dst, strides, dilates, padding, padding}, engine_, forward);
      primitive_ = dnnl::convolution_backward_data(pd);
      Bind({{DNNL_ARG_DIFF_DST, pd.diff_dst_desc()},
            {DNNL_ARG_WEIGHTS, pd.weights_desc()},
            {DNNL_ARG_DIFF_SRC, pd.diff_src_desc()},
            {DNNL_ARG_SCRATCHPAD, pd.scratchpad_desc()}});
    } else {
      primitive_ = dnnl::convolution_forward(forward);
      Bind({{DNNL_ARG_SRC, forward.src_desc()},
            {DNNL_ARG_WEIGHTS, forward.weights_desc()},
            {DNNL_ARG_DST, forward.dst_desc()},
            {DNNL_ARG_SCRATCHPAD, forward.scratchpad_desc()}});
    }
  }

  // Seconds per execution: the median of `reps` after one warm-up; with `cold`, every execution
  // starts after the caches were evicted.
  double Time(int reps, bool cold) {
    dnnl::stream& stream = dnnl_util::CpuStream();
    std::vector<double> times;
    for (int i = 0; i <= reps; ++i) {
      if (cold) EvictCaches();
      const Clock::time_point start = Clock::now();
      primitive_.execute(stream, args_);
      stream.wait();
      if (i > 0) times.push_back(std::chrono::duration<double>(Clock::now() - start).count());
    }
    return Median(times);
  }

 private:
  // Zero-filled memory for every argument.
  void Bind(const std::vector<std::pair<int, dnnl::memory::desc>>& args) {
    for (const auto& [arg, desc] : args) {
      dnnl::memory memory(desc, engine_);
      std::memset(memory.get_data_handle(), 0, desc.get_size());
      args_.emplace(arg, memory);
    }
  }

  // Writes twice the last-level cache's size, on every thread oneDNN runs on.
  static void EvictCaches() {
    static std::vector<char> buffer(2 * LastLevelCacheBytes());
    const int64_t size = static_cast<int64_t>(buffer.size());
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < size; i += 64) buffer[i] = static_cast<char>(buffer[i] + 1);
  }
  static size_t LastLevelCacheBytes() {
    const long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
    return l3 > 0 ? static_cast<size_t>(l3) : size_t{64} << 20;
  }

  dnnl::engine& engine_ = dnnl_util::CpuEngine();
  dnnl::primitive primitive_;
  std::unordered_map<int, dnnl::memory> args_;
};

// In-graph time of every convolution (profiled over `steps`) against its bare primitive.
void PrintConvComparison(const Executor& executor, int steps) {
  struct Totals {
    double graph = 0.0, hot = 0.0, cold = 0.0, flops = 0.0;
    void Add(const Totals& other) {
      graph += other.graph;
      hot += other.hot;
      cold += other.cold;
      flops += other.flops;
    }
  };
  std::map<std::string, Totals> by_op;
  std::vector<std::tuple<double, std::string, double, double>> worst;  // (lost, name, graph, hot)
  for (const Executor::NodeTime& t : executor.Profile()) {
    if (!IsConv(*t.node)) continue;
    BareConv bare(*t.node);
    const Totals node{.graph = t.seconds / steps,
                      .hot = bare.Time(steps, /*cold=*/false),
                      .cold = bare.Time(steps, /*cold=*/true),
                      .flops = ConvFlops(*t.node)};
    by_op[t.node->op->name()].Add(node);
    worst.emplace_back(node.graph - node.hot, t.node->name, node.flops / node.graph * 1e-9,
                       node.flops / node.hot * 1e-9);
  }
  auto print = [](const std::string& name, const Totals& totals) {
    auto gflops = [&](double seconds) { return totals.flops / seconds * 1e-9; };
    std::cout << absl::StrFormat(
        "  %-22s %8.2f ms %6.1f | hot %8.2f ms %6.1f %.2fx | cold %8.2f ms %6.1f %.2fx\n", name,
        totals.graph * 1e3, gflops(totals.graph), totals.hot * 1e3, gflops(totals.hot),
        totals.hot / totals.graph, totals.cold * 1e3, gflops(totals.cold),
        totals.cold / totals.graph);
  };
  std::cout << "  convolutions: in the graph vs the bare oneDNN primitive, hot and cold caches "
               "(ms per step, GFLOP/s, bare time / graph time)\n";
  Totals all;
  for (const auto& [op, totals] : by_op) {
    print(op, totals);
    all.Add(totals);
  }
  print("all", all);
  std::sort(worst.rbegin(), worst.rend());
  std::cout << "  most time lost against the bare primitive (GFLOP/s graph | bare):\n";
  for (size_t i = 0; i < std::min<size_t>(worst.size(), 6); ++i) {
    const auto& [lost, name, graph, bare] = worst[i];
    std::cout << absl::StrFormat("  %-60s %+7.2f ms %7.1f | %7.1f\n", name, lost * 1e3, graph,
                                 bare);
  }
}

// Where the time goes, by op and by node. On a GPU the kernel times come from CUDA events, so
// the rest of the median step is time the device sat idle: launch gaps and host work.
void PrintProfile(const Executor& executor, int steps, double median_step, size_t slowest) {
  std::map<std::string, double> by_op;
  double total = 0.0;
  std::vector<Executor::NodeTime> nodes = executor.Profile();
  for (const Executor::NodeTime& t : nodes) {
    by_op[t.node->op->name()] += t.seconds / steps;
    total += t.seconds / steps;
  }
  std::vector<std::pair<double, std::string>> ops;
  for (const auto& [op, seconds] : by_op) ops.emplace_back(seconds, op);
  std::sort(ops.rbegin(), ops.rend());
  std::cout << absl::StrFormat("  kernels: %.1f ms per step, %.1f%% of the median step\n",
                               total * 1e3, 100.0 * total / median_step);
  for (const auto& [seconds, op] : ops) {
    std::cout << absl::StrFormat("  %-24s %9.2f ms %5.1f%%\n", op, seconds * 1e3,
                                 100.0 * seconds / total);
  }
  std::sort(nodes.begin(), nodes.end(),
            [](const auto& a, const auto& b) { return a.seconds > b.seconds; });
  std::cout << "  slowest nodes:\n";
  for (size_t i = 0; i < std::min(nodes.size(), slowest); ++i) {
    std::cout << absl::StrFormat("  %-60s %8.3f ms\n", nodes[i].node->name,
                                 nodes[i].seconds / steps * 1e3);
  }
}

// The timed steps of one configuration.
struct StepTimes {
  std::vector<double> seconds;  // one per timed step
  double loss = 0.0;            // of the last step
  double exposed_wait = 0.0;    // seconds the timed steps waited for communication, in all
};

absl::StatusOr<StepTimes> TimeSteps(const BenchConfig& config, Model& model, const Batch& batch) {
  parallel::CommGroup* group = nullptr;
  if (config.data_parallel) {
    LS_ASSIGN_OR_RETURN(group, model.HostGroup());
  }
  Executor& executor = *model.train_executor();
  StepTimes result;
  for (int i = 0; i < config.warmup + config.steps; ++i) {
    if (i == config.warmup) {
      executor.ResetProfile();
      executor.EnableProfiling(config.profile || config.conv);
    }
    // As the torch peer does: every rank starts the step together, so a step times the slowest.
    if (group != nullptr) LS_RETURN_IF_ERROR(bench::Barrier(*group));
    std::string go;
    if (config.paced && !std::getline(std::cin, go)) {
      return absl::AbortedError("--paced: standard input closed before the last step");
    }
    const Clock::time_point start = Clock::now();
    LS_ASSIGN_OR_RETURN(result.loss, model.TrainStep(batch));
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    if (config.paced) std::cout << "step_s=" << seconds << std::endl;
    if (i >= config.warmup) result.seconds.push_back(seconds);
  }
  result.exposed_wait = executor.exposed_wait_seconds();
  return result;
}

// Data parallel: the median time of agreeing the running statistics across the ranks
// (Model::AgreeRunningStatistics, as before each evaluation and save), each after a step so that
// the ranks' statistics differ and the whole agreement runs: read, gather, mean, write back.
absl::StatusOr<double> MedianAgreementSeconds(const BenchConfig& config, Model& model,
                                              const Batch& batch) {
  LS_ASSIGN_OR_RETURN(parallel::CommGroup * group, model.HostGroup());
  std::vector<double> seconds;
  for (int i = 0; i < config.steps; ++i) {
    LS_RETURN_IF_ERROR(model.TrainStep(batch).status());
    LS_RETURN_IF_ERROR(bench::Barrier(*group));
    const Clock::time_point start = Clock::now();
    LS_ASSIGN_OR_RETURN(const bool changed, model.AgreeRunningStatistics());
    seconds.push_back(std::chrono::duration<double>(Clock::now() - start).count());
    if (!changed) return absl::InternalError("the ranks' running statistics did not differ");
  }
  return Median(seconds);
}

absl::Status RunOne(const BenchConfig& config, const std::string& name, int64_t size,
                    const parallel::Context& context, const EnvOptions& env) {
  LS_ASSIGN_OR_RETURN(LayerPtr net, models::ModelByName(name, config.classes));
  LS_ASSIGN_OR_RETURN(const Device device, context.DeviceFor(config.device));
  ModelOptions options{.batch_size = config.batch,
                       .image_shape = {3, size, size},
                       .num_threads = config.threads,
                       .fuse_kernels = !config.no_fuse,
                       .device = device,
                       .replay_steps = config.cuda_graph == "on",
                       .context = context,
                       .dump_dir = env.dump_dir};
  options.config.Set(env.math);
  if (config.data_parallel) options.parallel.mode = parallel::ParallelMode::kDataParallel;
  options.parallel.fusion_threshold_mb = config.fusion_threshold_mb;
  options.parallel.overlap_communication = env.overlap_communication;
  ApplyPrecisionFlags(config.precision, options);
  Model model(net, SoftmaxCrossEntropy(), Momentum{.lr = 0.01, .momentum = 0.9}, options);
  LS_RETURN_IF_ERROR(model.Compile());
  const Batch batch =
      OnDevice(RandomBatch(config.batch, size, config.classes, context.rank()), options.device);
  LS_ASSIGN_OR_RETURN(StepTimes times, TimeSteps(config, model, batch));
  double agreement = 0.0;
  if (config.data_parallel) {
    LS_ASSIGN_OR_RETURN(agreement, MedianAgreementSeconds(config, model, batch));
  }
  if (context.rank() != 0) return absl::OkStatus();
  const double median = Median(times.seconds);
  std::cout << "# " << name << " " << PrecisionLine(options) << ", activations "
            << model.train_executor()->graph().plan().arena / 1e6 << " MB\n";
  if (config.data_parallel) {
    const double exposed = times.exposed_wait / config.steps;
    std::cout << absl::StrFormat(
        "lockstep-dp %s size=%d ranks=%d batch/rank=%d threads/rank=%d median_step_s=%.4f "
        "global_img_per_s=%.2f fusion_mb=%g exposed_comm_s=%.4f exposed_share=%.2f%% loss=%.4f "
        "agree_stats_s=%.5f\n",
        name, size, context.size(), config.batch, config.threads, median,
        config.batch * context.size() / median, config.fusion_threshold_mb, exposed,
        100.0 * exposed / median, times.loss, agreement);
  } else {
    std::cout << absl::StrFormat(
        "lockstep %s size=%d batch=%d device=%s threads=%d median_step_s=%.4f img_per_s=%.2f "
        "loss=%.4f\n",
        name, size, config.batch, config.device, config.threads, median, config.batch / median,
        times.loss);
  }
  std::cout << std::flush;
  if (config.profile) {
    PrintProfile(*model.train_executor(), config.steps, median,
                 static_cast<size_t>(config.profile_nodes));
  }
  if (config.conv) PrintConvComparison(*model.train_executor(), config.steps);
  return absl::OkStatus();
}

}  // namespace
}  // namespace lockstep::train

int main(int argc, char** argv) {
  absl::StatusOr<lockstep::StartedRank> started = lockstep::StartRank(&argc, &argv);
  if (!started.ok()) return lockstep::parallel::ReportFatal(started.status());
  const lockstep::parallel::Context& context = started->context;
  const lockstep::EnvOptions& env = started->env;
  lockstep::train::BenchConfig config;
  CLI::App app{
      "Training-step time of ResNet-50/18 on one process or data parallel over mpirun "
      "(compare torch_resnet_step.py and torch_ddp_step.py)."};
  app.add_option("--model", config.models, "resnet50, resnet18, lenet")->delimiter(',');
  app.add_option("--size", config.sizes, "image sizes")->delimiter(',');
  app.add_option("--batch", config.batch, "batch size (per rank)")->capture_default_str();
  app.add_option("--steps", config.steps, "timed steps")->capture_default_str();
  app.add_option("--warmup", config.warmup, "untimed steps first")->capture_default_str();
  app.add_option("--threads", config.threads, "OpenMP threads (per rank)")->capture_default_str();
  app.add_option("--classes", config.classes, "classes")->capture_default_str();
  app.add_flag("--profile", config.profile, "time every kernel");
  app.add_option("--profile-nodes", config.profile_nodes, "how many of the slowest nodes to list")
      ->check(CLI::NonNegativeNumber);
  app.add_flag("--conv", config.conv, "convolutions in the graph against bare oneDNN");
  app.add_flag("--no-fuse", config.no_fuse, "compile without fused kernels (to measure them)");
  app.add_flag("--paced", config.paced,
               "wait for a line on stdin before each step and print its time (paced_vs_torch.py)");
  app.add_flag("--data-parallel", config.data_parallel, "data parallel over the ranks of mpirun");
  app.add_option("--device", config.device, "cpu or cuda (this rank's GPU)")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
  app.add_option("--cuda-graph", config.cuda_graph,
                 "on: after the first two steps each step is one CUDA graph launch; off: kernel "
                 "by kernel")
      ->check(CLI::IsMember({"on", "off"}))
      ->capture_default_str();
  app.add_option("--fusion-threshold-mb", config.fusion_threshold_mb,
                 "bucket size of the fused gradient AllReduce")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  lockstep::AddPrecisionFlags(app, config.precision);
  CLI11_PARSE(app, argc, argv);
  for (const std::string& model : config.models) {
    for (int64_t size : config.sizes) {
      absl::Status status = lockstep::train::RunOne(config, model, size, context, env);
      if (!status.ok()) return lockstep::parallel::ReportFatal(status);
    }
  }
  return 0;
}
