"""lockstep.dataset.transforms: TypeCast and Compose, as mindspore.dataset.transforms."""

from lockstep.dataset.transforms.transforms import Compose, TensorOperation, TypeCast

__all__ = ["Compose", "TensorOperation", "TypeCast"]
