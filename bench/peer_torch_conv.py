"""PyTorch's side of bench_conv: the convolution layers of the small MNIST CNN, forward and
backward, on the CPU with 2 threads (torch.set_num_threads(2)).

The work is what bench_conv times: x (128, 1, 28, 28) f32 -> conv 1->32 3x3 pad 1 -> max
pool 2 -> conv 32->64 3x3 pad 1 -> max pool 2, then backward from a gradient of ones (weights
and biases require grad, the input does not); gradients are dropped before each step
(zero_grad(set_to_none=True)). Prints one line: "torch <median ms per step> <runs>".

Usage: /usr/bin/python3 bench/peer_torch_conv.py [--runs N]
"""
import statistics
import sys
import time


def main():
    args = sys.argv[1:]
    runs = int(args[args.index("--runs") + 1]) if "--runs" in args else 20
    import torch
    import torch.nn.functional as F

    torch.set_num_threads(2)
    torch.manual_seed(0)
    x = torch.randn(128, 1, 28, 28)
    w1 = torch.randn(32, 1, 3, 3, requires_grad=True)
    b1 = torch.randn(32, requires_grad=True)
    w2 = torch.randn(64, 32, 3, 3, requires_grad=True)
    b2 = torch.randn(64, requires_grad=True)
    params = [w1, b1, w2, b2]

    def step():
        for p in params:
            p.grad = None
        p1 = F.max_pool2d(F.conv2d(x, w1, b1, padding=1), 2)
        p2 = F.max_pool2d(F.conv2d(p1, w2, b2, padding=1), 2)
        p2.backward(torch.ones_like(p2))

    for _ in range(3):
        step()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    print("torch %.3f %d" % (statistics.median(times) * 1e3, runs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
