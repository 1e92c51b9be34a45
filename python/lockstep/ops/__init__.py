"""lockstep.ops: the primitives a construct may apply to traced values, as mindspore.ops
(ops.ReLU()(x), ops.Add()(a, b), ops.ReduceMean(keep_dims=True)(x, (2, 3))) and their
functional forms (ops.relu, ops.add). Each adds one node, named after the Cell calling it."""

from lockstep.nn._trace import TraceError, apply_op


def relu(x):
    return apply_op("Relu", [x])


def add(x, y):
    return apply_op("Add", [x, y])


def flatten(x):
    return apply_op("Flatten", [x])


def _global_mean(x, axis, keep_dims, name):
    if tuple(axis) != (2, 3) or not keep_dims or x.ndim != 4:
        raise TraceError(f"{name} is supported over axis (2, 3) of (N, C, H, W) with "
                         "keep_dims=True (global average pooling)")
    return apply_op("GlobalAvgPool", [x])


class ReLU:
    def __call__(self, x):
        return relu(x)


class Add:
    def __call__(self, x, y):
        return add(x, y)


class Flatten:
    def __call__(self, x):
        return flatten(x)


class ReduceMean:
    def __init__(self, keep_dims=False):
        self.keep_dims = keep_dims

    def __call__(self, x, axis=()):
        return _global_mean(x, axis, self.keep_dims, "ReduceMean")


def mean(x, axis=None, keep_dims=False):
    return _global_mean(x, axis or (), keep_dims, "ops.mean")
