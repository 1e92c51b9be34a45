from lockstep.nn.layer.basic import Dense, Flatten, ReLU
from lockstep.nn.layer.container import CellList, SequentialCell
from lockstep.nn.layer.conv import Conv2d
from lockstep.nn.layer.normalization import BatchNorm2d, SyncBatchNorm
from lockstep.nn.layer.pooling import AdaptiveAvgPool2d, AvgPool2d, MaxPool2d
