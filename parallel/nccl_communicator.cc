#include "parallel/nccl_communicator.h"

#include <cstring>
#include <deque>
#include <string>
#include <thread>
#include <utility>

#include "core/device_memory.h"
#include "core/logging.h"
#include "ops/cuda/cuda_status.h"
#include "parallel/collective_util.h"

namespace lockstep::parallel {
namespace {

ncclDataType_t NcclType(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return ncclFloat32;
    case DType::kF16:
      return ncclFloat16;
    case DType::kBF16:
      return ncclBfloat16;
    case DType::kF64:
      return ncclFloat64;
    case DType::kI32:
      return ncclInt32;
    case DType::kI64:
      return ncclInt64;
    case DType::kU8:
    case DType::kBool:  // moved only, never reduced
      return ncclUint8;
  }
  LS_CHECK(false) << "unhandled dtype " << static_cast<int>(dtype);
  return ncclUint8;
}

ncclRedOp_t NcclOp(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      return ncclSum;
    case ReduceOp::kMax:
      return ncclMax;
    case ReduceOp::kMin:
      return ncclMin;
    case ReduceOp::kAvg:
      return ncclAvg;
  }
  LS_CHECK(false) << "unhandled reduce op " << static_cast<int>(op);
  return ncclSum;
}

// Destroyed by whichever thread drops its kernel: the event's device is made current first.
class CudaDone : public DeviceCollectives::Done {
 public:
  explicit CudaDone(int device) : device(device) {}
  ~CudaDone() override {
    if (event == nullptr) return;
    cudaSetDevice(device);
    cudaEventDestroy(event);
  }
  int device;
  cudaEvent_t event = nullptr;
};

cudaEvent_t EventOf(DeviceCollectives::Done& done) { return static_cast<CudaDone&>(done).event; }

}  // namespace

absl::Status NcclErrorStatus(ncclResult_t result, const char* call, const char* file, int line) {
  std::string message = absl::StrCat("NCCL call ", call, " failed at ", file, ":", line, ": ",
                                     ncclGetErrorString(result));
  const char* detail = ncclGetLastError(nullptr);
  if (detail != nullptr && *detail != '\0') absl::StrAppend(&message, " (", detail, ")");
  return absl::InternalError(message);
}

// Events recorded on the communicator's stream after each collective, queried in issue order,
// and NCCL's own error state. The events come from a pool: one per operation, so no thread ever
// records an event another thread waits on.
class NcclCommunicator::Probe : public CollectiveProbe {
 public:
  explicit Probe(NcclCommunicator& owner) : owner_(owner) {}
  ~Probe() override {
    for (const Recorded& recorded : recorded_) cudaEventDestroy(recorded.event);
    for (cudaEvent_t event : free_) cudaEventDestroy(event);
  }

  absl::StatusOr<cudaEvent_t> Take() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!free_.empty()) {
      cudaEvent_t event = free_.back();
      free_.pop_back();
      return event;
    }
    cudaEvent_t event = nullptr;
    CUDA_RETURN_IF_ERROR(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
    return event;
  }
  void Give(cudaEvent_t event) {
    std::lock_guard<std::mutex> lock(mutex_);
    free_.push_back(event);
  }

  // Marks the end of the work queued on `stream` so far as collective `sequence`.
  absl::Status Record(int64_t sequence, cudaStream_t stream) {
    LS_ASSIGN_OR_RETURN(cudaEvent_t event, Take());
    CUDA_RETURN_IF_ERROR(cudaEventRecord(event, stream));
    std::lock_guard<std::mutex> lock(mutex_);
    recorded_.push_back({sequence, event});
    return absl::OkStatus();
  }

  absl::StatusOr<bool> Finished(int64_t sequence) override {
    Recorded front;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (recorded_.empty() || recorded_.front().sequence != sequence) return false;
      front = recorded_.front();
    }
    CUDA_RETURN_IF_ERROR(cudaSetDevice(owner_.device_.index));
    const cudaError_t state = cudaEventQuery(front.event);
    if (state == cudaErrorNotReady) return false;
    CUDA_RETURN_IF_ERROR(state);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      recorded_.pop_front();
    }
    Give(front.event);
    return true;
  }

  // Never waits for comm_mutex_: a call holding it is settling, and the watch asks again at its
  // next poll (its timeouts go on meanwhile).
  absl::Status AsyncError() override {
    std::unique_lock<std::mutex> lock(owner_.comm_mutex_, std::try_to_lock);
    if (!lock.owns_lock()) return absl::OkStatus();
    if (owner_.comm_ == nullptr) return absl::OkStatus();  // aborted: the watch has stopped
    ncclResult_t state = ncclSuccess;
    NCCL_RETURN_IF_ERROR(ncclCommGetAsyncError(owner_.comm_, &state));
    if (state == ncclSuccess || state == ncclInProgress) return absl::OkStatus();
    return NcclErrorStatus(state, "ncclCommGetAsyncError", __FILE__, __LINE__);
  }

  // ncclCommAbort frees the communicator; later calls find comm_ null. It is called without
  // comm_mutex_, since it can block (CollectiveProbe::Abort) and Usable must still answer. A call
  // settling holds comm_mutex_; aborting_ makes it give up within a poll.
  void Abort() override {
    owner_.aborting_ = true;
    ncclComm_t comm = nullptr;
    {
      std::lock_guard<std::mutex> lock(owner_.comm_mutex_);
      comm = std::exchange(owner_.comm_, nullptr);
    }
    if (comm == nullptr) return;
    cudaSetDevice(owner_.device_.index);  // the watch's thread: the communicator's device
    ncclCommAbort(comm);
  }

 private:
  struct Recorded {
    int64_t sequence = 0;
    cudaEvent_t event = nullptr;  // from free_, back there once the collective is retired
  };
  NcclCommunicator& owner_;
  std::mutex mutex_;
  std::deque<Recorded> recorded_;  // issue order
  std::vector<cudaEvent_t> free_;
};

NcclCommunicator::NcclCommunicator(int rank, int size, Device device,
                                   std::chrono::milliseconds timeout,
                                   CollectiveWatch::FailureHandler on_failure,
                                   std::shared_ptr<const Watchdog> watchdog)
    : rank_(rank),
      size_(size),
      device_(device),
      timeout_(timeout),
      on_failure_(std::move(on_failure)),
      watchdog_(std::move(watchdog)) {}

absl::StatusOr<std::shared_ptr<NcclCommunicator>> NcclCommunicator::Create(
    Communicator& bootstrap, int device_index, std::chrono::milliseconds timeout,
    CollectiveWatch::FailureHandler on_failure, std::shared_ptr<const Watchdog> watchdog) {
  Tensor id = Tensor::Empty({static_cast<int64_t>(sizeof(ncclUniqueId))}, DType::kU8);
  if (bootstrap.rank() == 0) {
    NCCL_RETURN_IF_ERROR(ncclGetUniqueId(static_cast<ncclUniqueId*>(id.raw_data())));
  }
  LS_RETURN_IF_ERROR(Annotate(bootstrap.Broadcast(id, 0), "handing out the NCCL unique id"));
  ncclUniqueId unique_id;
  std::memcpy(&unique_id, id.raw_data(), sizeof(unique_id));

  std::shared_ptr<NcclCommunicator> comm(
      new NcclCommunicator(bootstrap.rank(), bootstrap.size(), Device::CUDA(device_index), timeout,
                           std::move(on_failure), std::move(watchdog)));
  LS_RETURN_IF_ERROR(comm->Join(
      [&](ncclComm_t* out, ncclConfig_t* config) {
        return ncclCommInitRankConfig(out, comm->size_, unique_id, comm->rank_, config);
      },
      "ncclCommInitRankConfig", /*priority=*/0));
  return comm;
}

absl::Status NcclCommunicator::Join(const JoinFn& join, const char* call, int priority) {
  CUDA_RETURN_IF_ERROR(cudaSetDevice(device_.index));
  CUDA_RETURN_IF_ERROR(cudaStreamCreateWithPriority(&stream_, cudaStreamNonBlocking, priority));
  probe_ = std::make_unique<Probe>(*this);
  // Non-blocking, so that a peer that never joins costs the timeout, not the job.
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  absl::Status joined = Settle(join(&comm_, &config), call, __FILE__, __LINE__);
  if (!joined.ok()) {
    probe_->Abort();
    return Annotate(joined, absl::StrCat("rank ", rank_, " joining the NCCL communicator on ",
                                         device_.ToString()));
  }
  watch_ = std::make_unique<CollectiveWatch>(*probe_, timeout_, on_failure_, watchdog_);
  barrier_ = Tensor::Empty({1}, DType::kI32, device_);
  flag_ = Tensor::Empty({1}, DType::kI32, device_);
  CUDA_RETURN_IF_ERROR(cudaMemset(barrier_.raw_data(), 0, barrier_.nbytes()));
  return absl::OkStatus();
}

absl::StatusOr<DeviceCollectives*> NcclCommunicator::Urgent() {
  std::lock_guard<std::mutex> lock(urgent_mutex_);
  if (urgent_ != nullptr) return urgent_.get();
  CUDA_RETURN_IF_ERROR(cudaSetDevice(device_.index));
  int least = 0, greatest = 0;
  CUDA_RETURN_IF_ERROR(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  std::shared_ptr<NcclCommunicator> urgent(
      new NcclCommunicator(rank_, size_, device_, timeout_, on_failure_, watchdog_));
  LS_RETURN_IF_ERROR(urgent->Join(
      [this](ncclComm_t* out, ncclConfig_t* config) {
        std::lock_guard<std::mutex> comm_lock(comm_mutex_);
        return ncclCommSplit(comm_, /*color=*/0, rank_, out, config);
      },
      "ncclCommSplit", greatest));
  urgent_ = std::move(urgent);
  return urgent_.get();
}

// ncclCommDestroy alone frees what peers may still be reading; finalizing first waits, within
// the timeout, until every peer has finished with this rank. A peer that never does (dead at
// exit) costs the timeout and an abort, never a hang.
NcclCommunicator::~NcclCommunicator() {
  cudaSetDevice(device_.index);  // whichever thread drops the last reference
  urgent_.reset();
  const absl::Status finalized = Finalize();
  watch_.reset();  // no poll of comm_ from here on
  if (comm_ != nullptr) {
    if (finalized.ok()) {
      ncclCommDestroy(comm_);
    } else {
      LS_LOG(Warning) << "rank " << rank_ << ": " << finalized.message()
                      << "; the NCCL communicator is aborted instead";
      ncclCommAbort(comm_);
    }
  }
  probe_.reset();
  if (stream_ != nullptr) cudaStreamDestroy(stream_);
}

absl::Status NcclCommunicator::Finalize() {
  std::lock_guard<std::mutex> lock(comm_mutex_);
  if (comm_ == nullptr) return absl::OkStatus();
  CUDA_RETURN_IF_ERROR(cudaSetDevice(device_.index));
  NCCL_SETTLE(ncclCommFinalize(comm_));
  return absl::OkStatus();
}

absl::Status NcclCommunicator::Settle(ncclResult_t result, const char* call, const char* file,
                                      int line) {
  const auto deadline = std::chrono::steady_clock::now() + timeout_;
  while (result == ncclInProgress && comm_ != nullptr) {
    if (aborting_) {
      return absl::AbortedError(absl::StrCat("NCCL call ", call, " at ", file, ":", line,
                                             " given up: the watch is "
                                             "aborting the communicator"));
    }
    if (std::chrono::steady_clock::now() > deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat("NCCL call ", call, " at ", file, ":", line, " still in progress after ",
                       timeout_.count() / 1000.0, " s: a rank died, or never reached it"));
    }
    std::this_thread::sleep_for(std::chrono::microseconds(100));
    NCCL_RETURN_IF_ERROR(ncclCommGetAsyncError(comm_, &result));
  }
  if (result != ncclSuccess) return NcclErrorStatus(result, call, file, line);
  return absl::OkStatus();
}

absl::Status NcclCommunicator::Usable() {
  std::lock_guard<std::mutex> lock(comm_mutex_);
  return UsableLocked();
}

absl::Status NcclCommunicator::UsableLocked() const {
  LS_RETURN_IF_ERROR(watch_->failure());
  if (comm_ == nullptr) return absl::FailedPreconditionError("the NCCL communicator was aborted");
  return absl::OkStatus();
}

absl::Status NcclCommunicator::Follow(cudaStream_t after) {
  LS_RETURN_IF_ERROR(UsableLocked());
  LS_ASSIGN_OR_RETURN(cudaEvent_t ready, probe_->Take());
  CUDA_RETURN_IF_ERROR(cudaEventRecord(ready, after));
  // The wait holds the event's state as of now: it can go back to the pool at once.
  const cudaError_t waited = cudaStreamWaitEvent(stream_, ready, 0);
  probe_->Give(ready);
  CUDA_RETURN_IF_ERROR(waited);
  return absl::OkStatus();
}

absl::StatusOr<int64_t> NcclCommunicator::Watch(std::string label) {
  const int64_t sequence = watch_->Issue(std::move(label));
  LS_RETURN_IF_ERROR(probe_->Record(sequence, stream_));
  return sequence;
}

absl::StatusOr<std::unique_ptr<DeviceCollectives::Done>> NcclCommunicator::MakeDone() {
  CUDA_RETURN_IF_ERROR(cudaSetDevice(device_.index));
  auto done = std::make_unique<CudaDone>(device_.index);
  CUDA_RETURN_IF_ERROR(cudaEventCreateWithFlags(&done->event, cudaEventDisableTiming));
  return done;
}

absl::StatusOr<std::string> NcclCommunicator::EnqueueAllReduce(const std::vector<Tensor>& inouts,
                                                               ReduceOp op, Done& done,
                                                               const StreamWork& before,
                                                               const StreamWork& after_reduce) {
  size_t bytes = 0;
  for (const Tensor& inout : inouts) {
    LS_RETURN_IF_ERROR(CheckAllReduce(*this, inout, op));
    bytes += inout.nbytes();
  }
  std::string label = DescribeCollective(*this, "AllReduce", bytes);
  auto enqueue = [&]() -> absl::Status {
    LS_ASSIGN_OR_RETURN(void* compute, ComputeStream(device_));
    const auto after = static_cast<cudaStream_t>(compute);
    cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    CUDA_RETURN_IF_ERROR(cudaStreamIsCapturing(after, &capture));
    std::lock_guard<std::mutex> lock(comm_mutex_);
    LS_RETURN_IF_ERROR(Follow(after));
    if (before) LS_RETURN_IF_ERROR(before(stream_));
    NCCL_SETTLE(ncclGroupStart());
    for (const Tensor& inout : inouts) {
      NCCL_SETTLE(ncclAllReduce(inout.raw_data(), inout.raw_data(), inout.numel(),
                                NcclType(inout.dtype()), NcclOp(op), comm_, stream_));
    }
    NCCL_SETTLE(ncclGroupEnd());
    if (after_reduce) LS_RETURN_IF_ERROR(after_reduce(stream_));
    if (capture == cudaStreamCaptureStatusNone) LS_RETURN_IF_ERROR(Watch(label).status());
    CUDA_RETURN_IF_ERROR(cudaEventRecord(EventOf(done), stream_));
    return absl::OkStatus();
  };
  LS_RETURN_IF_ERROR(Annotate(enqueue(), label));
  return label;
}

absl::Status NcclCommunicator::ComputeWaitsFor(Done& done) {
  LS_ASSIGN_OR_RETURN(void* compute, ComputeStream(device_));
  CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(static_cast<cudaStream_t>(compute), EventOf(done), 0));
  return absl::OkStatus();
}

// The event goes on the compute stream after the launch, not into the graph: one event recorded
// at every launch could not tell one launch's end from the next.
absl::Status NcclCommunicator::WatchLaunched(const std::string& label) {
  LS_ASSIGN_OR_RETURN(void* compute, ComputeStream(device_));
  std::lock_guard<std::mutex> lock(comm_mutex_);
  LS_RETURN_IF_ERROR(UsableLocked());
  return probe_->Record(watch_->Issue(label), static_cast<cudaStream_t>(compute));
}

absl::Status NcclCommunicator::AllReduce(const Tensor& inout, ReduceOp op) {
  LS_RETURN_IF_ERROR(CheckAllReduce(*this, inout, op));
  return Run("AllReduce", inout.nbytes(), [&]() -> absl::Status {
    NCCL_SETTLE(ncclAllReduce(inout.raw_data(), inout.raw_data(), inout.numel(),
                              NcclType(inout.dtype()), NcclOp(op), comm_, stream_));
    return absl::OkStatus();
  });
}

absl::Status NcclCommunicator::AllGather(const Tensor& input, const Tensor& output) {
  LS_RETURN_IF_ERROR(CheckAllGather(*this, input, output));
  return Run("AllGather", output.nbytes(), [&]() -> absl::Status {
    NCCL_SETTLE(ncclAllGather(input.raw_data(), output.raw_data(), input.numel(),
                              NcclType(input.dtype()), comm_, stream_));
    return absl::OkStatus();
  });
}

absl::Status NcclCommunicator::Broadcast(const Tensor& inout, int root) {
  LS_RETURN_IF_ERROR(CheckBroadcast(*this, inout, root));
  return Run("Broadcast", inout.nbytes(), [&]() -> absl::Status {
    NCCL_SETTLE(ncclBroadcast(inout.raw_data(), inout.raw_data(), inout.numel(),
                              NcclType(inout.dtype()), root, comm_, stream_));
    return absl::OkStatus();
  });
}

absl::Status NcclCommunicator::ReduceScatter(const Tensor& input, const Tensor& output,
                                             ReduceOp op) {
  LS_RETURN_IF_ERROR(CheckReduceScatter(*this, input, output, op));
  return Run("ReduceScatter", input.nbytes(), [&]() -> absl::Status {
    NCCL_SETTLE(ncclReduceScatter(input.raw_data(), output.raw_data(), output.numel(),
                                  NcclType(input.dtype()), NcclOp(op), comm_, stream_));
    return absl::OkStatus();
  });
}

absl::Status NcclCommunicator::Barrier() {
  // NCCL has no barrier; a one-element AllReduce that every rank waits for is one.
  return Run("Barrier", 0, [&]() -> absl::Status {
    NCCL_SETTLE(ncclAllReduce(barrier_.raw_data(), barrier_.raw_data(), 1, ncclInt32, ncclSum,
                              comm_, stream_));
    return absl::OkStatus();
  });
}

absl::StatusOr<bool> NcclCommunicator::OnEveryRank(bool mine) {
  int32_t flag = mine ? 1 : 0;
  // On the compute stream, which the AllReduce follows.
  LS_ASSIGN_OR_RETURN(void* compute, ComputeStream(device_));
  CUDA_RETURN_IF_ERROR(cudaSetDevice(device_.index));
  CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(flag_.raw_data(), &flag, sizeof(flag),
                                       cudaMemcpyHostToDevice, static_cast<cudaStream_t>(compute)));
  LS_RETURN_IF_ERROR(AllReduce(flag_, ReduceOp::kMin));
  CUDA_RETURN_IF_ERROR(cudaMemcpy(&flag, flag_.raw_data(), sizeof(flag), cudaMemcpyDeviceToHost));
  return flag == 1;
}

absl::Status NcclCommunicator::Run(absl::string_view collective, size_t bytes,
                                   const std::function<absl::Status()>& launch) {
  const std::string label = DescribeCollective(*this, collective, bytes);
  auto enqueue = [&]() -> absl::StatusOr<int64_t> {
    std::lock_guard<std::mutex> lock(comm_mutex_);
    // The calling thread (often a CollectiveQueue's) may not have this device current yet.
    CUDA_RETURN_IF_ERROR(cudaSetDevice(device_.index));
    // Tensors may still be written by kernels queued on the compute stream.
    LS_ASSIGN_OR_RETURN(void* compute, ComputeStream(device_));
    LS_RETURN_IF_ERROR(Follow(static_cast<cudaStream_t>(compute)));
    LS_RETURN_IF_ERROR(launch());
    return Watch(label);
  };
  absl::StatusOr<int64_t> sequence = enqueue();
  if (!sequence.ok()) return Annotate(sequence.status(), label);
  return watch_->WaitFor(*sequence);
}

}  // namespace lockstep::parallel
