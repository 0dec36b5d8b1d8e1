"""The array API standard (2023.12) on complex64 and complex128, checked from its text and
against array-api-strict (NumPy underneath) on every device: each function of the main
namespace, fft and linalg that takes complex arrays, on inputs that hold the special values
the standard's complex special cases are written for (NaN, infinities, signed zeros, in every
pairing of the two parts), and the functions it says complex arrays have no meaning for
(ordering, rounding to integers, max/min, std/var), which must refuse them. Last, the
namespace itself: every function of the standard's 2023.12 namespace and extensions is there
and accepts the keyword names array-api-strict's signature gives it.

Where the standard leaves a result to the implementation, the check says so where it is made:
signs it calls unspecified, multiply/divide/square with infinite or NaN parts (its note on
C99's one-infinity model, which ours follows, against the textbook formula, NumPy's), the
order of a product. Where NumPy departs from the standard's text (expm1 of infinite parts,
the mean of a NaN part, sign of zero), the standard's result is the reference. The linalg
functions that refuse complex arrays are skipped by name: complex LAPACK is another branch's.

The data-apis/array-api-tests suite is the real judge once it can be installed; until then
these checks stand in for it."""

import inspect
import itertools
import math

import array_api_strict as xp
import numpy as np
import pytest

import ctensor as ct
from conftest import to_numpy

DTYPES = [(ct.complex64, np.complex64, xp.complex64), (ct.complex128, np.complex128, xp.complex128)]
IDS = ["complex64", "complex128"]
# Relative tolerance of the elementwise results against NumPy's, per precision.
RTOL = {np.complex64: 2e-6, np.complex128: 1e-14}

# The components the standard's complex special cases are stated for: signed zeros, positive
# and negative finite values, infinities and NaN. SPECIAL holds every pairing as re + im j.
PARTS = [0.0, -0.0, 1.0, -1.0, 2.5, -0.5, math.inf, -math.inf, math.nan]
SPECIAL = np.array([complex(r, i) for r, i in itertools.product(PARTS, PARTS)])


def generic(n, seed=0):
    """n finite complex values of moderate size (the functions' well-conditioned range)."""
    rng = np.random.default_rng(seed)
    return rng.uniform(-3, 3, n) + 1j * rng.uniform(-3, 3, n)


def ours(a, dtype, device):
    return ct.asarray(np.asarray(a, dtype=dtype), device=device)


def strict(a, dtype):
    return xp.asarray(np.asarray(a, dtype=dtype))


def from_strict(r):
    """An array-api-strict array as NumPy's (a copy: DLPack exports no read-only arrays; bool
    through uint8: DLPack has no bool there)."""
    r = xp.asarray(r, copy=True)
    if r.dtype == xp.bool:
        return np.from_dlpack(xp.astype(r, xp.uint8)).astype(bool)
    return np.from_dlpack(r)


def same_values(got, want, rtol, signed=True, unspecified=None):
    """got equals want (NumPy arrays of one shape and kind) part by part: NaN where it is NaN,
    the same infinities, finite values within rtol (of the larger of the value and 1), and,
    with signed, the sign of every zero. unspecified (a bool array of want's shape) marks the
    elements whose zeros and infinities may have either sign."""
    assert got.shape == want.shape, (got.shape, want.shape)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    parts = [(got.real, want.real), (got.imag, want.imag)] if want.dtype.kind == "c" else [
        (got, want)]
    free = np.zeros(want.shape, bool) if unspecified is None else unspecified
    for g, w in parts:
        if w.dtype.kind == "b":
            np.testing.assert_array_equal(g, w)
            continue
        g = np.asarray(g, dtype=np.float64)
        w = np.asarray(w, dtype=np.float64)
        nan = np.isnan(w)
        bad = nan != np.isnan(g)
        inf = np.isinf(w)
        bad |= inf & (g != w) & ~(free & (g == -w))
        fin = ~nan & ~inf
        with np.errstate(invalid="ignore"):
            bad |= fin & ~(np.abs(g - w) <= rtol * np.maximum(np.abs(w), 1.0))
        if signed:
            bad |= (w == 0) & (g == 0) & (np.signbit(w) != np.signbit(g)) & ~free
        assert not bad.any(), f"{np.flatnonzero(bad)[:8]}: got {g[bad][:8]}, want {w[bad][:8]}"


def compare(got, want, rtol, signed=True, unspecified=None):
    same_values(to_numpy(got), from_strict(want), rtol, signed, unspecified)


# ---- elementwise: one argument ----

UNARY = ["abs", "acos", "acosh", "asin", "asinh", "atan", "atanh", "conj", "cos", "cosh", "exp",
         "expm1", "imag", "isfinite", "isinf", "isnan", "log", "log1p", "log10", "log2",
         "negative", "positive", "real", "round", "sign", "sin", "sinh", "sqrt", "square", "tan",
         "tanh"]


def unspecified_signs(z, want):
    """Where the standard leaves the sign of a zero or infinite part of a result unspecified:
    its special cases say so for results with a NaN part (NaN + 0j, NaN +- inf j, +-inf + NaN j),
    for inputs with a NaN part, and for inputs whose two parts are infinite."""
    return (np.isnan(want.real) | np.isnan(want.imag) | np.isnan(z.real) | np.isnan(z.imag) |
            (np.isinf(z.real) & np.isinf(z.imag)))


# Results the standard's text gives where NumPy's differ, and cases the rule above would let
# pass with the wrong sign: (function, input, result), every sign as written.
STANDARD = [
    ("acosh", complex(math.inf, math.nan), complex(math.inf, math.nan)),
    ("acosh", complex(-math.inf, math.nan), complex(math.inf, math.nan)),
    ("acosh", complex(math.nan, math.inf), complex(math.inf, math.nan)),
    ("asinh", complex(math.inf, math.nan), complex(math.inf, math.nan)),
    ("log", complex(math.nan, math.inf), complex(math.inf, math.nan)),
    ("sqrt", complex(math.nan, math.inf), complex(math.inf, math.inf)),
    ("expm1", complex(math.inf, 0.0), complex(math.inf, 0.0)),
    ("expm1", complex(math.inf, 1.0), complex(math.inf, math.inf)),
    ("expm1", complex(math.nan, 0.0), complex(math.nan, 0.0)),
    ("expm1", complex(-math.inf, 1.0), complex(-1.0, 0.0)),
    ("exp", complex(math.nan, 0.0), complex(math.nan, 0.0)),
    ("cosh", complex(math.inf, 0.0), complex(math.inf, 0.0)),
    ("sinh", complex(math.inf, 0.0), complex(math.inf, 0.0)),
    ("tanh", complex(math.inf, 1.0), complex(1.0, 0.0)),
    ("tanh", complex(math.nan, 0.0), complex(math.nan, 0.0)),
    ("atanh", complex(1.0, 0.0), complex(math.inf, 0.0)),
    ("atanh", complex(math.inf, math.nan), complex(0.0, math.nan)),
    ("sign", complex(-0.0, 0.0), complex(0.0, 0.0)),
    ("sign", complex(0.0, -0.0), complex(0.0, 0.0)),
    ("sign", complex(math.nan, 1.0), complex(math.nan, math.nan)),
]

# NumPy's expm1 is exp(z) - 1 on these (NaN parts where the standard has numbers).
NUMPY_DIFFERS = {"expm1": lambda z: ~(np.isfinite(z.real) & np.isfinite(z.imag))}
# square is multiply(x, x), whose special cases for non-finite parts the standard leaves to
# the implementation (its note: C99's one-infinity model, which ours follows, or the textbook
# formula, which NumPy's follows); sign of an infinite part: ours is the limit of z / |z|
# (NumPy's NaN), and the sign of its zero parts follows |z| (NumPy's division flips some).
LEFT_OUT = {"square": lambda z: ~(np.isfinite(z.real) & np.isfinite(z.imag)),
            "sign": lambda z: np.isinf(z.real) | np.isinf(z.imag)}


@pytest.mark.parametrize("dtypes", DTYPES, ids=IDS)
@pytest.mark.parametrize("name", UNARY)
def test_unary_against_array_api_strict(device, name, dtypes):
    ctd, npd, _ = dtypes
    values = generic(50)
    with np.errstate(all="ignore"):
        want = getattr(xp, name)(strict(values, npd))
    compare(getattr(ct, name)(ours(values, npd, device)), want, RTOL[npd])
    keep = np.ones(SPECIAL.size, bool)
    for rule in (NUMPY_DIFFERS.get(name), LEFT_OUT.get(name)):
        if rule:
            keep &= ~rule(SPECIAL)
    z = SPECIAL[keep]
    with np.errstate(all="ignore"):
        want = from_strict(getattr(xp, name)(strict(z, npd)))
    got = to_numpy(getattr(ct, name)(ours(z, npd, device)))
    free = unspecified_signs(z, want) if want.dtype.kind == "c" else None
    same_values(got, want, RTOL[npd], signed=name != "sign", unspecified=free)


@pytest.mark.parametrize("dtypes", DTYPES, ids=IDS)
@pytest.mark.parametrize("name,z,want", STANDARD, ids=[f"{s[0]}({s[1]})" for s in STANDARD])
def test_special_cases_as_the_standard_writes_them(device, name, z, want, dtypes):
    ctd, npd, _ = dtypes
    got = to_numpy(getattr(ct, name)(ct.asarray([z], dtype=ctd, device=device)))
    same_values(got, np.array([want], dtype=npd), 0.0)
    if name == "sign":  # its zero result is 0 + 0j below the axis too
        return
    # f(conj(z)) = conj(f(z)): the same case below the real axis
    got = to_numpy(getattr(ct, name)(ct.asarray([z.conjugate()], dtype=ctd, device=device)))
    same_values(got, np.array([want.conjugate()], dtype=npd), 0.0)


# ---- elementwise: two arguments ----

BINARY = ["add", "subtract", "multiply", "divide", "equal", "not_equal", "pow"]


@pytest.mark.parametrize("dtypes", DTYPES, ids=IDS)
@pytest.mark.parametrize("name", BINARY)
def test_binary_against_array_api_strict(device, name, dtypes):
    ctd, npd, _ = dtypes
    a, b = generic(40, 1), generic(40, 2)
    with np.errstate(all="ignore"):
        want = getattr(xp, name)(strict(a, npd), strict(b, npd))
    compare(getattr(ct, name)(ours(a, npd, device), ours(b, npd, device)), want, 50 * RTOL[npd])


# The standard's special cases of add and subtract are its real ones part by part; those of
# equal and not_equal are the real comparisons' (NaN unequal to everything).
@pytest.mark.parametrize("dtypes", DTYPES, ids=IDS)
@pytest.mark.parametrize("name", ["add", "subtract", "equal", "not_equal"])
def test_binary_special_values(device, name, dtypes):
    ctd, npd, _ = dtypes
    a = np.repeat(SPECIAL, SPECIAL.size)
    b = np.tile(SPECIAL, SPECIAL.size)
    with np.errstate(all="ignore"):
        want = getattr(xp, name)(strict(a, npd), strict(b, npd))
    compare(getattr(ct, name)(ours(a, npd, device), ours(b, npd, device)), want, 0.0)


@pytest.mark.parametrize("dtypes", DTYPES, ids=IDS)
def test_pow_of_integer_exponents_is_products(device, dtypes):
    """NumPy computes z ** n for an integer |n| < 100 by products (z ** 2 is z * z, exactly):
    so do we, where exp(n log z) would round."""
    ctd, npd, _ = dtypes
    a = np.array([1 + 2j, -3 + 0.5j, 0.25 - 4j, 3 + 0j, -0.0 + 1j])
    x = ours(a, npd, device)
    for n in (1, 2, 3, 5, -1, -2, 17):
        want = xp.pow(strict(a, npd), xp.asarray(np.full(a.shape, n, dtype=npd)))
        got = ct.pow(x, ct.asarray(np.full(a.shape, n, dtype=npd), device=device))
        exact = n in (1, 2) and npd == np.complex128  # complex64's are rounded from complex128
        compare(got, want, 0.0 if exact else 4 * RTOL[npd], signed=False)
    same_values(to_numpy(x ** 2), to_numpy(x * x), 0.0)
    # z ** 1 is z, whatever its parts
    z = SPECIAL
    got = ct.pow(ours(z, npd, device), ct.asarray(np.ones(z.shape, npd), device=device))
    same_values(to_numpy(got), z.astype(npd), 0.0)


@pytest.mark.parametrize("dtypes", DTYPES, ids=IDS)
def test_mixed_real_and_complex_operands_promote(device, dtypes):
    ctd, npd, xpd = dtypes
    a = generic(6)
    for real in (ct.float32, ct.float64):
        r = ct.asarray([1.5, -2.0, 0.0, 3.0, -0.0, 4.0], dtype=real, device=device)
        got = ours(a, npd, device) * r
        want = xp.multiply(strict(a, npd), xp.asarray(to_numpy(r)))
        assert got.dtype == ct.result_type(ctd, real)
        compare(got, want, RTOL[npd])
    compare(ours(a, npd, device) + 2, xp.add(strict(a, npd), 2), RTOL[npd])
    compare(ours(a, npd, device) * 1j, xp.multiply(strict(a, npd), 1j), RTOL[npd])


# ---- reductions and scans ----

@pytest.mark.parametrize("dtypes", DTYPES, ids=IDS)
@pytest.mark.parametrize("axis", [None, 0, 1, (0, 1)])
@pytest.mark.parametrize("name", ["sum", "prod", "mean", "all", "any"])
def test_reductions(device, name, axis, dtypes):
    ctd, npd, _ = dtypes
    a = generic(24, 3).reshape(4, 6) / 2
    a[1, 2] = 0
    a[2] = 0
    for keepdims in (False, True):
        want = getattr(xp, name)(strict(a, npd), axis=axis, keepdims=keepdims)
        got = getattr(ct, name)(ours(a, npd, device), axis=axis, keepdims=keepdims)
        # the order of a product is the implementation's, and with it the signs of its zeros
        compare(got, want, 100 * RTOL[npd], signed=name != "prod")


@pytest.mark.parametrize("dtypes", DTYPES, ids=IDS)
def test_sum_and_mean_of_special_values(device, dtypes):
    ctd, npd, _ = dtypes
    a = SPECIAL.reshape(9, 9)
    with np.errstate(all="ignore"):
        want = xp.sum(strict(a, npd), axis=1)
        compare(ct.sum(ours(a, npd, device), axis=1), want, RTOL[npd], False)
        # the mean is the sum over N part by part (NumPy's divides by N + 0j, which turns a NaN
        # imaginary part into a NaN real part too)
        total = from_strict(want)
        mean = np.empty(9, npd)
        mean.real, mean.imag = total.real / 9, total.imag / 9
        same_values(to_numpy(ct.mean(ours(a, npd, device), axis=1)), mean, RTOL[npd], False)
    want = xp.any(strict(a, npd), axis=0)
    compare(ct.any(ours(a, npd, device), axis=0), want, 0.0)
    compare(ct.all(ours(a, npd, device), axis=1), xp.all(strict(a, npd), axis=1), 0.0)


@pytest.mark.parametrize("dtypes", DTYPES, ids=IDS)
def test_cumulative_sum(device, dtypes):
    ctd, npd, _ = dtypes
    a = generic(12, 4).reshape(3, 4)
    for axis, initial in itertools.product((0, 1, -1), (False, True)):
        want = xp.cumulative_sum(strict(a, npd), axis=axis, include_initial=initial)
        got = ct.cumulative_sum(ours(a, npd, device), axis=axis, include_initial=initial)
        compare(got, want, 100 * RTOL[npd])
    with np.errstate(all="ignore"):
        want = xp.cumulative_sum(strict(SPECIAL, npd))
    compare(ct.cumulative_sum(ours(SPECIAL, npd, device)), want, RTOL[npd], False)
    wide = ct.cumulative_sum(ours(a, np.complex64, device), axis=1, dtype=ct.complex128)
    assert wide.dtype == ct.complex128
    real = ct.cumulative_sum(ct.asarray([1.0, 2.0], device=device), dtype=ctd)
    assert real.dtype == ctd and to_numpy(real).tolist() == [1, 3]
    with pytest.raises(ct.DTypeError, match="complex"):
        ct.cumulative_sum(ours(a, npd, device), axis=1, dtype=ct.float64)


# ---- searching and sets ----

@pytest.mark.parametrize("dtypes", DTYPES, ids=IDS)
def test_nonzero_and_where(device, dtypes):
    ctd, npd, _ = dtypes
    a = SPECIAL.reshape(9, 9)
    want = xp.nonzero(strict(a, npd))
    got = ct.nonzero(ours(a, npd, device))
    assert len(got) == len(want) == 2
    for g, w in zip(got, want):
        np.testing.assert_array_equal(to_numpy(g), from_strict(w))
    cond = xp.isnan(strict(a, npd))
    want = xp.where(cond, strict(a, npd), xp.asarray(np.asarray(1j, dtype=npd)))
    got = ct.where(ct.isnan(ours(a, npd, device)), ours(a, npd, device),
                   ct.asarray(1j, dtype=ctd, device=device))
    compare(got, want, 0.0)


def sorted_complex(v):
    """v's values in NumPy's complex order (NaN components last), as Python pairs."""
    return sorted(((x.real, x.imag) for x in v),
                  key=lambda p: (math.isnan(p[0]), p[0] if not math.isnan(p[0]) else 0,
                                 math.isnan(p[1]), p[1] if not math.isnan(p[1]) else 0))


@pytest.mark.parametrize("dtypes", DTYPES, ids=IDS)
def test_unique_functions(device, dtypes):
    ctd, npd, _ = dtypes
    # repeats, a NaN twice (each NaN is its own value), zeros of both signs (one value)
    a = np.array([1 + 2j, 3 - 1j, 1 + 2j, complex(math.nan, 0), complex(math.nan, 0),
                  -0.0 + 0j, 0j, 1 - 2j, 3 - 1j, 1 + 2j]).reshape(2, 5)
    x, s = ours(a, npd, device), strict(a, npd)
    values = to_numpy(ct.unique_values(x))
    want = from_strict(xp.unique_values(s))
    assert values.dtype == want.dtype and values.size == want.size == 6
    assert sorted_complex(values)[:4] == sorted_complex(want)[:4]
    assert np.isnan(values.real).sum() == 2
    counts = ct.unique_counts(x)
    got = dict(zip(to_numpy(counts.values).tolist(), to_numpy(counts.counts).tolist()))
    assert got[1 + 2j] == 3 and got[3 - 1j] == 2 and got[0j] == 2 and got[1 - 2j] == 1
    inverse = ct.unique_inverse(x)
    assert inverse.inverse_indices.shape == (2, 5)
    np.testing.assert_array_equal(to_numpy(inverse.values)[to_numpy(inverse.inverse_indices)]
                                  [~np.isnan(a.real)], a[~np.isnan(a.real)])
    full = ct.unique_all(x)
    idx, vals = to_numpy(full.indices), to_numpy(full.values)
    np.testing.assert_array_equal(a.reshape(-1)[idx][~np.isnan(vals.real)],
                                  vals[~np.isnan(vals.real)])
    assert to_numpy(full.counts).sum() == a.size


# ---- creation, data types, manipulation ----

@pytest.mark.parametrize("dtypes", DTYPES, ids=IDS)
def test_creation(device, dtypes):
    ctd, npd, xpd = dtypes
    compare(ct.full((2, 3), 1 - 2j, dtype=ctd, device=device), xp.full((2, 3), 1 - 2j, dtype=xpd),
            0.0)
    compare(ct.full((2,), complex(-0.0, math.inf), dtype=ctd, device=device),
            xp.full((2,), complex(-0.0, math.inf), dtype=xpd), 0.0)
    assert ct.full((1,), 2j, device=device).dtype == ct.complex64
    with pytest.raises(ct.DTypeError, match="complex"):
        ct.full((1,), 2j, dtype=ct.float32)
    base = ours(generic(4), npd, device)
    compare(ct.full_like(base, 3 + 4j), xp.full_like(strict(generic(4), npd), 3 + 4j), 0.0)
    for name in ("zeros", "ones", "empty"):
        t = getattr(ct, name)((2, 2), dtype=ctd, device=device)
        assert t.dtype == ctd and t.shape == (2, 2)
    for name in ("zeros_like", "ones_like"):
        compare(getattr(ct, name)(base), getattr(xp, name)(strict(generic(4), npd)), 0.0)
    compare(ct.eye(3, 4, k=1, dtype=ctd, device=device), xp.eye(3, 4, k=1, dtype=xpd), 0.0)
    for endpoint in (True, False):
        compare(ct.linspace(1 - 1j, 3 + 5j, 7, dtype=ctd, endpoint=endpoint, device=device),
                xp.linspace(1 - 1j, 3 + 5j, 7, dtype=xpd, endpoint=endpoint), 10 * RTOL[npd])
    assert ct.linspace(0, 1j, 3, device=device).dtype == ct.complex64
    compare(ct.linspace(0, 2, 3, dtype=ctd, device=device), xp.linspace(0, 2, 3, dtype=xpd), 0.0)
    with pytest.raises(ct.DTypeError, match="complex"):
        ct.linspace(0, 1j, 3, dtype=ct.float64)
    m = generic(12, 5).reshape(3, 4)
    for name in ("tril", "triu"):
        compare(getattr(ct, name)(ours(m, npd, device), k=-1),
                getattr(xp, name)(strict(m, npd), k=-1), 0.0)


@pytest.mark.parametrize("dtypes", DTYPES, ids=IDS)
def test_data_type_functions(device, dtypes):
    ctd, npd, xpd = dtypes
    a = generic(5)
    other = ct.complex128 if ctd == ct.complex64 else ct.complex64
    other_np = np.complex128 if npd == np.complex64 else np.complex64
    compare(ct.astype(ours(a, npd, device), other), xp.astype(strict(a, npd), xp.asarray(
        np.zeros(1, other_np)).dtype), RTOL[np.complex64])
    compare(ct.astype(ct.asarray([1.5, -0.0], device=device), ctd),
            xp.astype(xp.asarray([1.5, -0.0], dtype=xp.float32), xpd), 0.0)
    with pytest.raises(ct.DTypeError):
        ct.astype(ours(a, npd, device), ct.float64)  # the standard: not permitted
    for real in (ct.float32, ct.float64):
        assert ct.can_cast(ctd, real) is False
        assert ct.can_cast(real, ctd) is xp.can_cast(getattr(xp, real.name), xpd)
    # across kinds the standard leaves it open; ours is NumPy's safe casting
    for other in (ct.int32, ct.int64, ct.bool):
        assert ct.can_cast(ctd, other) is False
        assert ct.can_cast(other, ctd) is bool(np.can_cast(getattr(np, other.name + (
            "_" if other == ct.bool else "")), npd))
    assert ct.can_cast(ct.complex64, ct.complex128) and not ct.can_cast(ct.complex128,
                                                                          ct.complex64)
    assert ct.finfo(ctd).eps == xp.finfo(xpd).eps
    assert ct.finfo(ctd).max == xp.finfo(xpd).max
    assert ct.finfo(ctd).smallest_normal == xp.finfo(xpd).smallest_normal
    assert ct.isdtype(ctd, "complex floating") and ct.isdtype(ctd, "numeric")
    assert not ct.isdtype(ctd, "real floating") and not ct.isdtype(ctd, "integral")
    assert ct.result_type(ctd, ct.float64) == ct.complex128
    assert ct.result_type(ctd, ct.float32) == ctd and ct.result_type(ct.complex64, ctd) == ctd


@pytest.mark.parametrize("dtypes", DTYPES, ids=IDS)
def test_manipulation(device, dtypes):
    ctd, npd, _ = dtypes
    a = SPECIAL[:24].reshape(2, 3, 4)
    x, s = ours(a, npd, device), strict(a, npd)
    cases = [
        (lambda m, t: m.concat([t, t], axis=1)),
        (lambda m, t: m.stack([t, t], axis=-1)),
        (lambda m, t: m.flip(t, axis=(0, 2))),
        (lambda m, t: m.roll(t, 2, axis=2)),
        (lambda m, t: m.reshape(t, (4, 6))),
        (lambda m, t: m.permute_dims(t, (2, 0, 1))),
        (lambda m, t: m.expand_dims(t, axis=1)),
        (lambda m, t: m.squeeze(m.expand_dims(t, axis=0), axis=0)),
        (lambda m, t: m.broadcast_to(t, (2, 2, 3, 4))),
        (lambda m, t: m.moveaxis(t, 0, -1)),
        (lambda m, t: m.repeat(t, 2, axis=1)),
        (lambda m, t: m.tile(t, (1, 2, 1))),
        (lambda m, t: m.take(t, m.asarray([2, 0], device=t.device), axis=2)),
        (lambda m, t: m.unstack(t, axis=1)[1]),
        (lambda m, t: m.broadcast_arrays(t, m.reshape(t[0, 0, :], (4,)))[1]),
        (lambda m, t: m.meshgrid(m.reshape(t[0, ...], (-1,)), t[1, 0, :])[0]),
        (lambda m, t: m.matrix_transpose(t)),
        (lambda m, t: t[1, ::-1, 1:3]),
    ]
    for i, case in enumerate(cases):
        compare(case(ct, x), case(xp, s), 0.0)


# ---- the parts: real, imag (views), conj ----

@pytest.mark.parametrize("dtypes", DTYPES, ids=IDS)
def test_real_and_imag_are_views(device, dtypes):
    ctd, npd, _ = dtypes
    a = generic(6).reshape(2, 3)
    x = ours(a, npd, device)
    x.real[0] = 7.0
    x.imag[:, 1] = -0.0
    ct.imag(x)[1, 2] = math.inf
    want = a.astype(npd)
    want.real[0] = 7.0
    want.imag[:, 1] = -0.0
    want.imag[1, 2] = math.inf
    same_values(to_numpy(x), want, 0.0)
    view = ct.permute_dims(x, (1, 0))[::2]  # strided: the parts' strides double
    same_values(to_numpy(view.imag), want.T[::2].imag, 0.0)
    same_values(to_numpy(ct.real(view)), want.T[::2].real, 0.0)
    r = ct.asarray([1.0, -2.0], device=device)
    assert ct.real(r) is not None and to_numpy(ct.imag(r)).tolist() == [0, 0]


@pytest.mark.parametrize("dtypes", DTYPES, ids=IDS)
def test_conj_of_every_layout(device, dtypes):
    ctd, npd, _ = dtypes
    a = SPECIAL[:60].reshape(3, 4, 5)
    x = ours(a, npd, device)
    for view in (x, ct.permute_dims(x, (2, 0, 1)), x[:, ::-2, 1:], x[1], x[0, 0, 0],
                 ct.broadcast_to(x[:, :1], (3, 4, 5))):
        same_values(to_numpy(ct.conj(view)), np.conj(to_numpy(view)), 0.0)
    deep = ct.reshape(ours(generic(256), npd, device), (2,) * 8)[..., ::-1]  # 8 axes, strided
    same_values(to_numpy(ct.conj(deep)), np.conj(to_numpy(deep)), 0.0)
    assert ct.conj(ct.zeros((0, 3), dtype=ctd, device=device)).shape == (0, 3)


# ---- linear algebra in the main namespace ----

@pytest.mark.parametrize("dtypes", DTYPES, ids=IDS)
def test_matmul_every_layout(device, dtypes):
    ctd, npd, _ = dtypes
    a, b = generic(60, 6).reshape(3, 4, 5), generic(40, 7).reshape(5, 8)
    x, y = ours(a, npd, device), ours(b, npd, device)
    sx, sy = strict(a, npd), strict(b, npd)
    cases = [
        (lambda m, p, q: m.matmul(p, q)),
        (lambda m, p, q: m.matmul(m.matrix_transpose(p), p)),  # transposed operand
        (lambda m, p, q: m.matmul(p[:, ::2, :], q[::-1, :])),  # strided and reversed: packed
        (lambda m, p, q: m.matmul(p[0, 1, :], q)),  # a vector
        (lambda m, p, q: m.matmul(p, q[:, 3])),
        (lambda m, p, q: m.matmul(m.matrix_transpose(q)[:2, :], m.matrix_transpose(p))),
        (lambda m, p, q: m.matmul(m.broadcast_to(p[:1, ...], (3, 4, 5)), q)),
    ]
    for case in cases:
        compare(case(ct, x, y), case(xp, sx, sy), 100 * RTOL[npd], False)


@pytest.mark.parametrize("dtypes", DTYPES, ids=IDS)
def test_tensordot_and_vecdot(device, dtypes):
    ctd, npd, _ = dtypes
    a, b = generic(24, 8).reshape(2, 3, 4), generic(24, 9).reshape(4, 3, 2)
    x, y, sx, sy = ours(a, npd, device), ours(b, npd, device), strict(a, npd), strict(b, npd)
    for axes in (1, 0, ([1, 2], [1, 0])):
        compare(ct.tensordot(x, y, axes=axes), xp.tensordot(sx, sy, axes=axes), 100 * RTOL[npd],
                False)
    compare(ct.linalg.tensordot(x, y, axes=1), xp.linalg.tensordot(sx, sy, axes=1),
            100 * RTOL[npd], False)
    c = generic(24, 10).reshape(2, 3, 4)
    for axis in (-1, -2, -3):  # conjugates the first argument
        compare(ct.vecdot(x, ours(c, npd, device), axis=axis),
                xp.vecdot(sx, strict(c, npd), axis=axis), 100 * RTOL[npd], False)
    compare(ct.linalg.vecdot(x, x), xp.linalg.vecdot(sx, sx), 100 * RTOL[npd], False)
    assert to_numpy(ct.vecdot(x, x)).imag.max() == 0  # |x|^2: real


# ---- fft ----

@pytest.mark.parametrize("dtypes", DTYPES, ids=IDS)
def test_fft_functions(device, dtypes):
    ctd, npd, _ = dtypes
    a = generic(60, 11).reshape(5, 12)
    x, s = ours(a, npd, device), strict(a, npd)
    tol = 1e-5 if npd == np.complex64 else 1e-12
    for name in ("fft", "ifft", "hfft", "irfft"):
        for norm in ("backward", "ortho", "forward"):
            compare(getattr(ct.fft, name)(x, n=10, axis=0, norm=norm),
                    getattr(xp.fft, name)(s, n=10, axis=0, norm=norm), tol, False)
    for name in ("fftn", "ifftn", "irfftn"):
        compare(getattr(ct.fft, name)(x, s=(4, 6), axes=(0, 1)),
                getattr(xp.fft, name)(s, s=(4, 6), axes=(0, 1)), tol, False)
    for name in ("fftshift", "ifftshift"):
        compare(getattr(ct.fft, name)(x, axes=1), getattr(xp.fft, name)(s, axes=1), 0.0)


# ---- linalg extension functions that take complex arrays ----

def _hermitian(n, npd):
    rng = np.random.default_rng(12)
    m = rng.normal(size=(n, n)) + 1j * rng.normal(size=(n, n))
    return (m @ m.conj().T + n * np.eye(n)).astype(npd)


LINALG = {
    "cholesky": lambda h, g: ((h,), {}),
    "det": lambda h, g: ((g,), {}),
    "diagonal": lambda h, g: ((g,), {"offset": 1}),
    "eigvalsh": lambda h, g: ((h,), {}),
    "inv": lambda h, g: ((g,), {}),
    "matrix_norm": lambda h, g: ((g,), {"ord": "fro"}),
    "matrix_power": lambda h, g: ((g, 3), {}),
    "matrix_rank": lambda h, g: ((g,), {}),
    "outer": lambda h, g: ((g[0], g[1]), {}),
    "pinv": lambda h, g: ((g,), {}),
    "slogdet": lambda h, g: ((g,), {}),
    "solve": lambda h, g: ((g, h), {}),
    "svdvals": lambda h, g: ((g,), {}),
    "trace": lambda h, g: ((g,), {"offset": -1}),
    "vector_norm": lambda h, g: ((g,), {"ord": 2, "axis": 1}),
    "cross": lambda h, g: ((g[:, :3], h[:, :3]), {}),
}


@pytest.mark.parametrize("dtypes", DTYPES, ids=IDS)
@pytest.mark.parametrize("name", sorted(LINALG))
def test_linalg_against_array_api_strict(device, name, dtypes):
    ctd, npd, _ = dtypes
    h = _hermitian(4, npd)
    g = (generic(16, 13).reshape(4, 4)).astype(npd)
    args, kwargs = LINALG[name](h, g)
    want = getattr(xp.linalg, name)(*[xp.asarray(a) for a in args if isinstance(a, np.ndarray)],
                                    *[a for a in args if not isinstance(a, np.ndarray)], **kwargs)
    try:
        got = getattr(ct.linalg, name)(
            *[ours(a, npd, device) for a in args if isinstance(a, np.ndarray)],
            *[a for a in args if not isinstance(a, np.ndarray)], **kwargs)
    except ct.DTypeError as e:
        pytest.skip(f"ct.linalg.{name} on complex arrays is the clinalg branch's work: {e}")
    tol = 1e-4 if npd == np.complex64 else 1e-10
    if isinstance(want, tuple):
        for g_, w_ in zip(got, want):
            compare(g_, w_, tol, False)
    else:
        compare(got, want, tol, False)


# ---- what complex arrays have no meaning for: refused, naming the function ----

REFUSED = {
    "sort": lambda m, z: m.sort(z), "argsort": lambda m, z: m.argsort(z),
    "max": lambda m, z: m.max(z), "min": lambda m, z: m.min(z),
    "argmax": lambda m, z: m.argmax(z), "argmin": lambda m, z: m.argmin(z),
    "std": lambda m, z: m.std(z), "var": lambda m, z: m.var(z),
    "searchsorted": lambda m, z: m.searchsorted(z, z),
    "clip": lambda m, z: m.clip(z, 0, 1), "maximum": lambda m, z: m.maximum(z, z),
    "minimum": lambda m, z: m.minimum(z, z), "less": lambda m, z: m.less(z, z),
    "greater_equal": lambda m, z: m.greater_equal(z, z), "floor": lambda m, z: m.floor(z),
    "ceil": lambda m, z: m.ceil(z), "trunc": lambda m, z: m.trunc(z),
    "atan2": lambda m, z: m.atan2(z, z), "remainder": lambda m, z: m.remainder(z, z),
    "floor_divide": lambda m, z: m.floor_divide(z, z), "signbit": lambda m, z: m.signbit(z),
    "logaddexp": lambda m, z: m.logaddexp(z, z), "copysign": lambda m, z: m.copysign(z, z),
    "hypot": lambda m, z: m.hypot(z, z),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_refused_for_complex(device, name):
    z = ct.asarray([1 + 2j, 3 - 1j], device=device)
    with pytest.raises(TypeError):  # array-api-strict refuses them too
        REFUSED[name](xp, xp.asarray([1 + 2j, 3 - 1j]))
    with pytest.raises(ct.DTypeError, match="complex"):
        REFUSED[name](ct, z)


# ---- the namespace: names and keyword names ----

# Names array-api-strict 2.6.1 has beyond the 2023.12 standard (its own helpers, and functions
# of the 2024.12 and 2025.12 revisions), which this check leaves out.
NOT_2023 = {"ArrayAPIStrictFlags", "ModuleType", "get_array_api_strict_flags",
            "reset_array_api_strict_flags", "set_array_api_strict_flags",
            "broadcast_shapes", "count_nonzero", "cumulative_prod", "diff", "isin", "nextafter",
            "reciprocal", "searchsorted_left", "take_along_axis", "eig", "eigvals"}

# Arguments that make a call valid enough to get past the positional arguments, by name.
_M = np.arange(1.0, 10.0).reshape(3, 3)
POSITIONAL = {
    "x": _M, "x1": _M, "x2": _M, "a": _M, "b": _M, "arrays": (_M, _M), "condition": _M > 2,
    "shape": (2, 2), "fill_value": 1.0, "obj": [1.0], "start": 0.0, "stop": 1.0, "num": 3,
    "n_rows": 2, "n": 3, "d": 1.0, "type": "float32", "from_": "float32", "to": "float64",
    "dtype": "float32", "kind": "real floating", "indices": [0], "repeats": 2,
    "repetitions": (1, 2), "shift": 1, "source": 0, "destination": 1, "axis": 0, "axes": (0, 1),
}


def _call_args(module, params):
    """Positional arguments for the required parameters of an array-api-strict signature,
    in module's types (dtype names resolved in module)."""
    out = []
    for p in params:
        if p.kind is p.VAR_POSITIONAL:
            out += [_M, _M]
        elif p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            v = POSITIONAL[p.name]
            if isinstance(v, np.ndarray):
                v = module.asarray(v)
            elif isinstance(v, tuple) and v and isinstance(v[0], np.ndarray):
                v = tuple(module.asarray(e) for e in v)
            elif p.name in ("type", "from_", "to", "dtype"):
                v = getattr(module, v)
            out.append(v)
    return out


NAMESPACES = [("", ct, xp), ("fft.", ct.fft, xp.fft), ("linalg.", ct.linalg, xp.linalg)]


def _functions():
    for prefix, mine, ref in NAMESPACES:
        for name in sorted(ref.__all__):
            if name in NOT_2023 or not callable(getattr(ref, name)) or isinstance(
                    getattr(ref, name), type):
                continue
            yield prefix + name


@pytest.mark.parametrize("qualname", list(_functions()))
def test_namespace_names_and_keywords(qualname):
    prefix, _, name = qualname.rpartition(".")
    mine, ref = {"": (ct, xp), "fft": (ct.fft, xp.fft), "linalg": (ct.linalg, xp.linalg)}[prefix]
    assert hasattr(mine, name), f"ct.{qualname} is missing"
    f = getattr(mine, name)
    params = list(inspect.signature(getattr(ref, name)).parameters.values())
    try:
        args = _call_args(ct, params)
    except KeyError as e:
        pytest.fail(f"no sample argument for {qualname}'s parameter {e}")
    for p in params:
        if p.kind not in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD) or p.default is p.empty:
            continue
        try:
            f(*args, **{p.name: p.default})
        except TypeError as e:
            assert "keyword" not in str(e), f"ct.{qualname} has no keyword {p.name}: {e}"
        except Exception:  # noqa: BLE001 (a value the sample call cannot use: the name is known)
            pass
