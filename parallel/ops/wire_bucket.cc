#include "parallel/ops/wire_bucket.h"

#include "core/half.h"
#include "parallel/wire_dtype.h"

namespace lockstep::parallel {
namespace {

template <typename From, typename To>
void ConvertElements(const Tensor& from, const Tensor& to) {
  const From* in = from.data<From>();
  To* out = to.data<To>();
  for (int64_t i = 0, n = from.numel(); i < n; ++i) out[i] = FloatTo<To>(ToFloat(in[i]));
}

}  // namespace

absl::StatusOr<std::unique_ptr<WireBucket>> WireBucket::For(const Node& node, const Span& span,
                                                            Device device) {
  const DType dtype = node.inputs[0]->dtype();
  LS_ASSIGN_OR_RETURN(DType wire, ParseWireDType(dtype, node.attrs.GetString("wire_dtype")));
  if (wire == dtype) return nullptr;
  int64_t elements = span.elements;
  if (!span.contiguous) {
    elements = 0;
    for (const Value* input : node.inputs) elements += NumElements(input->type.shape);
  }
  return std::unique_ptr<WireBucket>(new WireBucket(Tensor::Empty({elements}, wire, device)));
}

void WireBucket::Bind(const std::vector<Tensor>& tensors) {
  tensors_ = tensors;
  size_t offset = 0;
  for (const Tensor& tensor : tensors_) {
    views_.push_back(wire_.View(offset, {tensor.numel()}, wire_.dtype()));
    offset += static_cast<size_t>(tensor.numel()) * SizeOf(wire_.dtype());
  }
  LS_CHECK(offset == wire_.nbytes())
      << "bucket of " << offset << " wire bytes, buffer of " << wire_.nbytes();
}

absl::Status WireBucket::ToWire(ConvertFn convert, void* stream) const {
  for (size_t i = 0; i < tensors_.size(); ++i)
    LS_RETURN_IF_ERROR(convert(tensors_[i], views_[i], stream));
  return absl::OkStatus();
}

absl::Status WireBucket::FromWire(ConvertFn convert, void* stream) const {
  for (size_t i = 0; i < tensors_.size(); ++i)
    LS_RETURN_IF_ERROR(convert(views_[i], tensors_[i], stream));
  return absl::OkStatus();
}

absl::Status WireBucket::AllReduceOnHost(Communicator& communicator, ReduceOp op) const {
  LS_RETURN_IF_ERROR(ToWire(ConvertOnHost, nullptr));
  LS_RETURN_IF_ERROR(communicator.AllReduce(wire_, op));
  return FromWire(ConvertOnHost, nullptr);
}

absl::Status ConvertOnHost(const Tensor& from, const Tensor& to, void* /*stream*/) {
  LS_CHECK(from.numel() == to.numel()) << from.numel() << " elements into " << to.numel();
  const DType in = from.dtype(), out = to.dtype();
  if (in == DType::kF32 && out == DType::kBF16) {
    ConvertElements<float, BFloat16>(from, to);
  } else if (in == DType::kF32 && out == DType::kF16) {
    ConvertElements<float, Float16>(from, to);
  } else if (in == DType::kBF16 && out == DType::kF32) {
    ConvertElements<BFloat16, float>(from, to);
  } else if (in == DType::kF16 && out == DType::kF32) {
    ConvertElements<Float16, float>(from, to);
  } else {
    return absl::UnimplementedError(
        absl::StrCat("no wire conversion from ", DTypeName(in), " to ", DTypeName(out)));
  }
  return absl::OkStatus();
}

}  // namespace lockstep::parallel
