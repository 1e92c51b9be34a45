#include "train/input_feed.h"

#include <mutex>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/logging.h"

namespace lockstep::train {

struct InputFeed::Slot {
  int64_t batch = -1;               // the batch it holds; -1 before its first
  Tensor host_images, host_labels;  // the pipeline's, kept until copied
  Tensor host_control;              // the step's scalar, in the feed's own host memory
  Tensor images, labels, control;   // on the device; the host tensors themselves on the CPU
  std::unique_ptr<DeviceEvent> copied, fed;
};

namespace {

std::string BatchName(int64_t k) { return absl::StrCat("batch ", k); }

}  // namespace

dataset::BatchAllocator HostBatchAllocator(Device device) {
  if (device.type == DeviceType::kCPU) return nullptr;
  absl::StatusOr<std::shared_ptr<HostBufferPool>> pool = HostBufferPool::Create(device);
  if (!pool.ok()) return nullptr;  // the model on that device fails with its own message
  auto warned = std::make_shared<std::once_flag>();
  return [pool = *std::move(pool), warned](const Shape& shape, DType dtype) {
    absl::StatusOr<Tensor> buffer = pool->Take(shape, dtype);
    if (buffer.ok()) return *std::move(buffer);
    std::call_once(*warned, [&] {
      LS_LOG(Warning) << buffer.status().message()
                      << "; batches go on in pageable memory, whose copies make the host wait";
    });
    return Tensor::Empty(shape, dtype);
  };
}

std::string InputFeed::Op::ToString() const {
  static constexpr const char* kOn[] = {"host", "copy stream", "compute stream"};
  static constexpr const char* kKind[] = {"copy", "feed", "run", "record", "wait for"};
  return absl::StrCat(kOn[static_cast<int>(on)], ": ", kKind[static_cast<int>(kind)], " ", what);
}

InputFeed::InputFeed(Device device, std::optional<ImageNormalization> normalize)
    : device_(device), backend_(BackendOf(device)), normalize_(std::move(normalize)) {
  for (auto& slot : slots_) slot = std::make_unique<Slot>();
}

InputFeed::~InputFeed() = default;

absl::Status InputFeed::Stage(const Tensor& images, const Tensor& labels, float control) {
  LS_RETURN_IF_ERROR(backend_.MakeCurrent(device_.index));
  if (staged_ - fed_ >= static_cast<int64_t>(slots_.size())) {
    return absl::FailedPreconditionError(
        absl::StrCat("staging ", BatchName(staged_), " while ", BatchName(fed_),
                     " and the next wait to be fed: feed one first"));
  }
  Slot& slot = *slots_[staged_ % slots_.size()];
  if (slot.batch >= 0) {
    LS_RETURN_IF_ERROR(AwaitCopy(slot));
    LS_RETURN_IF_ERROR(Wait(Op::On::kCopyStream, *slot.fed, BatchName(slot.batch) + " fed"));
  }
  LS_RETURN_IF_ERROR(PrepareSlot(slot, images, labels));
  *slot.host_control.data<float>() = control;
  slot.batch = staged_++;
  slot.host_images = images;
  slot.host_labels = labels;
  if (device_.type == DeviceType::kCPU) {
    slot.images = images;
    slot.labels = labels;
    return absl::OkStatus();
  }
  for (const auto& [to, from] : {std::pair{slot.images, images}, std::pair{slot.labels, labels},
                                 std::pair{slot.control, slot.host_control}}) {
    LS_RETURN_IF_ERROR(backend_.CopyAsync(to.raw_data(), device_, from.raw_data(), from.device(),
                                          from.nbytes(), Stream::kCopy));
  }
  Note(Op::On::kCopyStream, Op::Kind::kCopy, BatchName(slot.batch));
  return Record(Stream::kCopy, *slot.copied, BatchName(slot.batch) + " copied");
}

absl::Status InputFeed::PrepareSlot(Slot& slot, const Tensor& images, const Tensor& labels) {
  const bool on_host = device_.type == DeviceType::kCPU;
  if (slot.batch < 0) {
    if (host_memory_ == nullptr) {
      LS_ASSIGN_OR_RETURN(host_memory_, HostBufferPool::Create(device_));
    }
    LS_ASSIGN_OR_RETURN(slot.host_control, host_memory_->Take({}, DType::kF32));
    LS_ASSIGN_OR_RETURN(slot.copied, backend_.CreateEvent(device_.index));
    LS_ASSIGN_OR_RETURN(slot.fed, backend_.CreateEvent(device_.index));
    if (on_host) {
      slot.control = slot.host_control;
    } else {
      LS_ASSIGN_OR_RETURN(slot.control, Tensor::Allocate({}, DType::kF32, device_, false));
    }
  }
  if (on_host) return absl::OkStatus();
  // Evaluation's last batch may be smaller: the slot follows the batch's shape.
  for (auto [to, from] : {std::pair{&slot.images, &images}, std::pair{&slot.labels, &labels}}) {
    if (!to->defined() || to->shape() != from->shape() || to->dtype() != from->dtype()) {
      LS_ASSIGN_OR_RETURN(*to, Tensor::Allocate(from->shape(), from->dtype(), device_, false));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<int64_t> InputFeed::Feed(const Tensor& images, const Tensor& labels,
                                        const Tensor& control) {
  if (fed_ == staged_) return absl::FailedPreconditionError("no batch is staged to feed");
  LS_RETURN_IF_ERROR(backend_.MakeCurrent(device_.index));
  Slot& slot = *slots_[fed_ % slots_.size()];
  const std::string name = BatchName(slot.batch);
  LS_RETURN_IF_ERROR(Wait(Op::On::kComputeStream, *slot.copied, name + " copied"));
  if (normalize_.has_value()) {
    LS_RETURN_IF_ERROR(
        backend_.NormalizeImages(slot.images, images, normalize_->mean, normalize_->std));
  } else {
    LS_RETURN_IF_ERROR(Write(slot.images, images));
  }
  LS_RETURN_IF_ERROR(Write(slot.labels, labels));
  if (control.defined()) LS_RETURN_IF_ERROR(Write(slot.control, control));
  Note(Op::On::kComputeStream, Op::Kind::kFeed, name);
  LS_RETURN_IF_ERROR(Record(Stream::kCompute, *slot.fed, name + " fed"));
  return fed_++;
}

absl::Status InputFeed::AwaitCopies() {
  LS_RETURN_IF_ERROR(backend_.MakeCurrent(device_.index));
  for (int64_t k = awaited_; k < staged_; ++k) {
    LS_RETURN_IF_ERROR(AwaitCopy(*slots_[k % slots_.size()]));
  }
  return absl::OkStatus();
}

absl::Status InputFeed::AwaitCopy(Slot& slot) {
  if (slot.batch < awaited_) return absl::OkStatus();
  awaited_ = slot.batch + 1;
  return Wait(Op::On::kHost, *slot.copied, BatchName(slot.batch) + " copied");
}

void InputFeed::Note(Op::On on, Op::Kind kind, std::string what) {
  if (recording_) plan_.push_back({on, kind, std::move(what)});
}

absl::Status InputFeed::Write(const Tensor& from, const Tensor& to) {
  if (from.shape() != to.shape() || from.dtype() != to.dtype()) {
    return absl::InvalidArgumentError(
        absl::StrCat("feeding ", DTypeName(from.dtype()), ShapeToString(from.shape()),
                     " into a graph input of ", DTypeName(to.dtype()), ShapeToString(to.shape())));
  }
  return backend_.CopyAsync(to.raw_data(), to.device(), from.raw_data(), from.device(),
                            from.nbytes(), Stream::kCompute);
}

absl::Status InputFeed::Wait(Op::On on, DeviceEvent& event, const std::string& label) {
  if (device_.type == DeviceType::kCPU) return absl::OkStatus();
  Note(on, Op::Kind::kWait, label);
  if (on == Op::On::kHost) return backend_.HostWait(event);
  return backend_.StreamWait(device_.index,
                             on == Op::On::kCopyStream ? Stream::kCopy : Stream::kCompute, event);
}

absl::Status InputFeed::Record(Stream stream, DeviceEvent& event, std::string label) {
  if (device_.type == DeviceType::kCPU) return absl::OkStatus();
  Note(stream == Stream::kCopy ? Op::On::kCopyStream : Op::On::kComputeStream, Op::Kind::kRecord,
       std::move(label));
  return backend_.Record(event, device_.index, stream);
}

}  // namespace lockstep::train
