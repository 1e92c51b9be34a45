#include "parallel/gloo_communicator.h"

#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/common/error.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/tcp/device.h>

#include <csignal>
#include <cstring>
#include <utility>
#include <vector>

#include "parallel/collective_util.h"
#include "parallel/reduce_math.h"

namespace lockstep::parallel {
namespace {

// The rendezvous store as gloo asks for it. gloo's Store reports failures by throwing, which
// connectFullMesh lets through to Create.
class StoreForGloo : public gloo::rendezvous::Store {
 public:
  explicit StoreForGloo(TcpStore& store) : store_(store) {}
  void set(const std::string& key, const std::vector<char>& data) override {
    Check(store_.Set(key, std::string(data.begin(), data.end())));
  }
  std::vector<char> get(const std::string& key) override {
    absl::StatusOr<std::string> value = store_.Get(key);
    Check(value.status());
    return std::vector<char>(value->begin(), value->end());
  }
  void wait(const std::vector<std::string>& keys) override { Check(store_.Wait(keys)); }
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds&) override {
    Check(store_.Wait(keys));  // the store's own timeout, the collective one
  }

 private:
  static void Check(const absl::Status& status) {
    if (!status.ok()) throw gloo::IoException(std::string(status.message()));
  }
  TcpStore& store_;
};

// gloo writes to its peers with writev, which raises SIGPIPE when a peer has died and would end
// this rank silently (exit 141) instead of with the collective's error. Python ignores SIGPIPE
// for the same reason; a handler the process installed is left alone.
void IgnoreBrokenPipes() {
  struct sigaction current = {};
  if (sigaction(SIGPIPE, nullptr, &current) == 0 && current.sa_handler == SIG_DFL) {
    signal(SIGPIPE, SIG_IGN);
  }
}

using ReduceFn = gloo::AllreduceOptions::Func;

template <typename T, typename Combine>
ReduceFn CombineWith() {
  return [](void* out, const void* a, const void* b, size_t n) {
    CombineElements<T, Combine>(static_cast<const T*>(a), static_cast<const T*>(b),
                                static_cast<T*>(out), n);
  };
}

template <typename T>
ReduceFn Combining(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAvg:
      return CombineWith<T, SumOf>();
    case ReduceOp::kMax:
      return CombineWith<T, MaxOf>();
    case ReduceOp::kMin:
      return CombineWith<T, MinOf>();
  }
  LS_CHECK(false) << "unhandled reduce op " << static_cast<int>(op);
  return nullptr;
}

ReduceFn ReduceFor(ReduceOp op, DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return Combining<float>(op);
    case DType::kF64:
      return Combining<double>(op);
    case DType::kBF16:
      return Combining<BFloat16>(op);
    case DType::kF16:
      return Combining<Float16>(op);
    case DType::kI32:
      return Combining<int32_t>(op);
    case DType::kI64:
      return Combining<int64_t>(op);
    case DType::kU8:
    case DType::kBool:
      break;  // the checks refuse reductions of these
  }
  LS_CHECK(false) << "no reduction for dtype " << static_cast<int>(dtype);
  return nullptr;
}

char* Bytes(const Tensor& tensor) { return static_cast<char*>(tensor.raw_data()); }

// gloo splits a reduction into segments of whole elements: it needs the element size, which an
// unsigned type of that width gives (the reduce function knows the real type).
void SetReduced(gloo::AllreduceOptions& options, const Tensor& tensor) {
  const size_t n = static_cast<size_t>(tensor.numel());
  switch (SizeOf(tensor.dtype())) {
    case 2:
      return options.setOutput(static_cast<uint16_t*>(tensor.raw_data()), n);
    case 4:
      return options.setOutput(static_cast<uint32_t*>(tensor.raw_data()), n);
    case 8:
      return options.setOutput(static_cast<uint64_t*>(tensor.raw_data()), n);
  }
  LS_CHECK(false) << "no reduction of " << SizeOf(tensor.dtype()) << "-byte elements";
}

}  // namespace

absl::StatusOr<std::shared_ptr<GlooCommunicator>> GlooCommunicator::Create(
    int rank, int size, TcpStore& store, const std::string& prefix, const std::string& address,
    std::chrono::milliseconds timeout) {
  IgnoreBrokenPipes();
  try {
    gloo::transport::tcp::attr attr;
    attr.hostname = address;
    std::shared_ptr<gloo::transport::Device> device = gloo::transport::tcp::CreateDevice(attr);
    auto context = std::make_shared<gloo::rendezvous::Context>(rank, size);
    context->setTimeout(timeout);
    StoreForGloo adapted(store);
    gloo::rendezvous::PrefixStore prefixed(prefix, adapted);
    context->connectFullMesh(prefixed, device);
    return std::shared_ptr<GlooCommunicator>(new GlooCommunicator(rank, size, std::move(context)));
  } catch (const std::exception& e) {
    return absl::UnavailableError(absl::StrCat("rank ", rank, " of ", size,
                                               " connecting to the other ranks over gloo (",
                                               address, "): ", e.what()));
  }
}

GlooCommunicator::GlooCommunicator(int rank, int size, std::shared_ptr<gloo::Context> context)
    : rank_(rank), size_(size), context_(std::move(context)) {}

GlooCommunicator::~GlooCommunicator() = default;

absl::Status GlooCommunicator::Run(absl::string_view collective, size_t bytes,
                                   const std::function<void()>& collective_call) {
  std::lock_guard<std::mutex> lock(mutex_);
  try {
    collective_call();
    return absl::OkStatus();
  } catch (const std::exception& e) {
    return absl::UnavailableError(
        absl::StrCat(DescribeCollective(*this, collective, bytes), ": ", e.what()));
  }
}

absl::Status GlooCommunicator::AllReduce(const Tensor& inout, ReduceOp op) {
  LS_RETURN_IF_ERROR(CheckAllReduce(*this, inout, op));
  if (inout.numel() == 0) return absl::OkStatus();
  LS_RETURN_IF_ERROR(Run("AllReduce", inout.nbytes(), [&] {
    gloo::AllreduceOptions options(context_);
    SetReduced(options, inout);
    options.setReduceFunction(ReduceFor(op, inout.dtype()));
    gloo::allreduce(options);
  }));
  if (op == ReduceOp::kAvg) DivideBySize(inout, size_);
  return absl::OkStatus();
}

absl::Status GlooCommunicator::AllGather(const Tensor& input, const Tensor& output) {
  LS_RETURN_IF_ERROR(CheckAllGather(*this, input, output));
  return Run("AllGather", output.nbytes(), [&] {
    gloo::AllgatherOptions options(context_);
    // gloo gathers in place when the input is this rank's block of the output.
    if (Bytes(input) != Bytes(output) + rank_ * input.nbytes()) {
      options.setInput(Bytes(input), input.nbytes());
    }
    options.setOutput(Bytes(output), output.nbytes());
    gloo::allgather(options);
  });
}

absl::Status GlooCommunicator::Broadcast(const Tensor& inout, int root) {
  LS_RETURN_IF_ERROR(CheckBroadcast(*this, inout, root));
  return Run("Broadcast", inout.nbytes(), [&] {
    gloo::BroadcastOptions options(context_);
    options.setOutput(Bytes(inout), inout.nbytes());
    options.setRoot(root);
    gloo::broadcast(options);
  });
}

absl::Status GlooCommunicator::ReduceScatter(const Tensor& input, const Tensor& output,
                                             ReduceOp op) {
  LS_RETURN_IF_ERROR(CheckReduceScatter(*this, input, output, op));
  Tensor reduced = Tensor::Empty(input.shape(), input.dtype());
  LS_RETURN_IF_ERROR(CopyTensorBytes(reduced, input));
  LS_RETURN_IF_ERROR(AllReduce(reduced, op));
  return CopyTensorBytes(output,
                         reduced.View(rank_ * output.nbytes(), output.shape(), output.dtype()));
}

absl::Status GlooCommunicator::Barrier() {
  return Run("Barrier", 0, [&] {
    gloo::BarrierOptions options(context_);
    gloo::barrier(options);
  });
}

}  // namespace lockstep::parallel
