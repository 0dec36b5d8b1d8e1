"""ct.einsum against numpy.einsum on every device: NumPy's call forms (operands, sublists)
and PyTorch's (one list of Tensors), float32, float64, complex, integer and bool operands, gradients against central
differences, and the errors."""

import numpy as np
import pytest

import ctensor as ct
from conftest import device_array, to_numpy

# (equation, operand shapes), each also valid for numpy.einsum.
EQUATIONS = [
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("ij,jk", [(2, 3), (3, 4)]),
    ("bij,bjk->bik", [(2, 2, 3), (2, 3, 4)]),
    ("bhqd,bhkd->bhqk", [(2, 2, 3, 4), (2, 2, 5, 4)]),
    ("i,j->ij", [(3,), (4,)]),
    ("i,i", [(5,), (5,)]),
    ("ii", [(4, 4)]),
    ("ii->i", [(4, 4)]),
    ("ij->ji", [(2, 3)]),
    ("ji", [(2, 3)]),
    ("ij->", [(2, 3)]),
    ("iij->j", [(3, 3, 2)]),
    ("...ij->...ji", [(2, 3, 4)]),
    ("...ij,...jk->...ik", [(2, 3, 4), (5, 2, 4, 3)]),
    ("...ij,...jk->...ik", [(1, 3, 4), (5, 2, 4, 3)]),
    ("...ij,jk", [(2, 3, 4), (4, 5)]),
    ("ij,ij->ij", [(2, 1), (2, 3)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]),
    ("ij,jk,kl,lm->im", [(2, 3), (3, 2), (2, 4), (4, 3)]),
    ("ij,jk,ik->", [(2, 3), (3, 4), (2, 4)]),
    ("bn,anm,bm->ba", [(2, 3), (4, 3, 5), (2, 5)]),
    ("bA", [(2, 3)]),
    (" i j , j k -> i k ", [(2, 3), (3, 4)]),
]


def _values(shapes, seed, dtype):
    rng = np.random.default_rng(seed)
    out = []
    for shape in shapes:
        a = rng.uniform(-1, 1, shape)
        if np.issubdtype(dtype, np.complexfloating):
            a = a + 1j * rng.uniform(-1, 1, shape)
        if np.issubdtype(dtype, np.integer):
            a = np.round(a * 4)
        if dtype == np.bool_:
            a = a > 0
        out.append(a.astype(dtype))
    return out


@pytest.mark.parametrize("eq,shapes", EQUATIONS, ids=[e for e, _ in EQUATIONS])
@pytest.mark.parametrize("dtype,tol", [(np.float64, 1e-12), (np.float32, 1e-5),
                                       (np.complex128, 1e-12), (np.int32, 0), (np.bool_, 0)],
                         ids=["float64", "float32", "complex128", "int32", "bool"])
def test_matches_numpy(device, eq, shapes, dtype, tol):
    arrays = _values(shapes, 3, dtype)
    xs = [device_array(a, device) for a in arrays]
    expected = np.einsum(eq, *arrays)
    for got in (ct.einsum(eq, *xs), ct.einsum(eq, xs)):
        assert got.device == device
        assert to_numpy(got).dtype == expected.dtype
        np.testing.assert_allclose(to_numpy(got), expected, rtol=tol, atol=tol)


def test_array_likes_and_tuple(device):
    a = np.arange(6.0).reshape(2, 3)
    x = device_array(a, device)
    np.testing.assert_allclose(to_numpy(ct.einsum("ij,j->i", x, [1.0, 2.0, 3.0])),
                               a @ [1.0, 2.0, 3.0])
    np.testing.assert_allclose(to_numpy(ct.einsum("ij,kj->ik", (x, x))), a @ a.T)
    # A nested list of numbers is one array, as NumPy reads it.
    assert int(to_numpy(ct.einsum("ii", [[1, 2], [3, 4]]))) == 5


def test_promotes_as_matmul(device):
    a = device_array(np.ones((2, 3), np.float32), device)
    b = device_array(np.ones((3, 4), np.float64), device)
    assert ct.einsum("ij,jk->ik", a, b).dtype == ct.float64
    assert ct.einsum("ij,jk->ik", a, b).dtype == ct.matmul(a, b).dtype


def _numeric_grad(eq, arrays, k, weight, eps=1e-6):
    grad = np.zeros_like(arrays[k])
    for idx in np.ndindex(arrays[k].shape):
        plus = [a.copy() for a in arrays]
        minus = [a.copy() for a in arrays]
        plus[k][idx] += eps
        minus[k][idx] -= eps
        grad[idx] = (np.sum(weight * np.einsum(eq, *plus)) -
                     np.sum(weight * np.einsum(eq, *minus))) / (2 * eps)
    return grad


@pytest.mark.parametrize("eq,shapes", [
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("bhqd,bhkd->bhqk", [(1, 2, 3, 2), (1, 2, 2, 2)]),
    ("ii->i", [(3, 3)]),
    ("iij->j", [(3, 3, 2)]),
    ("ij,jk,kl->il", [(2, 3), (3, 2), (2, 2)]),
    ("...ij,...jk->...ik", [(1, 2, 3), (2, 2, 3, 2)]),
    ("ij,ij->ij", [(2, 1), (2, 3)]),
], ids=lambda v: v if isinstance(v, str) else "")
def test_gradients(device, eq, shapes):
    arrays = _values(shapes, 7, np.float64)
    weight = np.random.default_rng(8).uniform(-1, 1, np.einsum(eq, *arrays).shape)
    xs = [device_array(a, device, requires_grad=True) for a in arrays]
    out = ct.einsum(eq, xs)
    ct.sum(out * device_array(weight, device)).backward()
    for k, x in enumerate(xs):
        np.testing.assert_allclose(to_numpy(x.grad), _numeric_grad(eq, arrays, k, weight),
                                   rtol=1e-6, atol=1e-8)


def test_gradient_matches_composition(device):
    """Attention scores' gradients are those of the matmul they stand for."""
    q, k = _values([(2, 3, 4), (2, 5, 4)], 9, np.float64)
    xq, xk = (device_array(a, device, requires_grad=True) for a in (q, k))
    ct.sum(ct.einsum("bqd,bkd->bqk", xq, xk) ** 2).backward()
    yq, yk = (device_array(a, device, requires_grad=True) for a in (q, k))
    ct.sum(ct.matmul(yq, ct.matrix_transpose(yk)) ** 2).backward()
    np.testing.assert_allclose(to_numpy(xq.grad), to_numpy(yq.grad), rtol=1e-12)
    np.testing.assert_allclose(to_numpy(xk.grad), to_numpy(yk.grad), rtol=1e-12)


@pytest.mark.parametrize("eq,shapes,error,words", [
    ("ij,j%->ik", [(2, 3), (3, 4)], ct.InvalidArgumentError, "'%'"),
    ("ij,jk->ii", [(2, 3), (3, 4)], ct.InvalidArgumentError, "repeated in the output"),
    ("ij,jk->iz", [(2, 3), (3, 4)], ct.InvalidArgumentError, "'z' is in no operand"),
    ("ij,jk->ik", [(2, 3), (4, 5)], ct.ShapeError, "operand 1 has size 4"),
    ("ij,jk->ik", [(2, 3)], ct.InvalidArgumentError, "but 1 operands came"),
    ("ijk->i", [(2, 3)], ct.ShapeError, "operand 0 has rank 2"),
    ("ii->i", [(2, 3)], ct.ShapeError, "operand 0 repeats subscript 'i'"),
    ("abcdefghijklmnopq->a", [(2, 3)], ct.InvalidArgumentError, "more than 16 axes"),
])
def test_errors(device, eq, shapes, error, words):
    xs = [ct.zeros(s, device=device) for s in shapes]
    with pytest.raises(error, match=words) as info:
        ct.einsum(eq, *xs)
    assert eq in str(info.value)


def test_sublist_form(device):
    a, b = _values([(2, 3), (3, 4)], 4, np.float64)
    x, y = device_array(a, device), device_array(b, device)
    for args in ([0, 1], [1, 2], [0, 2]), ([0, 1], [1, 2]), ([30, 27], [27, 51], [51, 30]):
        got = ct.einsum(x, args[0], y, *args[1:])
        np.testing.assert_allclose(to_numpy(got), np.einsum(a, args[0], b, *args[1:]), rtol=1e-12)
    np.testing.assert_allclose(to_numpy(ct.einsum(x, [..., 1], [...])),
                               np.einsum(a, [..., 1], [...]))


def test_bad_calls():
    with pytest.raises(TypeError, match="einsum: needs an equation"):
        ct.einsum()
    x = ct.zeros((2,))
    for sublist in ([52], [-1], ["a"], x):
        with pytest.raises(ValueError, match="einsum: a sublist holds ints in"):
            ct.einsum(x, sublist)


def test_device_mismatch(gpu):
    a = ct.zeros((2, 3), device=gpu)
    b = ct.zeros((3, 4), device="cpu")
    with pytest.raises(ct.DeviceMismatchError, match="einsum"):
        ct.einsum("ij,jk->ik", a, b)
