"""nn.BatchNorm2d and nn.SyncBatchNorm, as MindSpore's: gamma, beta (trained), moving_mean,
moving_variance (running statistics, saved in checkpoints)."""

from lockstep import _core
from lockstep.common import dtype as mstype
from lockstep.common.tensor import Parameter
from lockstep.nn.cell import Cell
from lockstep.nn.layer._init import initial_values


class BatchNorm2d(Cell):
    _sync = False

    def __init__(self, num_features, eps=1e-5, momentum=0.9, affine=True, gamma_init="ones",
                 beta_init="zeros", moving_mean_init="zeros", moving_var_init="ones",
                 use_batch_statistics=None, data_format="NCHW", dtype=mstype.float32):
        super().__init__()
        name = type(self).__name__
        if not affine:
            raise ValueError(f"{name}: affine=False is not supported (gamma and beta are trained)")
        if use_batch_statistics is not None:
            raise ValueError(f"{name}: use_batch_statistics={use_batch_statistics!r}: training "
                             "uses the batch's statistics and evaluation the running ones")
        if data_format != "NCHW":
            raise ValueError(f"{name}: data_format={data_format!r}: Lockstep's graphs are NCHW")
        if dtype != mstype.float32:
            raise ValueError(f"{name}: dtype={dtype!r}: parameters are float32 (amp_level sets "
                             "the computation's type)")
        if not 0.0 <= momentum <= 1.0:
            raise ValueError(f"{name}: momentum must be in [0, 1], got {momentum}")
        zero_gamma = isinstance(gamma_init, str) and gamma_init == "zeros"
        gamma = None if zero_gamma else initial_values(gamma_init, f"{name}: gamma_init",
                                                       own=("ones",))
        shape = (num_features,)
        self._layer = _core.batch_norm2d(num_features, eps, momentum, zero_gamma, self._sync)
        self.gamma = Parameter(gamma, shape=shape)
        self.beta = Parameter(initial_values(beta_init, f"{name}: beta_init", own=("zeros",)),
                              shape=shape)
        self.moving_mean = Parameter(
            initial_values(moving_mean_init, f"{name}: moving_mean_init", own=("zeros",)),
            shape=shape, requires_grad=False)
        self.moving_variance = Parameter(
            initial_values(moving_var_init, f"{name}: moving_var_init", own=("ones",)),
            shape=shape, requires_grad=False)

    def _build(self, ctx, x):
        return self._layer.build(ctx, x)


class SyncBatchNorm(BatchNorm2d):
    """Statistics over the global batch of a data-parallel job."""

    _sync = True

    def __init__(self, num_features, eps=1e-5, momentum=0.9, affine=True, gamma_init="ones",
                 beta_init="zeros", moving_mean_init="zeros", moving_var_init="ones",
                 use_batch_statistics=None, process_groups=None, dtype=mstype.float32):
        if process_groups is not None:
            raise ValueError("SyncBatchNorm: process_groups is not supported: statistics are "
                             "over every rank")
        super().__init__(num_features, eps, momentum, affine, gamma_init, beta_init,
                         moving_mean_init, moving_var_init, use_batch_statistics, dtype=dtype)
