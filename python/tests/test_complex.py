"""complex64 and complex128 through the Python module, against NumPy's complex128: creation
from Python complex and NumPy arrays, exchange back (buffer, __array__, DLPack), scalars,
promotion, the elementwise functions with their special values, and the refusals."""
import math

import numpy as np
import pytest

import ctensor as ct
from conftest import to_numpy

VALUES = [1 + 2j, -3.5 + 0.25j, 0j, -0.0 - 1j, 2.0 - 0.0j, 1e-8 + 1e-8j, 7 - 7j]


def test_dtypes_and_info():
    assert ct.complex64.name == "complex64" and ct.complex128.name == "complex128"
    assert ct.isdtype(ct.complex64, "complex floating")
    assert ct.isdtype(ct.complex128, "numeric")
    assert not ct.isdtype(ct.complex64, "real floating")
    assert not ct.isdtype(ct.float32, "complex floating")
    assert ct.finfo(ct.complex64).dtype == ct.float32
    assert ct.finfo(ct.complex128).eps == np.finfo(np.complex128).eps
    assert ct.finfo(ct.complex64).max == np.finfo(np.complex64).max
    assert ct.result_type(ct.complex64, ct.float64) == ct.complex128
    assert ct.result_type(ct.complex64, ct.float32) == ct.complex64
    assert ct.result_type(ct.complex128, ct.float32) == ct.complex128
    info = ct.__array_namespace_info__()
    assert info.default_dtypes()["complex floating"] == ct.complex64
    assert set(info.dtypes(kind="complex floating")) == {"complex64", "complex128"}


def test_asarray_and_back(device):
    ref = np.array(VALUES)
    for dtype, np_dtype in ((ct.complex64, np.complex64), (ct.complex128, np.complex128)):
        x = ct.asarray(ref.astype(np_dtype), device=device)
        assert x.dtype == dtype
        np.testing.assert_array_equal(to_numpy(x), ref.astype(np_dtype))
        assert to_numpy(x).dtype == np_dtype
        np.testing.assert_array_equal(np.from_dlpack(x.cpu()), ref.astype(np_dtype))
        back = ct.from_dlpack(ref.astype(np_dtype))
        assert back.dtype == dtype
    lst = ct.asarray(VALUES, device=device)
    assert lst.dtype == ct.complex64  # the default complex dtype
    mixed = ct.asarray([[1, 2.5], [1j, True]], dtype=ct.complex128, device=device)
    np.testing.assert_array_equal(to_numpy(mixed), np.array([[1, 2.5], [1j, 1]]))
    assert ct.asarray([1.0, 2.0], dtype=ct.complex128, device=device).dtype == ct.complex128
    assert ct.asarray(VALUES, dtype=ct.complex128).tolist() == VALUES
    with pytest.raises(ct.DTypeError, match="complex"):
        ct.asarray([1j], dtype=ct.float32)
    with pytest.raises(ct.DTypeError, match="complex"):
        ct.asarray(2j, dtype=ct.int32)


def test_scalars(device):
    z = ct.asarray(3 - 4j, device=device)
    assert z.dtype == ct.complex64 and z.ndim == 0
    assert complex(z) == 3 - 4j and z.item() == 3 - 4j
    assert complex(ct.asarray(2.5)) == 2.5 + 0j
    with pytest.raises(TypeError):
        float(z)
    assert "3.-4.j" in repr(z)
    x = ct.asarray([1.0, -2.0], device=device)
    assert (x * 1j).dtype == ct.complex64
    assert (ct.asarray([1.0], dtype=ct.float64, device=device) + 1j).dtype == ct.complex128
    assert (ct.asarray([1, 2], device=device) * 1j).dtype == ct.complex64
    np.testing.assert_array_equal(to_numpy(2j - x), 2j - np.array([1.0, -2.0]))
    c = ct.asarray([1 + 1j], dtype=ct.complex128, device=device)
    assert (c * 2.5).dtype == ct.complex128 and (c + 1).dtype == ct.complex128
    np.testing.assert_array_equal(to_numpy(1 / c), 1 / np.array([1 + 1j]))


def test_promotion(device):
    c64 = ct.asarray([1 + 1j], dtype=ct.complex64, device=device)
    assert (c64 + ct.asarray([1.0], dtype=ct.float64, device=device)).dtype == ct.complex128
    assert (c64 * ct.asarray([2.0], dtype=ct.float32, device=device)).dtype == ct.complex64
    assert (c64 - ct.asarray([3], dtype=ct.int32, device=device)).dtype == ct.complex64
    assert (c64 / ct.asarray([1j], dtype=ct.complex128, device=device)).dtype == ct.complex128


BINARY = [("add", np.add), ("subtract", np.subtract), ("multiply", np.multiply),
          ("divide", np.divide), ("pow", np.power), ("equal", np.equal),
          ("not_equal", np.not_equal)]


@pytest.mark.parametrize("name,ref", BINARY, ids=[b[0] for b in BINARY])
def test_binary_against_numpy(device, name, ref):
    a = np.array(VALUES)
    b = np.roll(a, 3) + (0.5 - 0.25j)
    fn = getattr(ct, name, None) or getattr(ct, {"subtract": "sub", "multiply": "mul",
                                                 "divide": "div", "equal": "eq",
                                                 "not_equal": "ne"}[name])
    got = to_numpy(fn(ct.asarray(a, device=device), ct.asarray(b, device=device)))
    with np.errstate(all="ignore"):
        want = ref(a, b)
    if name == "pow":  # 0 ** w is 0 for Re w > 0 (C's cpow), where NumPy gives NaN
        want = np.where(a == 0, 0, want)
    np.testing.assert_allclose(got, want, rtol=1e-13)


UNARY = ["negative", "positive", "square", "abs", "sign", "sqrt", "exp", "expm1", "log",
         "log1p", "log2", "log10", "sin", "cos", "tan", "sinh", "cosh", "tanh", "conj", "real",
         "imag", "isfinite", "isinf", "isnan", "round", "asin", "acos", "atan", "asinh", "acosh",
         "atanh"]


def _ours(name):
    aliases = {"negative": "neg", "conj": "conj"}
    return getattr(ct, aliases.get(name, name), None) or getattr(ct, name)


def _numpy(name, z):
    if name == "sign":  # the standard's z / |z| (NumPy 2's too)
        return np.where(z == 0, 0, z / np.where(z == 0, 1, np.abs(z)))
    if name == "log1p":  # NumPy's is log(1 + z), which cancels near 0: the series there
        small = np.abs(z) < 1e-4
        series = z - z * z / 2 + z * z * z / 3
        return np.where(small, series, np.log1p(np.where(small, 1, z)))
    if name in ("asin", "acos", "atan", "asinh", "acosh", "atanh"):
        name = "arc" + name[1:]
    return getattr(np, name)(z)


@pytest.mark.parametrize("name", UNARY)
def test_unary_against_numpy(device, name):
    z = np.array(VALUES + [0.5 + 30j, -40 + 0.5j])
    with np.errstate(all="ignore"):
        want = _numpy(name, z)
    for dtype, tol in ((ct.complex128, 1e-13), (ct.complex64, 3e-6)):
        x = ct.asarray(z, dtype=dtype, device=device)
        got = to_numpy(_ours(name)(x))
        if name in ("abs", "real", "imag"):
            assert got.dtype == (np.float64 if dtype == ct.complex128 else np.float32)
        ref = want if dtype == ct.complex128 else _numpy(name, z.astype(np.complex64))
        np.testing.assert_allclose(got, ref, rtol=tol, atol=1e-30)


# The standard's special cases, a few of each function: (function, input, expected).
SPECIAL = [
    ("exp", complex(0.0, 0.0), complex(1.0, 0.0)),
    ("exp", complex(-math.inf, 1.0), complex(0.0, 0.0)),
    ("exp", complex(math.inf, 0.0), complex(math.inf, 0.0)),
    ("exp", complex(math.nan, 0.0), complex(math.nan, 0.0)),
    ("log", complex(-0.0, 0.0), complex(-math.inf, math.pi)),
    ("log", complex(0.0, 0.0), complex(-math.inf, 0.0)),
    ("log", complex(math.inf, math.nan), complex(math.inf, math.nan)),
    ("log", complex(-1.0, -0.0), complex(0.0, -math.pi)),
    ("sqrt", complex(-4.0, 0.0), complex(0.0, 2.0)),
    ("sqrt", complex(-4.0, -0.0), complex(0.0, -2.0)),
    ("sqrt", complex(1.0, math.inf), complex(math.inf, math.inf)),
    ("sqrt", complex(math.inf, 1.0), complex(math.inf, 0.0)),
    ("sqrt", complex(-math.inf, 1.0), complex(0.0, math.inf)),
    ("tanh", complex(math.inf, 1.0), complex(1.0, 0.0)),
    ("tanh", complex(0.0, 0.0), complex(0.0, 0.0)),
    ("cosh", complex(0.0, 0.0), complex(1.0, 0.0)),
    ("sinh", complex(math.inf, 0.0), complex(math.inf, 0.0)),
    ("abs", complex(math.inf, math.nan), math.inf),
    # the inverse functions' cuts: the sign of the zero picks the side
    ("asin", complex(2.0, 0.0), complex(math.pi / 2, math.acosh(2.0))),
    ("asin", complex(2.0, -0.0), complex(math.pi / 2, -math.acosh(2.0))),
    ("acos", complex(2.0, -0.0), complex(0.0, math.acosh(2.0))),
    ("acosh", complex(-2.0, 0.0), complex(math.acosh(2.0), math.pi)),
    ("acosh", complex(-2.0, -0.0), complex(math.acosh(2.0), -math.pi)),
    ("atanh", complex(1.0, 0.0), complex(math.inf, 0.0)),
    ("atanh", complex(0.0, math.inf), complex(0.0, math.pi / 2)),
    ("asinh", complex(math.inf, math.inf), complex(math.inf, math.pi / 4)),
    ("acos", complex(-math.inf, 1.0), complex(math.pi, -math.inf)),
]


def _same(got, want):
    for g, w in ((got.real, want.real), (got.imag, want.imag)):
        if math.isnan(w):
            assert math.isnan(g)
        else:
            assert g == w and math.copysign(1, g) == math.copysign(1, w), (got, want)


@pytest.mark.parametrize("name,z,want", SPECIAL, ids=[f"{s[0]}({s[1]})" for s in SPECIAL])
def test_special_values(device, name, z, want):
    got = complex(getattr(ct, name)(ct.asarray(z, dtype=ct.complex128, device=device)))
    _same(got, complex(want))


def test_refused_ops_name_themselves(device):
    z = ct.asarray([1j], device=device)
    with pytest.raises(ct.DTypeError, match="not defined for complex"):
        z < z
    with pytest.raises(ct.DTypeError, match="floor"):
        ct.floor(z)
    with pytest.raises(ct.DTypeError, match="float32"):
        z.astype(ct.float32)


def test_printing():
    assert repr(ct.asarray([1 + 2j, complex(-0.5, -0.0)], dtype=ct.complex128)).startswith(
        "tensor([ 1.0000+2.0000j, -0.5000-0.0000j], dtype=complex128")
    assert "1.-3.j" in str(ct.asarray(1 - 3j))


def test_torch_style_parts(device):
    x = ct.asarray([1 + 2j, -3 - 0.5j], dtype=ct.complex128, device=device)
    np.testing.assert_array_equal(to_numpy(x.real), [1, -3])
    np.testing.assert_array_equal(to_numpy(x.imag), [2, -0.5])
    np.testing.assert_array_equal(to_numpy(x.conj()), [1 - 2j, -3 + 0.5j])
    assert x.is_complex() and not ct.ones((1,), device=device).is_complex()
    assert x.real.dtype == ct.float64


def test_reductions_and_matmul(device):
    rng = np.random.default_rng(5)
    a = rng.normal(size=(3, 4)) + 1j * rng.normal(size=(3, 4))
    b = rng.normal(size=(4, 2)) + 1j * rng.normal(size=(4, 2))
    x = ct.asarray(a, dtype=ct.complex128, device=device)
    np.testing.assert_allclose(to_numpy(ct.sum(x, axis=0)), a.sum(0), rtol=1e-13)
    np.testing.assert_allclose(to_numpy(ct.prod(x, axis=1)), a.prod(1), rtol=1e-13)
    np.testing.assert_allclose(to_numpy(ct.mean(x)), a.mean(), rtol=1e-13)
    np.testing.assert_allclose(to_numpy(x @ ct.asarray(b, device=device)), a @ b, rtol=1e-13)
    y = ct.asarray(a, dtype=ct.complex64, device=device)
    np.testing.assert_allclose(to_numpy(y @ ct.asarray(b, dtype=ct.complex64, device=device)),
                               a @ b, rtol=1e-5)
    with pytest.raises(ct.DTypeError, match="max"):
        ct.max(x)


def test_vecdot_conjugates_the_first(device):
    a = np.array([[1 + 2j, 3 - 1j], [0.5j, 2]])
    b = np.array([[2 - 1j, 1j], [1, 1 + 1j]])
    got = ct.vecdot(ct.asarray(a, device=device), ct.asarray(b, device=device))
    np.testing.assert_allclose(to_numpy(got), np.sum(np.conj(a) * b, axis=-1), rtol=1e-6)
