"""The image transforms, as mindspore.dataset.vision's. Images are (H, W, C) uint8 or float32
until HWC2CHW; the arguments MindSpore has and the C++ transforms do not (other interpolations,
rectangular crops, uneven padding) raise ValueError naming them."""

from lockstep import _core
from lockstep.dataset._arguments import require_default
from lockstep.dataset.transforms.transforms import TensorOperation
from lockstep.dataset.vision.utils import Border, Inter

_ops = _core.transforms


def _side(where, size):
    """The side of a square crop: an int, or a (height, width) pair of equal values."""
    if isinstance(size, int):
        return size
    if isinstance(size, (list, tuple)) and len(size) == 2 and size[0] == size[1]:
        return int(size[0])
    raise ValueError(f"{where}: size={size!r} is not supported; crops are square (an int)")


class Decode(TensorOperation):
    """Decode(to_pil=False): JPEG or PNG bytes to an (H, W, 3) uint8 RGB image."""

    def __init__(self, to_pil=False):
        require_default("Decode", to_pil=(to_pil, False))
        super().__init__(_ops.Decode())


class Resize(TensorOperation):
    """Resize(size): an int scales the shorter side to it keeping the aspect ratio; a
    (height, width) pair gives both sides."""

    def __init__(self, size, interpolation=Inter.LINEAR):
        require_default("Resize", interpolation=(interpolation, Inter.LINEAR))
        if isinstance(size, int):
            super().__init__(_ops.Resize(size))
        elif isinstance(size, (list, tuple)) and len(size) == 2:
            super().__init__(_ops.Resize(int(size[0]), int(size[1])))
        else:
            raise ValueError(f"Resize: size={size!r} must be an int or (height, width)")


class RandomCrop(TensorOperation):
    """RandomCrop(size, padding=None): a random size x size crop of the image padded with zeros
    by `padding` on every side."""

    def __init__(self, size, padding=None, pad_if_needed=False, fill_value=0,
                 padding_mode=Border.CONSTANT):
        require_default("RandomCrop", pad_if_needed=(pad_if_needed, False),
                        fill_value=(fill_value, 0), padding_mode=(padding_mode, Border.CONSTANT))
        super().__init__(_ops.RandomCrop(_side("RandomCrop", size), self._padding(padding)))

    @staticmethod
    def _padding(padding):
        """One padding for every side: None, an int, or 2 or 4 equal values."""
        if padding is None:
            return 0
        if isinstance(padding, int):
            return padding
        if isinstance(padding, (list, tuple)) and len(padding) in (2, 4) and len(set(padding)) == 1:
            return int(padding[0])
        raise ValueError(f"RandomCrop: padding={padding!r} is not supported; every side gets the "
                         "same padding (an int)")


class RandomResizedCrop(TensorOperation):
    """RandomResizedCrop(size, scale=(0.08, 1.0), ratio=(3/4, 4/3)): a random box of `scale` x
    the area and an aspect ratio in `ratio`, resized to size x size."""

    def __init__(self, size, scale=(0.08, 1.0), ratio=(3.0 / 4.0, 4.0 / 3.0),
                 interpolation=Inter.BILINEAR, max_attempts=10):
        require_default("RandomResizedCrop", interpolation=(interpolation, Inter.BILINEAR),
                        max_attempts=(max_attempts, 10))
        super().__init__(_ops.RandomResizedCrop(_side("RandomResizedCrop", size), tuple(scale),
                                                tuple(ratio)))


class CenterCrop(TensorOperation):
    """CenterCrop(size): the central size x size pixels, zero-padded when the image is smaller."""

    def __init__(self, size):
        super().__init__(_ops.CenterCrop(_side("CenterCrop", size)))


class RandomHorizontalFlip(TensorOperation):
    """RandomHorizontalFlip(prob=0.5): mirrors the image with probability `prob`."""

    def __init__(self, prob=0.5):
        super().__init__(_ops.RandomHorizontalFlip(prob))


class Normalize(TensorOperation):
    """Normalize(mean, std): (x - mean[c]) / std[c] as float32, on the image's own scale
    (0..255 for uint8 images, as in MindSpore)."""

    def __init__(self, mean, std, is_hwc=True):
        require_default("Normalize", is_hwc=(is_hwc, True))
        super().__init__(_ops.Normalize([float(m) for m in mean], [float(s) for s in std]))


class HWC2CHW(TensorOperation):
    """HWC2CHW(): (H, W, C) to (C, H, W), the layout the model's graphs take."""

    def __init__(self):
        super().__init__(_ops.HWC2CHW())
