"""MindSpore's LeNet5, named as the C++ one (train/models.h): valid 5x5 convolutions without
bias, 2x2 max pooling, dense 16*5*5 -> 120 -> 84 -> num_class, for 32x32 images."""

from lockstep import nn


class LeNet5(nn.Cell):
    def __init__(self, num_class=10, num_channel=1):
        super().__init__()
        self.conv1 = nn.Conv2d(num_channel, 6, 5, pad_mode="valid")
        self.relu1 = nn.ReLU()
        self.pool1 = nn.MaxPool2d(kernel_size=2, stride=2)
        self.conv2 = nn.Conv2d(6, 16, 5, pad_mode="valid")
        self.relu2 = nn.ReLU()
        self.pool2 = nn.MaxPool2d(kernel_size=2, stride=2)
        self.flatten = nn.Flatten()
        self.fc1 = nn.Dense(16 * 5 * 5, 120)
        self.relu3 = nn.ReLU()
        self.fc2 = nn.Dense(120, 84)
        self.relu4 = nn.ReLU()
        self.fc3 = nn.Dense(84, num_class)

    def construct(self, x):
        x = self.pool1(self.relu1(self.conv1(x)))
        x = self.pool2(self.relu2(self.conv2(x)))
        x = self.relu3(self.fc1(self.flatten(x)))
        x = self.relu4(self.fc2(x))
        return self.fc3(x)


def lenet(num_class=10, num_channel=1):
    return LeNet5(num_class, num_channel)
