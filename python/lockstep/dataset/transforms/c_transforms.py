"""The older path of lockstep.dataset.transforms, as mindspore.dataset.transforms.c_transforms."""

from lockstep.dataset.transforms.transforms import Compose, TypeCast

__all__ = ["Compose", "TypeCast"]
