"""ctensor.fft against numpy.fft on the CPU, in one run (issue 36's targets):

  - fft of 2^20 complex64 values: ctensor's time against NumPy's (target: ctensor's speed
    >= 0.8x NumPy's);
  - fft of 1000 arbitrary lengths (1 .. 20000, seeded, one in ten a prime), each length once,
    so each side makes its plans as a user's program does: the total time (target >= 0.5x);
  - accuracy: the relative RMS error of each side's complex64 result against a float64
    reference (the transform of the same complex64 input in complex128), at 2^20 and over the
    1000 lengths (target: ctensor's error <= 2x NumPy's). NumPy before 2.0 computes complex64
    transforms in float64 and returns complex128: its error is then that of float64 and the
    target cannot be judged against it; the table says so and gives, beside it, the error of
    the reference rounded to complex64 (the least any complex64 result can have).

Each timing is the median of ROUNDS rounds, the two libraries alternating. Prints a Markdown
table (bench/run.sh appends it to bench/results/latest.md). Measure on a quiet machine.

With --device DEV (e.g. cuda:0; bench_device.py gives the options), the same on that device
beside PyTorch's torch.fft on the same GPU instead: 2^20 complex64, and a set of arbitrary
lengths (one in ten a prime), each a batch of transforms along the last axis; each side timed to
its device's synchronisation after a warm-up (so with the plans a steady program has cached),
errors against NumPy's complex128 transform on the CPU, in bench_device's table.

Usage: PYTHONPATH=build/python OMP_WAIT_POLICY=passive .venv/bin/python3 bench/bench_fft.py
       [--quick]   (--quick: 2^16 and 100 lengths, one round: a check that it runs)
       [--device DEV [--peer-device DEV] [--no-header]]
"""
import statistics
import sys
import time

import numpy as np

import bench_device
import ctensor as ct

QUICK = "--quick" in sys.argv
ROUNDS = 1 if QUICK else 5
BIG = 1 << (16 if QUICK else 20)
LENGTHS = 100 if QUICK else 1000


def lengths(count, seed=36):
    """count lengths in 1 .. 20000, one in ten replaced by a prime."""
    rng = np.random.default_rng(seed)
    out = [int(v) for v in rng.integers(1, 20001, size=count)]
    primes = [p for p in range(2, 20001) if all(p % q for q in range(2, int(p ** 0.5) + 1))]
    for i in range(0, count, 10):
        out[i] = int(rng.choice(primes))
    return out


def signal(n, seed):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(np.complex64)


def rel_rms(result, reference):
    return float(np.sqrt(np.sum(np.abs(result.astype(np.complex128) - reference) ** 2)
                         / np.sum(np.abs(reference) ** 2)))


def timed(fn):
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def median_pair(ours, theirs):
    """Median seconds of ours and theirs over ROUNDS rounds, alternating (after a warm-up)."""
    ours()
    theirs()
    a, b = [], []
    for _ in range(ROUNDS):
        a.append(timed(ours))
        b.append(timed(theirs))
    return statistics.median(a), statistics.median(b)


def on_device(device, peer_device):
    """ctensor's fft on device beside torch.fft on peer_device: bench_device's rows."""
    sides = bench_device.Sides(device, peer_device)
    torch = sides.torch
    sides.header()
    a = signal(BIG, 0)
    x, t = sides.ours(a), sides.theirs(a)
    ours_s, theirs_s = sides.time_pair(lambda: ct.fft.fft(x), lambda: torch.fft.fft(t))
    reference = np.fft.fft(a.astype(np.complex128))
    sides.row(f"fft complex64 2^{BIG.bit_length() - 1}", ours_s, theirs_s,
              bench_device.rel_rms(sides.numpy_of_ours(ct.fft.fft(x)), reference),
              bench_device.rel_rms(sides.numpy_of_theirs(torch.fft.fft(t)), reference))

    count, batch = (6, 4) if QUICK else (24, 32)
    inputs = [signal(n * batch, i).reshape(batch, n) for i, n in enumerate(lengths(count))]
    ours_in = [sides.ours(v) for v in inputs]
    theirs_in = [sides.theirs(v) for v in inputs]

    def ct_all():
        for v in ours_in:
            ct.fft.fft(v)

    def torch_all():
        for v in theirs_in:
            torch.fft.fft(v)

    ours_s, theirs_s = sides.time_pair(ct_all, torch_all)
    ours_err = theirs_err = 0.0
    for v, xv, tv in zip(inputs, ours_in, theirs_in):
        reference = np.fft.fft(v.astype(np.complex128), axis=-1)
        ours_err = max(ours_err,
                       bench_device.rel_rms(sides.numpy_of_ours(ct.fft.fft(xv)), reference))
        theirs_err = max(theirs_err,
                         bench_device.rel_rms(sides.numpy_of_theirs(torch.fft.fft(tv)), reference))
    sides.row(f"fft complex64, {count} lengths in 1 .. 20000 (1 in 10 prime) x batch {batch}, "
              f"worst error", ours_s, theirs_s, ours_err, theirs_err)


def main():
    run = bench_device.device_run()
    if run:
        on_device(*run)
        return
    rows = []
    numpy_c64 = np.fft.fft(np.zeros(4, np.complex64)).dtype == np.complex64

    # 2^20 complex64.
    a = signal(BIG, 0)
    x = ct.from_dlpack(a)  # complex64 on the CPU, sharing a's memory
    t_ct, t_np = median_pair(lambda: ct.fft.fft(x), lambda: np.fft.fft(a))
    rows.append((f"fft complex64 2^{BIG.bit_length() - 1}", "ms", t_ct * 1e3, t_np * 1e3,
                 t_np / t_ct, ">= 0.8x NumPy", t_np / t_ct >= 0.8))
    reference = np.fft.fft(a.astype(np.complex128))
    ours = ct.fft.fft(x).numpy()
    theirs = np.fft.fft(a)
    floor = rel_rms(reference.astype(np.complex64), reference)
    accuracy = [(f"accuracy 2^{BIG.bit_length() - 1}", rel_rms(ours, reference),
                 rel_rms(theirs, reference), floor)]

    # 1000 arbitrary lengths, each once (plans made as a program makes them).
    ns = lengths(LENGTHS)
    inputs = [signal(n, i) for i, n in enumerate(ns)]
    tensors = [ct.from_dlpack(v) for v in inputs]

    def ct_all():
        for t in tensors:
            ct.fft.fft(t)

    def np_all():
        for v in inputs:
            np.fft.fft(v)

    t_ct, t_np = median_pair(ct_all, np_all)
    rows.append((f"fft complex64, {LENGTHS} lengths", "ms", t_ct * 1e3, t_np * 1e3, t_np / t_ct,
                 ">= 0.5x NumPy", t_np / t_ct >= 0.5))
    errs = [[], [], []]
    for v, t in zip(inputs, tensors):
        ref = np.fft.fft(v.astype(np.complex128))
        errs[0].append(rel_rms(ct.fft.fft(t).numpy(), ref))
        errs[1].append(rel_rms(np.fft.fft(v), ref))
        errs[2].append(rel_rms(ref.astype(np.complex64), ref))
    accuracy.append((f"accuracy, {LENGTHS} lengths (worst)", max(errs[0]), max(errs[1]),
                     max(errs[2])))

    print("| benchmark | unit | ctensor | NumPy | ctensor's speed / NumPy's | target |")
    print("|---|---|---|---|---|---|")
    for name, unit, ours_v, theirs_v, ratio, text, met in rows:
        print(f"| {name} | {unit} | {ours_v:.4g} | {theirs_v:.4g} | {ratio:.2f}x | "
              f"{text}: {'met' if met else 'NOT met'} |")
    print()
    print("| accuracy (relative RMS vs float64) | ctensor | NumPy | complex64 rounding | target |")
    print("|---|---|---|---|---|")
    for name, ours_e, theirs_e, floor_e in accuracy:
        if numpy_c64:
            verdict = "met" if ours_e <= 2 * theirs_e else "NOT met"
        else:
            verdict = (f"n/a: NumPy {np.__version__} computes complex64 in float64; "
                       f"{ours_e / floor_e:.1f}x the rounding")
        print(f"| {name} | {ours_e:.3g} | {theirs_e:.3g} | {floor_e:.3g} | "
              f"<= 2x NumPy's: {verdict} |")
    print()
    print(f"NumPy {np.__version__} (numpy.fft, pocketfft); ctensor {ct.__version__}; "
          f"{ROUNDS} rounds, medians.")


if __name__ == "__main__":
    main()
