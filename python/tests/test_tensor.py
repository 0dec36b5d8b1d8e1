"""ctensor.Tensor: attributes, moving and converting, item/tolist/numpy, repr, the buffer
protocol and DLPack, on every device present."""

import copy
import pickle

import numpy as np
import pytest

import ctensor as ct
from conftest import FAKE_GPU, NUMPY_DTYPES, to_numpy


def test_attributes(device):
    x = ct.zeros((2, 3, 4), dtype=ct.int32, device=device)
    assert x.shape == (2, 3, 4) and x.ndim == 3 and x.size == 24
    assert x.dtype == ct.int32 and x.device == device
    assert x.mT.shape == (2, 4, 3)
    m = ct.asarray([[1.0, 2.0, 3.0]], device=device)
    assert m.T.shape == (3, 1) and m.T.tolist() == [[1.0], [2.0], [3.0]]
    with pytest.raises(ct.ShapeError):
        x.T
    assert len(x) == 2


def test_size_is_an_int_callable_as_pytorch_size(device):
    x = ct.zeros((2, 3, 4), device=device)
    s = x.size
    assert s == 24 and isinstance(s, int) and s + 1 == 25 and hash(s) == hash(24)
    assert repr(s) == "24" and int(s) == 24
    assert s() == (2, 3, 4) and x.size(0) == 2 and x.size(-1) == 4 and x.size(dim=1) == 3
    assert x.size(-3) == 2
    for bad in (3, 5, -4):
        with pytest.raises(IndexError, match="size: dimension"):
            x.size(bad)
    with pytest.raises(TypeError):
        x.size("a")
    # it keeps its array: the shape is still there after the array's last name is gone
    del x
    assert s() == (2, 3, 4) and s(1) == 3
    # a copy or a pickle is a plain int; Python cannot make one of its own
    assert type(copy.copy(s)) is int and pickle.loads(pickle.dumps(s)) == 24
    with pytest.raises(TypeError):
        type(s)(5)
    z = ct.asarray(3.0, device=device)
    assert z.size == 1 and z.size() == ()
    with pytest.raises(IndexError):
        z.size(0)
    assert ct.zeros((0, 5), device=device).size == 0


@pytest.mark.parametrize("dtype", list(NUMPY_DTYPES), ids=lambda d: d.name)
def test_roundtrip_every_dtype(device, dtype):
    values = np.array([[0, 1, 2], [3, 4, 5]]).astype(NUMPY_DTYPES[dtype])
    x = ct.asarray(values, device=device)
    assert x.dtype == dtype and x.device == device
    np.testing.assert_array_equal(to_numpy(x), values)
    assert x.tolist() == values.tolist()


def test_bfloat16(device):
    x = ct.asarray([1.0, 2.5, -3.0], dtype=ct.bfloat16, device=device)
    assert x.dtype == ct.bfloat16
    assert x.tolist() == [1.0, 2.5, -3.0]
    if device.type == "cpu":
        with pytest.raises(TypeError, match="bfloat16"):
            x.numpy()


def test_to_returns_itself_when_nothing_changes(device):
    x = ct.ones((3,), device=device)
    assert x.to(device) is x and x.to(ct.float32) is x and x.to_device(device) is x
    y = x.to(ct.float64)
    assert y.dtype == ct.float64 and y.device == device
    z = x.cpu()
    assert z.device == ct.device("cpu") and (z is x) == (device.type == "cpu")
    assert x.astype(ct.int32).dtype == ct.int32
    assert x.astype(ct.float32, copy=False) is x
    assert x.astype(ct.float32) is not x


def test_cuda_method(gpu):
    x = ct.arange(4).cuda()
    assert x.device == gpu and x.cpu().tolist() == [0, 1, 2, 3]


def test_item_and_python_numbers(device):
    assert ct.asarray(2.5, device=device).item() == 2.5
    big = 2**62 + 1
    assert ct.asarray(big, device=device).item() == big
    assert ct.asarray(True, device=device).item() is True
    x = ct.asarray([7], device=device)
    assert int(x) == 7 and float(x) == 7.0 and bool(x)
    assert [10, 20, 30][ct.asarray(1, device=device)] == 20
    with pytest.raises(ct.ShapeError):
        ct.zeros((2,), device=device).item()
    with pytest.raises(ValueError):
        bool(ct.zeros((2,), device=device))


def test_numpy_on_gpu_says_call_cpu(gpu):
    x = ct.ones((2,), device=gpu)
    with pytest.raises(TypeError, match=r"\.cpu\(\)"):
        x.numpy()
    with pytest.raises(TypeError, match=r"\.cpu\(\)"):
        np.asarray(x)
    with pytest.raises(BufferError, match=r"\.cpu\(\)"):
        memoryview(x)
    np.testing.assert_array_equal(x.cpu().numpy(), [1.0, 1.0])


def test_numpy_shares_memory_on_cpu():
    x = ct.zeros((2, 3), device="cpu")
    view = x.numpy()
    view[1, 2] = 5
    assert x.tolist() == [[0, 0, 0], [0, 0, 5]]
    y = ct.permute_dims(x, (1, 0))
    np.testing.assert_array_equal(np.asarray(y), view.T)
    assert np.asarray(x, dtype=np.float64).dtype == np.float64


def test_buffer_protocol():
    x = ct.arange(6, dtype=ct.int32, device="cpu")
    m = memoryview(x)
    assert m.format == "i" and m.shape == (6,) and m.itemsize == 4 and not m.readonly
    assert m.tolist() == list(range(6))
    s = x[::2]
    assert memoryview(s).strides == (8,)
    assert bytes(memoryview(ct.asarray([1, 2], dtype=ct.uint8, device="cpu"))) == b"\x01\x02"


def test_asarray_from_buffer_shares_and_copies():
    a = np.arange(4, dtype=np.float32)
    shared = ct.asarray(a, device="cpu")
    a[0] = 9
    assert shared[0].item() == 9
    copied = ct.asarray(a, copy=True, device="cpu")
    a[1] = 7
    assert copied[1].item() == 1
    ro = np.arange(3.0)
    ro.setflags(write=False)
    x = ct.asarray(ro, device="cpu")
    x[0] = 5  # a read-only buffer is copied, never written
    assert ro[0] == 0
    strided = np.arange(12.0).reshape(3, 4)[:, ::2]
    np.testing.assert_array_equal(to_numpy(ct.asarray(strided)), strided)
    with pytest.raises(ct.DTypeError, match="format"):
        ct.asarray(np.arange(3, dtype=np.longdouble))


def test_asarray_sources(device):
    assert ct.asarray([[1, 2], [3, 4]], device=device).dtype == ct.int64
    assert ct.asarray([1.5, 2], device=device).dtype == ct.float32
    assert ct.asarray([True, False], device=device).dtype == ct.bool
    assert ct.asarray(3, device=device).shape == ()
    assert ct.asarray([], device=device).shape == (0,)
    assert ct.asarray([[1, 2], [3, 4]], dtype=ct.float64, device=device).tolist() == [
        [1.0, 2.0], [3.0, 4.0]]
    with pytest.raises(ValueError, match="rectangular"):
        ct.asarray([[1, 2], [3]])
    with pytest.raises(TypeError):
        ct.asarray([1, "a"])
    with pytest.raises(TypeError):
        ct.asarray(object())
    x = ct.ones((2,), device=device)
    assert ct.asarray(x) is x
    assert ct.asarray(x, copy=True) is not x
    with pytest.raises(ValueError):
        ct.asarray(x, dtype=ct.int32, copy=False)
    with pytest.raises(ValueError):
        ct.asarray([1, 2], copy=False)


def test_repr_names_the_device(device):
    text = repr(ct.asarray([1.0, 2.0], device=device))
    assert "1." in text and "float32" in text and str(device) in text
    assert str(ct.asarray([1, 2], device=device)) == repr(ct.asarray([1, 2], device=device))


def test_printing_a_device_array_is_an_implicit_transfer(gpu):
    x = ct.ones((3,), device=gpu)
    ct.transfer_stats_reset()
    repr(x)
    x[0].item()
    stats = ct.transfer_stats()
    assert stats["d2h"]["implicit"]["count"] == 2
    with ct.set_transfer_guard("disallow"):
        with pytest.raises(ct.TransferGuardError):
            repr(x)
        with pytest.raises(ct.TransferGuardError):
            x[0].item()
        x.cpu()  # explicit: allowed
    repr(x)


# ---- DLPack ----


def test_dlpack_device(device):
    x = ct.ones((2,), device=device)
    expected = (1, 0) if device.type == "cpu" else (2, device.index)
    assert x.__dlpack_device__() == expected


def test_dlpack_capsules_versioned_and_legacy(device):
    x = ct.arange(6, dtype=ct.float64, device=device)
    legacy = x.__dlpack__()
    versioned = x.__dlpack__(max_version=(1, 0))
    assert "dltensor" in repr(legacy) and "dltensor_versioned" not in repr(legacy)
    assert "dltensor_versioned" in repr(versioned)
    for capsule in (legacy, versioned):

        class Producer:
            def __dlpack__(self, max_version=None, **kw):
                return capsule

            def __dlpack_device__(self):
                return x.__dlpack_device__()

        y = ct.from_dlpack(Producer())
        assert y.device == device and y.tolist() == x.tolist()
    del legacy, versioned  # consumed capsules must not free twice
    unused = x.__dlpack__(max_version=(1, 0))
    del unused  # an unused capsule frees its export


def test_dlpack_to_the_host_copies(device):
    # dl_device=(kDLCPU, 0): the standard lets the producer copy to the host, unless copy=False.
    x = ct.arange(5, dtype=ct.float32, device=device)
    capsule = x.__dlpack__(dl_device=(1, 0), max_version=(1, 0))

    class Producer:
        def __dlpack__(self, max_version=None, **kw):
            return capsule

        def __dlpack_device__(self):
            return (1, 0)

    y = ct.from_dlpack(Producer())
    assert y.device == ct.device("cpu") and y.tolist() == [0, 1, 2, 3, 4]
    if device.type != "cpu":
        with pytest.raises(BufferError, match="copy=False"):
            x.__dlpack__(dl_device=(1, 0), copy=False)
    with pytest.raises(BufferError, match="move it"):
        x.__dlpack__(dl_device=(2, 7))


def test_dlpack_shares_memory_both_ways():
    x = ct.zeros((3,))
    assert ct.from_dlpack(x).tolist() == [0, 0, 0]  # a Tensor is taken as it is
    a = np.zeros(4, dtype=np.float32)
    t = ct.from_dlpack(a)
    a[2] = 3
    assert t.tolist() == [0, 0, 3, 0]
    back = np.from_dlpack(t)
    t[1] = 4
    assert back.tolist() == [0, 4, 3, 0]
    z = ct.from_dlpack(a, copy=True)
    a[0] = 1
    assert z[0].item() == 0


def test_dlpack_with_torch_cpu():
    torch = pytest.importorskip("torch", reason="PyTorch is not installed")
    t = torch.arange(6, dtype=torch.float32).reshape(2, 3)[:, 1:]
    x = ct.from_dlpack(t)
    assert x.shape == (2, 2) and x.tolist() == t.tolist()
    t[0, 0] = 100
    assert x[0, 0].item() == 100  # no copy
    back = torch.from_dlpack(ct.asarray([[1, 2], [3, 4]], dtype=ct.int32, device="cpu"))
    assert back.dtype == torch.int32 and back.tolist() == [[1, 2], [3, 4]]
    b = torch.from_dlpack(ct.asarray([1.0], dtype=ct.bfloat16, device="cpu"))
    assert b.dtype == torch.bfloat16


def test_dlpack_with_torch_cuda(gpu):
    torch = pytest.importorskip("torch", reason="PyTorch is not installed")
    if FAKE_GPU:
        pytest.skip("cuda:0 is the fake GPU, whose memory is host memory, not CUDA memory")
    if not torch.cuda.is_available():
        pytest.skip("PyTorch sees no CUDA device")
    t = torch.arange(4, dtype=torch.float32, device="cuda")
    torch.cuda.synchronize()
    x = ct.from_dlpack(t)
    assert x.device == gpu and x.cpu().tolist() == [0, 1, 2, 3]
    y = torch.from_dlpack(x * 2)
    assert y.device.type == "cuda" and y.tolist() == [0, 2, 4, 6]
    assert y.data_ptr() != 0 and x.__dlpack_device__() == (2, 0)


def test_dlpack_keeps_the_array_alive(device):
    x = ct.arange(5, device=device)
    capsule = x.__dlpack__(max_version=(1, 0))
    del x

    class Producer:
        def __dlpack__(self, **kw):
            return capsule

    y = ct.from_dlpack(Producer())
    assert y.tolist() == [0, 1, 2, 3, 4]
