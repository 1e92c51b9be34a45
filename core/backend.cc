#include "core/backend.h"

#include <algorithm>
#include <map>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "core/allocator.h"
#include "core/host_backend.h"

namespace lockstep {
namespace {

struct BackendTable {
  std::mutex mutex;
  std::map<DeviceType, std::unique_ptr<Backend>> backends;
};

BackendTable& Table() {
  static auto* table = new BackendTable();
  return *table;
}

std::string UnregisteredName(DeviceType type) {
  return type == DeviceType::kCUDA ? "cuda" : absl::StrCat("device type ", static_cast<int>(type));
}

}  // namespace

absl::Status Backend::Reorder(const Tensor& from, Layout from_layout, const Tensor& to,
                              Layout to_layout) {
  if (from_layout != to_layout) {
    return absl::UnimplementedError(absl::StrCat("the ", name(), " backend has no reorder from ",
                                                 LayoutName(from_layout), " to ",
                                                 LayoutName(to_layout)));
  }
  return Copy(to.raw_data(), to.device(), from.raw_data(), from.device(), to.nbytes());
}

absl::Status Backend::MakeCurrent(int) { return absl::OkStatus(); }

absl::StatusOr<void*> Backend::AllocateHost(size_t bytes, int) {
  void* data = CpuAllocate(bytes);
  if (data == nullptr) {
    return absl::ResourceExhaustedError(
        absl::StrCat("out of host memory allocating ", bytes, " bytes"));
  }
  return data;
}

void Backend::FreeHost(void* ptr, int) { CpuFree(ptr); }

absl::Status Backend::CopyAsync(void* dst, Device dst_device, const void* src, Device src_device,
                                size_t bytes, Stream) {
  return Copy(dst, dst_device, src, src_device, bytes);
}

absl::StatusOr<std::unique_ptr<DeviceEvent>> Backend::CreateEvent(int) {
  return std::make_unique<DeviceEvent>();
}

absl::Status Backend::Record(DeviceEvent&, int, Stream) { return absl::OkStatus(); }
absl::Status Backend::StreamWait(int, Stream, DeviceEvent&) { return absl::OkStatus(); }
absl::Status Backend::HostWait(DeviceEvent&) { return absl::OkStatus(); }

absl::Status Backend::BeginCapture(int) {
  return absl::UnimplementedError(
      absl::StrCat("the ", name(), " backend cannot record work to launch again"));
}

absl::StatusOr<std::unique_ptr<CapturedWork>> Backend::EndCapture(int index) {
  return BeginCapture(index);  // the same refusal: nothing can have begun
}

absl::Status Backend::Launch(CapturedWork&, int index) { return BeginCapture(index); }

absl::Status Backend::NormalizeImages(const Tensor&, const Tensor&, const std::vector<float>&,
                                      const std::vector<float>&) {
  return absl::UnimplementedError(absl::StrCat("the ", name(), " backend cannot normalize images"));
}

absl::Status CheckNormalizeImages(const Tensor& images, const Tensor& to,
                                  const std::vector<float>& mean, const std::vector<float>& std) {
  const Shape& nhwc = images.shape();
  const bool shapes = nhwc.size() == 4 && images.dtype() == DType::kU8 &&
                      to.dtype() == DType::kF32 &&
                      to.shape() == Shape{nhwc[0], nhwc[3], nhwc[1], nhwc[2]};
  if (!shapes) {
    return absl::InvalidArgumentError(
        absl::StrCat("images to normalize must be u8 (N, H, W, C) into f32 (N, C, H, W), got ",
                     DTypeName(images.dtype()), ShapeToString(nhwc), " into ",
                     DTypeName(to.dtype()), ShapeToString(to.shape())));
  }
  const int64_t channels = nhwc[3];
  const bool factors = channels >= 1 && channels <= 4 &&
                       mean.size() == static_cast<size_t>(channels) && mean.size() == std.size() &&
                       std::find(std.begin(), std.end(), 0.0f) == std.end();
  if (!factors) {
    return absl::InvalidArgumentError(
        absl::StrCat("normalizing images of ", channels,
                     " channel(s) (1 to 4) needs one mean and one nonzero "
                     "std per channel, got ",
                     mean.size(), " and ", std.size()));
  }
  return absl::OkStatus();
}

bool RegisterBackend(DeviceType type, std::unique_ptr<Backend> backend) {
  BackendTable& table = Table();
  std::lock_guard<std::mutex> lock(table.mutex);
  LS_CHECK(!table.backends.contains(type))
      << "a second backend registered for device type " << static_cast<int>(type);
  table.backends[type] = std::move(backend);
  return true;
}

absl::StatusOr<Backend*> FindBackend(DeviceType type) {
  BackendTable& table = Table();
  std::lock_guard<std::mutex> lock(table.mutex);
  auto it = table.backends.find(type);
  if (it != table.backends.end()) return it->second.get();
  if (type == DeviceType::kCPU) {
    // Not registered, so a CPU backend may still register (a static initialiser that runs later);
    // host memory it gave out frees alike through either.
    static auto* host = new HostBackend();
    return host;
  }
  return absl::FailedPreconditionError(
      absl::StrCat("this build has no backend for ", UnregisteredName(type),
                   type == DeviceType::kCUDA ? " (built without CUDA)" : ""));
}

Backend& BackendOf(Device device) {
  absl::StatusOr<Backend*> backend = FindBackend(device.type);
  LS_CHECK(backend.ok()) << "using " << device.ToString() << ": " << backend.status();
  return **backend;
}

absl::Status MakeDeviceCurrent(Device device) {
  if (device.type == DeviceType::kCPU) return absl::OkStatus();
  LS_ASSIGN_OR_RETURN(Backend * backend, FindBackend(device.type));
  return backend->MakeCurrent(device.index);
}

std::string DeviceTypeName(DeviceType type) {
  if (type == DeviceType::kCPU) return "cpu";
  BackendTable& table = Table();
  std::lock_guard<std::mutex> lock(table.mutex);
  auto it = table.backends.find(type);
  return it != table.backends.end() ? it->second->name() : UnregisteredName(type);
}

}  // namespace lockstep
