"""A CNN trained on Fashion-MNIST with a DataLoader: PyTorch's loop, with ctensor.

    python python/examples/cnn_fashion_mnist.py [--epochs 3] [--limit N] [--amp]
        [--batch-size 128] [--workers 2] [--save model.safetensors]

The data is Debian's dataset-fashion-mnist. --limit trains and tests on the first N samples
(CI runs a small slice). --amp trains under ct.autocast (bf16 on the CPU, f16 with a
GradScaler on a GPU). Run under `mpirun -np 2` it trains data-parallel: each rank takes its
slice of every global batch and the gradients are averaged (ct.distributed).
"""

import argparse
import time

import ctensor as ct
import ctensor.nn as nn
import ctensor.nn.functional as F


def make_model():
    return nn.Sequential(
        nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(3136, 128), nn.ReLU(), nn.Linear(128, 10))


def sliced(dataset, limit):
    if not limit:
        return dataset
    images, labels = dataset.tensors
    return ct.data.TensorDataset(images[:limit], labels[:limit], transform=dataset.transform)


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
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--limit", type=int, default=0)
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--amp", action="store_true")
    p.add_argument("--save", default="")
    args = p.parse_args()

    ct.distributed.init()  # MPI under mpirun, else a world of one
    rank, world = ct.distributed.rank(), ct.distributed.world_size()
    device = ct.device("cuda:0" if ct.cuda.is_available() else "cpu")
    ct.manual_seed(0)
    model = make_model().to(device)
    if world > 1:
        model = nn.parallel.DistributedDataParallel(model)
    optimizer = ct.optim.Adam(model.parameters(), lr=1e-3)
    amp_dtype = ct.float16 if device.type == "cuda" else ct.bfloat16
    scaler = ct.amp.GradScaler(enabled=args.amp and amp_dtype == ct.float16)

    train = sliced(ct.data.fashion_mnist("train"), args.limit)
    test = sliced(ct.data.fashion_mnist("test"), args.limit)
    sampler = ct.data.DistributedSampler(train) if world > 1 else None
    loader = ct.data.DataLoader(train, batch_size=args.batch_size // world, shuffle=True,
                                sampler=sampler, num_workers=args.workers, device=device)
    test_loader = ct.data.DataLoader(test, batch_size=1000, num_workers=args.workers,
                                     device=device)

    for epoch in range(args.epochs):
        if sampler is not None:
            sampler.set_epoch(epoch)
        start, samples = time.perf_counter(), 0
        for x, y in loader:
            optimizer.zero_grad()
            with ct.autocast(device.type, dtype=amp_dtype, enabled=args.amp):
                loss = F.cross_entropy(model(x), y)
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
            samples += x.shape[0]
        rate = samples * world / (time.perf_counter() - start)
        accuracy = evaluate(model, test_loader)
        if rank == 0:
            print(f"epoch {epoch + 1}: loss {loss.item():.4f}, test accuracy {accuracy:.4f}, "
                  f"{rate:.0f} samples/s on {device}" + (f" x {world} ranks" if world > 1 else ""))
    if args.save and rank == 0:
        ct.save(model.state_dict(), args.save)
    ct.distributed.barrier()


if __name__ == "__main__":
    main()
