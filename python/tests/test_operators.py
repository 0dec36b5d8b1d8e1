"""Tensor's operators against NumPy on every device present: arithmetic, comparison,
bitwise and matmul, reflected and in-place forms, and Python scalars, which are weakly
typed (x + 1 keeps x's dtype), as the array API standard says."""

import operator

import numpy as np
import pytest

import ctensor as ct
from conftest import NUMPY_DTYPES, to_numpy

A = [[1.0, -2.0, 3.5], [0.5, 4.0, -6.0]]
B = [[2.0, 0.5, -1.5], [3.0, -2.0, 2.5]]

ARITH = [operator.add, operator.sub, operator.mul, operator.truediv]
COMPARE = [operator.eq, operator.ne, operator.lt, operator.le, operator.gt, operator.ge]
NUMERIC = [d for d in NUMPY_DTYPES if d != ct.bool]


def pair(dtype, device):
    np_dtype = NUMPY_DTYPES[dtype]
    a, b = np.array(A).astype(np_dtype), np.array(B).astype(np_dtype)
    if ct.isdtype(dtype, "unsigned integer"):
        a, b = np.abs(np.array(A)).astype(np_dtype) + 3, np.abs(np.array(B)).astype(np_dtype) + 1
    return a, b, ct.asarray(a, device=device), ct.asarray(b, device=device)


def close(x, expected, dtype=None):
    got = to_numpy(x)
    tol = 1e-2 if x.dtype in (ct.float16, ct.bfloat16) else 1e-6
    np.testing.assert_allclose(got.astype(np.float64), np.asarray(expected, dtype=np.float64),
                               rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", NUMERIC, ids=lambda d: d.name)
@pytest.mark.parametrize("op", ARITH + COMPARE, ids=lambda f: f.__name__)
def test_binary_operator_matches_numpy(device, dtype, op):
    a, b, x, y = pair(dtype, device)
    out = op(x, y)
    with np.errstate(divide="ignore"):  # integer 1 / 0 is inf, as in NumPy's true division
        expected = op(a.astype(np.float64), b.astype(np.float64))
    if op in COMPARE:
        assert out.dtype == ct.bool
    elif op is operator.truediv and not ct.isdtype(dtype, "real floating"):
        assert out.dtype == ct.float32
    else:
        assert out.dtype == dtype
        if ct.isdtype(dtype, "unsigned integer"):
            expected = op(a, b)  # wraps around as NumPy's unsigned integers
    close(out, expected)


@pytest.mark.parametrize("dtype", [ct.float32, ct.float64, ct.int32, ct.int64],
                         ids=lambda d: d.name)
def test_pow_mod_matmul(device, dtype):
    a, b, x, y = pair(dtype, device)
    bb = np.abs(b) + 1
    yy = ct.asarray(bb, device=device)
    close(x % yy, np.mod(a, bb))
    close(ct.abs(x) ** 2, np.abs(a) ** 2)
    close(x @ y.mT, a @ b.T)


def test_scalars_are_weak(device):
    f16 = ct.ones((2,), dtype=ct.float16, device=device)
    assert (f16 + 1).dtype == ct.float16 and (1 + f16).dtype == ct.float16
    assert (f16 * 2.5).dtype == ct.float16
    i32 = ct.ones((2,), dtype=ct.int32, device=device)
    assert (i32 + 1).dtype == ct.int32 and (3 - i32).dtype == ct.int32
    assert (i32 + 1.5).dtype == ct.float32
    assert (i32 < 2).dtype == ct.bool
    u8 = ct.asarray([200], dtype=ct.uint8, device=device)
    assert (u8 + 1).dtype == ct.uint8 and (u8 + 1).item() == 201


def test_reflected_operators(device):
    x = ct.asarray([1.0, 2.0, 4.0], device=device)
    assert (10 - x).tolist() == [9, 8, 6]
    assert (8 / x).tolist() == [8, 4, 2]
    assert (2 ** x).tolist() == [2, 4, 16]
    assert (7 % x).tolist() == [0, 1, 3]
    assert (3 > x).tolist() == [True, True, False]
    assert (-x).tolist() == [-1, -2, -4] and (+x) is x
    assert abs(ct.asarray([-1, 2], device=device)).tolist() == [1, 2]


SCALAR_FORMS = {
    "x + 1.0": lambda x: x + 1.0, "1.0 + x": lambda x: 1.0 + x, "x - 1.5": lambda x: x - 1.5,
    "1.0 - x": lambda x: 1.0 - x, "2.0 / x": lambda x: 2.0 / x, "2 ** x": lambda x: 2 ** x,
    "3.0 // x": lambda x: 3.0 // x, "3.0 % x": lambda x: 3.0 % x, "x ** 2": lambda x: x ** 2,
}


@pytest.mark.parametrize("dtype", [ct.float32, ct.float64, ct.float16], ids=lambda d: d.name)
@pytest.mark.parametrize("form", list(SCALAR_FORMS), ids=str)
def test_python_scalar_costs_one_allocation(device, dtype, form):
    """A Python scalar on either side reaches the kernel by value: the result is the only
    allocation, and the values are NumPy's."""
    expr = SCALAR_FORMS[form]
    a = np.array(A, dtype=NUMPY_DTYPES[dtype])
    x = ct.asarray(a, device=device)
    expr(x)
    before = ct.memory_stats(device)["alloc_count"]
    out = expr(x)
    assert ct.memory_stats(device)["alloc_count"] - before == 1
    assert out.dtype == dtype
    with np.errstate(all="ignore"):
        close(out, expr(a))


@pytest.mark.parametrize("dtype", [ct.int32, ct.int64, ct.uint8, ct.int8], ids=lambda d: d.name)
def test_reflected_integer_scalars_match_numpy(device, dtype):
    a = np.array([[1, 2, 3], [4, 5, 7]]).astype(NUMPY_DTYPES[dtype])
    x = ct.asarray(a, device=device)
    for expr in (lambda v: 2 ** v, lambda v: 100 // v, lambda v: 100 % v, lambda v: 9 - v,
                 lambda v: 3 * v, lambda v: 50 > v, lambda v: 2 << v):
        out, want = expr(x), expr(a)
        assert out.dtype == dtype or out.dtype == ct.bool
        np.testing.assert_array_equal(to_numpy(out), want)
    # a negative integer exponent is an error, as in NumPy, with the scalar first too
    with pytest.raises(ct.InvalidArgumentError, match="negative"):
        2 ** ct.asarray([-1], dtype=dtype if dtype != ct.uint8 else ct.int8, device=device)


def test_in_place_operators_write_into_the_array(device):
    x = ct.asarray([1.0, 2.0, 3.0], device=device)
    view = x[1:]
    x += 1
    x *= ct.asarray([2.0, 2.0, 2.0], device=device)
    x -= 1
    x /= 2
    assert x.tolist() == [1.5, 2.5, 3.5] and view.tolist() == [2.5, 3.5]
    i = ct.asarray([1, 2], dtype=ct.int32, device=device)
    with pytest.raises(ct.DTypeError):
        i /= 2  # the result would be float32
    with pytest.raises(ct.ShapeError):
        v = ct.ones((3,), device=device)
        v += ct.ones((2, 3), device=device)
    m = ct.eye(2, device=device)
    m @= ct.full((2, 2), 3.0, device=device)
    assert m.tolist() == [[3, 3], [3, 3]]


def test_bool_bitwise_operators(device):
    p = ct.asarray([True, True, False, False], device=device)
    q = ct.asarray([True, False, True, False], device=device)
    assert (p & q).tolist() == [True, False, False, False]
    assert (p | q).tolist() == [True, True, True, False]
    assert (p ^ q).tolist() == [False, True, True, False]
    assert (~p).tolist() == [False, False, True, True]
    assert (p & True).tolist() == [True, True, False, False]


def test_operators_the_core_lacks_say_so(device):
    x = ct.asarray([5, 6], dtype=ct.int32, device=device)
    for op in (operator.floordiv, operator.and_, operator.lshift):
        if op is operator.floordiv and hasattr(ct, "floor_divide"):
            continue
        if op is operator.and_ and hasattr(ct, "bitwise_and"):
            continue
        if op is operator.lshift and hasattr(ct, "bitwise_left_shift"):
            continue
        with pytest.raises(ct.UnsupportedError, match="core"):
            op(x, x)


def test_other_operands_are_not_implemented(device):
    x = ct.ones((2,), device=device)
    with pytest.raises(TypeError):
        x + "a"
    with pytest.raises(TypeError):
        x + [1.0]
    assert (x + 1j).dtype == ct.complex64  # a Python complex is an operand (test_complex.py)
    assert (x == None) is False  # noqa: E711 (identity fallback)


def test_errors_carry_the_c_message(device):
    x = ct.ones((2, 3), device=device)
    with pytest.raises(ct.ShapeError, match=r"ct\.add") as info:
        x + ct.ones((4,), device=device)
    assert isinstance(info.value, ValueError) and isinstance(info.value, ct.Error)
    with pytest.raises(ct.InvalidArgumentError, match="remainder"):
        ct.asarray([1, 2], device=device) % 0


def test_device_mismatch(gpu):
    with pytest.raises(ct.DeviceMismatchError, match=r"x\.to\(device\)") as info:
        ct.ones((2,), device="cpu") + ct.ones((2,), device=gpu)
    assert isinstance(info.value, ValueError)
