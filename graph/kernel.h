#pragma once

// Kernels: (op, device, dtype) -> a factory that builds the kernel for one node once, at
// compile time (oneDNN primitives, algorithm choice), and a Run called every step.

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "core/device.h"
#include "core/half.h"
#include "core/layout.h"
#include "core/status.h"
#include "core/tensor.h"
#include "graph/graph.h"
#include "graph/pass_config.h"

namespace lockstep {

// Tensors of one node, fixed for the executor's life: views into the planned memory.
struct KernelIO {
  std::vector<Tensor> inputs;
  std::vector<Tensor> outputs;
  void* workspace = nullptr;  // Kernel::WorkspaceBytes() bytes of scratch, on the device
  void* stream = nullptr;     // the device's compute stream (a cudaStream_t); nullptr on the CPU
};

class Kernel {
 public:
  virtual ~Kernel() = default;
  virtual size_t WorkspaceBytes() const { return 0; }
  virtual absl::Status Run(const KernelIO& io) = 0;
  // Asynchronous kernels (collectives on a communication thread) return from Run once their
  // work is queued and finish in Wait. The executor calls Wait before any node reads their
  // outputs, and at the end of the step.
  virtual bool asynchronous() const { return false; }
  virtual absl::Status Wait() { return absl::OkStatus(); }
  // Kernels that wait for other ranks (collectives): the executor counts the time a synchronous
  // one takes as exposed communication.
  virtual bool communicates() const { return false; }
  // Whether a step holding this kernel may be recorded once and launched again as a whole
  // (Executor::ReplayAfter): its device work must not change from run to run once warmed up,
  // and whatever host work each run needs must be in AfterLaunch. Collectives by default not.
  virtual bool replayable() const { return !communicates(); }
  // Host work each launch of a recorded step needs: checks before it (a collective's
  // communicator still usable), and work after it (watching the collective).
  virtual absl::Status BeforeLaunch() { return absl::OkStatus(); }
  virtual absl::Status AfterLaunch() { return absl::OkStatus(); }
  // For a kernel that communicates: whether `mine` holds on every rank of its communicator, a
  // collective itself (in order with the kernel's own). The executor asks the step's first such
  // kernel whether every rank recorded its step, as ranks must run their collectives alike, all
  // from recordings or none. A world of one holds what it holds.
  virtual absl::StatusOr<bool> HoldsOnEveryRank(bool mine) { return mine; }
};

// The layouts a kernel wants for its inputs (the pass reorders where they differ) and the
// layouts it will produce, given what the producers of its inputs hold.
struct LayoutChoice {
  std::vector<Layout> inputs;
  std::vector<Layout> outputs;
};

// The layouts that values every rank must hold alike (parameters, their gradients, optimizer
// state: what the AllReduce sums) may take in this job, besides plain. Agreed by the ranks at
// start-up from what every rank's backend offers (parallel/shared_layouts.h), so that hosts with
// different CPUs store them alike while each keeps its own layouts for activations.
struct SharedLayouts {
  std::vector<Layout> allowed;  // in the job's order of preference, the same on every rank
  // The first allowed layout among `candidates` (those the kernel can run and the value can
  // use), else plain: the same on every rank that has the same candidates allowed.
  Layout Pick(const std::vector<Layout>& candidates) const;
};

using LayoutFn = std::function<LayoutChoice(
    const Node& node, const std::vector<Layout>& producer_layouts, const SharedLayouts& shared)>;
// What a kernel factory reads besides its node: where the kernel runs and the options of the
// compilation (CompileOptions::config), e.g. the communication groups of collective kernels.
struct KernelContext {
  Device device;
  const PassConfig& config;
};
using KernelFactory = std::function<absl::StatusOr<std::unique_ptr<Kernel>>(
    const Node& node, const KernelContext& ctx)>;

// Everything plain: the default.
LayoutChoice PlainLayouts(const Node& node, const std::vector<Layout>& producer_layouts,
                          const SharedLayouts& shared);
// Element-wise ops: inputs and outputs of the same shape share input 0's layout.
LayoutChoice SameLayoutAsFirstInput(const Node& node, const std::vector<Layout>& producer_layouts,
                                    const SharedLayouts& shared);
// In-place ops on several values (collectives): output i keeps the layout of input i.
LayoutChoice SameLayoutAsEachInput(const Node& node, const std::vector<Layout>& producer_layouts,
                                   const SharedLayouts& shared);
// Reductions indifferent to layout: inputs stay as produced, outputs are plain.
LayoutChoice InputLayoutsPlainOutputs(const Node& node, const std::vector<Layout>& producer_layouts,
                                      const SharedLayouts& shared);

struct KernelDef {
  std::string op;
  DeviceType device = DeviceType::kCPU;
  DType dtype = DType::kF32;
  KernelFactory create;
  LayoutFn layouts = PlainLayouts;
  // Worth running only where the device's backend ComputesNatively(dtype) (a library kernel that
  // emulates the dtype elsewhere); otherwise the device's fallback for the dtype runs the node.
  bool needs_native_dtype = false;
};

// Kernels whose building can fail have a static Create in place of a constructor.
template <typename K, typename... Args>
concept BuiltByCreate = requires(const Node& node, Args... args) {
  K::Create(node, args...);
};

// A factory for kernel K of a node: K::Create(node, args...) where K has one, else
// K(node, args...), which cannot fail.
template <typename K, typename... Args>
KernelFactory MakeFactory(Args... args) {
  return
      [args...](const Node& node, const KernelContext&) -> absl::StatusOr<std::unique_ptr<Kernel>> {
        if constexpr (BuiltByCreate<K, Args...>) {
          return K::Create(node, args...);
        } else {
          return std::make_unique<K>(node, args...);
        }
      };
}

class KernelRegistry {
 public:
  static KernelRegistry& Global();
  bool Register(KernelDef def);
  // The kernel `device` runs for any op in `dtype` that has no kernel of its own in it, or whose
  // kernel needs a native dtype the device lacks (the CPU: bf16 and f16 through float32). Its
  // op field is unused.
  bool RegisterFallback(DeviceType device, DType dtype, KernelDef def);
  // The kernel for a node: keyed by op, device and the dtype of input 0 (output 0 for nodes
  // without inputs); else the device's fallback for that dtype.
  absl::StatusOr<const KernelDef*> Find(const Node& node, DeviceType device) const;
  bool Has(const std::string& op, DeviceType device, DType dtype) const;
  // Every (op, dtype) with a kernel for `device`, sorted.
  std::vector<std::pair<std::string, DType>> Registered(DeviceType device) const;

 private:
  std::map<std::tuple<std::string, DeviceType, DType>, KernelDef> kernels_;
  std::map<std::pair<DeviceType, DType>, KernelDef> fallbacks_;
};

// The element types a backend's kernels hold f32, bf16 and f16 in.
template <typename F32T, typename BF16T, typename F16T>
struct FloatElements {
  using F32 = F32T;
  using BF16 = BF16T;
  using F16 = F16T;
};
// The host's (core/half.h).
using HostFloats = FloatElements<float, BFloat16, Float16>;

// Registers `def` (op, device, layouts, factory) in every float dtype (kFloatDTypes): for kernels
// that read the dtype off the node.
bool RegisterFloatKernels(KernelDef def);

// Registers K<T> as def.op's kernel on def.device in each float dtype, T the element type
// `Elements` (a FloatElements) holds it in, built by MakeFactory<K<T>>(args...). A float kernel
// templated on its element type needs this one line.
template <template <typename> class K, typename Elements, typename... Args>
bool RegisterFloatKernels(KernelDef def, Args... args) {
  const auto in = [&def](DType dtype, KernelFactory create) {
    KernelDef typed = def;
    typed.dtype = dtype;
    typed.create = std::move(create);
    return KernelRegistry::Global().Register(std::move(typed));
  };
  return in(DType::kF32, MakeFactory<K<typename Elements::F32>>(args...)) &&
         in(DType::kBF16, MakeFactory<K<typename Elements::BF16>>(args...)) &&
         in(DType::kF16, MakeFactory<K<typename Elements::F16>>(args...));
}

}  // namespace lockstep

// REGISTER_KERNEL({.op = "Relu", .create = MakeFactory<ReluKernel>(), ...});
#define REGISTER_KERNEL(...)                                                  \
  [[maybe_unused]] static const bool LS_KERNEL_CONCAT(ls_kernel_, __LINE__) = \
      ::lockstep::KernelRegistry::Global().Register(::lockstep::KernelDef __VA_ARGS__)
#define LS_KERNEL_CONCAT_INNER(a, b) a##b
#define LS_KERNEL_CONCAT(a, b) LS_KERNEL_CONCAT_INNER(a, b)
