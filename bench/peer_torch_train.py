"""PyTorch's side of the training benchmark (bench/run_train.sh): the MLP, the small CNN,
ResNet-20 or the CIFAR ResNet-18 on Fashion-MNIST, as `ctensor train` does: the same model
(the ResNets as nn.h builds them: projection shortcuts of a 1x1 strided conv and BN, PyTorch's
default initialisation), batch, recipe, normalisation and threads; the data in memory as
tensors (PyTorch's fastest loading here). The recipe takes `ctensor train`'s options and
defaults: Adam 1e-3 for the MLP and the CNN; for the ResNets SGD with lr 0.1, momentum 0.9,
weight decay 5e-4 and OneCycleLR(max_lr=lr, total_steps=epochs * batches), stepped every
batch. --no-decay-norm-bias puts the parameters of rank <= 1 in a group with weight_decay 0;
--schedule cosine --warmup-epochs N is SequentialLR([LinearLR(1 / warm-up steps),
CosineAnnealingLR(the steps after it)]), stepped every batch. The seed policy is ctensor's:
torch.manual_seed(seed) before the model is made, and the shuffling draws from that
generator (each library has its own generator, so the initial weights differ, not their
distribution).
On a GPU each batch is made on the CPU as ctensor's loader makes it, then copied from
pinned memory without blocking (pin_memory + non_blocking, what a DataLoader with
pin_memory=True does), and cuDNN keeps its default (heuristic) algorithm choice, as
ctensor's does. Convolutions compute in f32, as ctensor's do, unless --tf32 gives them
PyTorch's default on a GPU (TF32 tensor cores: faster, with a 10-bit mantissa). --amp bf16
or f16 runs forward and loss under torch.autocast(device, dtype) (and f16 with a GradScaler),
as `ctensor train --amp` does.

Usage: peer_torch_train.py MODEL EPOCHS BATCH THREADS [--data DIR] [--seed S] [--device D]
                           [--tf32] [--amp off|bf16|f16] [--limit N] [--optimizer O] [--lr X]
                           [--momentum X] [--nesterov] [--weight-decay X]
                           [--no-decay-norm-bias] [--label-smoothing X]
                           [--schedule none|onecycle|cosine] [--warmup-epochs N]
Prints a line per epoch: `torch MODEL epoch N seconds S samples_per_s R test_accuracy A`."""
import argparse
import gzip
import struct
import sys
import time

import numpy as np
import torch
from torch import nn

MEAN, STD = 0.2860, 0.3530


def read_idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    ndim = data[3]
    shape = struct.unpack(">" + "I" * ndim, data[4:4 + 4 * ndim])
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(shape)


class BasicBlock(nn.Module):
    """ct_nn_basic_block: relu(bn2(conv2(relu(bn1(conv1(x))))) + shortcut(x))."""

    def __init__(self, in_channels, channels, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, channels, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)
        self.shortcut = nn.Sequential()
        if stride != 1 or in_channels != channels:
            self.shortcut = nn.Sequential(
                nn.Conv2d(in_channels, channels, 1, stride, bias=False), nn.BatchNorm2d(channels))

    def forward(self, x):
        out = torch.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return torch.relu(out + self.shortcut(x))


class ResNet(nn.Module):
    """ct_nn_resnet20 and ct_nn_resnet18: the same layers and state-dict names."""

    def __init__(self, in_channels, classes, widths, blocks):
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, widths[0], 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(widths[0])
        previous = widths[0]
        for i, (width, count) in enumerate(zip(widths, blocks)):
            layers = []
            for b in range(count):
                layers.append(BasicBlock(previous, width, 2 if i and not b else 1))
                previous = width
            setattr(self, f"layer{i + 1}", nn.Sequential(*layers))
        self.stages = len(widths)
        self.linear = nn.Linear(previous, classes)

    def forward(self, x):
        out = torch.relu(self.bn1(self.conv1(x)))
        for i in range(self.stages):
            out = getattr(self, f"layer{i + 1}")(out)
        out = nn.functional.adaptive_avg_pool2d(out, 1).flatten(1)
        return self.linear(out)


def model_for(name):
    if name == "resnet20":
        return ResNet(1, 10, [16, 32, 64], [3, 3, 3])
    if name == "resnet18":
        return ResNet(1, 10, [64, 128, 256, 512], [2, 2, 2, 2])
    if name == "cnn":
        return nn.Sequential(
            nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Flatten(), nn.Linear(3136, 128), nn.ReLU(), nn.Linear(128, 10))
    return nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(),
                         nn.Linear(256, 128), nn.ReLU(), nn.Linear(128, 10))


def images(array, side=28):
    """Normalised (N, 1, side, side) images; smaller ones zero-padded (before the
    normalisation, centred), as `ctensor train` pads Fashion-MNIST to 32x32 for a ResNet."""
    pad = (side - array.shape[-1]) // 2
    if pad > 0:
        array = np.pad(array, ((0, 0), (pad, pad), (pad, pad)))
    return ((torch.from_numpy(array.copy()).float() / 255 - MEAN) / STD).unsqueeze(1)


def arguments():
    parser = argparse.ArgumentParser()
    parser.add_argument("model", choices=["mlp", "cnn", "resnet20", "resnet18"])
    parser.add_argument("epochs", type=int)
    parser.add_argument("batch", type=int)
    parser.add_argument("threads", type=int)
    parser.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--tf32", action="store_true")
    parser.add_argument("--amp", choices=["off", "bf16", "f16"], default="off")
    parser.add_argument("--limit", type=int, default=0, help="train on the first N samples")
    # The recipe: None takes ctensor train's default for the model (recipe()).
    parser.add_argument("--optimizer", choices=["sgd", "adam", "adamw"])
    parser.add_argument("--lr", type=float)
    parser.add_argument("--momentum", type=float, default=0.9)
    parser.add_argument("--nesterov", action="store_true")
    parser.add_argument("--weight-decay", type=float)
    parser.add_argument("--no-decay-norm-bias", action="store_true")
    parser.add_argument("--label-smoothing", type=float, default=0.0)
    parser.add_argument("--schedule", choices=["none", "onecycle", "cosine"])
    parser.add_argument("--warmup-epochs", type=int, default=0)
    return recipe(parser.parse_args())


def recipe(args):
    """ctensor train's defaults for what the command line left out."""
    resnet = args.model.startswith("resnet")
    if args.optimizer is None:
        args.optimizer = "sgd" if resnet else "adam"
    if args.lr is None:
        args.lr = 0.1 if resnet else 1e-3
    if args.weight_decay is None and resnet:
        args.weight_decay = 5e-4
    if args.schedule is None:
        args.schedule = "onecycle" if resnet else "none"
    return args


def optimizer_for(model, args):
    """The optimiser, with the rank <= 1 parameters in a group of no decay when asked."""
    decay, no_decay = [], []
    for p in model.parameters():
        (no_decay if args.no_decay_norm_bias and p.ndim <= 1 else decay).append(p)
    groups = [{"params": decay}] + ([{"params": no_decay, "weight_decay": 0.0}] if no_decay else [])
    options = {"lr": args.lr}
    if args.weight_decay is not None:
        options["weight_decay"] = args.weight_decay
    if args.optimizer == "sgd":
        return torch.optim.SGD(groups, momentum=args.momentum, nesterov=args.nesterov, **options)
    kind = torch.optim.AdamW if args.optimizer == "adamw" else torch.optim.Adam
    return kind(groups, **options)


def schedule_for(optimizer, args, steps_per_epoch):
    """The lr schedule, stepped every batch (None: none)."""
    total = steps_per_epoch * args.epochs
    lr_scheduler = torch.optim.lr_scheduler
    if args.schedule == "onecycle":
        return lr_scheduler.OneCycleLR(optimizer, max_lr=args.lr, total_steps=total)
    if args.schedule == "cosine":
        warmup = steps_per_epoch * args.warmup_epochs
        cosine = lr_scheduler.CosineAnnealingLR(optimizer, T_max=max(total - warmup, 1))
        if not warmup:
            return cosine
        linear = lr_scheduler.LinearLR(optimizer, start_factor=1.0 / warmup, total_iters=warmup)
        return lr_scheduler.SequentialLR(optimizer, [linear, cosine], milestones=[warmup])
    return None


def main():
    args = arguments()
    device = torch.device(args.device)
    torch.backends.cudnn.allow_tf32 = args.tf32
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    folder = args.data
    train_x = read_idx(f"{folder}/train-images-idx3-ubyte.gz")
    train_y = torch.from_numpy(read_idx(f"{folder}/train-labels-idx1-ubyte.gz").astype(np.int64))
    if args.limit:
        train_x, train_y = train_x[:args.limit], train_y[:args.limit]
    side = 32 if args.model.startswith("resnet") else 28
    test_x = images(read_idx(f"{folder}/t10k-images-idx3-ubyte.gz"), side).to(device)
    test_y = torch.from_numpy(read_idx(f"{folder}/t10k-labels-idx1-ubyte.gz").astype(np.int64))
    test_y = test_y.to(device)
    model = model_for(args.model).to(device)
    optimizer = optimizer_for(model, args)
    loss_fn = nn.CrossEntropyLoss(label_smoothing=args.label_smoothing)
    n, batch, gpu = len(train_y), args.batch, device.type == "cuda"
    schedule = schedule_for(optimizer, args, (n + batch - 1) // batch)
    amp = args.amp != "off"
    # PyTorch 1.13's CPU autocast refuses f16 even when disabled: bf16 stands in for "off".
    dtype = torch.float16 if args.amp == "f16" else torch.bfloat16
    scaler = torch.cuda.amp.GradScaler() if args.amp == "f16" and gpu else None
    for epoch in range(1, args.epochs + 1):
        model.train()
        start = time.perf_counter()
        # Data loading is part of the timed epoch, as in ctensor: shuffle, batch, normalise.
        order = torch.randperm(n)
        for first in range(0, n, batch):
            rows = order[first:first + batch]
            x = images(train_x[rows.numpy()], side)
            y = train_y[rows]
            if gpu:
                x = x.pin_memory().to(device, non_blocking=True)
                y = y.pin_memory().to(device, non_blocking=True)
            optimizer.zero_grad(set_to_none=True)
            with torch.autocast(device.type, dtype=dtype, enabled=amp):
                loss = loss_fn(model(x), y)
            if scaler:
                scaler.scale(loss).backward()
                scaler.step(optimizer)
                scaler.update()
            else:
                loss.backward()
                optimizer.step()
            if schedule:
                schedule.step()
        if gpu:
            torch.cuda.synchronize(device)
        seconds = time.perf_counter() - start
        model.eval()
        with torch.no_grad(), torch.autocast(device.type, dtype=dtype, enabled=amp):
            correct = sum(int((model(test_x[i:i + 1000]).argmax(1) == test_y[i:i + 1000]).sum())
                          for i in range(0, len(test_y), 1000))
        print(f"torch {args.model} epoch {epoch} seconds {seconds:.2f} "
              f"samples_per_s {n / seconds:.0f} test_accuracy {correct / len(test_y):.4f}",
              flush=True)


if __name__ == "__main__":
    main()
