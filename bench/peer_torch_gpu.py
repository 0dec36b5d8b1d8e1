"""PyTorch's side of the GPU benchmark (bench/run_gpu.sh runs it beside bench/bench_gpu).

Measures what bench_gpu measures, the same way, on the same GPU: matmul f32, TF32
(torch.set_float32_matmul_precision("high")) and bf16 at n = 4096 and 8192 in TFLOP/s; add
and exp on 2^28 f32 elements and a device-to-device copy (clone) in GB/s, counting bytes read
and written; host-to-device and device-to-host copies from 4 KiB to 1 GiB, from and to
pageable memory and from and to pinned memory, in GB/s and microseconds per copy. Each timed
run is synchronize, the calls, synchronize; a figure is the median of 5 runs after a warm-up.
Prints the tab-separated lines of bench_gpu: benchmark, implementation ("torch"), unit,
value (or "n/a"), note. Without PyTorch or a GPU it says so on stderr and prints nothing.

Usage: python3 bench/peer_torch_gpu.py [--quick] [--device cuda:N]
"""
import statistics
import sys
import time

RUNS = 5


def main():
    args = sys.argv[1:]
    quick = "--quick" in args
    name = args[args.index("--device") + 1] if "--device" in args else "cuda:0"
    try:
        import torch
    except ImportError:
        print("peer_torch_gpu: PyTorch is not installed; no peer figures", file=sys.stderr)
        return 0
    if not torch.cuda.is_available():
        print("peer_torch_gpu: PyTorch sees no CUDA device; no peer figures", file=sys.stderr)
        return 0
    bench = Bench(torch, torch.device(name))
    for n in ((512, 1024) if quick else (4096, 8192)):
        bench.matmul("f32", torch.float32, "highest", n)
        bench.matmul("tf32", torch.float32, "high", n)
        bench.matmul("bf16", torch.bfloat16, "highest", n)
    bench.elementwise(1 << 20 if quick else 1 << 28, "2^20" if quick else "2^28", quick)
    size = 4096
    while size <= ((4 << 20) if quick else (1 << 30)):
        bench.transfer(size)
        size *= 4
    return 0


def size_text(size):
    if size >= 1 << 30:
        return f"{size >> 30} GiB"
    if size >= 1 << 20:
        return f"{size >> 20} MiB"
    return f"{size >> 10} KiB"


class Bench:
    def __init__(self, torch, device):
        self.torch, self.device = torch, device

    def time_calls(self, fn, calls):
        """Seconds per call: the median of RUNS runs between synchronizations."""
        sync = self.torch.cuda.synchronize
        times = []
        for run in range(RUNS + 1):  # the first run warms up
            sync(self.device)
            start = time.perf_counter()
            for _ in range(calls):
                fn()
            sync(self.device)
            if run:
                times.append((time.perf_counter() - start) / calls)
        return statistics.median(times)

    @staticmethod
    def report(bench, unit, value, note=""):
        print(f"{bench}\ttorch\t{unit}\t{value:.6g}\t{note}", flush=True)

    def matmul(self, label, dtype, precision, n):
        torch = self.torch
        torch.set_float32_matmul_precision(precision)
        a = torch.randn(n, n, device=self.device).to(dtype)
        b = torch.randn(n, n, device=self.device).to(dtype)
        flops = 2.0 * n * n * n
        rate = 5e13 if dtype == torch.float32 and precision == "highest" else 4e14
        seconds = self.time_calls(lambda: a @ b, int(0.2 / (flops / rate)) + 1)
        self.report(f"matmul {label} {n}", "TFLOP/s", flops / seconds / 1e12)
        torch.set_float32_matmul_precision("highest")

    def elementwise(self, numel, numel_text, quick):
        torch = self.torch
        a = torch.randn(numel, device=self.device)
        b = torch.randn(numel, device=self.device)
        ops = (("add", lambda: a + b, 12), ("exp", lambda: torch.exp(a), 8),
               ("clone (device-to-device copy)", lambda: a.clone(), 8))
        for name, fn, bytes_per_element in ops:
            seconds = self.time_calls(fn, 2 if quick else 10)
            self.report(f"{name} f32 {numel_text}", "GB/s",
                        bytes_per_element * numel / seconds / 1e9, "bytes read and written")

    def transfer(self, size):
        torch = self.torch
        calls = int(0.05 / (1e-5 + size / 2e10)) + 3
        pageable = torch.ones(size, dtype=torch.uint8)
        pinned = torch.ones(size, dtype=torch.uint8).pin_memory()
        on_device = pageable.to(self.device)
        back_pageable = torch.empty(size, dtype=torch.uint8)
        back_pinned = torch.empty(size, dtype=torch.uint8).pin_memory()
        cases = (
            ("h2d pageable", lambda: pageable.to(self.device)),
            ("h2d pinned", lambda: pinned.to(self.device, non_blocking=True)),
            ("d2h pageable", lambda: back_pageable.copy_(on_device)),
            ("d2h pinned", lambda: back_pinned.copy_(on_device, non_blocking=True)),
        )
        for name, fn in cases:
            seconds = self.time_calls(fn, calls)
            self.report(f"{name} {size_text(size)}", "GB/s", size / seconds / 1e9,
                        f"{seconds * 1e6:.1f} us per copy")


if __name__ == "__main__":
    sys.exit(main())
