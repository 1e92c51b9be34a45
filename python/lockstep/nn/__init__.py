"""lockstep.nn: Cells, layers, the loss and the optimizer, as mindspore.nn."""

from lockstep.nn.cell import Cell
from lockstep.nn.layer import (AdaptiveAvgPool2d, AvgPool2d, BatchNorm2d, CellList, Conv2d,
                               Dense, Flatten, MaxPool2d, ReLU, SequentialCell, SyncBatchNorm)
from lockstep.nn.loss import SoftmaxCrossEntropyWithLogits
from lockstep.nn.optim import Momentum
