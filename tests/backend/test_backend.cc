#include "tests/backend/test_backend.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <sstream>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/host_backend.h"
#include "ops/reorder.h"

namespace lockstep::test_backend {
namespace {

std::atomic<int64_t> allocations{0};
std::atomic<int64_t> live{0};
std::atomic<int64_t> host_live{0};

// As on CUDA, every thread starts with device 0 current.
thread_local int current_device = 0;

struct Misuses {
  std::mutex mutex;
  std::vector<std::string> calls;
};

Misuses& Misused() {
  static auto* misuses = new Misuses();
  return *misuses;
}

struct Registered {
  Layout blocked = RegisterLayout({"test_nc4hw", [](const Shape& shape, DType dtype) {
                                     return dtype == DType::kF32 && shape.size() == 4 &&
                                            shape[1] % kChannelBlock == 0;
                                   }});
};

const Registered& Layouts() {
  static const auto* layouts = new Registered();
  return *layouts;
}

// Registered when the program loads, so that the name parses before any kernel asked for it.
[[maybe_unused]] const Registered& kLoaded = Layouts();

// An event knows its device, so that a wait on it can be checked against the current one.
class TestEvent : public DeviceEvent {
 public:
  explicit TestEvent(int index) : index(index) {}
  const int index;
};

// Host memory posing as a device, from an allocator of its own; kernels run on the calling
// thread, and copies, fills and timers are the host's. Calls on a device that is not current
// on the calling thread are refused (test_backend.h).
class TestBackend : public HostBackend {
 public:
  std::string name() const override { return "test"; }
  size_t alignment() const override { return kTestAlignment; }

  absl::Status MakeCurrent(int index) override {
    current_device = index;
    return absl::OkStatus();
  }

  absl::StatusOr<void*> Allocate(size_t bytes, int index) override {
    LS_RETURN_IF_ERROR(RequireCurrent(index, "Allocate"));
    // aligned_alloc wants a multiple of the alignment, and at least one block.
    const size_t rounded = (bytes / kTestAlignment + 1) * kTestAlignment;
    void* data = std::aligned_alloc(kTestAlignment, rounded);
    if (data == nullptr) {
      return absl::ResourceExhaustedError(
          absl::StrCat("test device ", index, ": out of memory allocating ", bytes, " bytes"));
    }
    ++allocations;
    ++live;
    return data;
  }
  // Unchecked, as on CUDA, where a free goes back to the caching allocator without a call.
  void Free(void* ptr, int) override {
    std::free(ptr);
    --live;
  }

  absl::StatusOr<void*> AllocateHost(size_t bytes, int index) override {
    LS_RETURN_IF_ERROR(RequireCurrent(index, "AllocateHost"));
    LS_ASSIGN_OR_RETURN(void* data, HostBackend::AllocateHost(bytes, index));
    ++host_live;
    return data;
  }
  void FreeHost(void* ptr, int index) override {
    RequireCurrent(index, "FreeHost").IgnoreError();  // kept for TakeMisuses
    HostBackend::FreeHost(ptr, index);
    --host_live;
  }
  absl::StatusOr<void*> ComputeStream(int index) override {
    LS_RETURN_IF_ERROR(RequireCurrent(index, "ComputeStream"));
    return nullptr;
  }
  absl::Status Copy(void* dst, Device dst_device, const void* src, Device src_device,
                    size_t bytes) override {
    const Device on = dst_device.type == kTestDeviceType ? dst_device : src_device;
    LS_RETURN_IF_ERROR(RequireCurrent(on.index, "Copy"));
    return HostBackend::Copy(dst, dst_device, src, src_device, bytes);
  }
  absl::Status Zero(void* dst, int index, size_t bytes) override {
    LS_RETURN_IF_ERROR(RequireCurrent(index, "Zero"));
    return HostBackend::Zero(dst, index, bytes);
  }
  absl::StatusOr<std::unique_ptr<DeviceEvent>> CreateEvent(int index) override {
    LS_RETURN_IF_ERROR(RequireCurrent(index, "CreateEvent"));
    return std::make_unique<TestEvent>(index);
  }
  absl::Status Record(DeviceEvent&, int index, Stream) override {
    return RequireCurrent(index, "Record");
  }
  absl::Status StreamWait(int index, Stream, DeviceEvent&) override {
    return RequireCurrent(index, "StreamWait");
  }
  absl::Status HostWait(DeviceEvent& event) override {
    return RequireCurrent(static_cast<TestEvent&>(event).index, "HostWait");
  }

  absl::Status Reorder(const Tensor& from, Layout from_layout, const Tensor& to,
                       Layout to_layout) override {
    const Device on = from.device().type == kTestDeviceType ? from.device() : to.device();
    LS_RETURN_IF_ERROR(RequireCurrent(on.index, "Reorder"));
    return test_backend::Reorder(from, from_layout, to, to_layout);
  }
  std::string reorder_op() const override { return "Reorder"; }
};

REGISTER_BACKEND(kTestDeviceType, TestBackend);

class ReorderKernel : public Kernel {
 public:
  explicit ReorderKernel(const Node& node)
      : from_(node.inputs[0]->layout), to_(node.output()->layout) {}
  absl::Status Run(const KernelIO& io) override {
    // (N, C, H, W) in one layout into the other
    return Reorder(io.inputs[0], from_, io.outputs[0], to_);
  }

 private:
  Layout from_, to_;
};

REGISTER_KERNEL({.op = "Reorder",
                 .device = kTestDeviceType,
                 .create = MakeFactory<ReorderKernel>(),
                 .layouts = ReorderLayouts});

}  // namespace

Layout BlockedLayout() { return Layouts().blocked; }

MemoryCounts Memory() { return {allocations.load(), live.load(), host_live.load()}; }

absl::Status RequireCurrent(int index, const std::string& call) {
  if (index == current_device) return absl::OkStatus();
  std::ostringstream thread;
  thread << std::this_thread::get_id();
  const std::string misuse =
      absl::StrCat("test device ", index, ": ", call, " on thread ", thread.str(), " where device ",
                   current_device, " is current (on a GPU it would act on that device): make ",
                   index, " current first (Backend::MakeCurrent)");
  Misuses& misuses = Misused();
  std::lock_guard<std::mutex> lock(misuses.mutex);
  misuses.calls.push_back(misuse);
  return absl::FailedPreconditionError(misuse);
}

std::vector<std::string> TakeMisuses() {
  Misuses& misuses = Misused();
  std::lock_guard<std::mutex> lock(misuses.mutex);
  return std::exchange(misuses.calls, {});
}

ActivationIndex::ActivationIndex(const Shape& shape, Layout layout)
    : blocked_(layout == BlockedLayout()), c_(shape[1]), h_(shape[2]), w_(shape[3]) {}

absl::Status Reorder(const Tensor& from, Layout from_layout, const Tensor& to, Layout to_layout) {
  const Shape& shape = from.shape();
  for (Layout layout : {from_layout, to_layout}) {
    if (layout != Layout::kPlain && layout != BlockedLayout()) {
      return absl::InvalidArgumentError(
          absl::StrCat("the test backend has no layout ", LayoutName(layout)));
    }
    if (!LayoutEligible(layout, shape, from.dtype())) {
      return absl::InvalidArgumentError(absl::StrCat(DTypeName(from.dtype()), ShapeToString(shape),
                                                     " cannot use layout ", LayoutName(layout)));
    }
  }
  if (to.shape() != shape || to.dtype() != from.dtype()) {
    return absl::InvalidArgumentError(
        absl::StrCat("reorder of ", ShapeToString(shape), " into ", ShapeToString(to.shape())));
  }
  if (from_layout == to_layout) {
    std::memcpy(to.raw_data(), from.raw_data(), to.nbytes());
    return absl::OkStatus();
  }
  const ActivationIndex src(shape, from_layout), dst(shape, to_layout);
  const float* x = from.data<float>();  // (N, C, H, W) in from_layout
  float* y = to.data<float>();          // (N, C, H, W) in to_layout
  for (int64_t n = 0; n < shape[0]; ++n) {
    for (int64_t c = 0; c < shape[1]; ++c) {
      for (int64_t h = 0; h < shape[2]; ++h) {
        for (int64_t w = 0; w < shape[3]; ++w) y[dst(n, c, h, w)] = x[src(n, c, h, w)];
      }
    }
  }
  return absl::OkStatus();
}

LayoutChoice BlockedWhereEligible(const Node& node, const std::vector<Layout>&,
                                  const SharedLayouts&) {
  auto pick = [](const Value& value) {
    return LayoutEligible(BlockedLayout(), value.shape(), value.dtype()) ? BlockedLayout()
                                                                         : Layout::kPlain;
  };
  LayoutChoice choice;
  for (const Value* input : node.inputs) choice.inputs.push_back(pick(*input));
  for (const auto& output : node.outputs) choice.outputs.push_back(pick(*output));
  return choice;
}

}  // namespace lockstep::test_backend
