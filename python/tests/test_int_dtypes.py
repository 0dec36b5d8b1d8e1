"""The integer dtypes int8, int16, uint16, uint32 and uint64 (beside int32, int64 and uint8)
against NumPy on every device present: iinfo, isdtype, result_type and can_cast (the
standard's table, NumPy where the standard leaves a pair out), wrapping arithmetic,
division, comparisons and reductions at the ends of each range (uint64 above INT64_MAX
included), casts, and NumPy, buffer and DLPack exchange."""

import operator

import numpy as np
import pytest

import ctensor as ct
from conftest import to_numpy

INTS = {
    ct.int8: np.int8, ct.int16: np.int16, ct.int32: np.int32, ct.int64: np.int64,
    ct.uint8: np.uint8, ct.uint16: np.uint16, ct.uint32: np.uint32, ct.uint64: np.uint64,
}
ids = lambda d: d.name  # noqa: E731


def ends(np_dtype):
    """Values at and near both ends of the dtype's range, and small ones."""
    info = np.iinfo(np_dtype)
    values = [info.min, info.min + 1, info.max, info.max - 1, 0, 1, 2, 3, 7, info.max // 3]
    if info.min < 0:
        values += [-1, -2, -7, info.min // 3]
    return np.array(values, dtype=np_dtype)


@pytest.mark.parametrize("dtype", INTS, ids=ids)
def test_iinfo_and_kinds(dtype):
    info, theirs = ct.iinfo(dtype), np.iinfo(INTS[dtype])
    assert (info.bits, info.min, info.max, info.dtype) == (theirs.bits, theirs.min, theirs.max,
                                                           dtype)
    assert dtype.itemsize == np.dtype(INTS[dtype]).itemsize and dtype.name == theirs.dtype.name
    unsigned = theirs.min == 0
    assert ct.isdtype(dtype, "unsigned integer") == unsigned
    assert ct.isdtype(dtype, "signed integer") == (not unsigned)
    assert ct.isdtype(dtype, "integral") and ct.isdtype(dtype, "numeric")
    assert not ct.isdtype(dtype, "real floating")
    with pytest.raises(TypeError):
        ct.finfo(dtype)


ALL = list(INTS) + [ct.bool, ct.float16, ct.float32, ct.float64]
NP_ALL = {**INTS, ct.bool: np.bool_, ct.float16: np.float16, ct.float32: np.float32,
          ct.float64: np.float64}


@pytest.mark.parametrize("a", ALL, ids=ids)
def test_result_type_is_numpys(a):
    """NumPy's promote_types: the standard's table where it has one (uint64 with a signed
    integer, which the standard leaves out, gives float64 as in NumPy); but an integer or bool
    with a floating dtype, which the standard leaves out too, gives the floating dtype, as the
    operators do (PyTorch's rule). can_cast is NumPy's."""
    for b in ALL:
        numpys = np.promote_types(NP_ALL[a], NP_ALL[b]).name
        floats = [d for d in (a, b) if ct.isdtype(d, "real floating")]
        want = floats[0].name if len(floats) == 1 else numpys
        assert ct.result_type(a, b).name == want, (a, b)
        assert ct.can_cast(a, b) == (numpys == np.dtype(NP_ALL[b]).name), (a, b)


def test_promotion_agrees_with_array_api_strict_for_every_integer_pair():
    xp = pytest.importorskip("array_api_strict", reason="array-api-strict is not installed")
    names = [d.name for d in INTS] + ["bool"]
    for a in names:
        for b in names:
            try:
                theirs = xp.result_type(getattr(xp, a), getattr(xp, b))
            except TypeError:
                continue
            assert str(theirs).split(".")[-1] == ct.result_type(getattr(ct, a), getattr(ct, b)).name


def same(x, expected):
    got = to_numpy(x)
    expected = np.asarray(expected)
    assert got.dtype == expected.dtype, (got.dtype, expected.dtype)
    np.testing.assert_array_equal(got, expected)


WRAPPING = [operator.add, operator.sub, operator.mul, operator.and_, operator.or_, operator.xor]
ORDER = [operator.eq, operator.ne, operator.lt, operator.le, operator.gt, operator.ge]


@pytest.mark.parametrize("dtype", INTS, ids=ids)
@pytest.mark.parametrize("op", WRAPPING + ORDER, ids=lambda f: f.__name__)
def test_operators_wrap_and_order_as_numpy(device, dtype, op):
    a = ends(INTS[dtype])
    b = np.roll(a, 3)
    with np.errstate(over="ignore"):
        expected = op(a, b)
    same(op(ct.asarray(a, device=device), ct.asarray(b, device=device)), expected)


@pytest.mark.parametrize("dtype", INTS, ids=ids)
def test_division_remainder_and_extrema_as_numpy(device, dtype):
    a = ends(INTS[dtype])
    b = np.roll(a, 5)
    b[b == 0] = 3
    x, y = ct.asarray(a, device=device), ct.asarray(b, device=device)
    with np.errstate(over="ignore"):
        same(x // y, a // b)
        same(x % y, a % b)
    same(ct.maximum(x, y), np.maximum(a, b))
    same(ct.minimum(x, y), np.minimum(a, b))
    same(ct.abs(x), np.abs(a))
    same(-x, np.negative(a))
    same(~x, np.invert(a))
    same(ct.sign(x), np.sign(a))
    same(ct.clip(x, 1, 5), np.clip(a, 1, 5))


@pytest.mark.parametrize("dtype", INTS, ids=ids)
def test_division_by_zero_raises_as_for_int32(device, dtype):
    x = ct.asarray([1, 2], dtype=dtype, device=device)
    zero = ct.asarray([1, 0], dtype=dtype, device=device)
    with pytest.raises(ct.InvalidArgumentError, match="division by zero"):
        x // zero
    with pytest.raises(ct.InvalidArgumentError, match="remainder by zero"):
        x % zero


@pytest.mark.parametrize("dtype", INTS, ids=ids)
def test_shifts_as_numpy(device, dtype):
    a = ends(INTS[dtype])
    bits = np.iinfo(INTS[dtype]).bits
    s = np.array([0, 1, 2, 3, bits - 1, 4, 5, 1, 0, 2] + [1, 2, 3, 0][: a.size - 10],
                 dtype=INTS[dtype])
    x, y = ct.asarray(a, device=device), ct.asarray(s, device=device)
    same(x << y, np.left_shift(a, s))
    same(x >> y, np.right_shift(a, s))


@pytest.mark.parametrize("dtype", INTS, ids=ids)
def test_reductions_as_numpy(device, dtype):
    a = ends(INTS[dtype]).reshape(2, -1)
    x = ct.asarray(a, device=device)
    with np.errstate(over="ignore"):
        same(ct.sum(x), np.sum(a))
        same(ct.sum(x, axis=1), np.sum(a, axis=1))
        same(ct.prod(x, axis=0), np.prod(a, axis=0))
    same(ct.max(x), np.max(a))
    same(ct.min(x, axis=1), np.min(a, axis=1))
    assert ct.argmax(x).item() == np.argmax(a) and ct.argmin(x).item() == np.argmin(a)
    np.testing.assert_allclose(to_numpy(ct.mean(x)), np.mean(a.astype(np.float64)), rtol=1e-6)


@pytest.mark.parametrize("dtype", INTS, ids=ids)
def test_reductions_keep_a_given_dtype(device, dtype):
    # The array API: sum(x, dtype=d) and prod(x, dtype=d) give d, wrapping as NumPy does.
    a = ends(INTS[dtype]).reshape(2, -1)
    x = ct.asarray(a, device=device)
    with np.errstate(over="ignore"):
        for name in ("sum", "prod"):
            got = getattr(ct, name)(x, axis=1, dtype=dtype)
            assert got.dtype == dtype
            same(got, getattr(np, name)(a, axis=1, dtype=INTS[dtype]))


@pytest.mark.parametrize("src", INTS, ids=ids)
def test_casts_between_integers_wrap_as_numpy(device, src):
    a = ends(INTS[src])
    x = ct.asarray(a, device=device)
    for dst, np_dst in INTS.items():
        same(x.astype(dst), a.astype(np_dst))
    same(x.astype(ct.float64), a.astype(np.float64))
    same(x.astype(ct.bool), a.astype(np.bool_))


def test_uint64_above_int64_max(device):
    big = [2**64 - 1, 2**63, 2**63 - 1, 5]
    x = ct.asarray(big, device=device)
    assert x.dtype == ct.uint64
    assert x.tolist() == big and x[1].item() == 2**63
    assert "18446744073709551615" in repr(x)
    same(x.astype(ct.float32), np.array(big, dtype=np.uint64).astype(np.float32))
    same(ct.asarray([2.0**63, 1.5e19], dtype=ct.float64, device=device).astype(ct.uint64),
         np.array([2**63, 15000000000000000000], dtype=np.uint64))
    assert ct.asarray(2**64 - 1, dtype=ct.uint64, device=device).item() == 2**64 - 1


def test_python_ints_beyond_a_double_are_exact(device):
    """A Python int that a double does not hold joins a uint64 or int64 array exactly (the
    C scalar entries take doubles)."""
    a = np.array([0, 1, 2**63, 2**64 - 2], dtype=np.uint64)
    x = ct.asarray(a, device=device)
    for big in (2**64 - 1, 2**63 + 1, 2**53 + 1):
        assert (x + big).tolist() == (a + np.uint64(big)).tolist()
        assert (big - x).tolist() == (np.uint64(big) - a).tolist()
        assert (x == big).tolist() == (a == np.uint64(big)).tolist()
        assert (x < big).tolist() == (a < np.uint64(big)).tolist()
        assert (big > x).tolist() == (np.uint64(big) > a).tolist()
        assert (x + big).dtype == ct.uint64
    assert ct.full((2,), 2**63, dtype=ct.uint64, device=device).tolist() == [2**63] * 2
    assert ct.full((2,), 2**64 - 1, dtype=ct.uint64, device=device).tolist() == [2**64 - 1] * 2
    assert ct.full_like(x, 2**63 + 3).tolist() == [2**63 + 3] * 4
    i = ct.asarray([0, -1], dtype=ct.int64, device=device)
    assert (i + (2**62 + 1)).tolist() == [2**62 + 1, 2**62]
    assert ct.full((1,), -(2**63), dtype=ct.int64, device=device).tolist() == [-(2**63)]
    y = ct.zeros(3, dtype=ct.uint64, device=device)
    y[1] = 2**64 - 1
    y[[0, 2]] = 2**63 + 1
    assert y.tolist() == [2**63 + 1, 2**64 - 1, 2**63 + 1]
    with pytest.raises(OverflowError):
        x + 2**64
    with pytest.raises(OverflowError):
        i + 2**63


@pytest.mark.parametrize("dtype", INTS, ids=ids)
def test_numpy_buffer_and_dlpack_exchange(dtype):
    a = ends(INTS[dtype])
    shared = ct.asarray(a, device="cpu")
    assert shared.dtype == dtype
    a[4] = 9
    assert shared[4].item() == 9  # the buffer is shared, not copied
    same(shared, a)
    assert shared.numpy().dtype == a.dtype and np.asarray(shared).dtype == a.dtype
    back = np.from_dlpack(shared)
    assert back.dtype == a.dtype
    np.testing.assert_array_equal(back, a)
    imported = ct.from_dlpack(a)
    assert imported.dtype == dtype
    same(imported, a)
    assert memoryview(shared).format == a.data.format or memoryview(shared).itemsize == a.itemsize


@pytest.mark.parametrize("dtype", INTS, ids=ids)
def test_creation_and_scalars(device, dtype):
    info = np.iinfo(INTS[dtype])
    same(ct.zeros((2,), dtype=dtype, device=device), np.zeros(2, INTS[dtype]))
    same(ct.full((2,), info.max, dtype=dtype, device=device) if info.bits < 64
         else ct.asarray([info.max] * 2, dtype=dtype, device=device),
         np.full(2, info.max, INTS[dtype]))
    same(ct.asarray([1, 2, 3], dtype=dtype, device=device) + 1, np.array([2, 3, 4], INTS[dtype]))
    same(ct.arange(5, dtype=dtype, device=device), np.arange(5, dtype=INTS[dtype]))
