"""nn.MaxPool2d, nn.AvgPool2d and nn.AdaptiveAvgPool2d(1), as MindSpore's."""

from lockstep import _core
from lockstep.nn.cell import Cell
from lockstep.nn.layer._padding import square, symmetric_padding


class _Pool2d(Cell):
    _make = None

    def __init__(self, kernel_size, stride, pad_mode, padding, ceil_mode, data_format):
        super().__init__()
        name = type(self).__name__
        if ceil_mode:
            raise ValueError(f"{name}: ceil_mode=True is not supported")
        if data_format != "NCHW":
            raise ValueError(f"{name}: data_format={data_format!r}: Lockstep's graphs are NCHW")
        kernel = square(kernel_size, f"{name}: kernel_size")
        stride = square(stride, f"{name}: stride")
        pad = symmetric_padding(pad_mode, padding, kernel, stride, 1, name)
        self._layer = type(self)._make(kernel, stride, pad)

    def _build(self, ctx, x):
        return self._layer.build(ctx, x)


class MaxPool2d(_Pool2d):
    _make = staticmethod(_core.max_pool2d)

    def __init__(self, kernel_size=1, stride=1, pad_mode="valid", padding=0, dilation=1,
                 return_indices=False, ceil_mode=False, data_format="NCHW"):
        if dilation != 1 or return_indices:
            raise ValueError("MaxPool2d: dilation and return_indices are not supported")
        super().__init__(kernel_size, stride, pad_mode, padding, ceil_mode, data_format)


class AvgPool2d(_Pool2d):
    _make = staticmethod(_core.avg_pool2d)

    def __init__(self, kernel_size=1, stride=1, pad_mode="valid", padding=0, ceil_mode=False,
                 count_include_pad=True, divisor_override=None, data_format="NCHW"):
        if not count_include_pad or divisor_override is not None:
            raise ValueError("AvgPool2d: count_include_pad=False and divisor_override are not "
                             "supported")
        super().__init__(kernel_size, stride, pad_mode, padding, ceil_mode, data_format)


class AdaptiveAvgPool2d(Cell):
    """Global average pooling: output_size 1 only."""

    def __init__(self, output_size):
        super().__init__()
        if output_size not in (1, (1, 1), [1, 1]):
            raise ValueError(f"AdaptiveAvgPool2d: output_size={output_size!r}: only 1 (global "
                             "average pooling)")

    def _build(self, ctx, x):
        return ctx.op("GlobalAvgPool", [x])
