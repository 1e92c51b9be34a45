"""Reference networks written as Cells: the C++ models' twins (train/models.h)."""

from lockstep.models.lenet import LeNet5, lenet
from lockstep.models.resnet import (BasicBlock, Bottleneck, ResNet, cifar_resnet, resnet18,
                                    resnet50)
