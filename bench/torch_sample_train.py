"""PyTorch/torchvision on the built-in sample dataset with lockstep-train's recipe (CPU).

A copy of ../shared/peers/torch_imagefolder_train.py whose transforms, schedule and models match
lockstep-train's, so the two learn the same task the same way:
  train: Resize(resize) -> RandomCrop(size, padding) -> RandomHorizontalFlip -> Normalize
  val:   Resize(val_resize, default resize) -> CenterCrop(size) -> Normalize
  SGD momentum 0.9, weight decay, linear warm-up then cosine decay per step, cross-entropy.

Usage: python3 torch_sample_train.py ROOT ARCH EPOCHS BATCH THREADS [--size 32] [--resize 36]
         [--padding 0] [--val-resize N] [--lr 0.1] [--weight-decay 1e-4] [--warmup-epochs 1]
ARCH: resnet8, resnet20 (He et al.'s CIFAR ResNets, as models::CifarResNet) or any torchvision
model name (resnet18, ...).
"""
import argparse
import math
import time

import torch
import torchvision
import torchvision.transforms as T


class Block(torch.nn.Module):
    def __init__(self, cin, planes, stride):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(cin, planes, 3, stride, 1, bias=False)
        self.bn1 = torch.nn.BatchNorm2d(planes)
        self.conv2 = torch.nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = torch.nn.BatchNorm2d(planes)
        self.down = None
        if stride != 1 or cin != planes:
            self.down = torch.nn.Sequential(torch.nn.Conv2d(cin, planes, 1, stride, bias=False),
                                            torch.nn.BatchNorm2d(planes))

    def forward(self, x):
        y = self.bn2(self.conv2(torch.relu(self.bn1(self.conv1(x)))))
        return torch.relu(y + (x if self.down is None else self.down(x)))


def cifar_resnet(depth, classes):
    n = (depth - 2) // 6
    layers = [torch.nn.Conv2d(3, 16, 3, 1, 1, bias=False), torch.nn.BatchNorm2d(16), torch.nn.ReLU()]
    cin = 16
    for stage in range(3):
        planes = 16 << stage
        for i in range(n):
            layers.append(Block(cin, planes, 2 if stage > 0 and i == 0 else 1))
            cin = planes
    layers += [torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(cin, classes)]
    net = torch.nn.Sequential(*layers)
    for m in net.modules():
        if isinstance(m, torch.nn.Conv2d):
            torch.nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
    return net


def main():
    p = argparse.ArgumentParser()
    p.add_argument("root"), p.add_argument("arch")
    p.add_argument("epochs", type=int), p.add_argument("batch", type=int)
    p.add_argument("threads", type=int)
    p.add_argument("--size", type=int, default=32)
    p.add_argument("--resize", type=int, default=36)
    p.add_argument("--padding", type=int, default=0)
    p.add_argument("--val-resize", type=int, default=0)
    p.add_argument("--lr", type=float, default=0.1)
    p.add_argument("--weight-decay", type=float, default=1e-4)
    p.add_argument("--warmup-epochs", type=float, default=1.0)
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    norm = T.Normalize((0.5, 0.5, 0.5), (0.5, 0.5, 0.5))
    tr = torchvision.datasets.ImageFolder(a.root + "/train", T.Compose([
        T.Resize(a.resize), T.RandomCrop(a.size, padding=a.padding), T.RandomHorizontalFlip(),
        T.ToTensor(), norm]))
    va = torchvision.datasets.ImageFolder(a.root + "/val", T.Compose([
        T.Resize(a.val_resize or a.resize), T.CenterCrop(a.size), T.ToTensor(), norm]))
    tl = torch.utils.data.DataLoader(tr, batch_size=a.batch, shuffle=True, drop_last=True)
    vl = torch.utils.data.DataLoader(va, batch_size=256)
    classes = len(tr.classes)
    if a.arch.startswith("resnet") and a.arch[6:] in ("8", "20", "32", "44", "56"):
        model = cifar_resnet(int(a.arch[6:]), classes)
    else:
        model = getattr(torchvision.models, a.arch)(num_classes=classes)
    opt = torch.optim.SGD(model.parameters(), lr=a.lr, momentum=0.9, weight_decay=a.weight_decay)
    steps = a.epochs * len(tl)
    warmup = int(a.warmup_epochs * len(tl))

    def lr_at(step):  # lockstep's WarmupLr(warmup, CosineLr(lr, steps - warmup))
        if step < warmup:
            return a.lr * (step + 1) / warmup
        return 0.5 * a.lr * (1 + math.cos(math.pi * (step - warmup) / max(1, steps - warmup)))

    lossf = torch.nn.CrossEntropyLoss()
    t0 = time.perf_counter()
    step = 0
    for ep in range(a.epochs):
        model.train()
        for x, y in tl:
            for g in opt.param_groups:
                g["lr"] = lr_at(step)
            opt.zero_grad()
            loss = lossf(model(x), y)
            loss.backward()
            opt.step()
            step += 1
        model.eval()
        correct = 0
        with torch.no_grad():
            for x, y in vl:
                correct += (model(x).argmax(1) == y).sum().item()
        print(f"epoch {ep + 1} loss {loss.item():.4f} val_acc {correct / len(va):.4f} "
              f"elapsed_s {time.perf_counter() - t0:.1f}", flush=True)
    print(f"torch {a.arch} epochs={a.epochs} batch={a.batch} size={a.size} resize={a.resize} "
          f"padding={a.padding} val_resize={a.val_resize or a.resize} "
          f"train_s={time.perf_counter() - t0:.1f} val_acc={correct / len(va):.4f}")


if __name__ == "__main__":
    main()
