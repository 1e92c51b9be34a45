"""Tensor and Parameter, as MindSpore's: host values a script builds, reads and saves.

A Tensor holds a numpy array. A Parameter is a named Tensor of a Cell; once a Model has
compiled the network, the Parameter reads and writes the Model's own copy (the C++ variable of
that name), so ``net.trainable_params()`` and ``save_checkpoint(net, ...)`` see the trained values.
"""

import numpy as np

from lockstep.common import dtype as mstype


class Tensor:
    """Tensor(input_data, dtype=None): a copy of a numpy array, list or number."""

    def __init__(self, input_data=None, dtype=None, shape=None, init=None, const_arg=False,
                 device=None):
        if init is not None:
            raise ValueError("Tensor(init=...) is not supported: pass input_data")
        if const_arg or device is not None:
            raise ValueError("Tensor: const_arg and device are not supported: a Tensor is a host "
                             "value, never an argument of a compiled network")
        if input_data is None:
            if shape is None or dtype is None:
                raise ValueError("Tensor needs input_data, or both shape and dtype")
            input_data = np.zeros(shape, dtype=dtype.numpy_type)
        if isinstance(input_data, Tensor):
            input_data = input_data.asnumpy()
        array = np.array(input_data, dtype=dtype.numpy_type if dtype is not None else None)
        if dtype is None and array.dtype == np.float64 and not isinstance(input_data, np.ndarray):
            array = array.astype(np.float32)  # Python floats become float32, as in MindSpore
        self._array = array

    def asnumpy(self):
        """The values as a numpy array (a copy)."""
        return np.array(self._array)

    @property
    def shape(self):
        return tuple(self._array.shape)

    @property
    def dtype(self):
        return mstype.from_numpy(self._array.dtype)

    @property
    def size(self):
        return int(self._array.size)

    @property
    def ndim(self):
        return int(self._array.ndim)

    def __repr__(self):
        return f"Tensor(shape={list(self.shape)}, dtype={self.dtype}, value={self._array})"


class Parameter(Tensor):
    """A Cell's trainable parameter or state, named by its place in the network
    ("layer1.0.conv1.weight"). Its values are the Model's once the network is compiled."""

    def __init__(self, default_input, name=None, requires_grad=True, layerwise_parallel=False,
                 parallel_optimizer=True, storage_format="", device=None, shape=None):
        # parallel_optimizer only exempts a parameter from sharding, which Lockstep never does.
        if layerwise_parallel or storage_format or device is not None:
            raise ValueError(f"Parameter '{name}': layerwise_parallel, storage_format and device "
                             "are not supported (data parallel: every rank holds every parameter "
                             "whole, where the Model's device puts it)")
        if default_input is None:
            self._array = None
            self._shape = tuple(shape)
        else:
            super().__init__(default_input)
            self._shape = tuple(self._array.shape)
        self.name = name
        self.requires_grad = requires_grad
        self._model = None  # the compiled C++ model holding this parameter's values

    @property
    def shape(self):
        return self._shape

    @property
    def dtype(self):
        return mstype.float32 if self._array is None else super().dtype

    def asnumpy(self):
        if self._model is not None:
            return self._model.variable(self.name)
        if self._array is None:
            raise RuntimeError(
                f"parameter '{self.name}' has no values yet: they are initialized when a Model "
                "compiles the network (train or eval), or loaded with load_param_into_net")
        return np.array(self._array)

    def has_values(self):
        """Whether asnumpy() has values to give (loaded, set or from a compiled Model)."""
        return self._model is not None or self._array is not None

    def set_data(self, data, slice_shape=False):
        """Replaces the values with `data` (a Tensor or array of this parameter's shape)."""
        if slice_shape:
            raise ValueError(f"parameter '{self.name}': set_data(slice_shape=True) is not "
                             "supported: parameters are whole on every rank")
        array = data.asnumpy() if isinstance(data, Tensor) else np.asarray(data)
        if tuple(array.shape) != self._shape:
            raise ValueError(f"parameter '{self.name}' has shape {list(self._shape)}, "
                             f"the data {list(array.shape)}")
        array = array.astype(np.float32)
        if self._model is not None:
            self._model.set_variable(self.name, array)
        else:
            self._array = array
        return self

    def _bind(self, model):
        """From now on the values are `model`'s (after any loaded ones were written into it)."""
        if self._array is not None:
            model.set_variable(self.name, self._array)
        self._model = model
        self._array = None

    def _unbind(self):
        """Keeps the model's values in Python and lets go of the model."""
        if self._model is not None:
            self._array = self._model.variable(self.name)
            self._model = None

    def __repr__(self):
        return f"Parameter(name={self.name}, shape={list(self._shape)}, dtype={self.dtype})"
