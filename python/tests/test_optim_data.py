"""Training from Python, part two: ct.optim (SGD, Adam, AdamW, groups, state_dict,
schedulers, OneCycleLR against PyTorch's values), ct.save / ct.load, ct.data (readers,
TensorDataset, DataLoader on the C loader and on Python datasets), ct.autocast and
ct.amp.GradScaler, ct.distributed (a world of one), against float64 references, on every
device present."""

import math

import numpy as np
import pytest

import ctensor as ct
import ctensor.nn as nn
import ctensor.nn.functional as F
from conftest import to_numpy


def param(values, device):
    return nn.Parameter(ct.asarray(np.asarray(values, dtype=np.float32), device=device))


def test_sgd_momentum_matches_formula(device):
    p = param([1.0, -2.0, 3.0], device)
    opt = ct.optim.SGD([p], lr=0.1, momentum=0.9, weight_decay=0.01)
    ref, buf = np.array([1.0, -2.0, 3.0]), None
    for _ in range(3):
        opt.zero_grad()
        ct.sum(p * p).backward()
        opt.step()
        g = 2 * ref + 0.01 * ref
        buf = g if buf is None else 0.9 * buf + g
        ref = ref - 0.1 * buf
    np.testing.assert_allclose(to_numpy(p), ref, rtol=1e-5)


def test_adam_and_adamw_match_formula(device):
    for cls, decoupled in ((ct.optim.Adam, False), (ct.optim.AdamW, True)):
        p = param([0.5, -1.5], device)
        opt = cls([p], lr=0.01, weight_decay=0.1)
        ref, m, v = np.array([0.5, -1.5]), np.zeros(2), np.zeros(2)
        for t in range(1, 4):
            opt.zero_grad()
            ct.sum(p * p).backward()
            opt.step()
            g = 2 * ref
            if decoupled:
                ref = ref * (1 - 0.01 * 0.1)
            else:
                g = g + 0.1 * ref
            m, v = 0.9 * m + 0.1 * g, 0.999 * v + 0.001 * g * g
            ref = ref - 0.01 * (m / (1 - 0.9 ** t)) / (np.sqrt(v / (1 - 0.999 ** t)) + 1e-8)
        np.testing.assert_allclose(to_numpy(p), ref, rtol=1e-5, err_msg=cls.__name__)


def test_param_groups_and_state_dict(device):
    a, b = param([1.0], device), param([1.0, 2.0], device)
    opt = ct.optim.Adam([{"params": [a]}, {"params": [b], "lr": 0.1}], lr=0.01)
    assert [g["lr"] for g in opt.param_groups] == [0.01, 0.1]
    ct.sum(a * b[0] + b[1]).backward()
    opt.step()
    assert abs(to_numpy(a)[0] - 0.99) < 1e-5 and abs(to_numpy(b)[0] - 0.9) < 1e-5
    sd = opt.state_dict()
    assert sorted(sd["state"]) == [0, 1] and sd["param_groups"][1]["params"] == [1]
    assert set(sd["state"][1]) == {"step", "exp_avg", "exp_avg_sq"}
    a2, b2 = param([1.0], device), param([1.0, 2.0], device)
    opt2 = ct.optim.Adam([{"params": [a2]}, {"params": [b2], "lr": 0.5}], lr=0.01)
    opt2.load_state_dict(sd)
    assert opt2.param_groups[1]["lr"] == 0.1
    np.testing.assert_array_equal(to_numpy(opt2.state_dict()["state"][1]["exp_avg"]),
                                  to_numpy(sd["state"][1]["exp_avg"]))
    with pytest.raises(ct.InvalidArgumentError):
        ct.optim.SGD([a], lr=-1.0)
    with pytest.raises(ValueError):
        ct.optim.SGD([], lr=0.1)


def test_schedulers_closed_forms():
    p = param([1.0], "cpu")
    opt = ct.optim.SGD([p], lr=1.0)
    s = ct.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
    got = []
    for _ in range(5):
        got.append(opt.param_groups[0]["lr"])
        s.step()
    assert got == [1.0, 1.0, 0.5, 0.5, 0.25]
    opt = ct.optim.SGD([p], lr=1.0)
    c = ct.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=4, eta_min=0.1)
    for t in range(5):
        assert abs(c.get_last_lr()[0] - (0.1 + 0.9 * (1 + math.cos(math.pi * t / 4)) / 2)) < 1e-12
        c.step()
    opt = ct.optim.SGD([p], lr=1.0)
    warm = ct.optim.lr_scheduler.LinearLR(opt, start_factor=0.25, total_iters=3)
    cos = ct.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=2)
    seq = ct.optim.lr_scheduler.SequentialLR(opt, [warm, cos], milestones=[3])
    got = []
    for _ in range(6):
        got.append(round(opt.param_groups[0]["lr"], 6))
        seq.step()
    assert got == [0.25, 0.5, 0.75, 1.0, 0.5, 0.0]
    ct.sum(p).backward()
    opt.step()  # the scheduler's lr (epoch 6: 0.5) reaches the C optimiser
    assert to_numpy(p)[0] == 0.5


# OneCycleLR(max_lr=0.4, total_steps=10) over SGD(lr=0.1, momentum=0.9): torch 1.13's lrs
# and momenta at t = 0 .. 10 (as tests/test_optim_schedule.c has them).
ONECYCLE_LR = [0.016000000000000014, 0.20800000000000002, 0.4, 0.38019385280538953,
               0.3246982615799052, 0.24450480877451572, 0.1554967912254843, 0.0753033384200948,
               0.019807747194610516, 1.6e-06, 0.019807747194610495]
ONECYCLE_MOMENTUM = [0.95, 0.8999999999999999, 0.85, 0.854951556604879, 0.8688255099070633,
                     0.8888739533021842, 0.9111260466978157, 0.9311744900929366,
                     0.945048443395121, 0.95, 0.945048443395121]


def test_onecycle_matches_pytorchs_values(device):
    p, q = param([1.0], device), param([2.0], device)
    opt = ct.optim.SGD([{"params": [p]}, {"params": [q], "weight_decay": 0.0}], lr=0.1,
                       momentum=0.9, weight_decay=5e-4)
    s = ct.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.4, total_steps=10)
    for t in range(11):
        for g in opt.param_groups:
            assert abs(g["lr"] - ONECYCLE_LR[t]) < 1e-15
            assert abs(g["momentum"] - ONECYCLE_MOMENTUM[t]) < 1e-15
        opt.zero_grad()
        ct.sum(p * q).backward()
        opt.step()  # the group's lr and momentum reach its C optimiser
        assert opt._c[0].momentum == opt.param_groups[0]["momentum"]
        assert opt._c[1].lr == opt.param_groups[1]["lr"]
        if t < 10:
            s.step()
    with pytest.raises(ValueError, match="total_steps is 10"):
        s.step()
    # Adam's beta1 cycles; epochs * steps_per_epoch gives the steps.
    adam = ct.optim.Adam([param([1.0], device)])
    s = ct.optim.lr_scheduler.OneCycleLR(adam, max_lr=0.4, epochs=2, steps_per_epoch=5)
    s.step()
    assert abs(adam.param_groups[0]["betas"][0] - ONECYCLE_MOMENTUM[1]) < 1e-15
    assert adam.param_groups[0]["betas"][1] == 0.999


def test_onecycle_against_torch():
    torch = pytest.importorskip("torch", reason="PyTorch is not installed")
    kw = dict(max_lr=[0.4, 0.2], total_steps=12, pct_start=0.25, anneal_strategy="linear",
              three_phase=True, div_factor=10, final_div_factor=100)
    tp = [torch.nn.Parameter(torch.zeros(1)), torch.nn.Parameter(torch.zeros(1))]
    topt = torch.optim.SGD([{"params": [tp[0]]}, {"params": [tp[1]]}], lr=0.1, momentum=0.9)
    tsched = torch.optim.lr_scheduler.OneCycleLR(topt, **kw)
    cp = [param([0.0], "cpu"), param([0.0], "cpu")]
    copt = ct.optim.SGD([{"params": [cp[0]]}, {"params": [cp[1]]}], lr=0.1, momentum=0.9)
    csched = ct.optim.lr_scheduler.OneCycleLR(copt, **kw)
    for _ in range(12):
        for tg, cg in zip(topt.param_groups, copt.param_groups):
            assert abs(tg["lr"] - cg["lr"]) < 1e-15
            assert abs(tg["momentum"] - cg["momentum"]) < 1e-15
        topt.step()
        tsched.step()
        csched.step()


def test_save_load_roundtrip(device, tmp_path):
    ct.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.BatchNorm2d(3)).to(device)
    path = tmp_path / "model.safetensors"
    ct.save(model.state_dict(), path)
    loaded = ct.load(path, device=device)
    assert sorted(loaded) == sorted(model.state_dict())  # the file's order: by size, name
    for k, t in model.state_dict().items():
        assert loaded[k].device == device
        np.testing.assert_array_equal(to_numpy(loaded[k]), to_numpy(t))
    from safetensors.numpy import load_file
    np.testing.assert_array_equal(load_file(str(path))["0.weight"], to_numpy(model[0].weight))
    with pytest.raises(ct.FileError):
        ct.load(tmp_path / "missing.safetensors")
    with pytest.raises(TypeError):
        ct.save({"x": object()}, path)
    assert ct.load(path)["0.bias"].shape == (3,)  # the failed save left the file


def test_readers(tmp_path):
    np.save(tmp_path / "a.npy", np.arange(6, dtype=np.float32).reshape(2, 3))
    assert ct.data.read_npy(tmp_path / "a.npy").tolist() == [[0, 1, 2], [3, 4, 5]]
    (tmp_path / "t.csv").write_text("f1,f2,label\n1.5,2,0\n3,4.25,1\n")
    x, y = ct.data.read_csv(tmp_path / "t.csv", has_header=True)
    assert x.tolist() == [[1.5, 2.0], [3.0, 4.25]] and y.tolist() == [0, 1]
    x, y = ct.data.read_csv(tmp_path / "t.csv", has_header=True, label_column=None)
    assert x.shape == (2, 3) and y is None
    with pytest.raises(ct.FormatError):
        ct.data.read_idx(tmp_path / "t.csv")


def test_dataloader_on_the_c_loader(device):
    xs = np.arange(40, dtype=np.float32).reshape(10, 4)
    ds = ct.data.TensorDataset(ct.asarray(xs, device="cpu"),
                               ct.asarray(np.arange(10), dtype=ct.int64, device="cpu"))
    loader = ct.data.DataLoader(ds, batch_size=4, shuffle=True, num_workers=2, device=device)
    assert loader._c is not None and len(loader) == 3
    seen = []
    for x, y in loader:
        assert x.device == device and y.device == device and x.dtype == ct.float32
        np.testing.assert_array_equal(to_numpy(x), xs[to_numpy(y)])
        seen += to_numpy(y).tolist()
    assert sorted(seen) == list(range(10))
    again = [to_numpy(y).tolist() for _, y in loader]
    assert sum(again, []) != seen or len(set(map(tuple, again))) == 3  # a new epoch's shuffle
    same = ct.data.DataLoader(ds, batch_size=4, shuffle=True, num_workers=0, device=device)
    assert [to_numpy(y).tolist() for _, y in same][0] == seen[:4]  # workers change nothing
    dropped = ct.data.DataLoader(ds, batch_size=4, drop_last=True, device=device)
    assert [y.shape[0] for _, y in dropped] == [4, 4]


class Squares(ct.data.Dataset):
    def __len__(self):
        return 7

    def __getitem__(self, i):
        return ct.asarray([float(i), float(i * i)]), i % 2


def test_dataloader_on_a_python_dataset(device):
    loader = ct.data.DataLoader(Squares(), batch_size=3, device=device)
    batches = list(loader)
    assert len(loader) == 3 and [b[0].shape for b in batches] == [(3, 2), (3, 2), (1, 2)]
    assert batches[1][0].tolist() == [[3.0, 9.0], [4.0, 16.0], [5.0, 25.0]]
    assert batches[1][1].tolist() == [1, 0, 1] and batches[0][0].device == device
    shuffled = ct.data.DataLoader(Squares(), batch_size=7, shuffle=True, seed=1)
    order = next(iter(shuffled))[0][:, 0].tolist()
    assert sorted(order) == list(range(7)) and order != list(range(7))


def test_fashion_mnist_dataset():
    try:
        train = ct.data.fashion_mnist("train")
    except ct.FileError as e:
        pytest.skip(f"Fashion-MNIST is not installed (dataset-fashion-mnist): {e}")
    assert len(train) == 60000 and train.tensors[0].dtype == ct.uint8
    x, y = next(iter(ct.data.DataLoader(train, batch_size=8)))
    assert x.shape == (8, 1, 28, 28) and x.dtype == ct.float32 and y.dtype == ct.int64
    raw = to_numpy(train.tensors[0][:8]).astype(np.float64) / 255
    np.testing.assert_allclose(to_numpy(x)[:, 0], (raw - 0.2860) / 0.3530, rtol=1e-5, atol=1e-5)


def test_autocast_and_grad_scaler(device):
    a = ct.asarray(np.ones((4, 4), np.float32), device=device)
    with ct.autocast(device.type, dtype=ct.bfloat16):
        assert ct.get_autocast_dtype(device.type) == ct.bfloat16
        assert ct.matmul(a, a).dtype == ct.bfloat16
        with ct.autocast(device.type, enabled=False):
            assert ct.matmul(a, a).dtype == ct.float32
    assert ct.get_autocast_dtype(device.type) == ct.float32
    with pytest.raises(ct.InvalidArgumentError):
        with ct.autocast("tpu"):
            pass
    p = param([1.0, 2.0], device)
    opt = ct.optim.SGD([p], lr=0.5)
    scaler = ct.amp.GradScaler(init_scale=1024.0, growth_interval=1)
    loss = ct.sum(p * p)
    scaled = scaler.scale(loss)
    assert abs(scaled.item() - 1024 * loss.item()) < 1e-3
    scaled.backward()
    scaler.step(opt)
    scaler.update()
    np.testing.assert_allclose(to_numpy(p), [0.0, 0.0], atol=1e-6)  # p - 0.5 * 2p
    assert scaler.get_scale() == 2048.0  # one clean step grows it (growth_interval 1)
    opt.zero_grad()
    scaler.scale(ct.sum(p * float("inf"))).backward()
    scaler.step(opt)
    scaler.update()
    assert scaler.get_scale() == 1024.0 and not np.isnan(to_numpy(p)).any()  # skipped
    assert scaler.state_dict()["scale"] == 1024.0
    off = ct.amp.GradScaler(enabled=False)
    assert off.scale(loss) is loss and off.get_scale() == 1.0


def test_distributed_world_of_one(device):
    ct.distributed.init()
    assert ct.distributed.rank() == 0 and ct.distributed.world_size() == 1
    t = ct.asarray([1.0, 2.0], device=device)
    ct.distributed.all_reduce(t)
    ct.distributed.broadcast(t, 0)
    ct.distributed.barrier()
    assert t.tolist() == [1.0, 2.0] and ct.distributed.all_gather(t).shape == (1, 2)
    with pytest.raises(ct.InvalidArgumentError):
        ct.distributed.broadcast(t, 3)
    model = nn.parallel.DistributedDataParallel(nn.Linear(2, 1).to(device))
    F.mse_loss(model(ct.ones((3, 2), device=device)), ct.zeros((3, 1), device=device)).backward()
    before = to_numpy(model.module.weight.grad)
    opt = ct.optim.SGD(model.parameters(), lr=0.1)
    opt.step()  # averaging over one rank changes nothing
    np.testing.assert_array_equal(to_numpy(model.module.weight.grad), before)
