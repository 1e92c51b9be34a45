// The CPU backend: host memory (core/host_backend.h) plus the layouts of its oneDNN kernels
// (cpu_layouts.h), reordered by oneDNN, and the "Reorder" op (ops/reorder.cc) that AssignLayouts
// inserts between kernels that want different layouts.

#include <oneapi/dnnl/dnnl.h>

#include "absl/strings/str_cat.h"
#include "core/host_backend.h"
#include "ops/cpu/cpu_layouts.h"
#include "ops/cpu/dnnl_util.h"
#include "ops/cpu/image_input.h"

namespace lockstep {
namespace {

class CpuBackend : public HostBackend {
 public:
  absl::Status Reorder(const Tensor& from, Layout from_layout, const Tensor& to,
                       Layout to_layout) override {
    if (from.shape() != to.shape() || from.dtype() != to.dtype()) {
      return absl::InvalidArgumentError(absl::StrCat("reorder of ", ShapeToString(from.shape()),
                                                     " into ", ShapeToString(to.shape())));
    }
    if (from_layout == to_layout) return Backend::Reorder(from, from_layout, to, to_layout);
    dnnl_util::DnnlStep step;
    DNNL_RETURN_IF_ERROR(
        step = dnnl_util::ReorderStep(dnnl_util::Desc(from.shape(), from.dtype(), from_layout),
                                      dnnl_util::Desc(to.shape(), to.dtype(), to_layout)));
    LS_ASSIGN_OR_RETURN(Tensor scratch,
                        Tensor::Allocate({static_cast<int64_t>(step.scratchpad_bytes())},
                                         DType::kU8, Device::CPU(), /*zeroed=*/false));
    return step.Run({{DNNL_ARG_FROM, from.raw_data()}, {DNNL_ARG_TO, to.raw_data()}},
                    scratch.raw_data());
  }

  std::string reorder_op() const override { return "Reorder"; }
  std::vector<Layout> SharedLayoutOffer() const override { return cpu::WeightLayoutOffer(); }
  // bf16 where oneDNN dispatches to AVX512-BF16 or AMX kernels (DNNL_MAX_CPU_ISA caps it); f16
  // nowhere: oneDNN 2.6 has no f16 CPU kernels.
  bool ComputesNatively(DType dtype) const override {
    if (dtype == DType::kF16) return false;
    if (dtype != DType::kBF16) return true;
    static const bool bf16 = (dnnl_get_effective_cpu_isa() & dnnl_cpu_isa_avx512_core_bf16) ==
                             dnnl_cpu_isa_avx512_core_bf16;
    return bf16;
  }

  absl::Status NormalizeImages(const Tensor& images, const Tensor& to,
                               const std::vector<float>& mean,
                               const std::vector<float>& std) override {
    LS_RETURN_IF_ERROR(CheckNormalizeImages(images, to, mean, std));
    cpu::NormalizeImagesOnHost(images, to, mean, std);
    return absl::OkStatus();
  }
};

REGISTER_BACKEND(DeviceType::kCPU, CpuBackend);

}  // namespace
}  // namespace lockstep
