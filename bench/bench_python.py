"""`a + b` from Python: ctensor against NumPy and PyTorch (CPU) in one run, interleaved.

For each size (1 element: the per-call overhead of each binding; 10^7 float32: bandwidth)
the three libraries are timed in turn, ROUNDS times, each time as the median of batches of
calls (a batch lasts >= 1 ms), and each figure printed is the median over rounds with the
range. Then ctensor's own small calls, interleaved in the same way: `x + 1.0` and `1.0 - x`
(a weak Python scalar, at 1 and 10^7 elements) against `a + b` of two arrays of the same size
(the scalar form must cost no more), `ct.sqrt(x)`, `x[0]`, and PyTorch's `x.size(0)` against
`x.shape[0]`.

Usage (OPENBLAS_CORETYPE unset, as for every benchmark):
    PYTHONPATH=build/python OMP_WAIT_POLICY=passive .venv/bin/python3 bench/bench_python.py
"""
import os
import platform
import statistics
import sys
import time

import numpy as np

import ctensor as ct

try:
    import torch
except ImportError:  # the table then has no PyTorch column
    torch = None

ROUNDS = int(os.environ.get("ROUNDS", "7"))


def per_call(fn, budget_s=0.2):
    """Seconds per call: the median batch after a warm-up."""
    for _ in range(3):
        fn()
    start, calls = time.perf_counter(), 0
    while time.perf_counter() - start < 0.02:
        fn()
        calls += 1
    batch = max(1, int(1e-3 / ((time.perf_counter() - start) / calls)))
    times = []
    deadline = time.perf_counter() + budget_s
    while len(times) < 5 or (time.perf_counter() < deadline and len(times) < 201):
        t0 = time.perf_counter()
        for _ in range(batch):
            fn()
        times.append((time.perf_counter() - t0) / batch)
    return statistics.median(times)


def cases(n):
    a32 = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    b32 = np.random.default_rng(1).standard_normal(n).astype(np.float32)
    x, y = ct.asarray(a32, copy=True), ct.asarray(b32, copy=True)
    np.testing.assert_allclose((x + y).numpy(), a32 + b32)
    out = {"ctensor": lambda: x + y, "numpy": lambda: a32 + b32}
    if torch is not None:
        p, q = torch.from_numpy(a32.copy()), torch.from_numpy(b32.copy())
        out["torch"] = lambda: p + q
    return out


def main():
    print(f"python {platform.python_version()}, numpy {np.__version__}, "
          f"torch {torch.__version__ if torch else 'absent'}, ctensor {ct.library_version()}, "
          f"threads: torch {torch.get_num_threads() if torch else '-'}, "
          f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}")
    for n in (1, 10**7):
        fns = cases(n)
        runs = {name: [] for name in fns}
        for _ in range(ROUNDS):
            for name, fn in fns.items():
                runs[name].append(per_call(fn, 0.2 if n == 1 else 1.0))
        base = statistics.median(runs["numpy"])
        for name, times in runs.items():
            med = statistics.median(times)
            rate = f"{n * 12 / med / 1e9:6.2f} GB/s" if n > 1 else ""
            print(f"a + b  n={n:<9d} {name:8s} {med * 1e9:12.0f} ns  "
                  f"({min(times) * 1e9:.0f}-{max(times) * 1e9:.0f})  "
                  f"{base / med:5.2f}x numpy's rate  {rate}")
    for n in (1, 10**7):
        a = ct.asarray(np.random.default_rng(0).standard_normal(n).astype(np.float32))
        b = ct.asarray(np.random.default_rng(1).standard_normal(n).astype(np.float32))
        fns = {"a + b": lambda: a + b, "x + 1.0": lambda: a + 1.0, "1.0 - x": lambda: 1.0 - a}
        if n == 1:
            fns.update({"ct.sqrt(x)": lambda: ct.sqrt(a), "x[0]": lambda: a[0],
                        "x.shape[0]": lambda: a.shape[0], "x.size(0)": lambda: a.size(0)})
        runs = {name: [] for name in fns}
        for _ in range(ROUNDS):
            for name, fn in fns.items():
                runs[name].append(per_call(fn, 0.2 if n == 1 else 1.0))
        base = statistics.median(runs["a + b"])
        for name, times in runs.items():
            med = statistics.median(times)
            print(f"ctensor {name:12s} n={n:<9d} {med * 1e9:12.0f} ns  "
                  f"({min(times) * 1e9:.0f}-{max(times) * 1e9:.0f})  "
                  f"{base / med:5.2f}x the rate of a + b")
    return 0


if __name__ == "__main__":
    sys.exit(main())
