"""Devices from Python: parsing, values, the placement context manager, discovery, CUDA's
reasons, logical devices, synchronisation."""

import os
import subprocess
import sys

import pytest

import ctensor as ct


def test_device_spellings():
    assert ct.device("cpu") == ct.device("/cpu:0") == ct.device("CPU:0")
    gpu = ct.device("/device:GPU:1")
    assert gpu == ct.device("cuda:1") == ct.device("/gpu:1")
    assert gpu.type == "cuda" and gpu.index == 1 and str(gpu) == "cuda:1"
    assert repr(gpu) == "ctensor.device('cuda:1')"
    assert len({ct.device("cpu"), ct.device("cpu:0"), gpu}) == 2
    assert ct.device("cpu") != gpu and ct.device(gpu) is gpu
    auto = ct.device("auto")
    assert auto.type == ("cuda" if ct.cuda.is_available() else "cpu")
    with pytest.raises(ct.InvalidArgumentError, match="cpu"):
        ct.device("tpu")
    with pytest.raises(TypeError):
        ct.device(3)


def test_context_manager_sets_default_placement(device):
    before = ct.default_device()
    with device as d:
        assert d is device and ct.default_device() == device
        assert ct.zeros((2,)).device == device and ct.asarray([1]).device == device
        with ct.device("cpu"):
            assert ct.ones((1,)).device == ct.device("cpu")
        assert ct.empty((1,)).device == device
    assert ct.default_device() == before


def test_unavailable_device_says_why():
    if ct.cuda.is_available():
        missing = ct.device(f"cuda:{ct.cuda.device_count()}")
    else:
        missing = ct.device("cuda:0")
        assert ct.cuda.unavailable_reason() != ""
        assert ct.cuda.device_count() == 0
    with pytest.raises(ct.DeviceUnavailableError) as info:
        ct.zeros((2,), device=missing)
    assert isinstance(info.value, RuntimeError) and str(info.value)
    with pytest.raises(ct.DeviceUnavailableError):
        with missing:
            pass


def test_devices_lists_every_device():
    found = ct.devices()
    assert found[0] == ct.device("cpu")
    assert sum(d.type == "cuda" for d in found) == ct.cuda.device_count()
    info = ct.__array_namespace_info__()
    assert info.devices() == found and info.default_device() == ct.default_device()
    props = ct.get_device_properties("cpu")
    assert props["multiprocessors"] >= 1 and props["compute_capability"] == (0, 0)


def test_synchronize(device):
    x = ct.ones((1000,), device=device) * 2
    ct.synchronize(device)
    ct.synchronize()
    if device.type == "cuda":
        ct.cuda.synchronize(device.index)
    assert ct.sum(x).item() == 2000


def test_logical_cpu_devices_in_a_fresh_process():
    # Logical devices are configured before a device is first used: a new interpreter.
    code = (
        "import ctensor as ct\n"
        "ct.configure_logical_devices('cpu', 2, memory_limits=[1 << 20, 0])\n"
        "assert [str(d) for d in ct.devices()][:2] == ['cpu:0', 'cpu:1']\n"
        "x = ct.ones((4,), device='cpu:1')\n"
        "ct.transfer_stats_reset()\n"
        "y = x.to('cpu:0')\n"
        "assert ct.transfer_stats()['d2d']['explicit']['count'] == 1\n"
        "assert ct.memory_stats('cpu:0')['limit'] == 1 << 20\n"
        "try:\n"
        "    ct.zeros((1 << 20,), device='cpu:0')\n"
        "except ct.OutOfMemoryError as e:\n"
        "    assert isinstance(e, MemoryError)\n"
        "else:\n"
        "    raise SystemExit('no OutOfMemoryError')\n"
        "try:\n"
        "    ct.configure_logical_devices('cpu', 3)\n"
        "except ct.StateError:\n"
        "    pass\n"
        "else:\n"
        "    raise SystemExit('no StateError for a device in use')\n"
        "print('ok')\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            env=os.environ, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"
