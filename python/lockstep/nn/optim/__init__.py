"""nn.Momentum, as MindSpore's: SGD with momentum over every parameter of the network."""

import warnings

import numpy as np

from lockstep.common.tensor import Parameter, Tensor


def _learning_rates(learning_rate):
    """A constant rate, or one per global step (the last one kept after the list ends)."""
    if isinstance(learning_rate, (int, float)):
        rates = [float(learning_rate)]
    elif isinstance(learning_rate, (list, tuple, np.ndarray, Tensor)):
        array = learning_rate.asnumpy() if isinstance(learning_rate, Tensor) else learning_rate
        rates = [float(r) for r in np.asarray(array, dtype=np.float64).reshape(-1)]
    else:
        raise ValueError(f"Momentum: learning_rate must be a number or a list of one per step, "
                         f"got {type(learning_rate).__name__}")
    if not rates or any(not np.isfinite(r) or r < 0 for r in rates):
        raise ValueError("Momentum: learning_rate must be finite and not negative")
    return rates


class Momentum:
    """Momentum(params, learning_rate, momentum, weight_decay=0.0, loss_scale=1.0,
    use_nesterov=False). ``loss_scale`` divides every gradient, as in MindSpore: with a loss
    scaled by as much (a loss-scale manager of the same scale) that undoes the scaling; without
    one it makes every step loss_scale times smaller, which Lockstep keeps (so that ported runs
    compare) and warns about when the Model is made."""

    def __init__(self, params, learning_rate, momentum, weight_decay=0.0, loss_scale=1.0,
                 use_nesterov=False):
        params = list(params)
        if any(isinstance(p, dict) for p in params):
            raise ValueError("Momentum: parameter groups are not supported: pass "
                             "net.trainable_params()")
        if not all(isinstance(p, Parameter) for p in params):
            raise ValueError("Momentum: params must be Parameters (net.trainable_params())")
        if not 0.0 <= momentum:
            raise ValueError(f"Momentum: momentum must not be negative, got {momentum}")
        if weight_decay < 0 or loss_scale <= 0:
            raise ValueError("Momentum: weight_decay must be >= 0 and loss_scale > 0")
        self.parameters = params
        self.learning_rates = _learning_rates(learning_rate)
        self.momentum = float(momentum)
        self.weight_decay = float(weight_decay)
        self.loss_scale = float(loss_scale)
        self.use_nesterov = bool(use_nesterov)

    def gradient_divisor(self, scaled_by):
        """What the gradients are divided by beyond the `scaled_by` the loss was scaled by."""
        if self.loss_scale != scaled_by:
            warnings.warn(
                f"Momentum(loss_scale={self.loss_scale:g}) with a loss scaled by {scaled_by:g}: "
                f"every gradient is divided by {self.loss_scale / scaled_by:g}, as MindSpore "
                "divides it (a step that many times smaller); give the Model "
                f"loss_scale_manager=FixedLossScaleManager({self.loss_scale:g}, "
                "drop_overflow_update=False) to scale the loss alike", stacklevel=3)
        return self.loss_scale / scaled_by
