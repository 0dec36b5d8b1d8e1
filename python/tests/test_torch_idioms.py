"""PyTorch's everyday idioms, written as a PyTorch user writes them, against ctensor.

Each idiom is a function of the module (ctensor, or torch) and of a (3, 4) float32 array made
with that module's `tensor`; its result is checked against NumPy's (or an exact value), and
against torch's own result where torch is importable (the suite's .venv has no torch; run
this file with a Python that has torch, `python3 python/tests/test_torch_idioms.py`, for that
comparison). Also PyTorch's dtype rules in PyTorch-style calls, and the errors that name the
fix.
"""
import contextlib

import numpy as np

import ctensor as ct

try:
    import torch
except ImportError:
    torch = None

A = np.arange(12, dtype=np.float32).reshape(3, 4) * 0.5 - 2.0
A[1, 2] = 7.0  # one maximum that is not in the last column


def to_numpy(value):
    """A result as NumPy (tuples and lists element by element), Python scalars as they are."""
    if isinstance(value, (tuple, list)):
        return [to_numpy(v) for v in value]
    if hasattr(value, "detach"):
        return np.asarray(value.detach().cpu().numpy())
    return value


def same(got, expected, rtol=1e-5):
    got, expected = to_numpy(got), to_numpy(expected)
    if isinstance(expected, list):
        assert isinstance(got, list) and len(got) == len(expected), (got, expected)
        for g, e in zip(got, expected):
            same(g, e, rtol)
        return
    if isinstance(expected, np.ndarray):
        assert got.shape == expected.shape, (got.shape, expected.shape)
        if expected.dtype == bool or np.issubdtype(expected.dtype, np.integer):
            np.testing.assert_array_equal(got, expected)
        else:
            np.testing.assert_allclose(got, expected, rtol=rtol, atol=1e-6)
        return
    assert got == expected or np.isclose(got, expected, rtol=rtol), (got, expected)


# name: (idiom(module, x), what NumPy gives for A)
IDIOMS = {
    "sum": (lambda t, x: x.sum(), lambda a: a.sum()),
    "sum_dim": (lambda t, x: x.sum(dim=1), lambda a: a.sum(1)),
    "sum_dim_keepdim": (lambda t, x: x.sum(1, keepdim=True), lambda a: a.sum(1, keepdims=True)),
    "fn_sum_dim": (lambda t, x: t.sum(x, dim=0), lambda a: a.sum(0)),
    "mean_dim": (lambda t, x: x.mean(dim=0), lambda a: a.mean(0)),
    "max": (lambda t, x: x.max(), lambda a: a.max()),
    "max_dim": (lambda t, x: list(x.max(dim=1)), lambda a: [a.max(1), a.argmax(1)]),
    "max_dim_fields": (lambda t, x: x.max(1).indices, lambda a: a.argmax(1)),
    "max_dim_index": (lambda t, x: x.max(1)[1], lambda a: a.argmax(1)),
    "min_dim_keepdim": (lambda t, x: list(x.min(0, keepdim=True)),
                        lambda a: [a.min(0, keepdims=True), a.argmin(0)[None]]),
    "fn_max_dim": (lambda t, x: list(t.max(x, dim=1)), lambda a: [a.max(1), a.argmax(1)]),
    "fn_max_positional": (lambda t, x: list(t.max(x, 0)), lambda a: [a.max(0), a.argmax(0)]),
    "fn_max_two": (lambda t, x: t.max(x, -x), lambda a: np.maximum(a, -a)),
    "argmax": (lambda t, x: x.argmax(), lambda a: a.argmax()),
    "argmax_dim": (lambda t, x: x.argmax(dim=1), lambda a: a.argmax(1)),
    "fn_argmax_dim": (lambda t, x: t.argmax(x, dim=1), lambda a: a.argmax(1)),
    "argmin_dim": (lambda t, x: x.argmin(1), lambda a: a.argmin(1)),
    "reshape": (lambda t, x: x.reshape(4, 3), lambda a: a.reshape(4, 3)),
    "reshape_tuple": (lambda t, x: x.reshape((2, -1)), lambda a: a.reshape(2, -1)),
    "view": (lambda t, x: x.view(-1), lambda a: a.reshape(-1)),
    "view_batch": (lambda t, x: x.view(x.size(0), -1), lambda a: a.reshape(3, -1)),
    "flatten": (lambda t, x: x.flatten(), lambda a: a.reshape(-1)),
    "flatten_start": (lambda t, x: x.reshape(3, 2, 2).flatten(1), lambda a: a.reshape(3, 4)),
    "fn_flatten": (lambda t, x: t.flatten(x), lambda a: a.reshape(-1)),
    "unsqueeze": (lambda t, x: x.unsqueeze(0), lambda a: a[None]),
    "unsqueeze_neg": (lambda t, x: x.unsqueeze(-1), lambda a: a[..., None]),
    "fn_unsqueeze": (lambda t, x: t.unsqueeze(x, 1), lambda a: a[:, None]),
    "squeeze": (lambda t, x: x.unsqueeze(0).squeeze(), lambda a: a),
    "squeeze_dim": (lambda t, x: x.unsqueeze(1).squeeze(1), lambda a: a),
    "squeeze_not_one": (lambda t, x: x.squeeze(0), lambda a: a),
    "permute": (lambda t, x: x.reshape(3, 2, 2).permute(2, 0, 1),
                lambda a: a.reshape(3, 2, 2).transpose(2, 0, 1)),
    "transpose": (lambda t, x: x.transpose(0, 1), lambda a: a.T),
    "fn_transpose": (lambda t, x: t.transpose(x, 1, 0), lambda a: a.T),
    "t": (lambda t, x: x.t(), lambda a: a.T),
    "clone": (lambda t, x: x.clone(), lambda a: a),
    "float_of_long": (lambda t, x: x.long().float(), lambda a: a.astype(np.int64).astype(np.float32)),
    "long": (lambda t, x: x.long(), lambda a: a.astype(np.int64)),
    "int": (lambda t, x: x.int(), lambda a: a.astype(np.int32)),
    "double": (lambda t, x: x.double(), lambda a: a.astype(np.float64)),
    "half": (lambda t, x: x.half().float(), lambda a: a.astype(np.float16).astype(np.float32)),
    "bool": (lambda t, x: x.bool(), lambda a: a.astype(bool)),
    "type_dtype": (lambda t, x: x.type(t.float64), lambda a: a.astype(np.float64)),
    "to_dtype": (lambda t, x: x.to(t.int64), lambda a: a.astype(np.int64)),
    "to_device_dtype": (lambda t, x: x.to("cpu", t.float64), lambda a: a.astype(np.float64)),
    "to_non_blocking": (lambda t, x: x.to("cpu", non_blocking=True), lambda a: a),
    "to_other": (lambda t, x: x.to(t.tensor([1, 2])), lambda a: a.astype(np.int64)),
    "numel": (lambda t, x: x.numel(), lambda a: 12),
    "fn_numel": (lambda t, x: t.numel(x), lambda a: 12),
    "dim": (lambda t, x: x.dim(), lambda a: 2),
    "ndimension": (lambda t, x: x.ndimension(), lambda a: 2),
    "size_call": (lambda t, x: tuple(x.size()), lambda a: (3, 4)),
    "size_d": (lambda t, x: x.size(1), lambda a: 4),
    "size_neg": (lambda t, x: x.size(-2), lambda a: 3),
    "shape": (lambda t, x: tuple(x.shape), lambda a: (3, 4)),
    "shape_index": (lambda t, x: x.shape[0], lambda a: 3),
    "add_": (lambda t, x: x.clone().add_(1.0), lambda a: a + 1),
    "add_alpha": (lambda t, x: x.clone().add_(x, alpha=2), lambda a: a * 3),
    "sub_": (lambda t, x: x.clone().sub_(x), lambda a: a * 0),
    "mul_": (lambda t, x: x.clone().mul_(2), lambda a: a * 2),
    "div_": (lambda t, x: x.clone().div_(2), lambda a: a / 2),
    "zero_": (lambda t, x: x.clone().zero_(), lambda a: a * 0),
    "fill_": (lambda t, x: x.clone().fill_(3.5), lambda a: np.full_like(a, 3.5)),
    "copy_": (lambda t, x: t.zeros(3, 4).copy_(x), lambda a: a),
    "copy_broadcast": (lambda t, x: t.zeros(3, 4).copy_(x[0]), lambda a: np.broadcast_to(a[0], a.shape)),
    "clamp_": (lambda t, x: x.clone().clamp_(min=0), lambda a: np.maximum(a, 0)),
    "masked_fill": (lambda t, x: x.masked_fill(x > 1, -1.0), lambda a: np.where(a > 1, -1, a)),
    "masked_fill_inf": (lambda t, x: x.masked_fill(x == 0, float("-inf")),
                        lambda a: np.where(a == 0, -np.inf, a)),
    "masked_fill_": (lambda t, x: x.clone().masked_fill_(x < 0, 0.0), lambda a: np.maximum(a, 0)),
    "clamp": (lambda t, x: x.clamp(-1, 1), lambda a: np.clip(a, -1, 1)),
    "clamp_min": (lambda t, x: x.clamp(min=0), lambda a: np.maximum(a, 0)),
    "clip": (lambda t, x: x.clip(max=0.5), lambda a: np.minimum(a, 0.5)),
    "fn_clamp": (lambda t, x: t.clamp(x, min=-0.5, max=0.5), lambda a: np.clip(a, -0.5, 0.5)),
    "topk": (lambda t, x: list(x.topk(2)), lambda a: [-np.sort(-a, 1)[:, :2], np.argsort(-a, 1, kind="stable")[:, :2]]),
    "topk_dim0_smallest": (lambda t, x: list(x.topk(1, dim=0, largest=False)),
                           lambda a: [a.min(0, keepdims=True), a.argmin(0)[None]]),
    "fn_topk": (lambda t, x: t.topk(x, 3).values, lambda a: -np.sort(-a, 1)[:, :3]),
    "tolist": (lambda t, x: x.tolist(), lambda a: a.tolist()),
    "item": (lambda t, x: x[1, 2].item(), lambda a: 7.0),
    "sum_item": (lambda t, x: x.sum().item(), lambda a: float(a.sum())),
    "expand": (lambda t, x: x[:1].expand(3, 4), lambda a: np.broadcast_to(a[:1], (3, 4))),
    "expand_keep": (lambda t, x: x[:, :1].expand(-1, 5), lambda a: np.broadcast_to(a[:, :1], (3, 5))),
    "expand_as": (lambda t, x: x[:1].expand_as(x), lambda a: np.broadcast_to(a[:1], a.shape)),
    "repeat": (lambda t, x: x.repeat(2, 1), lambda a: np.tile(a, (2, 1))),
    "split": (lambda t, x: list(x.split(2, dim=1)), lambda a: [a[:, :2], a[:, 2:]]),
    "split_uneven": (lambda t, x: list(x.split(2)), lambda a: [a[:2], a[2:]]),
    "split_sizes": (lambda t, x: list(x.split([1, 3], dim=1)), lambda a: [a[:, :1], a[:, 1:]]),
    "chunk": (lambda t, x: list(x.chunk(2, dim=1)), lambda a: [a[:, :2], a[:, 2:]]),
    "chunk_uneven": (lambda t, x: list(x.chunk(2)), lambda a: [a[:2], a[2:]]),
    "cat": (lambda t, x: t.cat([x, x], dim=1), lambda a: np.concatenate([a, a], 1)),
    "cat_default": (lambda t, x: t.cat((x, x)), lambda a: np.concatenate([a, a], 0)),
    "stack_dim": (lambda t, x: t.stack([x, x], dim=1), lambda a: np.stack([a, a], 1)),
    "gather": (lambda t, x: x.gather(1, t.tensor([[0, 1], [2, 3], [1, 1]])),
               lambda a: np.take_along_axis(a, np.array([[0, 1], [2, 3], [1, 1]]), 1)),
    "scatter_": (lambda t, x: t.zeros(3, 4).scatter_(1, t.tensor([[3], [0], [2]]), x[:, :1]),
                 lambda a: np.array([[0, 0, 0, a[0, 0]], [a[1, 0], 0, 0, 0], [0, 0, a[2, 0], 0]])),
    "scatter_value": (lambda t, x: t.zeros(2, 3).scatter_(1, t.tensor([[1], [2]]), 1.0),
                      lambda a: np.array([[0, 1, 0], [0, 0, 1]], np.float32)),
    "index_select": (lambda t, x: x.index_select(1, t.tensor([3, 0])), lambda a: a[:, [3, 0]]),
    "where_method": (lambda t, x: x.where(x > 0, t.zeros(3, 4)), lambda a: np.where(a > 0, a, 0)),
    "where_fn": (lambda t, x: t.where(x > 0, x, -x), lambda a: np.abs(a)),
    "eq": (lambda t, x: x.eq(x.clone()), lambda a: a == a),
    "ne_scalar": (lambda t, x: x.ne(0), lambda a: a != 0),
    "lt": (lambda t, x: x.lt(1.0), lambda a: a < 1),
    "le": (lambda t, x: x.le(x), lambda a: a <= a),
    "gt": (lambda t, x: x.gt(0), lambda a: a > 0),
    "ge": (lambda t, x: x.ge(0.5), lambda a: a >= 0.5),
    "accuracy": (lambda t, x: (x.argmax(1) == t.tensor([2, 2, 3])).sum().item(), lambda a: 2),
    "accuracy_float": (lambda t, x: (x.argmax(dim=1) == t.tensor([2, 2, 3])).float().mean().item(),
                       lambda a: 2 / 3),
    "any": (lambda t, x: x.gt(6).any().item(), lambda a: True),
    "all_dim": (lambda t, x: x.gt(-5).all(dim=1), lambda a: (a > -5).all(1)),
    "nonzero": (lambda t, x: (x > 1).nonzero(), lambda a: np.argwhere(a > 1)),
    "nonzero_tuple": (lambda t, x: list((x > 1).nonzero(as_tuple=True)), lambda a: list(np.nonzero(a > 1))),
    "cumsum": (lambda t, x: x.cumsum(dim=1), lambda a: np.cumsum(a, 1)),
    "fn_cumsum": (lambda t, x: t.cumsum(x, 0), lambda a: np.cumsum(a, 0)),
    "softmax": (lambda t, x: x.softmax(dim=1),
                lambda a: np.exp(a - a.max(1, keepdims=True)) / np.exp(a - a.max(1, keepdims=True)).sum(1, keepdims=True)),
    "fn_softmax": (lambda t, x: t.softmax(x, 0).sum(0), lambda a: np.ones(4, np.float32)),
    "log_softmax": (lambda t, x: x.log_softmax(1).exp().sum(1), lambda a: np.ones(3, np.float32)),
    "std": (lambda t, x: x.std(), lambda a: a.std(ddof=1)),
    "std_dim": (lambda t, x: x.std(dim=1), lambda a: a.std(1, ddof=1)),
    "std_biased": (lambda t, x: x.std(unbiased=False), lambda a: a.std()),
    "var": (lambda t, x: x.var(), lambda a: a.var(ddof=1)),
    "var_dim_keepdim": (lambda t, x: x.var(0, keepdim=True), lambda a: a.var(0, ddof=1, keepdims=True)),
    "fn_std_dim": (lambda t, x: t.std(x, dim=0), lambda a: a.std(0, ddof=1)),
    "norm": (lambda t, x: x.norm(), lambda a: np.linalg.norm(a)),
    "norm_dim": (lambda t, x: x.norm(dim=1), lambda a: np.linalg.norm(a, axis=1)),
    "norm_p1": (lambda t, x: x.norm(p=1), lambda a: np.abs(a).sum()),
    "sort": (lambda t, x: list(x.sort()), lambda a: [np.sort(a, 1), np.argsort(a, 1, kind="stable")]),
    "sort_desc_dim0": (lambda t, x: x.sort(dim=0, descending=True).values, lambda a: -np.sort(-a, 0)),
    "argsort": (lambda t, x: x.argsort(dim=1), lambda a: np.argsort(a, 1, kind="stable")),
    "abs": (lambda t, x: x.abs(), np.abs),
    "exp": (lambda t, x: x.exp(), np.exp),
    "log": (lambda t, x: x.abs().add(1).log(), lambda a: np.log(np.abs(a) + 1)),
    "sqrt": (lambda t, x: x.abs().sqrt(), lambda a: np.sqrt(np.abs(a))),
    "pow": (lambda t, x: x.pow(2), lambda a: a ** 2),
    "pow_op": (lambda t, x: x ** 3, lambda a: a ** 3),
    "neg": (lambda t, x: x.neg(), lambda a: -a),
    "relu": (lambda t, x: x.relu(), lambda a: np.maximum(a, 0)),
    "sigmoid": (lambda t, x: x.sigmoid(), lambda a: 1 / (1 + np.exp(-a))),
    "tanh": (lambda t, x: x.tanh(), np.tanh),
    "detach": (lambda t, x: x.detach(), lambda a: a),
    "numpy": (lambda t, x: x.cpu().numpy(), lambda a: a),
    "cpu": (lambda t, x: x.cpu(), lambda a: a),
    "contiguous_view": (lambda t, x: x.t().contiguous().view(-1), lambda a: a.T.reshape(-1)),
    "mm": (lambda t, x: x.mm(x.t()), lambda a: a @ a.T),
    "matmul_op": (lambda t, x: x @ x.T, lambda a: a @ a.T),
    "unbind": (lambda t, x: list(x.unbind(1)), lambda a: list(a.T)),
    "flip": (lambda t, x: x.flip(0), lambda a: a[::-1]),
    "type_as": (lambda t, x: t.tensor([1, 2]).type_as(x), lambda a: np.array([1, 2], np.float32)),
    "view_as": (lambda t, x: x.reshape(12).view_as(x), lambda a: a),
    "permute_tuple": (lambda t, x: x.permute((1, 0)), lambda a: a.T),
    "zeros_varargs": (lambda t, x: t.zeros(4, 3), lambda a: np.zeros((4, 3), np.float32)),
    "ones_varargs": (lambda t, x: t.ones(2, 3, dtype=t.int64), lambda a: np.ones((2, 3), np.int64)),
    "empty_varargs": (lambda t, x: tuple(t.empty(2, 5).shape), lambda a: (2, 5)),
    "zeros_tuple": (lambda t, x: t.zeros((2, 2)), lambda a: np.zeros((2, 2), np.float32)),
    "full": (lambda t, x: t.full((2, 2), 7.0), lambda a: np.full((2, 2), 7, np.float32)),
    "tensor_floats": (lambda t, x: t.tensor([[1.5, 2.0]]), lambda a: np.array([[1.5, 2]], np.float32)),
    "tensor_ints": (lambda t, x: t.tensor([1, 2, 3]), lambda a: np.array([1, 2, 3], np.int64)),
    "tensor_bools": (lambda t, x: t.tensor([True, False]), lambda a: np.array([True, False])),
    "tensor_mixed": (lambda t, x: t.tensor([1, 2.5]), lambda a: np.array([1, 2.5], np.float32)),
    "tensor_numpy64": (lambda t, x: t.tensor(np.ones(2)), lambda a: np.ones(2)),
    "tensor_of_tensors": (lambda t, x: t.tensor([x[0, 0], x[1, 2]]), lambda a: np.array([a[0, 0], 7.0])),
    "tensor_dtype": (lambda t, x: t.tensor([1, 2], dtype=t.float), lambda a: np.array([1, 2], np.float32)),
    "dtype_aliases": (lambda t, x: [str(d).split(".")[-1] for d in (t.float, t.long, t.int, t.double, t.half)],
                      lambda a: ["float32", "int64", "int32", "float64", "float16"]),
    "allclose": (lambda t, x: t.allclose(x, x * 1.000001), lambda a: True),
    "allclose_not": (lambda t, x: t.allclose(x, x + 1e-2), lambda a: False),
    "int_plus_float_tensor": (lambda t, x: str((x + t.tensor([1, 2, 3, 4], dtype=t.int32)).dtype).split(".")[-1],
                              lambda a: "float32"),
    "long_times_float_scalar": (lambda t, x: str((t.tensor([1, 2]) * 2.0).dtype).split(".")[-1],
                                lambda a: "float32"),
    "long_plus_int_scalar": (lambda t, x: str((t.tensor([1, 2]) + 1).dtype).split(".")[-1],
                             lambda a: "int64"),
    "half_plus_float_scalar": (lambda t, x: str((x.half() + 1.5).dtype).split(".")[-1],
                               lambda a: "float16"),
    "float_plus_double_scalar_keeps": (lambda t, x: str((x * 3.141592653589793).dtype).split(".")[-1],
                                       lambda a: "float32"),
}


def _module_name(t):
    return "torch" if torch is not None and t is torch else "ctensor"


def run_idiom(name):
    fn, numpy_fn = IDIOMS[name]
    got = fn(ct, ct.tensor(A))
    same(got, numpy_fn(A.copy()))
    if torch is not None:
        same(got, fn(torch, torch.tensor(A)))


def test_idioms():
    failed = []
    for name in IDIOMS:
        try:
            run_idiom(name)
        except Exception as e:  # every failing idiom is reported, not only the first
            failed.append(f"{name}: {type(e).__name__}: {e}")
    assert not failed, "\n".join(failed)


@contextlib.contextmanager
def raises(kind, *words):
    try:
        yield
    except kind as e:
        text = str(e)
        for w in words:
            assert w in text, (w, text)
    else:
        raise AssertionError(f"no {kind.__name__} raised")


def test_size_is_the_array_api_integer_and_callable():
    x = ct.zeros(3, 4)
    assert x.size == 12 and isinstance(x.size, int) and x.size + 1 == 13
    assert x.size() == (3, 4) and x.size(0) == 3 and x.size(-1) == 4
    with raises(IndexError, "size"):
        x.size(2)


def test_view_shares_storage_and_names_reshape_when_it_cannot():
    x = ct.zeros(3, 4)
    v = x.view(12)
    v[0] = 5.0
    assert x[0, 0].item() == 5.0
    with raises(ct.ShapeError, ".reshape("):
        x.t().view(12)
    assert x.t().reshape(12).shape == (12,)
    for sizes in ((5,), (-1, 5), (-1, -1), (-2, -6)):
        with raises(ct.ShapeError, "12 elements"):
            x.view(*sizes)


def test_from_numpy_shares_memory_and_tensor_copies():
    a = np.zeros(4, np.float32)
    shared, copied = ct.from_numpy(a), ct.tensor(a)
    a[1] = 3
    assert shared.tolist() == [0, 3, 0, 0] and copied.tolist() == [0, 0, 0, 0]
    assert ct.from_numpy(np.arange(3)).dtype == ct.int64
    with raises(TypeError, "numpy"):
        ct.from_numpy([1, 2])


def test_tensor_requires_grad():
    w = ct.tensor([1.0, 2.0], requires_grad=True)
    (w * w).sum().backward()
    assert w.is_leaf and w.grad.tolist() == [2.0, 4.0]
    w.data.mul_(0.5)  # the PyTorch update through .data under no autograd record
    assert w.tolist() == [0.5, 1.0]


def test_manual_sgd_step_in_place_under_no_grad():
    w = ct.tensor([1.0, 2.0], requires_grad=True)
    (w * w).sum().backward()
    with ct.no_grad():
        w.sub_(0.25 * w.grad)
    w.grad.zero_()
    assert w.tolist() == [0.5, 1.0] and w.requires_grad and w.grad.tolist() == [0.0, 0.0]


def test_randint_randperm_seeded():
    ct.manual_seed(3)
    r = ct.randint(2, 9, (1000,))
    assert r.dtype == ct.int64 and r.min().item() == 2 and r.max().item() == 8
    assert ct.randint(5, (3, 2)).shape == (3, 2)
    p = ct.randperm(50)
    assert p.dtype == ct.int64 and sorted(p.tolist()) == list(range(50))
    ct.manual_seed(3)
    assert ct.randint(2, 9, (1000,)).tolist() == r.tolist()


def test_array_api_spellings_keep_the_standard():
    x = ct.tensor(A)
    assert ct.max(x).item() == 7.0 and ct.max(x, axis=1).shape == (3,)  # values only
    np.testing.assert_allclose(ct.std(x).item(), A.std(), rtol=1e-5)  # correction=0
    assert ct.sort(x).shape == (3, 4)  # values only
    assert isinstance(ct.nonzero(x > 1), tuple)
    assert ct.sum(x, axis=1, keepdims=True).shape == (3, 1)
    with raises(TypeError, "dim", "axis"):
        ct.sum(x, dim=1, axis=1)


def test_namespace_functions_take_pytorchs_keywords():
    a = A.reshape(3, 1, 4)
    x = ct.tensor(a)
    same(ct.squeeze(x, dim=1), a[:, 0])
    same(ct.expand_dims(x, dim=0), a[None])
    same(ct.flip(x, dims=(0,)), a[::-1])
    same(ct.roll(x, shifts=1, dims=2), np.roll(a, 1, 2))
    same(list(ct.unstack(x, dim=2)), [a[:, :, i] for i in range(4)])
    same(ct.count_nonzero(x, dim=2), np.count_nonzero(a, 2))
    same(ct.take_along_axis(x, ct.zeros((3, 1, 1), dtype=ct.int64), dim=2), a[:, :, :1])
    same(ct.take(x, ct.tensor([0, 3]), dim=2), a[:, :, [0, 3]])
    same(ct.repeat(x, 2, dim=1), np.repeat(a, 2, 1))
    same(ct.cumulative_sum(x, dim=2), np.cumsum(a, 2))
    same(ct.argsort(x, dim=0), np.argsort(a, 0, kind="stable"))
    same(ct.concat([x, x], dim=1), np.concatenate([a, a], 1))
    same(ct.prod(x, dim=2, keepdim=True), a.prod(2, keepdims=True))
    same(ct.any(x > 3, dim=2), (a > 3).any(2))
    same(ct.var(x, dim=2, unbiased=False), a.var(2))
    with raises(TypeError, "dims", "axis"):
        ct.flip(x, dims=0, axis=0)


def test_linear_refuses_a_float64_input_naming_the_fix():
    layer = ct.nn.Linear(4, 2, device="cpu")
    x = ct.tensor(A, device="cpu")
    with raises(ct.DTypeError, "float64", "float32", ".float()"):
        layer(x.double())
    assert layer(x).dtype == ct.float32
    conv = ct.nn.Conv2d(1, 1, 3, device="cpu")
    with raises(ct.DTypeError, "float64", "float32"):
        conv(ct.zeros(1, 1, 4, 4, dtype=ct.float64, device="cpu"))


def test_namedtuples_are_return_types():
    v = ct.tensor(A).max(dim=1)
    assert isinstance(v, ct.return_types.max) and v._fields == ("values", "indices")


if __name__ == "__main__":  # with a Python that has torch and no pytest
    for test in [f for n, f in sorted(globals().items()) if n.startswith("test_")]:
        test()
    print(f"{len(IDIOMS)} idioms agree with NumPy" + (" and torch" if torch else ""))
