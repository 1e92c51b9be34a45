"""Loss-scale managers, as MindSpore's: how much the loss is scaled and what happens when the
scaled gradients overflow."""


class FixedLossScaleManager:
    """A fixed scale. drop_overflow_update=True (MindSpore's default) skips updates whose
    gradients overflow and unscales the gradients itself (the optimizer's loss_scale then stays
    1); False leaves the unscaling to the optimizer's loss_scale, which must match."""

    def __init__(self, loss_scale=128.0, drop_overflow_update=True):
        if loss_scale < 1:
            raise ValueError(f"FixedLossScaleManager: loss_scale must be >= 1, got {loss_scale}")
        self.loss_scale = float(loss_scale)
        self.drop_overflow_update = bool(drop_overflow_update)

    def get_loss_scale(self):
        return self.loss_scale

    def get_drop_overflow_update(self):
        return self.drop_overflow_update


class DynamicLossScaleManager:
    """A scale divided by scale_factor on overflow (the update skipped) and multiplied by it
    after scale_window finite steps."""

    def __init__(self, init_loss_scale=2**24, scale_factor=2, scale_window=2000):
        if init_loss_scale < 1 or scale_factor <= 1 or scale_window < 1:
            raise ValueError("DynamicLossScaleManager: init_loss_scale >= 1, scale_factor > 1 "
                             "and scale_window >= 1")
        self.loss_scale = float(init_loss_scale)
        self.scale_factor = float(scale_factor)
        self.scale_window = int(scale_window)

    def get_loss_scale(self):
        return self.loss_scale

    def get_drop_overflow_update(self):
        return True
