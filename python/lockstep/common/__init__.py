"""lockstep.common: dtype, Tensor, Parameter and set_seed, as mindspore.common."""

from lockstep.common import dtype
from lockstep.common.seed import set_seed, get_seed
from lockstep.common.tensor import Parameter, Tensor

__all__ = ["dtype", "set_seed", "get_seed", "Parameter", "Tensor"]
