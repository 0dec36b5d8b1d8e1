"""ResNet-20 (He et al.'s CIFAR ResNet) as a PyTorch user writes it, trained with the usual
recipe: SGD with momentum and weight decay (none on batch norm's weights and the biases),
label smoothing, and a one-cycle schedule stepped every batch.

    python python/examples/resnet_cifar.py [--dataset fashion-mnist|synthetic] [--epochs 5]
        [--limit N] [--steps N] [--batch-size 128] [--lr 0.1] [--amp]

fashion-mnist is Debian's dataset-fashion-mnist (1 channel, 28x28); synthetic is random
3-channel 32x32 images with random labels (it times the model, it learns nothing). --limit
trains and tests on the first N samples, --steps stops each epoch after N steps (CI runs a
few). The model's state dict has the names of PyTorch's usual CIFAR ResNet
("layer2.0.shortcut.0.weight"), the same as the C library's ct_nn_resnet20.
"""

import argparse
import time

import ctensor as ct
import ctensor.nn as nn
import ctensor.nn.functional as F


class BasicBlock(nn.Module):
    def __init__(self, in_channels, channels, stride=1):
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, channels, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, stride=1, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)
        self.shortcut = nn.Sequential()
        if stride != 1 or in_channels != channels:
            self.shortcut = nn.Sequential(
                nn.Conv2d(in_channels, channels, 1, stride=stride, bias=False),
                nn.BatchNorm2d(channels))

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + self.shortcut(x))


class ResNet20(nn.Module):
    def __init__(self, in_channels=3, num_classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, 16, 3, stride=1, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(16)
        self.layer1 = self._stage(16, 16, 1)
        self.layer2 = self._stage(16, 32, 2)
        self.layer3 = self._stage(32, 64, 2)
        self.linear = nn.Linear(64, num_classes)

    @staticmethod
    def _stage(in_channels, channels, stride):
        return nn.Sequential(BasicBlock(in_channels, channels, stride),
                             BasicBlock(channels, channels), BasicBlock(channels, channels))

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.layer3(self.layer2(self.layer1(out)))
        out = F.adaptive_avg_pool2d(out, (1, 1))
        return self.linear(out.reshape(out.shape[0], -1))


def sliced(dataset, limit):
    if not limit:
        return dataset
    images, labels = dataset.tensors
    return ct.data.TensorDataset(images[:limit], labels[:limit], transform=dataset.transform)


def datasets(name, limit):
    """(train, test, channels)."""
    if name == "synthetic":
        n = limit or 1024
        images, labels = ct.randn(n, 3, 32, 32), ct.randint(0, 10, (n,))
        data = ct.data.TensorDataset(images, labels)
        return data, data, 3
    train, test = ct.data.fashion_mnist("train"), ct.data.fashion_mnist("test")
    return sliced(train, limit), sliced(test, limit), 1


def evaluate(model, loader):
    model.eval()
    hits, seen = 0, 0
    with ct.no_grad():
        for x, y in loader:
            hits += int(ct.sum(ct.argmax(model(x), axis=1) == y).item())
            seen += y.shape[0]
    model.train()
    return hits / max(seen, 1)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--dataset", choices=["fashion-mnist", "synthetic"], default="fashion-mnist")
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--limit", type=int, default=0)
    p.add_argument("--steps", type=int, default=0)
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--lr", type=float, default=0.1)
    p.add_argument("--amp", action="store_true")
    args = p.parse_args()

    device = ct.device("cuda:0" if ct.cuda.is_available() else "cpu")
    ct.manual_seed(0)
    train, test, channels = datasets(args.dataset, args.limit)
    model = ResNet20(in_channels=channels).to(device)
    # Weight decay on the convolutions' and the classifier's weights only.
    decay = [p for p in model.parameters() if p.ndim > 1]
    no_decay = [p for p in model.parameters() if p.ndim <= 1]
    optimizer = ct.optim.SGD([{"params": decay, "weight_decay": 5e-4},
                              {"params": no_decay, "weight_decay": 0.0}],
                             lr=args.lr, momentum=0.9, nesterov=True)
    loader = ct.data.DataLoader(train, batch_size=args.batch_size, shuffle=True, device=device)
    test_loader = ct.data.DataLoader(test, batch_size=1000, device=device)
    steps = len(loader) if not args.steps else min(args.steps, len(loader))
    scheduler = ct.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=args.lr,
                                                 total_steps=args.epochs * steps)
    loss_fn = nn.CrossEntropyLoss(label_smoothing=0.1)
    amp_dtype = ct.float16 if device.type == "cuda" else ct.bfloat16
    scaler = ct.amp.GradScaler(enabled=args.amp and amp_dtype == ct.float16)

    for epoch in range(args.epochs):
        start, samples = time.perf_counter(), 0
        for step, (x, y) in enumerate(loader):
            if step == steps:
                break
            optimizer.zero_grad()
            if device.type == "cpu":  # the CPU convolves channels-last without reordering
                x = x.to(memory_format=ct.channels_last)
            with ct.autocast(device.type, dtype=amp_dtype, enabled=args.amp):
                loss = loss_fn(model(x), y)
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
            scheduler.step()
            samples += x.shape[0]
        rate = samples / (time.perf_counter() - start)
        accuracy = evaluate(model, test_loader)
        print(f"epoch {epoch + 1}: loss {loss.item():.4f}, test accuracy {accuracy:.4f}, "
              f"{rate:.0f} samples/s on {device}")


if __name__ == "__main__":
    main()
