"""The older path of lockstep.dataset.vision, as mindspore.dataset.vision.c_transforms."""

from lockstep.dataset.vision.transforms import (CenterCrop, Decode, HWC2CHW, Normalize,
                                                RandomCrop, RandomHorizontalFlip,
                                                RandomResizedCrop, Resize)
from lockstep.dataset.vision.utils import Border, Inter

__all__ = ["Border", "CenterCrop", "Decode", "HWC2CHW", "Inter", "Normalize", "RandomCrop",
           "RandomHorizontalFlip", "RandomResizedCrop", "Resize"]
