#include "ops/cpu/dnnl_util.h"

#include <cstring>

#include "core/logging.h"
#include "ops/cpu/cpu_layouts.h"

namespace lockstep::dnnl_util {

dnnl::engine& CpuEngine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

dnnl::stream& CpuStream() {
  thread_local dnnl::stream stream(CpuEngine());
  return stream;
}

dnnl::memory::dims Dims(const Shape& shape) {
  return dnnl::memory::dims(shape.begin(), shape.end());
}

dnnl::memory::data_type DataType(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return dnnl::memory::data_type::f32;
    case DType::kF16:
      return dnnl::memory::data_type::f16;
    case DType::kBF16:
      return dnnl::memory::data_type::bf16;
    case DType::kI32:
      return dnnl::memory::data_type::s32;
    case DType::kU8:
      return dnnl::memory::data_type::u8;
    default:
      LS_CHECK(false) << "oneDNN has no " << DTypeName(dtype);
      return dnnl::memory::data_type::undef;
  }
}

dnnl::memory::desc Desc(const Shape& shape, DType dtype, Layout layout) {
  using tag = dnnl::memory::format_tag;
  if (layout == cpu::BlockedActivations(8)) return Desc(shape, dtype, tag::nChw8c);
  if (layout == cpu::BlockedActivations(16)) return Desc(shape, dtype, tag::nChw16c);
  if (layout == cpu::BlockedWeights(8)) return Desc(shape, dtype, tag::OIhw8i8o);
  if (layout == cpu::BlockedWeights(16)) return Desc(shape, dtype, tag::OIhw16i16o);
  LS_CHECK(layout == Layout::kPlain) << "the CPU kernels have no layout " << LayoutName(layout);
  switch (shape.size()) {
    case 1:
      return Desc(shape, dtype, tag::a);
    case 2:
      return Desc(shape, dtype, tag::ab);
    case 3:
      return Desc(shape, dtype, tag::abc);
    case 4:
      return Desc(shape, dtype, tag::abcd);
    default:
      LS_CHECK(false) << "no oneDNN descriptor for rank " << shape.size();
      return {};
  }
}

dnnl::memory::desc Desc(const Shape& shape, DType dtype, dnnl::memory::format_tag tag) {
  return dnnl::memory::desc(Dims(shape), DataType(dtype), tag);
}

dnnl::primitive_attr ScratchpadAttr() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

absl::Status ErrorStatus(const dnnl::error& e, const char* call, const char* file, int line) {
  const char* base = std::strrchr(file, '/');
  return absl::InternalError(absl::StrCat("oneDNN call ", call, " failed at ",
                                          base ? base + 1 : file, ":", line, ": ", e.what()));
}

DnnlStep ReorderStep(const dnnl::memory::desc& from, const dnnl::memory::desc& to) {
  dnnl::reorder::primitive_desc pd(CpuEngine(), from, CpuEngine(), to, ScratchpadAttr());
  DnnlStep step(dnnl::reorder(pd), pd.scratchpad_desc());
  step.Arg(DNNL_ARG_FROM, from);
  step.Arg(DNNL_ARG_TO, to);
  return step;
}

void DnnlStep::Arg(int arg, const dnnl::memory::desc& desc) {
  args_.emplace(arg, dnnl::memory(desc, CpuEngine(), DNNL_MEMORY_NONE));
}

absl::Status DnnlStep::Run(std::initializer_list<std::pair<int, void*>> handles, void* workspace) {
  for (auto [arg, data] : handles) {
    auto it = args_.find(arg);
    if (it != args_.end()) {
      it->second.set_data_handle(data);
    } else {
      LS_CHECK(data == nullptr) << "oneDNN argument " << arg << " was never declared";
    }
  }
  if (scratchpad_bytes_ > 0) args_.at(DNNL_ARG_SCRATCHPAD).set_data_handle(workspace);
  DNNL_RETURN_IF_ERROR(primitive_.execute(CpuStream(), args_); CpuStream().wait());
  return absl::OkStatus();
}

bool RegisterFloat32AndBf16(KernelDef def) {
  KernelDef bf16 = def;
  bf16.dtype = DType::kBF16;
  bf16.needs_native_dtype = true;
  return KernelRegistry::Global().Register(std::move(def)) &&
         KernelRegistry::Global().Register(std::move(bf16));
}

}  // namespace lockstep::dnnl_util
