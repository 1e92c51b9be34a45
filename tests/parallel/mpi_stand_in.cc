#include "tests/parallel/mpi_stand_in.h"

#include <utility>

#include "parallel/collective_util.h"
#include "tests/parallel/stand_in_device.h"

namespace lockstep::stand_in {

using parallel::ReduceOp;

namespace {

// The same memory as a host tensor, for the host communicator.
Tensor OnHost(const Tensor& tensor) {
  return Tensor::Wrap(tensor.raw_data(), tensor.shape(), tensor.dtype(), Device::CPU());
}

}  // namespace

// How many times the stream has reached a kernel's collective, against how many the host queued
// outside a recording: the compute "stream" (the host) waits until the first catches up.
class MpiStandIn::Mark : public Done {
 public:
  int64_t queued = 0;               // host side, under MpiStandIn::mutex_
  std::atomic<int64_t> reached{0};  // stream side
};

// The watch's view: collectives finish in stream order, so the last sequence the stream reached
// answers for every earlier one.
class MpiStandIn::Probe : public parallel::CollectiveProbe {
 public:
  absl::StatusOr<bool> Finished(int64_t sequence) override { return sequence <= finished_; }
  absl::Status AsyncError() override {
    std::lock_guard<std::mutex> lock(mutex_);
    return error_;
  }
  void Abort() override { aborted_ = true; }

  void Finish(int64_t sequence) { finished_ = sequence; }
  void Error(absl::Status status) {
    std::lock_guard<std::mutex> lock(mutex_);
    error_.Update(std::move(status));
  }
  bool aborted() const { return aborted_; }

 private:
  std::atomic<int64_t> finished_{0};
  std::atomic<bool> aborted_{false};
  std::mutex mutex_;
  absl::Status error_;
};

MpiStandIn::MpiStandIn(std::shared_ptr<parallel::Communicator> host,
                       std::chrono::milliseconds timeout,
                       parallel::CollectiveWatch::FailureHandler on_failure,
                       std::shared_ptr<const parallel::Watchdog> watchdog)
    : host_(std::move(host)), probe_(std::make_unique<Probe>()) {
  StandIn();  // registers the device
  watch_ = std::make_unique<parallel::CollectiveWatch>(
      *probe_, timeout,
      [this, on_failure = std::move(on_failure)](const absl::Status& failure) {
        done_changed_.notify_all();
        on_failure(failure);
      },
      std::move(watchdog));
}

MpiStandIn::~MpiStandIn() {
  StandIn().Drain();
  watch_.reset();
}

Device MpiStandIn::device() const { return StandInDevice(); }

bool MpiStandIn::Runs(const std::function<absl::Status()>& work) {
  if (probe_->aborted()) return false;
  absl::Status status = work();
  if (!status.ok()) probe_->Error(std::move(status));
  return status.ok();
}

absl::StatusOr<int64_t> MpiStandIn::QueueWatched(std::string label,
                                                 std::function<absl::Status()> work) {
  const int64_t sequence = watch_->Issue(std::move(label));
  StandIn().Queue([this, sequence, work = std::move(work)] {
    if (Runs(work)) probe_->Finish(sequence);
  });
  return sequence;
}

absl::Status MpiStandIn::Run(absl::string_view collective, size_t bytes,
                             std::function<absl::Status()> launch) {
  const std::string label = parallel::DescribeCollective(*this, collective, bytes);
  int64_t sequence = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    LS_RETURN_IF_ERROR(Annotate(Usable(), label));
    LS_ASSIGN_OR_RETURN(sequence, QueueWatched(label, std::move(launch)));
  }
  return watch_->WaitFor(sequence);
}

absl::Status MpiStandIn::AllReduce(const Tensor& inout, ReduceOp op) {
  LS_RETURN_IF_ERROR(parallel::CheckAllReduce(*this, inout, op));
  return Run("AllReduce", inout.nbytes(),
             [=, this] { return host_->AllReduce(OnHost(inout), op); });
}

absl::Status MpiStandIn::AllGather(const Tensor& input, const Tensor& output) {
  LS_RETURN_IF_ERROR(parallel::CheckAllGather(*this, input, output));
  return Run("AllGather", output.nbytes(),
             [=, this] { return host_->AllGather(OnHost(input), OnHost(output)); });
}

absl::Status MpiStandIn::Broadcast(const Tensor& inout, int root) {
  LS_RETURN_IF_ERROR(parallel::CheckBroadcast(*this, inout, root));
  return Run("Broadcast", inout.nbytes(),
             [=, this] { return host_->Broadcast(OnHost(inout), root); });
}

absl::Status MpiStandIn::ReduceScatter(const Tensor& input, const Tensor& output, ReduceOp op) {
  LS_RETURN_IF_ERROR(parallel::CheckReduceScatter(*this, input, output, op));
  return Run("ReduceScatter", input.nbytes(),
             [=, this] { return host_->ReduceScatter(OnHost(input), OnHost(output), op); });
}

absl::Status MpiStandIn::Barrier() {
  return Run("Barrier", 0, [this] { return host_->Barrier(); });
}

absl::StatusOr<std::unique_ptr<parallel::DeviceCollectives::Done>> MpiStandIn::MakeDone() {
  return std::make_unique<Mark>();
}

absl::StatusOr<std::string> MpiStandIn::EnqueueAllReduce(const std::vector<Tensor>& inouts,
                                                         ReduceOp op, Done& done,
                                                         const StreamWork& before,
                                                         const StreamWork& after_reduce) {
  size_t bytes = 0;
  for (const Tensor& inout : inouts) {
    LS_RETURN_IF_ERROR(parallel::CheckAllReduce(*this, inout, op));
    bytes += inout.nbytes();
  }
  std::string label = parallel::DescribeCollective(*this, "AllReduce", bytes);
  auto& mark = static_cast<Mark&>(done);
  auto reduce = [=, this, &mark]() -> absl::Status {
    if (before) LS_RETURN_IF_ERROR(before(nullptr));
    for (const Tensor& inout : inouts) LS_RETURN_IF_ERROR(host_->AllReduce(OnHost(inout), op));
    if (after_reduce) LS_RETURN_IF_ERROR(after_reduce(nullptr));
    ++mark.reached;
    done_changed_.notify_all();
    return absl::OkStatus();
  };
  std::lock_guard<std::mutex> lock(mutex_);
  LS_RETURN_IF_ERROR(Annotate(Usable(), label));
  if (StandIn().capturing()) {  // recorded, run and watched at each launch
    StandIn().Queue([this, reduce] { Runs(reduce); });
    return label;
  }
  ++mark.queued;
  LS_RETURN_IF_ERROR(QueueWatched(label, std::move(reduce)).status());
  return label;
}

// The host is the compute stream here: it waits, for the reduction or the watch's failure. A
// recording holds the order itself, as a CUDA graph does.
absl::Status MpiStandIn::ComputeWaitsFor(Done& done) {
  if (StandIn().capturing()) return absl::OkStatus();
  auto& mark = static_cast<Mark&>(done);
  int64_t queued = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queued = mark.queued;
  }
  std::unique_lock<std::mutex> lock(done_mutex_);
  done_changed_.wait(lock, [&] { return mark.reached >= queued || !watch_->failure().ok(); });
  return watch_->failure();
}

absl::Status MpiStandIn::WatchLaunched(const std::string& label) {
  std::lock_guard<std::mutex> lock(mutex_);
  LS_RETURN_IF_ERROR(Usable());
  return QueueWatched(label, [] { return absl::OkStatus(); }).status();
}

absl::Status MpiStandIn::Usable() {
  LS_RETURN_IF_ERROR(watch_->failure());
  if (probe_->aborted()) return absl::FailedPreconditionError("the stand-in was aborted");
  return absl::OkStatus();
}

absl::StatusOr<bool> MpiStandIn::OnEveryRank(bool mine) {
  int32_t flag = mine ? 1 : 0;
  const Tensor tensor = Tensor::Wrap(&flag, {1}, DType::kI32, device());
  LS_RETURN_IF_ERROR(AllReduce(tensor, ReduceOp::kMin));
  return flag == 1;
}

}  // namespace lockstep::stand_in
