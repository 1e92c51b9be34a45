"""lockstep.train: Model, callbacks, loss-scale managers and checkpoints, as mindspore.train."""

from lockstep.train import callback, loss_scale_manager
from lockstep.train.callback import (Callback, CheckpointConfig, LossMonitor, ModelCheckpoint,
                                     RunContext, TimeMonitor)
from lockstep.train.loss_scale_manager import DynamicLossScaleManager, FixedLossScaleManager
from lockstep.train.model import Model
from lockstep.train.serialization import load_checkpoint, load_param_into_net, save_checkpoint
