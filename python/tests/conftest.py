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
