#include "python/src/tensor_convert.h"

#include <cstring>
#include <string>
#include <vector>

#include "core/half.h"

namespace lockstep::python {
namespace py = pybind11;
namespace {

// The numpy dtype holding `dtype`'s values exactly (bfloat16 widens to float32).
py::dtype NumpyDType(DType dtype) {
  switch (dtype) {
    case DType::kF32:
    case DType::kBF16:
      return py::dtype::of<float>();
    case DType::kF16:
      return py::dtype("float16");
    case DType::kF64:
      return py::dtype::of<double>();
    case DType::kI32:
      return py::dtype::of<int32_t>();
    case DType::kI64:
      return py::dtype::of<int64_t>();
    case DType::kU8:
      return py::dtype::of<uint8_t>();
    case DType::kBool:
      return py::dtype::of<bool>();
  }
  return py::dtype::of<float>();
}

bool DTypeOfNumpy(const py::dtype& numpy, DType* dtype) {
  const char kind = numpy.kind();
  const size_t size = static_cast<size_t>(numpy.itemsize());
  if (kind == 'f' && size == 4) *dtype = DType::kF32;
  else if (kind == 'f' && size == 8) *dtype = DType::kF64;
  else if (kind == 'f' && size == 2) *dtype = DType::kF16;
  else if (kind == 'i' && size == 4) *dtype = DType::kI32;
  else if (kind == 'i' && size == 8) *dtype = DType::kI64;
  else if (kind == 'u' && size == 1) *dtype = DType::kU8;
  else if (kind == 'b') *dtype = DType::kBool;
  else return false;
  return true;
}

}  // namespace

py::array ToNumpy(const Tensor& tensor) {
  Tensor host = Tensor::Empty(tensor.shape(), tensor.dtype());
  host.CopyFrom(tensor);
  std::vector<py::ssize_t> shape(tensor.shape().begin(), tensor.shape().end());
  py::array out(NumpyDType(tensor.dtype()), shape);
  if (tensor.dtype() == DType::kBF16) {
    const BFloat16* from = host.data<BFloat16>();
    float* to = static_cast<float*>(out.mutable_data());
    for (int64_t i = 0; i < host.numel(); ++i) to[i] = ToFloat(from[i]);
  } else {
    std::memcpy(out.mutable_data(), host.raw_data(), host.nbytes());
  }
  return out;
}

Tensor FromNumpy(const py::array& array) {
  DType dtype;
  if (!DTypeOfNumpy(array.dtype(), &dtype)) {
    throw py::value_error("numpy dtype " + std::string(py::str(array.dtype())) +
                          " has no Lockstep dtype (float16/32/64, int32, int64, uint8, bool)");
  }
  py::array contiguous = py::array::ensure(array, py::array::c_style);
  Shape shape(contiguous.shape(), contiguous.shape() + contiguous.ndim());
  Tensor tensor = Tensor::Empty(shape, dtype);
  std::memcpy(tensor.raw_data(), contiguous.data(), tensor.nbytes());
  return tensor;
}

}  // namespace lockstep::python
