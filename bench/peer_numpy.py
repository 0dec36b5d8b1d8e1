"""NumPy's side of the ops benchmark (bench/run.sh runs it beside bench/bench_ops).

Measures what bench_ops measures, the same way: after a warm-up, calls run in batches of at
least 1 ms; a figure is the median batch's time per call. Elementwise ops make a fresh
result each call (`a + b`), bandwidth counts bytes read and written (12 B per f32 element
for add and mul, 8 for exp, 4 for sum). Prints the same tab-separated lines as bench_ops:
benchmark, implementation ("numpy"), unit, value, note.

Usage: /usr/bin/python3 bench/peer_numpy.py [--quick]
"""
import sys
import time

import numpy as np

BATCH_S = 1e-3
MAX_BATCHES = 101


def time_calls(fn, budget_s, warmup_s):
    """Seconds per call of fn: the median over batches, after a warm-up."""
    calls, start = 0, time.perf_counter()
    while calls < 2 or time.perf_counter() - start < warmup_s:
        fn()
        calls += 1
    per_call = (time.perf_counter() - start) / calls
    batch = 1 if per_call >= BATCH_S else int(BATCH_S / per_call) + 1
    batches = min(MAX_BATCHES, max(5, int(budget_s / (per_call * batch))))
    times = []
    for _ in range(batches):
        t0 = time.perf_counter()
        for _ in range(batch):
            fn()
        times.append((time.perf_counter() - t0) / batch)
    times.sort()
    return times[len(times) // 2]


def report(bench, unit, value):
    print(f"{bench}\tnumpy\t{unit}\t{value:.6g}\t", flush=True)


def random_f32(shape):
    """Values uniform in [-1, 1), as bench_ops makes them (not bit-identical: not needed)."""
    return np.random.default_rng(1).uniform(-1.0, 1.0, shape).astype(np.float32)


def size_label(n):
    return f"10^{len(str(n)) - 1}"


def main():
    quick = sys.argv[1:] == ["--quick"]
    if sys.argv[1:] and not quick:
        sys.exit("usage: peer_numpy.py [--quick]")
    budget_s, warmup_s = (0.02, 0.005) if quick else (0.5, 0.05)

    def measure(bench, unit, work, fn):
        seconds = time_calls(fn, budget_s, warmup_s)
        report(bench, unit, work / seconds if work else seconds * 1e9)

    for n in (64, 128, 256) if quick else (512, 1024, 2048):
        a, b = random_f32((n, n)), random_f32((n, n))
        measure(f"matmul f32 {n}", "GFLOP/s", 2.0 * n**3 * 1e-9, lambda: a @ b)
    sizes = (1000, 100000) if quick else (1000, 100000, 10000000)
    for n in sizes:
        a, b = random_f32(n), random_f32(n)
        label = size_label(n)
        measure(f"add f32 {label}", "GB/s", 12.0 * n * 1e-9, lambda: a + b)
        measure(f"mul f32 {label}", "GB/s", 12.0 * n * 1e-9, lambda: a * b)
        measure(f"exp f32 {label}", "GB/s", 8.0 * n * 1e-9, lambda: np.exp(a))
    a = random_f32(sizes[-1])
    label = size_label(sizes[-1])
    measure(f"clone f32 {label}", "GB/s", 8.0 * a.size * 1e-9, a.copy)
    measure(f"sum f32 {label}", "GB/s", 4.0 * a.size * 1e-9, a.sum)
    a, b = random_f32(1), random_f32(1)
    measure("add 1 element", "ns", 0.0, lambda: a + b)


if __name__ == "__main__":
    main()
