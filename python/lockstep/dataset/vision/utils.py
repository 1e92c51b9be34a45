"""Interpolation and border modes, and JPEG encoding, as mindspore.dataset.vision's utilities."""

from enum import Enum, IntEnum

import numpy as np

from lockstep import _core
from lockstep.common.tensor import Tensor


class Inter(IntEnum):
    """How a resize computes pixels; Lockstep's transforms are bilinear only."""

    NEAREST = 0
    ANTIALIAS = 1
    BILINEAR = LINEAR = 2
    BICUBIC = CUBIC = 3
    AREA = 4
    PILCUBIC = 5


class Border(str, Enum):
    """What a padding fills with; Lockstep's RandomCrop pads with a constant (zeros) only."""

    CONSTANT = "constant"
    EDGE = "edge"
    REFLECT = "reflect"
    SYMMETRIC = "symmetric"


def encode_jpeg(image, quality=75):
    """The bytes of a JPEG file (1-D uint8) holding `image`, (H, W), (H, W, 1) or (H, W, 3)
    uint8 RGB, a numpy array or a Tensor."""
    if not isinstance(quality, int) or not 1 <= quality <= 100:
        raise ValueError(f"encode_jpeg: quality must be an int in [1, 100], got {quality!r}")
    array = image.asnumpy() if isinstance(image, Tensor) else np.asarray(image)
    if array.ndim == 2:
        array = array[:, :, np.newaxis]
    return _core.encode_jpeg(array, quality)
