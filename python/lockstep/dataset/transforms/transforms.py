"""The base of every transform, and TypeCast and Compose, as mindspore.dataset.transforms'.

A transform builds its C++ steps (dataset/transforms.h) when it is made, so bad arguments raise
there; a map hands the steps to the pipeline, whose worker threads run them without Python."""

from lockstep import _core
from lockstep.common import dtype as mstype


class TensorOperation:
    """A transform: `_transforms` are its _core.Transform steps, in the order they run."""

    def __init__(self, *transforms):
        self._transforms = list(transforms)

    def _leaves(self):
        """The single transforms this one is made of (Compose lists its own)."""
        return [self]


def as_operations(where, name, operations):
    """`operations` (one transform or a sequence of them) as a list, checked."""
    listed = list(operations) if isinstance(operations, (list, tuple)) else [operations]
    for op in listed:
        if not isinstance(op, TensorOperation):
            raise ValueError(
                f"{where}: {name} holds {op!r}; only lockstep.dataset transforms are supported "
                "(they run in the C++ pipeline's threads, where no Python runs)")
    return listed


class TypeCast(TensorOperation):
    """TypeCast(data_type): converts the values to a lockstep.common.dtype type (or numpy's)."""

    def __init__(self, data_type):
        if not isinstance(data_type, mstype.Type):
            data_type = mstype.from_numpy(data_type)
        super().__init__(_core.transforms.TypeCast(data_type.core_name))
        self.data_type = data_type


class Compose(TensorOperation):
    """Compose(transforms): the transforms one after the other, as one transform."""

    def __init__(self, transforms):
        self.transforms = as_operations("Compose", "transforms", transforms)
        super().__init__(*[step for op in self.transforms for step in op._transforms])

    def _leaves(self):
        return [leaf for op in self.transforms for leaf in op._leaves()]
