"""The C library's accounting from Python: transfers and the guard, memory statistics,
limits and the out-of-memory error, the random stream; and reference counting: no leak
over 10^5 operations."""

import gc
import sys

import pytest

import ctensor as ct
from conftest import FAKE_GPU


def test_transfer_stats_count_explicit_copies(gpu):
    ct.transfer_stats_reset()
    x = ct.ones((256,), device="cpu")
    y = x.to(gpu)
    z = y.cpu()
    stats = ct.transfer_stats()
    assert stats["h2d"]["explicit"] == {"count": 1, "bytes": 1024}
    assert stats["d2h"]["explicit"]["count"] == 1 and z.tolist() == x.tolist()


def test_transfer_guard_setting_and_context_manager():
    assert ct.get_transfer_guard() == "allow"
    with ct.set_transfer_guard("disallow") as guard:
        assert ct.get_transfer_guard() == "disallow" and "disallow" in repr(guard)
        with ct.set_transfer_guard("log"):
            assert ct.get_transfer_guard() == "log"
        assert ct.get_transfer_guard() == "disallow"
    assert ct.get_transfer_guard() == "allow"
    ct.set_transfer_guard("log")
    ct.set_transfer_guard("allow")
    with pytest.raises(ValueError, match="disallow"):
        ct.set_transfer_guard("never")


def test_memory_stats_and_summary(device):
    before = ct.memory_stats(device)["allocated"]
    x = ct.empty((1 << 16,), device=device)
    during = ct.memory_stats(device)
    assert during["allocated"] >= before + (1 << 18) and during["alloc_count"] >= 1
    del x
    assert ct.memory_stats(device)["allocated"] == before
    assert "allocated" in ct.memory_summary(device).lower()
    ct.empty_cache(device)
    ct.reset_peak_memory(device)


def test_memory_limit_and_out_of_memory(device):
    ct.empty_cache(device)
    held = ct.memory_stats(device)["allocated"]
    ct.set_memory_limit(device, held + (1 << 20))
    try:
        with pytest.raises(ct.OutOfMemoryError, match="limit") as info:
            ct.empty((1 << 20,), device=device)
        assert isinstance(info.value, MemoryError)
        assert ct.ones((16,), device=device).tolist() == [1.0] * 16  # carries on
        assert ct.memory_stats(device)["oom_count"] >= 1
    finally:
        ct.set_memory_limit(device, 0)


def test_seeds_and_random(device):
    ct.manual_seed(7)
    a = ct.rand(3, 4, device=device)
    ct.manual_seed(7)
    b = ct.rand((3, 4), device=device)
    assert a.tolist() == b.tolist() and ct.initial_seed() == 7
    assert 0 <= ct.min(a).item() and ct.max(a).item() < 1
    n = ct.randn(1000, dtype=ct.float64, device=device)
    assert abs(ct.mean(n).item()) < 0.2 and a.device == device
    with pytest.raises(ct.DTypeError):
        ct.rand(2, dtype=ct.int32)


def test_no_leaks_over_1e5_operations(device):
    a = ct.ones((4,), device=device)
    b = ct.ones((4,), device=device)
    gc.collect()
    refs = (sys.getrefcount(a), sys.getrefcount(b), sys.getrefcount(ct.float32),
            sys.getrefcount(device))
    allocated = ct.memory_stats(device)["allocated"]
    for i in range(100_000):
        c = a + b
        c = c * 2.0 - a
        _ = c[1:]
        _ = c.dtype, c.device, c.shape
        if i % 10_000 == 0:
            _ = ct.sum(c).item()
            _ = ct.from_dlpack(c)
            _ = memoryview(c) if device.type == "cpu" else c.cpu()
    del c, _
    gc.collect()
    assert (sys.getrefcount(a), sys.getrefcount(b), sys.getrefcount(ct.float32),
            sys.getrefcount(device)) == refs
    assert ct.memory_stats(device)["allocated"] == allocated


def test_errors_do_not_leak(device):
    a = ct.ones((2, 3), device=device)
    allocated = ct.memory_stats(device)["allocated"]
    refs = sys.getrefcount(a)
    for _ in range(1000):
        with pytest.raises(ct.ShapeError):
            a + ct.ones((5,), device=device)
        with pytest.raises(IndexError):
            a[5]
    gc.collect()
    assert sys.getrefcount(a) == refs and ct.memory_stats(device)["allocated"] == allocated


def test_gil_is_released_around_kernels(device):
    """The GIL is released while the host waits for kernels. On the CPU they run inside the
    calls; on a GPU (a real one, or the fake one, which is asynchronous as well) the calls only
    queue them and return, and the host waits in ct.synchronize. The work doubles until that
    wait lasts half a second, however fast the device."""
    import threading
    import time

    real_gpu = device.type == "cuda" and not FAKE_GPU
    x = ct.ones((1 << (24 if real_gpu else 22),), dtype=ct.float64, device=device)
    ct.synchronize(device)
    ticks = []
    stop = threading.Event()

    def ticker():
        while not stop.is_set():
            ticks.append(time.perf_counter())
            time.sleep(0.0005)

    t = threading.Thread(target=ticker)
    t.start()
    time.sleep(0.01)
    try:
        pairs = 20
        while True:
            start = time.perf_counter()
            for _ in range(pairs):
                y = ct.exp(ct.sin(x))
            if device.type != "cpu":
                start = time.perf_counter()  # the calls queued the work: the wait is here
                ct.synchronize(device)
            end = time.perf_counter()
            if end - start >= 0.5 or pairs >= 1 << 16:
                break
            pairs *= 2
    finally:
        stop.set()
        t.join()
    during = [s for s in ticks if start < s < end]
    waits = 2 * pairs if device.type == "cpu" else 1
    # Holding the GIL through each wait, the ticker could tick at most once between two of
    # them; released, it ticks all along (every ~0.5 ms of at least 0.5 s).
    assert len(during) > max(80, 2 * waits) and y.shape == x.shape
