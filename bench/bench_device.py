"""What bench_fft.py and bench_linalg.py share to run on a device beside PyTorch (issue 36's
"on a GPU when one can be used, fft and solve against CuPy or PyTorch"): the options, the
timing to each side's synchronisation, the accuracy against a float64 CPU reference and one
table of ratios (tools/gpu-check.sh --linalg-fft-only runs both into it).

Options of either script:
  --device DEV       ctensor's device (e.g. cuda:0); without it (or cpu) the script runs its
                     CPU comparison against NumPy;
  --peer-device DEV  PyTorch's (default: DEV); a dry run on the fake GPU, where this machine's
                     PyTorch has no CUDA, gives cpu, and the table says the comparison is not
                     one of two GPUs;
  --no-header        rows only (the second script of one table);
  --quick            small sizes, one round (a check that it runs).
CuPy is not a peer: its wheel (over 64 MiB) cannot travel to the GPU machine, which has no
network; PyTorch is in that machine's image.
"""
import statistics
import sys
import time

import numpy as np


def option(name, default=None):
    """The value after name in sys.argv, else default."""
    args = sys.argv[1:]
    return args[args.index(name) + 1] if name in args[:-1] else default


def device_run():
    """(ctensor's device, PyTorch's) when --device names a device other than the CPU, else
    None."""
    device = option("--device")
    if device is None or device == "cpu":
        return None
    return device, option("--peer-device", device)


class Sides:
    """ctensor on its device and PyTorch on its own: conversions and synchronisations."""

    def __init__(self, device, peer_device):
        import ctensor as ct
        import torch

        self.ct, self.torch = ct, torch
        self.device, self.peer_device = device, peer_device
        self.peer_gpu = peer_device.startswith("cuda")
        if self.peer_gpu and not torch.cuda.is_available():
            raise SystemExit(f"PyTorch {torch.__version__} has no CUDA device for {peer_device}")
        self.rounds = 1 if "--quick" in sys.argv else 5

    def ours(self, a):
        """NumPy array a on ctensor's device (a copy)."""
        ct = self.ct
        return ct.asarray(ct.from_dlpack(np.ascontiguousarray(a)), device=self.device, copy=True)

    def theirs(self, a):
        return self.torch.from_numpy(np.ascontiguousarray(a)).to(self.peer_device)

    def sync_ours(self):
        self.ct.synchronize(self.ct.device(self.device))

    def sync_theirs(self):
        if self.peer_gpu:
            self.torch.cuda.synchronize(self.peer_device)

    @staticmethod
    def numpy_of_ours(x):
        return x.cpu().numpy()

    @staticmethod
    def numpy_of_theirs(t):
        return t.cpu().numpy()

    def per_call(self, fn, sync):
        """Seconds per call to sync: the median of 3 batches of >= 20 ms, after a warm-up
        (which makes the plans and workspaces a steady program has)."""
        fn()
        sync()
        start = time.perf_counter()
        fn()
        sync()
        calls = max(1, int(20e-3 / max(time.perf_counter() - start, 1e-9)))
        times = []
        for _ in range(3):
            start = time.perf_counter()
            for _ in range(calls):
                fn()
            sync()
            times.append((time.perf_counter() - start) / calls)
        return statistics.median(times)

    def time_pair(self, ours, theirs):
        """Median seconds per call of each side over the rounds, the two alternating."""
        a, b = [], []
        for _ in range(self.rounds):
            a.append(self.per_call(ours, self.sync_ours))
            b.append(self.per_call(theirs, self.sync_theirs))
        return statistics.median(a), statistics.median(b)

    def header(self):
        """The table's title and header, unless --no-header."""
        if "--no-header" in sys.argv:
            return
        ct, torch = self.ct, self.torch
        where = (torch.cuda.get_device_name(self.peer_device) if self.peer_gpu
                 else f"{self.peer_device}: NOT a GPU comparison (a dry run)")
        print(f"ctensor {ct.__version__} on {self.device} beside PyTorch {torch.__version__} "
              f"on {where}; {self.rounds} round(s), medians, each side timed to its "
              f"device's synchronisation")
        print()
        print("| benchmark | ctensor ms | PyTorch ms | ctensor's speed / PyTorch's | "
              "ctensor error | PyTorch error |")
        print("|---|---|---|---|---|---|")

    @staticmethod
    def row(name, ours_s, theirs_s, ours_err, theirs_err):
        """One row; the errors are relative RMS against the float64 CPU reference."""
        print(f"| {name} | {ours_s * 1e3:.4g} | {theirs_s * 1e3:.4g} | "
              f"{theirs_s / ours_s:.2f}x | {ours_err:.3g} | {theirs_err:.3g} |")


def rel_rms(result, reference):
    """The relative RMS error of result against the float64 (complex128) reference."""
    diff = np.asarray(result).astype(np.complex128) - reference
    return float(np.sqrt(np.sum(np.abs(diff) ** 2) / np.sum(np.abs(reference) ** 2)))
