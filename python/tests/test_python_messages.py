"""Every exception raised from Python speaks Python: the C library's advice (ct_cast,
ct_no_grad_push, ct_backward_with, CT_F32 ...) reaches a Python user as the Python spelling
of the same fix (x.float(), `with ct.no_grad():`, loss.backward(gradient), float32). The
walk below makes many bad calls, one per error path, and fails on any C name in a message."""

import re

import pytest

import ctensor as ct

nn = ct.nn
F = nn.functional

# C functions and C constants (dtypes, statuses, guard modes); the environment variables and
# build options a user sets (CT_CUDA_PLUGIN, -DCT_CUDA=ON) are named as they are.
C_NAME = re.compile(r"\bct_[a-z]|\bCT_(?:[FIU]\d|BF16|BOOL|ERR_|GUARD_|REDUCTION_|DEVICE_)")


@pytest.fixture(autouse=True)
def _on_the_cpu():
    """The layers below are made on the CPU: their inputs are placed there too."""
    with ct.device("cpu"):
        yield


def _leaf():
    return ct.ones((3,)).requires_grad_()


def _backward_twice():
    loss = ct.sum(_leaf() * _leaf())
    loss.backward()
    loss.backward()


def _item_under_guard():
    x = ct.ones((1,), device="cuda:0" if ct.cuda.is_available() else "cpu")
    ct.set_transfer_guard("disallow")
    try:
        return x.item() if x.device.type == "cuda" else ct.ones((2,)).item()
    finally:
        ct.set_transfer_guard("allow")


def _bad_tree(path):
    ct._ctensor._save({"a": ct.ones((2,))}, str(path), {"ctensor.tree": "{not json"})
    return ct.load(path)


BAD_CALLS = {
    "leaf write": lambda p: _leaf().__setitem__(Ellipsis, 1.0),
    "leaf copy": lambda p: _leaf().__setitem__(Ellipsis, ct.zeros((3,))),
    "view of a leaf written": lambda p: _leaf().__setitem__(0, 1.0),
    "non-scalar backward": lambda p: (_leaf() * 2).backward(),
    "backward twice": lambda p: _backward_twice(),
    "backward without grad": lambda p: ct.sum(ct.ones((3,))).backward(),
    "int requires grad": lambda p: ct.ones((3,), dtype=ct.int32).requires_grad_(),
    "grad of the wrong shape": lambda p: setattr(_leaf(), "grad", ct.ones((2,))),
    "conv of ints": lambda p: nn.Conv2d(1, 1, 3)(ct.ones((1, 1, 4, 4), dtype=ct.int32)),
    "pool of ints": lambda p: nn.MaxPool2d(2)(ct.ones((1, 1, 4, 4), dtype=ct.int32)),
    "conv channels": lambda p: F.conv2d(ct.ones((1, 2, 4, 4)), ct.ones((1, 3, 3, 3))),
    "bitwise of floats": lambda p: ct.bitwise_and(ct.ones((2,)), ct.ones((2,))),
    "invert of floats": lambda p: ct.bitwise_invert(ct.ones((2,))),
    "negation of bools": lambda p: -ct.asarray([True, False]),
    "where of floats": lambda p: ct.where(ct.ones((2,)), ct.ones((2,)), ct.ones((2,))),
    "bool range": lambda p: ct.arange(3, dtype=ct.bool),
    "item of many": lambda p: ct.ones((3,)).item(),
    "transfer guard": lambda p: _item_under_guard(),
    "matmul shapes": lambda p: ct.matmul(ct.ones((2, 3)), ct.ones((2, 3))),
    "broadcast": lambda p: ct.ones((2,)) + ct.ones((3,)),
    "reshape count": lambda p: ct.reshape(ct.ones((2, 3)), (4,)),
    "expand": lambda p: ct.broadcast_to(ct.ones((3,)), (2, 2)),
    "permute twice": lambda p: ct.permute_dims(ct.ones((2, 3)), (0, 0)),
    "sum axis": lambda p: ct.sum(ct.ones((2,)), axis=3),
    "cross entropy of ints": lambda p: F.cross_entropy(ct.ones((2, 3), dtype=ct.int32),
                                                       ct.asarray([0, 1])),
    "cross entropy shapes": lambda p: F.cross_entropy(ct.ones((2, 3)), ct.asarray([0, 1, 2])),
    "mse shapes": lambda p: F.mse_loss(ct.ones((2, 3)), ct.ones((3, 2))),
    "softmax of ints": lambda p: F.softmax(ct.ones((2,), dtype=ct.int32), dim=0),
    "dropout p": lambda p: F.dropout(ct.ones((2,)), p=2.0),
    "embedding of floats": lambda p: nn.Embedding(4, 2)(ct.ones((2,))),
    "layer norm shape": lambda p: nn.LayerNorm(4)(ct.ones((2, 3))),
    "sgd of ints": lambda p: ct.optim.SGD([ct.ones((2,), dtype=ct.int32)], lr=0.1),
    "sgd of a non-leaf": lambda p: ct.optim.SGD([_leaf() * 2], lr=0.1),
    "clip max_norm": lambda p: nn.utils.clip_grad_norm_([ct.ones((2,))], -1.0),
    "autocast dtype": lambda p: ct.autocast("cpu", dtype=ct.int32).__enter__(),
    # Before ct.distributed.init() a StateError, after it (another test's) a DTypeError.
    "collective of int8": lambda p: ct.distributed.all_reduce(ct.ones((2,), dtype=ct.int8)),
    "move of a non-leaf": lambda p: (_leaf() * 2)._move_to_("cpu"),
    "load of a missing file": lambda p: ct.load(p / "missing.safetensors"),
    "load of garbage": lambda p: ((p / "g.pt").write_bytes(b"garbage!garbage"),
                                  ct.load(p / "g.pt")),
    "load of a corrupt tree": lambda p: _bad_tree(p / "tree.safetensors"),
    "save of a NUL key": lambda p: ct.save({"a\0b": ct.ones((1,))}, p / "n.safetensors"),
    "save of a tuple key": lambda p: ct.save({(2, 3): ct.ones((1,))}, p / "t.safetensors"),
    "bad device": lambda p: ct.ones((2,), device="tpu:0"),
    "missing device": lambda p: ct.ones((2,), device="cuda:7"),
    "loss reduction": lambda p: nn.MSELoss(reduction="avg"),
    "load_state_dict keys": lambda p: nn.Linear(2, 2).load_state_dict({"w": ct.ones((2, 2))}),
    "DataParallel dim": lambda p: nn.DataParallel(nn.Linear(2, 2), device_ids=["cpu"], dim=1),
}


@pytest.mark.parametrize("name", list(BAD_CALLS))
def test_no_c_name_in_a_python_exception(name, tmp_path):
    with pytest.raises(Exception) as caught:
        BAD_CALLS[name](tmp_path)
    message = str(caught.value)
    assert message, f"{name}: an exception without a message"
    assert not C_NAME.search(message), f"{name}: a C name in {message!r}"


def _message(call, path=None):
    with pytest.raises(Exception) as caught:
        call(path)
    return str(caught.value)


def test_the_fix_is_spelled_in_python():
    assert "with ct.no_grad():" in _message(BAD_CALLS["leaf write"])
    assert "loss.backward(gradient)" in _message(BAD_CALLS["non-scalar backward"])
    assert "retain_graph=True" in _message(BAD_CALLS["backward twice"])
    assert "x.requires_grad_()" in _message(BAD_CALLS["backward without grad"])
    assert "x.float()" in _message(BAD_CALLS["int requires grad"])
    assert "x.float()" in _message(BAD_CALLS["conv of ints"])
    assert "x.float()" in _message(BAD_CALLS["cross entropy of ints"])
    assert "x.long()" in _message(BAD_CALLS["embedding of floats"])
    assert "x.long()" in _message(BAD_CALLS["bitwise of floats"])
    assert "cond.astype(ct.bool)" in _message(BAD_CALLS["where of floats"])
    assert "x.detach()" in _message(BAD_CALLS["sgd of a non-leaf"])
    # C dtype constants become the Python dtypes' names.
    assert "float32, float64, float16 or bfloat16" in _message(BAD_CALLS["softmax of ints"])


def test_every_error_class_is_a_python_builtin_too():
    with pytest.raises(TypeError):
        BAD_CALLS["conv of ints"](None)
    with pytest.raises(ValueError):
        BAD_CALLS["matmul shapes"](None)
