"""Element types, as mindspore.common.dtype names them (``mstype.int32``, ``mstype.float32``)."""

import numpy as np


class Type:
    """An element type: its MindSpore name, numpy type and Lockstep's name for it."""

    def __init__(self, name, numpy_type, core_name):
        self.name = name
        self.numpy_type = numpy_type
        self.core_name = core_name  # core/dtype.h's DTypeName

    def __repr__(self):
        return self.name

    def __eq__(self, other):
        return isinstance(other, Type) and other.name == self.name

    def __hash__(self):
        return hash(self.name)


bool_ = Type("Bool", np.bool_, "bool")
uint8 = Type("UInt8", np.uint8, "u8")
int32 = Type("Int32", np.int32, "i32")
int64 = Type("Int64", np.int64, "i64")
float16 = Type("Float16", np.float16, "f16")
float32 = Type("Float32", np.float32, "f32")
float64 = Type("Float64", np.float64, "f64")
bfloat16 = Type("BFloat16", np.float32, "bf16")  # numpy has none: values come as float32
float_ = float32
int_ = int32

_ALL = (bool_, uint8, int32, int64, float16, float32, float64)


def from_numpy(numpy_dtype):
    """The Type of a numpy dtype."""
    numpy_dtype = np.dtype(numpy_dtype)
    for t in _ALL:
        if np.dtype(t.numpy_type) == numpy_dtype:
            return t
    raise TypeError(f"numpy dtype {numpy_dtype} has no Lockstep type")
