"""Training from Python, part four: requires_grad= on creation, assigning .grad, optimiser
state in checkpoints (a resumed run takes the same next step, bit for bit), parameters that
stay the same objects across model.to(device), and DataLoader worker threads for Python
datasets."""

import threading
import time

import numpy as np
import pytest

import ctensor as ct
import ctensor.nn as nn
import ctensor.nn.functional as F
from conftest import DEVICES, to_numpy

# ---- requires_grad= on the creation functions ----

CREATIONS = {
    "asarray": lambda d, rg: ct.asarray([[1.0, 2.0], [3.0, 4.0]], device=d, requires_grad=rg),
    "zeros": lambda d, rg: ct.zeros((2, 2), device=d, requires_grad=rg),
    "ones": lambda d, rg: ct.ones((2, 2), device=d, requires_grad=rg),
    "empty": lambda d, rg: ct.empty((2, 2), device=d, requires_grad=rg),
    "full": lambda d, rg: ct.full((2, 2), 3.0, device=d, requires_grad=rg),
    "zeros_like": lambda d, rg: ct.zeros_like(ct.ones((2, 2), device=d), requires_grad=rg),
    "ones_like": lambda d, rg: ct.ones_like(ct.ones((2, 2), device=d), requires_grad=rg),
    "empty_like": lambda d, rg: ct.empty_like(ct.ones((2, 2), device=d), requires_grad=rg),
    "full_like": lambda d, rg: ct.full_like(ct.ones((2, 2), device=d), 2.0, requires_grad=rg),
    "rand": lambda d, rg: ct.rand(2, 2, device=d, requires_grad=rg),
    "randn": lambda d, rg: ct.randn(2, 2, device=d, requires_grad=rg),
    "arange": lambda d, rg: ct.arange(0.0, 4.0, dtype=ct.float32, device=d, requires_grad=rg),
    "linspace": lambda d, rg: ct.linspace(0.0, 1.0, 4, device=d, requires_grad=rg),
    "linspace_open": lambda d, rg: ct.linspace(0.0, 1.0, 4, device=d, endpoint=False,
                                               requires_grad=rg),
    "eye": lambda d, rg: ct.eye(2, device=d, requires_grad=rg),
}


@pytest.mark.parametrize("name", sorted(CREATIONS))
def test_creation_requires_grad(name, device):
    plain = CREATIONS[name](device, False)
    assert not plain.requires_grad
    x = CREATIONS[name](device, True)
    assert x.requires_grad and x.is_leaf and x.device == device
    ct.sum(x * x).backward()
    np.testing.assert_allclose(to_numpy(x.grad), 2 * to_numpy(x).astype(np.float64), rtol=1e-6)


def test_creation_requires_grad_of_integers_is_a_clear_error():
    with pytest.raises(ct.DTypeError, match="floating"):
        ct.zeros((2,), dtype=ct.int64, requires_grad=True)
    with pytest.raises(ct.DTypeError, match="floating"):
        ct.arange(4, requires_grad=True)


def test_asarray_requires_grad_of_a_tensor_marks_the_result():
    t = ct.ones((3,))
    same = ct.asarray(t, requires_grad=True)
    assert same is t and t.requires_grad
    y = t * 2
    with pytest.raises(ct.StateError, match="not a leaf"):
        ct.asarray(y, requires_grad=True)


# ---- assigning .grad ----


def test_assign_grad(device):
    p = ct.ones((2, 3), device=device, requires_grad=True)
    g = ct.full((2, 3), 0.5, device=device)
    p.grad = g
    np.testing.assert_array_equal(to_numpy(p.grad), np.full((2, 3), 0.5, np.float32))
    g[...] = 9.0  # the gradient is a copy: writing g does not change it
    assert to_numpy(p.grad).max() == 0.5
    ct.sum(p * 2).backward()  # backward accumulates onto the assigned gradient
    np.testing.assert_array_equal(to_numpy(p.grad), np.full((2, 3), 2.5, np.float32))
    ct.optim.SGD([p], lr=1.0).step()  # and the optimiser reads it
    np.testing.assert_array_equal(to_numpy(p), np.full((2, 3), -1.5, np.float32))
    p.grad = None
    assert p.grad is None


def test_assign_grad_checks_what_it_is_given(device):
    p = ct.ones((2, 3), device=device, requires_grad=True)
    with pytest.raises(ct.ShapeError, match="shape"):
        p.grad = ct.ones((3, 2), device=device)
    with pytest.raises(ct.DTypeError, match="float64"):
        p.grad = ct.ones((2, 3), dtype=ct.float64, device=device)
    with pytest.raises(TypeError, match="Tensor or None"):
        p.grad = [[1.0] * 3] * 2
    with pytest.raises(ct.StateError, match="not a leaf"):
        (p * 2).grad = ct.ones((2, 3), device=device)
    assert p.grad is None  # nothing was set by the failures


def test_assign_grad_on_another_device_is_refused():
    if len(DEVICES) < 2:
        pytest.skip("one device only: no CUDA device (the reason is on the line 'CUDA "
                    "unavailable')")
    p = ct.ones((2,), device=DEVICES[0], requires_grad=True)
    with pytest.raises(ct.DeviceMismatchError, match="device"):
        p.grad = ct.ones((2,), device=DEVICES[1])


# ---- optimiser state in checkpoints ----


def _model(device):
    ct.manual_seed(11)
    return nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 3)).to(device)


def _step(model, opt, x, y):
    opt.zero_grad()
    F.cross_entropy(model(x), y).backward()
    opt.step()


OPTIMISERS = {
    "adam": lambda ps: ct.optim.Adam(ps, lr=1e-2),
    "adamw_amsgrad": lambda ps: ct.optim.AdamW(ps, lr=1e-2, amsgrad=True),
    "sgd_momentum": lambda ps: ct.optim.SGD(ps, lr=0.1, momentum=0.9, nesterov=True),
}


@pytest.mark.parametrize("kind", sorted(OPTIMISERS))
def test_resume_from_checkpoint_takes_the_same_next_step(kind, device, tmp_path):
    ct.manual_seed(3)
    x = ct.randn(16, 6).to(device)
    y = ct.asarray([i % 3 for i in range(16)], device=device)
    model = _model(device)
    opt = OPTIMISERS[kind](model.parameters())
    for _ in range(3):
        _step(model, opt, x, y)
    ct.save(model.state_dict(), tmp_path / "model.safetensors")
    ct.save(opt.state_dict(), tmp_path / "opt.safetensors")
    _step(model, opt, x, y)  # the run that was not interrupted
    expected = {k: to_numpy(v) for k, v in model.state_dict().items()}

    resumed = _model(device)
    resumed.load_state_dict(ct.load(tmp_path / "model.safetensors"))
    opt2 = OPTIMISERS[kind](resumed.parameters())
    loaded = ct.load(tmp_path / "opt.safetensors", device=device)
    assert sorted(loaded["state"]) == [0, 1, 2, 3]  # integer keys survive the file
    assert loaded["param_groups"][0]["params"] == [0, 1, 2, 3]
    opt2.load_state_dict(loaded)
    _step(resumed, opt2, x, y)
    for k, v in resumed.state_dict().items():
        np.testing.assert_array_equal(to_numpy(v), expected[k], err_msg=k)


def test_nested_checkpoint_keeps_its_structure(tmp_path):
    obj = {"state": {0: {"step": ct.asarray(4.0), "m": ct.ones((2,))}},
           "param_groups": [{"lr": 0.5, "betas": (0.9, 0.99), "amsgrad": False,
                             "name": None, "params": [0]}]}
    ct.save(obj, tmp_path / "nested.safetensors")
    back = ct.load(tmp_path / "nested.safetensors")
    assert back["param_groups"] == obj["param_groups"]  # the tuple stays a tuple
    assert back["state"][0]["m"].tolist() == [1.0, 1.0] and float(back["state"][0]["step"]) == 4
    assert sorted(back["state"][0]) == ["m", "step"]
    with pytest.raises(TypeError, match="cannot save a set"):
        ct.save({"state": {0: {1, 2}}}, tmp_path / "bad.safetensors")


def test_nested_checkpoint_is_a_plain_safetensors_file(tmp_path):
    safetensors = pytest.importorskip("safetensors.numpy",
                                      reason="the safetensors package is not installed")
    ct.save({"state": {0: {"exp_avg": ct.ones((2,))}}, "param_groups": []},
            tmp_path / "o.safetensors")
    assert list(safetensors.load_file(str(tmp_path / "o.safetensors"))) == ["state.0.exp_avg"]


# ---- parameters across model.to(device) ----


class Custom(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(ct.randn(4, 3, device="cpu"))
        self.register_buffer("offset", ct.ones((3,), device="cpu"))
        self.lin = nn.Linear(3, 2)

    def forward(self, x):
        return self.lin(x @ self.w + self.offset)


@pytest.mark.parametrize("target", DEVICES, ids=str)
def test_parameters_stay_the_same_objects_across_to(target):
    ct.manual_seed(2)
    model = Custom()
    before = list(model.parameters())
    w = model.w
    opt = ct.optim.Adam(model.parameters(), lr=0.1)  # built before the move
    x = ct.randn(5, 4, device="cpu")
    F.mse_loss(model(x), ct.zeros((5, 2), device="cpu")).backward()
    values = [to_numpy(p).copy() for p in before]
    assert model.to(target) is model
    assert model.w is w and all(p.device == target for p in model.parameters())
    assert model.offset.device == target
    assert w.grad is not None and w.grad.device == target  # the gradient moved with it
    for p, v in zip(before, values):
        np.testing.assert_array_equal(to_numpy(p), v)
    opt.zero_grad()
    F.mse_loss(model(x.to(target)), ct.zeros((5, 2), device=target)).backward()
    opt.step()  # the optimiser made before the move updates the moved parameters
    for p, v in zip(model.parameters(), values):
        assert p.device == target and np.abs(to_numpy(p) - v).max() > 1e-3


def test_moving_a_view_parameter_is_a_clear_error():
    if len(DEVICES) < 2:
        pytest.skip("one device only: no CUDA device (the reason is on the line 'CUDA "
                    "unavailable')")
    big = ct.randn(4, 4, device=DEVICES[0])
    part = big[1:3]
    part.requires_grad_()
    with pytest.raises(ct.UnsupportedError, match="view of part"):
        part._move_to_(DEVICES[1])
    assert part.device == DEVICES[0]


# ---- DataLoader worker threads for Python datasets ----


class Squares(ct.data.Dataset):
    def __init__(self, n, delay=0.0, fail_at=None):
        self.n, self.delay, self.fail_at = n, delay, fail_at
        self.threads = set()

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        self.threads.add(threading.current_thread().name)
        if i == self.fail_at:
            raise KeyError(f"sample {i} is broken")
        if self.delay:
            time.sleep(self.delay)
        return ct.full((2,), float(i)), i * i


@pytest.mark.parametrize("workers", [0, 1, 3])
def test_python_dataset_with_workers_gives_the_same_batches(workers, device):
    ds = Squares(23)
    loader = ct.data.DataLoader(ds, batch_size=4, shuffle=True, num_workers=workers,
                                device=device, seed=7)
    reference = ct.data.DataLoader(Squares(23), batch_size=4, shuffle=True, device=device,
                                   seed=7)
    got = [(x.tolist(), y.tolist()) for x, y in loader]
    assert got == [(x.tolist(), y.tolist()) for x, y in reference] and len(got) == 6
    assert sorted(i for _, ys in got for i in ys) == [i * i for i in range(23)]
    if workers:
        assert ds.threads == {f"ct-data-{k}" for k in range(workers)}


def test_python_dataset_worker_error_reaches_the_loop():
    loader = ct.data.DataLoader(Squares(20, fail_at=9), batch_size=4, num_workers=2)
    with pytest.raises(KeyError, match="sample 9 is broken"):
        list(loader)


def test_python_dataset_worker_wait_has_a_deadline():
    loader = ct.data.DataLoader(Squares(4, delay=1.0), batch_size=2, num_workers=1,
                                timeout=0.2)
    with pytest.raises(TimeoutError, match="batch 0 of 2 was not ready after 0.2 s"):
        list(loader)


def test_python_dataset_stuck_workers_share_one_deadline():
    """After the timeout, the loader waits for its stuck workers once more, timeout seconds
    for all of them together (not each in turn), and leaves them behind."""
    loader = ct.data.DataLoader(Squares(16, delay=3.0), batch_size=2, num_workers=4,
                                timeout=0.3)
    start = time.monotonic()
    with pytest.raises(TimeoutError, match="batch 0 of 8 was not ready after 0.3 s"):
        list(loader)
    assert time.monotonic() - start < 1.1  # 0.3 + 0.3; waiting for each in turn: 1.5


def test_python_dataset_workers_stop_when_the_loop_breaks():
    before = threading.active_count()
    for _ in ct.data.DataLoader(Squares(400), batch_size=2, num_workers=3):
        break
    deadline = time.monotonic() + 10
    while threading.active_count() > before and time.monotonic() < deadline:
        time.sleep(0.01)
    assert threading.active_count() == before
