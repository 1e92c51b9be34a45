"""nn.Dense, nn.ReLU, nn.Flatten, as MindSpore's."""

from lockstep import _core
from lockstep.common import dtype as mstype
from lockstep.common.tensor import Parameter
from lockstep.nn.cell import Cell
from lockstep.nn.layer._init import initial_values


class Dense(Cell):
    """y = x W^T + b; weight (out, in) and bias uniform in +-1/sqrt(in)."""

    def __init__(self, in_channels, out_channels, weight_init=None, bias_init=None,
                 has_bias=True, activation=None, dtype=mstype.float32):
        super().__init__()
        if activation not in (None, "relu"):
            raise ValueError(f"Dense: activation={activation!r}: only None or 'relu'")
        if dtype != mstype.float32:
            raise ValueError(f"Dense: dtype={dtype!r}: parameters are float32 (amp_level sets "
                             "the computation's type)")
        self.in_channels, self.out_channels = in_channels, out_channels
        self._activation = activation
        self._layer = _core.dense(in_channels, out_channels, has_bias)
        self.weight = Parameter(initial_values(weight_init, "Dense: weight_init"),
                                shape=(out_channels, in_channels))
        if has_bias:
            self.bias = Parameter(initial_values(bias_init, "Dense: bias_init"),
                                  shape=(out_channels,))

    def _build(self, ctx, x):
        y = self._layer.build(ctx, x)
        return ctx.op("Relu", [y]) if self._activation == "relu" else y


class ReLU(Cell):
    def _build(self, ctx, x):
        return ctx.op("Relu", [x])


class Flatten(Cell):
    """(N, ...) -> (N, product of the rest)."""

    def __init__(self, start_dim=1, end_dim=-1):
        super().__init__()
        if (start_dim, end_dim) != (1, -1):
            raise ValueError("Flatten: only start_dim=1, end_dim=-1")

    def _build(self, ctx, x):
        return ctx.op("Flatten", [x])


