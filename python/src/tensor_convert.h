#pragma once

// Tensors to and from numpy arrays, copied (a Tensor may live on a device, an array is the
// caller's to keep).

#include <pybind11/numpy.h>

#include "core/tensor.h"

namespace lockstep::python {

// A host copy of `tensor` (any device). bfloat16 has no numpy type: it comes as float32.
pybind11::array ToNumpy(const Tensor& tensor);
// A CPU tensor holding a copy of `array` (C order taken care of); an error names the numpy dtype
// when Lockstep has none like it.
Tensor FromNumpy(const pybind11::array& array);

}  // namespace lockstep::python
