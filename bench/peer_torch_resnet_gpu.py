"""PyTorch's side of the ResNet GPU benchmark (bench/run_resnet_gpu.sh runs it beside
`ctensor train --model resnet18|resnet20 --dataset synthetic`).

PyTorch eager at its best: the CIFAR ResNet written out below (resnet18: 3x3 stem of 64
channels, no max pool, stages of 64/128/256/512 channels with two basic blocks each;
resnet20: 16/32/64 channels with three basic blocks each; both with 1x1 strided projection
shortcuts, batch norm, ReLU, global average pooling and a linear layer to 10 classes), in
channels-last memory format, cudnn.benchmark on, SGD with momentum 0.9 (lr 0.1) as
`ctensor train --optimizer sgd`, on random images and labels made on the device beforehand
(no data loading in the timing, as ctensor's synthetic dataset). Variants: f32 (cuDNN's TF32
off: f32 arithmetic as ctensor's f32), tf32 (PyTorch's default for convolutions), bf16
(torch.autocast). Each runs WARMUP steps, then STEPS timed steps between two
torch.cuda.synchronize calls.

Prints one line per variant:
    torch MODEL VARIANT batch B images_per_s X step_ms Y
Without PyTorch or a CUDA device (and no --device cpu) it says so on stderr and prints
nothing. --device cpu runs it on the CPU (a check of the script, not a benchmark).

Usage: python3 bench/peer_torch_resnet_gpu.py MODEL [--batch 512] [--steps 30] [--warmup 10]
           [--variants f32,tf32,bf16] [--device cuda:0]
"""
import argparse
import sys
import time


def arguments():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", choices=["resnet18", "resnet20"])
    parser.add_argument("--batch", type=int, default=512)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--variants", default="f32,tf32,bf16")
    parser.add_argument("--device", default="cuda:0")
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args()


def make_models(nn):
    class BasicBlock(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(cout)
            self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(cout)
            self.relu = nn.ReLU(inplace=True)
            self.shortcut = nn.Identity()
            if stride != 1 or cin != cout:
                self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                              nn.BatchNorm2d(cout))

        def forward(self, x):
            out = self.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            return self.relu(out + self.shortcut(x))

    class ResNet(nn.Module):
        def __init__(self, widths, blocks, classes=10):
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(3, widths[0], 3, 1, 1, bias=False),
                                      nn.BatchNorm2d(widths[0]), nn.ReLU(inplace=True))
            layers, cin = [], widths[0]
            for stage, (width, count) in enumerate(zip(widths, blocks)):
                for i in range(count):
                    layers.append(BasicBlock(cin, width, 2 if stage > 0 and i == 0 else 1))
                    cin = width
            self.layers = nn.Sequential(*layers)
            self.pool = nn.AdaptiveAvgPool2d(1)
            self.fc = nn.Linear(cin, classes)

        def forward(self, x):
            return self.fc(self.pool(self.layers(self.stem(x))).flatten(1))

    return {
        "resnet18": lambda: ResNet((64, 128, 256, 512), (2, 2, 2, 2)),
        "resnet20": lambda: ResNet((16, 32, 64), (3, 3, 3)),
    }


def run_variant(torch, model_fn, variant, args, device):
    torch.backends.cudnn.allow_tf32 = variant == "tf32"
    torch.backends.cuda.matmul.allow_tf32 = variant == "tf32"
    torch.manual_seed(args.seed)
    model = model_fn().to(device).to(memory_format=torch.channels_last)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()
    # A few batches made on the device beforehand, used in turn.
    batches = [(torch.randn(args.batch, 3, 32, 32, device=device)
                .contiguous(memory_format=torch.channels_last),
                torch.randint(0, 10, (args.batch,), device=device)) for _ in range(4)]
    amp = variant == "bf16"
    gpu = device.type == "cuda"

    def step(i):
        x, y = batches[i % len(batches)]
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=amp):
            loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()

    model.train()
    for i in range(args.warmup):
        step(i)
    if gpu:
        torch.cuda.synchronize(device)
    start = time.perf_counter()
    for i in range(args.steps):
        step(i)
    if gpu:
        torch.cuda.synchronize(device)
    seconds = time.perf_counter() - start
    rate = args.steps * args.batch / seconds
    print(f"torch {args.model} {variant} batch {args.batch} images_per_s {rate:.1f} "
          f"step_ms {1e3 * seconds / args.steps:.3f}", flush=True)


def main():
    args = arguments()
    try:
        import torch
    except ImportError:
        print("peer_torch_resnet_gpu: PyTorch is not installed; no peer figures",
              file=sys.stderr)
        return 0
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        print("peer_torch_resnet_gpu: PyTorch sees no CUDA device; no peer figures",
              file=sys.stderr)
        return 0
    torch.backends.cudnn.benchmark = True
    model_fn = make_models(torch.nn)[args.model]
    status = 0
    for variant in args.variants.split(","):
        if variant not in ("f32", "tf32", "bf16"):
            print(f"peer_torch_resnet_gpu: unknown variant {variant!r}", file=sys.stderr)
            return 2
        try:
            run_variant(torch, model_fn, variant, args, device)
        except RuntimeError as error:  # one variant's failure leaves the others' figures
            print(f"peer_torch_resnet_gpu: {args.model} {variant}: {error}", file=sys.stderr)
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
