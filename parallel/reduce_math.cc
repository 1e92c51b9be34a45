#include "parallel/reduce_math.h"

namespace lockstep::parallel {
namespace {

template <typename T>
void DivideElements(const Tensor& tensor, int divisor) {
  T* data = tensor.data<T>();
  for (int64_t i = 0, n = tensor.numel(); i < n; ++i) {
    if constexpr (std::is_same_v<T, BFloat16> || std::is_same_v<T, Float16>) {
      data[i] = FloatTo<T>(ToFloat(data[i]) / static_cast<float>(divisor));
    } else {
      data[i] /= static_cast<T>(divisor);
    }
  }
}

}  // namespace

void DivideBySize(const Tensor& tensor, int size) {
  switch (tensor.dtype()) {
    case DType::kF64:
      return DivideElements<double>(tensor, size);
    case DType::kBF16:
      return DivideElements<BFloat16>(tensor, size);
    case DType::kF16:
      return DivideElements<Float16>(tensor, size);
    default:
      return DivideElements<float>(tensor, size);
  }
}

}  // namespace lockstep::parallel
