"""Callbacks, as mindspore.train.callback: Python ones (Callback subclasses) are called between
steps with a RunContext; LossMonitor, TimeMonitor and ModelCheckpoint are the C++ ones
(train/callbacks.h, train/checkpoint_callback.h)."""

from lockstep.train.callback._callback import Callback, RunContext
from lockstep.train.callback._builtin import (CheckpointConfig, LossMonitor, ModelCheckpoint,
                                              TimeMonitor)
