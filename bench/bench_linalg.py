"""ct.linalg against numpy.linalg: solve, svd, eigh and cholesky of a 512 x 512 float64
matrix, in one run, interleaved (`make bench` runs it after bench/run.sh).

Each function is timed for both libraries in turn, ROUNDS times, each time as the median of
batches of calls (a batch lasts >= 20 ms); a figure printed is the median over rounds, with
the ratio ctensor's speed / NumPy's and the issue's target (>= 0.9x NumPy). Both run on the
same threads: BENCH_THREADS (default 2) sets OMP_NUM_THREADS and OPENBLAS_NUM_THREADS before
either library loads, and NumPy's OpenBLAS is set to that count again before each of its
batches (ctensor sets the process's OpenBLAS, which NumPy may share, to one thread outside its
own calls). Measure on a quiet machine.

With --device DEV (e.g. cuda:0; bench_device.py gives the options), solve on that device
beside PyTorch's torch.linalg.solve on the same GPU instead: 512, 2048 and 4096 square float32
and float64 systems with one right-hand side, and a batch of small ones; each side timed to its
device's synchronisation, errors against NumPy's float64 solution on the CPU, in
bench_device's table.

Usage: PYTHONPATH=build/python OMP_WAIT_POLICY=passive .venv/bin/python3 bench/bench_linalg.py
       [--device DEV [--peer-device DEV] [--no-header] [--quick]]
"""
import ctypes
import os
import platform
import statistics
import sys
import time

threads = os.environ.get("BENCH_THREADS", "2")
os.environ.setdefault("OMP_NUM_THREADS", threads)
os.environ.setdefault("OPENBLAS_NUM_THREADS", threads)

import numpy as np  # noqa: E402  (after the thread counts are set)

import bench_device  # noqa: E402
import ctensor as ct  # noqa: E402

ROUNDS = int(os.environ.get("ROUNDS", "5"))
N = int(os.environ.get("N", "512"))
BATCH_S = 20e-3
TARGET = 0.9


def openblas_thread_setters():
    """openblas_set_num_threads of every OpenBLAS the process has loaded."""
    with open("/proc/self/maps") as maps:
        paths = {line.split()[-1] for line in maps if "openblas" in line.split()[-1]}
    setters = []
    for path in sorted(paths):
        setter = getattr(ctypes.CDLL(path), "openblas_set_num_threads", None)
        if setter is not None:
            setters.append(setter)
    return setters


def with_threads(fn, setters, count):
    """fn, with OpenBLAS set to count threads before it runs."""
    def run():
        for setter in setters:
            setter(count)
        return fn()
    return run


def per_call(fn):
    """Seconds per call: the median of 5 batches of >= BATCH_S each, after one warm-up."""
    start = time.perf_counter()
    fn()
    once = time.perf_counter() - start
    calls = max(1, int(BATCH_S / max(once, 1e-9)))
    times = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        times.append((time.perf_counter() - t0) / calls)
    return statistics.median(times)


def cases():
    rng = np.random.default_rng(1)
    a = rng.uniform(-1, 1, (N, N)) + N * np.eye(N)
    spd = a @ a.T
    sym = (a + a.T) / 2
    b = rng.uniform(-1, 1, (N, 1))
    ca, cspd, csym, cb = (ct.asarray(x, device="cpu") for x in (a, spd, sym, b))
    return [
        ("solve", lambda: np.linalg.solve(a, b), lambda: ct.linalg.solve(ca, cb)),
        ("svd", lambda: np.linalg.svd(a), lambda: ct.linalg.svd(ca)),
        ("eigh", lambda: np.linalg.eigh(sym), lambda: ct.linalg.eigh(csym)),
        ("cholesky", lambda: np.linalg.cholesky(spd), lambda: ct.linalg.cholesky(cspd)),
    ]


def on_device(device, peer_device):
    """ctensor's solve on device beside torch.linalg.solve on peer_device: bench_device's
    rows (a: uniform in [-1, 1) plus n on the diagonal, well-conditioned)."""
    sides = bench_device.Sides(device, peer_device)
    torch = sides.torch
    sides.header()
    # (batch shape, n)
    if "--quick" in sys.argv:
        systems = [((), 64), ((), 128), ((), 256), ((16,), 8)]
    else:
        systems = [((), 512), ((), 2048), ((), 4096), ((1024,), 8)]
    rng = np.random.default_rng(2)
    for batch, n in systems:
        a64 = rng.uniform(-1, 1, (*batch, n, n)) + n * np.eye(n)
        b64 = rng.uniform(-1, 1, (*batch, n, 1))
        reference = np.linalg.solve(a64, b64)
        for dtype in (np.float32, np.float64):
            a, b = a64.astype(dtype), b64.astype(dtype)
            ca, cb, ta, tb = sides.ours(a), sides.ours(b), sides.theirs(a), sides.theirs(b)
            ours_s, theirs_s = sides.time_pair(lambda: ct.linalg.solve(ca, cb),
                                               lambda: torch.linalg.solve(ta, tb))
            shape = " x ".join(str(d) for d in (*batch, n, n))
            sides.row(f"solve {np.dtype(dtype).name} {shape}", ours_s, theirs_s,
                      bench_device.rel_rms(sides.numpy_of_ours(ct.linalg.solve(ca, cb)),
                                           reference),
                      bench_device.rel_rms(sides.numpy_of_theirs(torch.linalg.solve(ta, tb)),
                                           reference))


def main():
    run = bench_device.device_run()
    if run:
        on_device(*run)
        return 0
    print(f"ct.linalg vs numpy.linalg, {N} x {N} float64, {threads} threads, "
          f"{ROUNDS} rounds; {platform.processor() or platform.machine()}")
    print("| function | ctensor ms | NumPy ms | ctensor / NumPy speed | target |")
    print("|---|---|---|---|---|")
    failed = False
    setters = openblas_thread_setters()
    for name, numpy_fn, ct_fn in cases():
        ours, theirs = [], []
        numpy_fn = with_threads(numpy_fn, setters, int(threads))
        for _ in range(ROUNDS):
            theirs.append(per_call(numpy_fn))
            ours.append(per_call(ct_fn))
        ours_ms, theirs_ms = statistics.median(ours) * 1e3, statistics.median(theirs) * 1e3
        ratio = theirs_ms / ours_ms
        met = ratio >= TARGET
        failed |= not met
        print(f"| {name} | {ours_ms:.3f} | {theirs_ms:.3f} | {ratio:.2f}x | "
              f">= {TARGET}x: {'met' if met else 'NOT met'} |")
    print(f"NumPy {np.__version__}; ctensor {ct.__version__}; Python {sys.version.split()[0]}")
    return 0 if not failed or os.environ.get("BENCH_STRICT") != "1" else 1


if __name__ == "__main__":
    sys.exit(main())
