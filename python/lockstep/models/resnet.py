"""ResNets written as Cells, as a MindSpore user writes them. They trace into the same graph as
the C++ models (train/models.h): same parameter names, same nodes in the same order, so the same
fingerprint and interchangeable checkpoints. Blocks compute their branch before the shortcut and
end in relu(branch + shortcut), as train/layers.h's Residual does."""

from lockstep import nn, ops


def _conv(in_channels, out_channels, kernel, stride=1):
    padding = kernel // 2
    return nn.Conv2d(in_channels, out_channels, kernel, stride=stride,
                     pad_mode="pad" if padding else "valid", padding=padding)


class _Residual(nn.Cell):
    """relu(branch(x) + shortcut(x)); the shortcut is the identity or `downsample`."""

    def construct(self, x):
        out = self.branch(x)
        identity = self.downsample(x) if self.has_downsample else x
        return ops.relu(out + identity)

    def branch(self, x):
        raise NotImplementedError

    def _shortcut(self, in_channels, out_channels, stride):
        self.has_downsample = stride != 1 or in_channels != out_channels
        if self.has_downsample:
            self.downsample = nn.SequentialCell([_conv(in_channels, out_channels, 1, stride),
                                                 nn.BatchNorm2d(out_channels)])


class BasicBlock(_Residual):
    expansion = 1

    def __init__(self, in_channels, planes, stride=1):
        super().__init__()
        self.conv1 = _conv(in_channels, planes, 3, stride)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU()
        self.conv2 = _conv(planes, planes, 3)
        self.bn2 = nn.BatchNorm2d(planes)
        self._shortcut(in_channels, planes, stride)

    def branch(self, x):
        return self.bn2(self.conv2(self.relu(self.bn1(self.conv1(x)))))


class Bottleneck(_Residual):
    """ResNet-50 v1.5's block: the stride on the 3x3 convolution."""

    expansion = 4

    def __init__(self, in_channels, planes, stride=1):
        super().__init__()
        out_channels = planes * self.expansion
        self.conv1 = _conv(in_channels, planes, 1)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu1 = nn.ReLU()
        self.conv2 = _conv(planes, planes, 3, stride)
        self.bn2 = nn.BatchNorm2d(planes)
        self.relu2 = nn.ReLU()
        self.conv3 = _conv(planes, out_channels, 1)
        self.bn3 = nn.BatchNorm2d(out_channels)
        self._shortcut(in_channels, out_channels, stride)

    def branch(self, x):
        out = self.relu1(self.bn1(self.conv1(x)))
        out = self.relu2(self.bn2(self.conv2(out)))
        return self.bn3(self.conv3(out))


class ResNet(nn.Cell):
    """A stem, stages "layer1".. of blocks (stride 2 from the second stage on), global average
    pooling and a dense classifier. `stem` "imagenet": 7x7/2 conv and 3x3/2 max pooling;
    "cifar": one 3x3 conv of 16 channels."""

    def __init__(self, block, layers, class_num, base_planes=64, stem="imagenet"):
        super().__init__()
        imagenet = stem == "imagenet"
        self.conv1 = _conv(3, base_planes, 7 if imagenet else 3, 2 if imagenet else 1)
        self.bn1 = nn.BatchNorm2d(base_planes)
        self.relu = nn.ReLU()
        self.has_maxpool = imagenet
        if imagenet:
            self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, pad_mode="pad", padding=1)
        channels = base_planes
        self.stages = []
        for index, blocks in enumerate(layers):
            planes = base_planes << index
            stage = nn.SequentialCell()
            for i in range(blocks):
                stage.append(block(channels, planes, 2 if index > 0 and i == 0 else 1))
                channels = planes * block.expansion
            setattr(self, f"layer{index + 1}", stage)
            self.stages.append(stage)
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.flatten = nn.Flatten()
        self.fc = nn.Dense(channels, class_num)

    def construct(self, x):
        x = self.relu(self.bn1(self.conv1(x)))
        if self.has_maxpool:
            x = self.maxpool(x)
        for stage in self.stages:
            x = stage(x)
        return self.fc(self.flatten(self.avgpool(x)))


def resnet18(class_num=1000):
    return ResNet(BasicBlock, [2, 2, 2, 2], class_num)


def resnet50(class_num=1000):
    return ResNet(Bottleneck, [3, 4, 6, 3], class_num)


def cifar_resnet(depth, class_num=10):
    """He et al.'s CIFAR ResNets (depth 6n + 2: resnet8, resnet20) for 32x32 images."""
    if depth < 8 or (depth - 2) % 6:
        raise ValueError(f"cifar_resnet: depth must be 6n + 2, got {depth}")
    blocks = (depth - 2) // 6
    return ResNet(BasicBlock, [blocks] * 3, class_num, base_planes=16, stem="cifar")
