"""nn.Conv2d, as MindSpore's: (N, C, H, W) in, square kernels, He normal (fan out) weights."""

from lockstep import _core
from lockstep.common import dtype as mstype
from lockstep.common.tensor import Parameter
from lockstep.nn.cell import Cell
from lockstep.nn.layer._padding import square, symmetric_padding
from lockstep.nn.layer._init import initial_values


class Conv2d(Cell):
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, pad_mode="same",
                 padding=0, dilation=1, group=1, has_bias=False, weight_init=None,
                 bias_init=None, data_format="NCHW", dtype=mstype.float32):
        super().__init__()
        if data_format != "NCHW":
            raise ValueError(f"Conv2d: data_format={data_format!r}: Lockstep's graphs are NCHW "
                             "(layouts are the backend's choice)")
        if dtype != mstype.float32:
            raise ValueError(f"Conv2d: dtype={dtype!r}: parameters are float32 (amp_level sets "
                             "the computation's type)")
        if in_channels % group or out_channels % group:
            raise ValueError(f"Conv2d: group={group} must divide in_channels={in_channels} and "
                             f"out_channels={out_channels}")
        kernel = square(kernel_size, "Conv2d: kernel_size")
        stride = square(stride, "Conv2d: stride")
        dilation = square(dilation, "Conv2d: dilation")
        pad = symmetric_padding(pad_mode, padding, kernel, stride, dilation, "Conv2d")
        self.in_channels, self.out_channels = in_channels, out_channels
        self._layer = _core.conv2d(in_channels, out_channels, kernel, stride, pad, dilation,
                                   group, has_bias)
        self.weight = Parameter(initial_values(weight_init, "Conv2d: weight_init"),
                                shape=(out_channels, in_channels // group, kernel, kernel))
        if has_bias:
            self.bias = Parameter(initial_values(bias_init, "Conv2d: bias_init"),
                                  shape=(out_channels,))

    def _build(self, ctx, x):
        return self._layer.build(ctx, x)
