"""lockstep.dataset.vision: image transforms, as mindspore.dataset.vision."""

from lockstep.dataset.vision.transforms import (CenterCrop, Decode, HWC2CHW, Normalize,
                                                RandomCrop, RandomHorizontalFlip,
                                                RandomResizedCrop, Resize)
from lockstep.dataset.vision.utils import Border, Inter, encode_jpeg

__all__ = ["Border", "CenterCrop", "Decode", "HWC2CHW", "Inter", "Normalize", "RandomCrop",
           "RandomHorizontalFlip", "RandomResizedCrop", "Resize", "encode_jpeg"]
