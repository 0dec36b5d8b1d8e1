"""The pytest suite of the ctensor module: fixtures that run each test on every device
present (the CPU, and cuda:N, which is the fake GPU with the CPU's kernels when
CT_CUDA_PLUGIN names it), and the closing line that tools/run-tests.sh adds up."""

import os

import numpy as np
import pytest
from hypothesis import settings

import ctensor as ct

# No example database: the suite leaves no files behind (a .hypothesis folder).
settings.register_profile("ctensor", database=None)
settings.load_profile("ctensor")


def _devices():
    found = [ct.device("cpu")]
    if ct.cuda.is_available():
        found += [ct.device(f"cuda:{i}") for i in range(ct.cuda.device_count())]
    return found


DEVICES = _devices()
FAKE_GPU = "fake" in os.environ.get("CT_CUDA_PLUGIN", "")


@pytest.fixture(params=DEVICES, ids=str)
def device(request):
    return request.param


@pytest.fixture
def gpu():
    """cuda:0, or the test is skipped by name with the reason."""
    if not ct.cuda.is_available():
        pytest.skip("no CUDA device (the reason is on the line 'CUDA unavailable')")
    return ct.device("cuda:0")


# NumPy's dtype for each ctensor dtype that NumPy has (bfloat16 has none).
NUMPY_DTYPES = {
    ct.float32: np.float32,
    ct.float64: np.float64,
    ct.float16: np.float16,
    ct.int32: np.int32,
    ct.int64: np.int64,
    ct.uint8: np.uint8,
    ct.bool: np.bool_,
    ct.int8: np.int8,
    ct.int16: np.int16,
    ct.uint16: np.uint16,
    ct.uint32: np.uint32,
    ct.uint64: np.uint64,
}


def to_numpy(x):
    """A ctensor array's values as NumPy's, from any device (an explicit copy)."""
    if x.dtype == ct.bfloat16:
        x = x.astype(ct.float32)
    return x.cpu().numpy()


def device_array(a, device, requires_grad=False):
    """A NumPy array (complex too) as a ctensor array on `device`, optionally a leaf."""
    if np.iscomplexobj(a):
        x = ct.asarray(ct.from_dlpack(np.ascontiguousarray(a)), device=device, copy=True)
    else:
        x = ct.asarray(a, device=device)
    if requires_grad:
        x.requires_grad_()
    return x


def numeric_complex_grad(loss, a, eps=1e-6):
    """dL/dRe a + i dL/dIm a by central differences (L: a NumPy array to a float)."""
    grad = np.zeros(a.shape, dtype=a.dtype)
    for idx in np.ndindex(a.shape):
        for step in (1, 1j) if np.iscomplexobj(a) else (1,):
            plus, minus = a.copy(), a.copy()
            plus[idx] += eps * step
            minus[idx] -= eps * step
            grad[idx] += step * (loss(plus) - loss(minus)) / (2 * eps)
    return grad


def check_complex_grad(fn, a, device, atol):
    """fn: ctensor array -> real ctensor scalar, differentiated at `a` and compared with its
    central differences (PyTorch's convention for complex leaves); gives the gradient."""
    z = device_array(a, device, requires_grad=True)
    fn(z).backward()
    assert z.grad.dtype == z.dtype
    expected = numeric_complex_grad(lambda v: float(to_numpy(fn(device_array(v, device)))), a)
    np.testing.assert_allclose(to_numpy(z.grad), expected, rtol=1e-5, atol=atol)
    return to_numpy(z.grad)


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    stats = terminalreporter.stats
    passed = len(stats.get("passed", []))
    failed = len(stats.get("failed", [])) + len(stats.get("error", []))
    skipped = len(stats.get("skipped", []))
    for report in stats.get("failed", []) + stats.get("error", []):
        terminalreporter.write_line(f"FAIL {report.nodeid}")
    for report in stats.get("skipped", []):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else ""
        terminalreporter.write_line(f"SKIP {report.nodeid}: {reason}")
    if passed + failed + skipped == 0:
        # pytest's exit code 5: nothing was collected. Say so as a skip, by name.
        terminalreporter.write_line("SKIP python/tests: no tests were collected")
        skipped = 1
    if not ct.cuda.is_available():
        terminalreporter.write_line("CUDA unavailable: " + ct.cuda.unavailable_reason())
    terminalreporter.write_line(f"{passed} passed, {failed} failed, {skipped} skipped")


def pytest_sessionfinish(session, exitstatus):
    if exitstatus == 5:
        session.exitstatus = 0
