"""The C++ callbacks under MindSpore's names: they run inside the C++ loop, without the GIL."""

import os

from lockstep import _core
from lockstep.train.callback._callback import Callback


class LossMonitor(Callback):
    """Every per_print_times steps: "epoch: 1 step: 20, loss is 2.3102"; a NaN or infinite loss
    stops training."""

    def __init__(self, per_print_times=1):
        if per_print_times < 1:
            raise ValueError(f"LossMonitor: per_print_times must be >= 1, got {per_print_times}")
        self._per_print_steps = per_print_times

    def _native(self):
        return _core.loss_monitor(self._per_print_steps)


class TimeMonitor(Callback):
    """After every epoch: the epoch's time and the time per step."""

    def __init__(self, data_size=None, data_time=False):
        pass

    def _native(self):
        return _core.time_monitor()


class CheckpointConfig:
    """When to save and how many steps to keep, as MindSpore's; MindSpore's other settings
    (encryption, asynchronous saves, exception saves) are refused by name."""

    def __init__(self, save_checkpoint_steps=1, save_checkpoint_seconds=0,
                 keep_checkpoint_max=5, keep_checkpoint_per_n_minutes=0, integrated_save=True,
                 async_save=False, saved_network=None, append_info=None, enc_key=None,
                 enc_mode="AES-GCM", exception_save=False, crc_check=False,
                 remove_redundancy=False, format="ckpt", **kwargs):
        # crc_check: Lockstep's files always end in the CRC trailer.
        unsupported = {"save_checkpoint_seconds": save_checkpoint_seconds,
                       "keep_checkpoint_per_n_minutes": keep_checkpoint_per_n_minutes,
                       "async_save": async_save, "saved_network": saved_network,
                       "append_info": append_info, "enc_key": enc_key,
                       "exception_save": exception_save, "remove_redundancy": remove_redundancy,
                       "format": format != "ckpt", **kwargs}
        named = sorted(name for name, value in unsupported.items() if value)
        if named:
            raise ValueError(f"CheckpointConfig: {', '.join(named)} not supported")
        if save_checkpoint_steps is None or save_checkpoint_steps < 0:
            raise ValueError("CheckpointConfig: save_checkpoint_steps must be >= 0")
        self.save_checkpoint_steps = int(save_checkpoint_steps)
        self.keep_checkpoint_max = int(keep_checkpoint_max or 0)


class ModelCheckpoint(Callback):
    """{prefix}_{rank}-{epoch}_{step}.ckpt files and a graph .meta in `directory`, every rank's
    (MindSpore's recipes give each rank its own prefix or directory; either works)."""

    def __init__(self, prefix="CKP", directory=None, config=None):
        self._prefix = prefix
        self._directory = os.path.abspath(directory or ".")
        self._config = config or CheckpointConfig()

    def _native(self):
        return _core.model_checkpoint(self._prefix, self._directory,
                                      self._config.save_checkpoint_steps, 0,
                                      self._config.keep_checkpoint_max)
