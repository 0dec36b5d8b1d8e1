"""PyTorch's torch.nn surface beyond the layers: the loss modules (against PyTorch's values
and gradients where PyTorch is installed, against NumPy otherwise), nn.Identity, ModuleList
and ModuleDict registering their children's parameters, no_grad as a decorator, ct.cuda as
torch.cuda has it, and nn.DataParallel over the threads engine on logical devices."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import ctensor as ct

from conftest import to_numpy

nn = ct.nn
F = nn.functional

LOGITS = np.array([[1.5, -0.3, 0.2, 2.0], [0.1, 0.4, -1.2, 0.0], [3.0, -2.0, 0.5, 0.25],
                   [-0.7, 0.9, 1.1, -30.0], [40.0, -40.0, 0.0, 2.5]], dtype=np.float32)
CLASSES = np.array([3, 1, 0, 2, 1])
TARGETS = np.array([[0.5, 1.0, 0.0, 1.0], [0.0, 0.25, 1.0, 0.0], [1.0, 0.0, 0.5, 1.0],
                    [0.0, 1.0, 1.0, 0.0], [1.0, 0.0, 0.0, 0.75]], dtype=np.float32)


def _log_softmax(x):
    shifted = x - x.max(axis=1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))


def _reduce(loss, reduction):
    return {"mean": loss.mean(), "sum": loss.sum(), "none": loss}[reduction]


def _nll(logp, target, reduction, ignore_index=-100):
    kept = target != ignore_index
    picked = -logp[np.arange(len(target)), np.where(kept, target, 0)] * kept
    return picked.sum() / kept.sum() if reduction == "mean" else _reduce(picked, reduction)


def _expected(name, reduction):
    x, y = LOGITS.astype(np.float64), TARGETS.astype(np.float64)
    if name == "NLLLoss":
        return _nll(_log_softmax(x), CLASSES, reduction, ignore_index=1)
    if name == "CrossEntropyLoss":
        return _nll(_log_softmax(x), CLASSES, reduction)
    if name == "MSELoss":
        return _reduce((x - y) ** 2, reduction)
    if name == "L1Loss":
        return _reduce(np.abs(x - y), reduction)
    if name == "SmoothL1Loss":
        d = np.abs(x - y)
        return _reduce(np.where(d < 0.5, 0.5 * d * d / 0.5, d - 0.25), reduction)
    loss = np.maximum(x, 0) - x * y + np.log1p(np.exp(-np.abs(x)))
    return _reduce(loss, reduction)


LOSSES = {
    "CrossEntropyLoss": lambda r: nn.CrossEntropyLoss(reduction=r),
    "NLLLoss": lambda r: nn.NLLLoss(reduction=r, ignore_index=1),
    "MSELoss": lambda r: nn.MSELoss(reduction=r),
    "L1Loss": lambda r: nn.L1Loss(reduction=r),
    "SmoothL1Loss": lambda r: nn.SmoothL1Loss(reduction=r, beta=0.5),
    "BCEWithLogitsLoss": lambda r: nn.BCEWithLogitsLoss(reduction=r),
}


def _inputs(name, device):
    x = ct.asarray(LOGITS, device=device).requires_grad_()
    if name == "NLLLoss":
        return x, F.log_softmax(x, dim=1), ct.asarray(CLASSES, device=device)
    if name == "CrossEntropyLoss":
        return x, x, ct.asarray(CLASSES, device=device)
    return x, x, ct.asarray(TARGETS, device=device)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("name", list(LOSSES))
def test_loss_modules_match_their_definitions(device, name, reduction):
    leaf, x, target = _inputs(name, device)
    loss = LOSSES[name](reduction)(x, target)
    np.testing.assert_allclose(to_numpy(loss), _expected(name, reduction), rtol=1e-5,
                               atol=1e-6)
    ct.sum(loss).backward()
    assert leaf.grad is not None and tuple(leaf.grad.shape) == LOGITS.shape
    assert np.isfinite(to_numpy(leaf.grad)).all()


@pytest.mark.parametrize("name", list(LOSSES))
def test_loss_modules_match_pytorch(name):
    torch = pytest.importorskip("torch", reason="PyTorch is not installed")
    kwargs = {"NLLLoss": {"ignore_index": 1}, "SmoothL1Loss": {"beta": 0.5}}.get(name, {})
    tx = torch.tensor(LOGITS, requires_grad=True)
    classes = torch.tensor(CLASSES)
    tin = torch.log_softmax(tx, 1) if name == "NLLLoss" else tx
    ttarget = classes if name in ("NLLLoss", "CrossEntropyLoss") else torch.tensor(TARGETS)
    expected = getattr(torch.nn, name)(**kwargs)(tin, ttarget)
    expected.backward()
    leaf, x, target = _inputs(name, "cpu")
    loss = getattr(nn, name)(**kwargs)(x, target)
    loss.backward()
    np.testing.assert_allclose(loss.item(), expected.item(), rtol=1e-5)
    np.testing.assert_allclose(to_numpy(leaf.grad), tx.grad.numpy(), rtol=1e-4, atol=1e-6)


def test_cross_entropy_loss_options():
    x = ct.asarray(LOGITS)
    target = ct.asarray(CLASSES)
    plain = nn.CrossEntropyLoss()(x, target).item()
    smooth = nn.CrossEntropyLoss(label_smoothing=0.1)(x, target).item()
    assert smooth != plain
    ignored = nn.CrossEntropyLoss(ignore_index=1)(x, target).item()
    np.testing.assert_allclose(ignored, _nll(_log_softmax(LOGITS.astype(np.float64)), CLASSES,
                                             "mean", ignore_index=1), rtol=1e-5)
    with pytest.raises(ct.UnsupportedError, match="weight"):
        nn.CrossEntropyLoss(weight=ct.ones((4,)), label_smoothing=0.1)
    with pytest.raises(ValueError, match="reduction"):
        nn.L1Loss(reduction="avg")


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_class_weights(device, reduction):
    weight = np.array([0.5, 2.0, 1.0, 3.0], dtype=np.float32)
    logp = _log_softmax(LOGITS.astype(np.float64))
    kept = CLASSES != 2
    per_row = -logp[np.arange(len(CLASSES)), CLASSES] * weight[CLASSES] * kept
    expected = {"mean": per_row.sum() / (weight[CLASSES] * kept).sum(), "sum": per_row.sum(),
                "none": per_row}[reduction]
    x = ct.asarray(LOGITS, device=device).requires_grad_()
    target = ct.asarray(CLASSES, device=device)
    w = ct.asarray(weight, device=device)
    for loss in (nn.CrossEntropyLoss(weight=w, ignore_index=2, reduction=reduction)(x, target),
                 nn.NLLLoss(weight=w, ignore_index=2, reduction=reduction)(
                     F.log_softmax(x, dim=1), target)):
        np.testing.assert_allclose(to_numpy(loss), expected, rtol=1e-5, atol=1e-6)
    ct.sum(loss).backward()
    assert x.grad is not None
    assert "weight" in dict(nn.NLLLoss(weight=w).named_buffers())
    with pytest.raises(ValueError, match="one value per class"):
        nn.NLLLoss(weight=ct.ones((3,), device=device))(F.log_softmax(x, dim=1), target)


def test_bce_with_logits_weights_and_extreme_logits():
    x = ct.asarray([[1000.0, -1000.0, 0.0]])
    y = ct.asarray([[1.0, 0.0, 1.0]])
    loss = nn.BCEWithLogitsLoss(reduction="none")(x, y)
    np.testing.assert_allclose(to_numpy(loss), [[0.0, 0.0, np.log(2)]], atol=1e-6)
    pos = ct.asarray([2.0, 2.0, 3.0])
    weighted = nn.BCEWithLogitsLoss(reduction="none", pos_weight=pos,
                                    weight=ct.asarray([1.0, 1.0, 0.5]))(x, y)
    np.testing.assert_allclose(to_numpy(weighted), [[0.0, 0.0, 0.5 * 3 * np.log(2)]],
                               atol=1e-5)
    assert F.binary_cross_entropy_with_logits(x, y).item() == pytest.approx(np.log(2) / 3)


def test_identity_and_containers_register_parameters():
    assert nn.Identity(54, unused="x")(ct.ones((2,))).shape == (2,)
    layers = nn.ModuleList([nn.Linear(2, 3), nn.Linear(3, 3)])
    layers.append(nn.Linear(3, 1))
    layers.insert(0, nn.Identity())
    assert [type(m).__name__ for m in layers] == ["Identity", "Linear", "Linear", "Linear"]
    assert list(layers.state_dict())[:2] == ["1.weight", "1.bias"]
    assert len(list(layers.parameters())) == 6 and isinstance(layers[1:], nn.ModuleList)
    del layers[0]
    assert list(layers.state_dict())[0] == "0.weight" and len(layers) == 3
    heads = nn.ModuleDict({"a": nn.Linear(2, 2), "b": nn.Sequential(nn.Linear(2, 1))})
    heads["c"] = nn.Identity()
    assert list(heads) == ["a", "b", "c"] and "b" in heads
    assert list(heads.state_dict()) == ["a.weight", "a.bias", "b.0.weight", "b.0.bias"]
    with pytest.raises(KeyError):
        heads["x.y"] = nn.Identity()
    with pytest.raises(TypeError):
        layers.append(ct.ones((2,)))

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.blocks = nn.ModuleList(nn.Linear(4, 4) for _ in range(2))
            self.heads = nn.ModuleDict({"out": nn.Linear(4, 2)})

        def forward(self, x):
            for block in self.blocks:
                x = F.relu(block(x))
            return self.heads["out"](x)

    net = Net()
    assert len(list(net.parameters())) == 6
    ct.sum(net(ct.ones((3, 4), device="cpu"))).backward()
    assert all(p.grad is not None for p in net.parameters())
    optimiser = ct.optim.SGD(net.parameters(), lr=0.1)
    optimiser.step()


def test_no_grad_and_enable_grad_as_decorators():
    x = ct.ones((3,)).requires_grad_()

    @ct.no_grad
    def bare(v):
        return v * 2

    @ct.no_grad()
    def called(v):
        return v * 2

    @ct.enable_grad()
    def enabled(v):
        return v * 2

    assert not bare(x).requires_grad and not called(x).requires_grad
    assert bare.__name__ == "bare" and (x * 2).requires_grad
    with ct.no_grad():
        assert enabled(x).requires_grad
    with pytest.raises(TypeError):
        ct.no_grad(3)


def test_cuda_namespace():
    cuda = ct.cuda
    assert isinstance(cuda.is_available(), bool)
    if not cuda.is_available():
        assert cuda.device_count() == 0
        with pytest.raises(ct.DeviceUnavailableError, match="no CUDA device"):
            cuda.current_device()
        with pytest.raises(ct.DeviceUnavailableError):
            cuda.memory_allocated()
        pytest.skip("no CUDA device: the rest needs one (the fake GPU run covers it)")
    assert cuda.device_count() >= 1 and cuda.current_device() == 0
    props = cuda.get_device_properties(0)
    assert props.name == cuda.get_device_name(0) and props.total_memory > 0
    assert props.major >= 0 and props.multi_processor_count >= 1
    cuda.reset_peak_memory_stats()
    before = cuda.memory_allocated()
    x = ct.ones((1 << 20,), device="cuda:0")
    cuda.synchronize()
    assert cuda.memory_allocated(0) >= before + (4 << 20)
    assert cuda.max_memory_allocated() >= cuda.memory_allocated()
    assert cuda.memory_reserved() >= cuda.memory_allocated()
    with ct.device("cuda:0"):
        assert cuda.current_device() == 0
    del x
    cuda.empty_cache()
    cuda.manual_seed(7)
    a = to_numpy(ct.randn(4, device="cuda:0"))
    cuda.manual_seed_all(7)
    np.testing.assert_array_equal(a, to_numpy(ct.randn(4, device="cuda:0")))


def test_data_parallel_on_one_device_is_the_module():
    ct.manual_seed(3)
    model = nn.Linear(3, 2)
    dp = nn.DataParallel(model, device_ids=["cpu"])
    x = ct.randn(5, 3).to("cpu")
    np.testing.assert_allclose(to_numpy(dp(x)), to_numpy(model(x)), rtol=1e-6)
    assert list(dp.state_dict()) == ["module.weight", "module.bias"]
    assert len(list(dp.parameters())) == 2 and dp.module is model
    with pytest.raises(ValueError, match="distinct"):
        nn.DataParallel(model, device_ids=["cpu", "cpu"])


# Data parallelism on two logical devices (configured before first use: a new interpreter):
# gradients, steps and outputs as one model on the whole batch, a batch smaller than the
# replicas, no_grad and eval forwards, tuple outputs, and a replica's exception.
DATA_PARALLEL = textwrap.dedent("""
    import numpy as np
    import ctensor as ct
    nn = ct.nn
    ct.configure_logical_devices(KIND, 2)
    devices = [KIND + ':0', KIND + ':1']
    ct.manual_seed(0)

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = nn.Sequential(nn.Linear(4, 8), nn.ReLU())
            self.heads = nn.ModuleList([nn.Linear(8, 3), nn.Linear(8, 1)])

        def forward(self, x, scale=1.0):
            h = self.body(x)
            return self.heads[0](h) * scale, self.heads[1](h)

    model, ref = Net(), Net()
    ref.load_state_dict(model.state_dict())
    ref.to(devices[0])
    dp = nn.DataParallel(model, device_ids=devices)
    assert dp.output_device == ct.device(devices[0])
    lossf = nn.CrossEntropyLoss()
    sgd, ref_sgd = ct.optim.SGD(dp.parameters(), lr=0.5), ct.optim.SGD(ref.parameters(), lr=0.5)
    x = ct.randn(9, 4, device=devices[0])
    y = ct.asarray([0, 1, 2, 0, 1, 2, 0, 1, 2], device=devices[0])

    def loss_of(out):
        return lossf(out[0], y[:out[0].shape[0]]) + ct.mean(out[1] * out[1])

    for step in range(4):
        sgd.zero_grad()
        ref_sgd.zero_grad()
        out = dp(x, scale=2.0)
        assert out[0].shape == (9, 3) and out[0].device == ct.device(devices[0])
        loss, ref_loss = loss_of(out), loss_of(ref(x, scale=2.0))
        loss.backward()
        ref_loss.backward()
        np.testing.assert_allclose(loss.item(), ref_loss.item(), rtol=1e-5)
        for (name, p), q in zip(model.named_parameters(), ref.parameters()):
            np.testing.assert_allclose(p.grad.cpu().numpy(), q.grad.cpu().numpy(),
                                       rtol=1e-4, atol=1e-6, err_msg=name)
        assert all(p.grad is None for p in dp._replicas[1].parameters())
        sgd.step()
        ref_sgd.step()

    # A batch of one row: replica 1 sits the step out; its gradients add zeros.
    sgd.zero_grad()
    ref_sgd.zero_grad()
    loss_of(dp(x[:1])).backward()
    ref_out = ref(x[:1])
    (lossf(ref_out[0], y[:1]) + ct.mean(ref_out[1] * ref_out[1])).backward()
    for p, q in zip(model.parameters(), ref.parameters()):
        np.testing.assert_allclose(p.grad.cpu().numpy(), q.grad.cpu().numpy(), rtol=1e-4,
                                   atol=1e-6)

    with ct.no_grad():
        assert not dp(x)[0].requires_grad
    dp.eval()
    assert not dp._replicas[1].training
    np.testing.assert_allclose(dp(x)[0].cpu().numpy(), ref(x)[0].cpu().numpy(), rtol=1e-5,
                               atol=1e-6)

    class Broken(nn.Module):
        def forward(self, x):
            raise KeyError('replica failed')

    try:
        nn.DataParallel(Broken(), device_ids=devices)(x)
    except KeyError as e:
        assert 'replica failed' in str(e)
    else:
        raise SystemExit('no exception from the replicas')
    print('ok')
""")


@pytest.mark.parametrize("kind", ["cpu", "cuda"])
def test_data_parallel_on_two_logical_devices(kind):
    if kind == "cuda" and not ct.cuda.is_available():
        pytest.skip("no CUDA device: DataParallel on logical CUDA devices needs one (the fake "
                    "GPU run covers it)")
    code = DATA_PARALLEL.replace("KIND", repr(kind))
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            env=os.environ, timeout=300)
    assert result.returncode == 0 and result.stdout.strip() == "ok", (
        result.stdout + result.stderr)



def test_gelu_tanh_form(device):
    """nn.GELU(approximate='tanh') and F.gelu(x, approximate='tanh'): GPT-2's form."""
    values = np.linspace(-4, 4, 17)
    x = ct.asarray(values, dtype=ct.float64, device=device)
    expected = 0.5 * values * (1 + np.tanh(np.sqrt(2 / np.pi) * (values + 0.044715 * values**3)))
    np.testing.assert_allclose(to_numpy(nn.GELU(approximate="tanh")(x)), expected, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(to_numpy(F.gelu(x, approximate="tanh")), expected, rtol=1e-12, atol=1e-15)
    assert "approximate='tanh'" in repr(nn.GELU(approximate="tanh"))
    with pytest.raises(ValueError, match="approximate"):
        nn.GELU(approximate="fast")
