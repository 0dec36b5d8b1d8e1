"""Sorting, searching, sets, cumulative_sum and the composed manipulation functions
(tril, triu, tile, repeat, tensordot) against NumPy and array-api-strict, on every device,
every dtype NumPy has, with hypothesis for shapes and values where it helps."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import ctensor as ct
from conftest import NUMPY_DTYPES, to_numpy

DTYPES = list(NUMPY_DTYPES)
FLOATS = [ct.float32, ct.float64, ct.float16]


def values(dtype, shape, seed=0, nan=True):
    """Values with ties (a small range), zeros, and for floats NaN and -0.0."""
    rng = np.random.default_rng(seed)
    v = rng.integers(-3, 4, size=shape).astype(np.float64)
    if dtype == ct.bool:
        return v > 0
    if ct.isdtype(dtype, "unsigned integer"):
        v = np.abs(v)
    v = v.astype(NUMPY_DTYPES[dtype])
    if dtype in FLOATS and v.size:
        flat = v.reshape(-1)
        flat[1::5] = -0.0
        if nan:
            flat[3::7] = np.nan
    return v


def strict(a):
    """array-api-strict and a as its array (float16, which it lacks, as the float32 that holds
    each value exactly)."""
    xp = pytest.importorskip("array_api_strict", reason="array-api-strict is not installed")
    return xp, xp.asarray(a.astype(np.float32) if a.dtype == np.float16 else a)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("descending", [False, True])
def test_sort_and_argsort_match_array_api_strict(device, dtype, descending):
    a = values(dtype, (4, 9), seed=1)
    xp, s = strict(a.astype(np.uint8) if dtype == ct.bool else a)  # the standard sorts no bool
    x = ct.asarray(a, device=device)
    for axis in (0, 1, -1):
        want_i = np.asarray(xp.argsort(s, axis=axis, descending=descending, stable=True))
        want_v = np.asarray(xp.sort(s, axis=axis, descending=descending, stable=True))
        got_i = ct.argsort(x, axis=axis, descending=descending)
        assert got_i.dtype == ct.int64
        np.testing.assert_array_equal(to_numpy(got_i), want_i)
        got_v = to_numpy(ct.sort(x, axis=axis, descending=descending))
        np.testing.assert_array_equal(got_v, want_v.astype(got_v.dtype))


@settings(max_examples=40, deadline=None)
@given(a=hnp.arrays(np.float32, hnp.array_shapes(min_dims=1, max_dims=3, max_side=6),
                    elements=st.floats(-4, 4, width=32) | st.just(np.nan)))
def test_sort_hypothesis_against_numpy(a):
    x = ct.asarray(a)
    np.testing.assert_array_equal(to_numpy(ct.argsort(x)), np.argsort(a, kind="stable"))
    np.testing.assert_array_equal(to_numpy(ct.sort(x, axis=0)), np.sort(a, axis=0))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_cumulative_sum_matches_array_api_strict(device, dtype):
    a = values(dtype, (3, 5), seed=2, nan=False)
    xp, s = strict(a.astype(np.uint8) if dtype == ct.bool else a)  # nor sums it
    x = ct.asarray(a, device=device)
    for axis in (0, 1):
        for initial in (False, True):
            want = np.asarray(xp.cumulative_sum(s, axis=axis, include_initial=initial))
            got = ct.cumulative_sum(x, axis=axis, include_initial=initial)
            expected_dtype = (dtype if dtype in FLOATS else
                              ct.uint64 if ct.isdtype(dtype, "unsigned integer") else ct.int64)
            assert got.dtype == expected_dtype
            np.testing.assert_allclose(to_numpy(got).astype(np.float64),
                                       want.astype(np.float64), rtol=1e-3)
    one = ct.cumulative_sum(ct.asarray(a[0], device=device), dtype=ct.float64)
    assert one.dtype == ct.float64
    np.testing.assert_allclose(to_numpy(one), np.cumsum(a[0].astype(np.float64)))
    with pytest.raises(ValueError, match="axis"):
        ct.cumulative_sum(x)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_nonzero_matches_numpy(device, dtype):
    for shape in ((7,), (3, 4), (2, 3, 4), (0, 3)):
        a = values(dtype, shape, seed=3)
        got = ct.nonzero(ct.asarray(a, device=device))
        want = np.nonzero(a)
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want):
            assert g.dtype == ct.int64
            np.testing.assert_array_equal(to_numpy(g), w)
    with pytest.raises(ValueError):
        ct.nonzero(ct.asarray(1.0, device=device))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("side", ["left", "right"])
def test_searchsorted_matches_numpy(device, dtype, side):
    x1 = np.sort(values(dtype, (15,), seed=4))
    x2 = values(dtype, (3, 4), seed=5)
    got = ct.searchsorted(ct.asarray(x1, device=device), ct.asarray(x2, device=device),
                          side=side)
    np.testing.assert_array_equal(to_numpy(got), np.searchsorted(x1, x2, side=side))
    perm = np.random.default_rng(0).permutation(15)
    shuffled = x1[np.argsort(perm)]
    sorter = ct.asarray(np.argsort(shuffled, kind="stable"), device=device)
    got = ct.searchsorted(ct.asarray(shuffled, device=device), ct.asarray(x2, device=device),
                          side=side, sorter=sorter)
    np.testing.assert_array_equal(to_numpy(got), np.searchsorted(x1, x2, side=side))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_unique_functions_match_array_api_strict(device, dtype):
    a = values(dtype, (5, 6), seed=6)
    xp, s = strict(a)
    x = ct.asarray(a, device=device)
    want = xp.unique_all(s)
    got = ct.unique_all(x)
    for field in ("values", "indices", "inverse_indices", "counts"):
        np.testing.assert_array_equal(to_numpy(getattr(got, field)),
                                      np.asarray(getattr(want, field)))
    c = ct.unique_counts(x)
    np.testing.assert_array_equal(to_numpy(c.counts), np.asarray(want.counts))
    i = ct.unique_inverse(x)
    assert i.inverse_indices.shape == x.shape
    np.testing.assert_array_equal(to_numpy(i.values), np.asarray(want.values))
    np.testing.assert_array_equal(to_numpy(ct.unique_values(x)), np.asarray(want.values))
    values_, counts_ = ct.unique_counts(x)  # a tuple too
    assert values_.shape == counts_.shape


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_tril_triu_match_numpy(device, dtype):
    a = values(dtype, (2, 4, 5), seed=7, nan=False)
    x = ct.asarray(a, device=device)
    for k in (-2, 0, 1, 6):
        np.testing.assert_array_equal(to_numpy(ct.tril(x, k=k)), np.tril(a, k))
        np.testing.assert_array_equal(to_numpy(ct.triu(x, k=k)), np.triu(a, k))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_tile_and_repeat_match_numpy(device, dtype):
    a = values(dtype, (2, 3), seed=8, nan=False)
    x = ct.asarray(a, device=device)
    for reps in ((2,), (2, 1), (3, 1, 2), (0, 2)):
        np.testing.assert_array_equal(to_numpy(ct.tile(x, reps)), np.tile(a, reps))
    np.testing.assert_array_equal(to_numpy(ct.repeat(x, 2)), np.repeat(a, 2))
    np.testing.assert_array_equal(to_numpy(ct.repeat(x, 3, axis=1)), np.repeat(a, 3, axis=1))
    counts = ct.asarray([1, 0, 2], device=device)
    np.testing.assert_array_equal(to_numpy(ct.repeat(x, counts, axis=1)),
                                  np.repeat(a, [1, 0, 2], axis=1))
    with pytest.raises(ValueError):
        ct.repeat(x, -1)


def test_tensordot_matches_numpy(device):
    rng = np.random.default_rng(9)
    a = rng.standard_normal((2, 3, 4))
    b = rng.standard_normal((4, 3, 5))
    x, y = ct.asarray(a, device=device), ct.asarray(b, device=device)
    np.testing.assert_allclose(to_numpy(ct.tensordot(x, y, axes=([1, 2], [1, 0]))),
                               np.tensordot(a, b, axes=([1, 2], [1, 0])))
    np.testing.assert_allclose(to_numpy(ct.tensordot(x, y, axes=1)),
                               np.tensordot(a, b, axes=1))
    c = rng.standard_normal((3, 4))
    np.testing.assert_allclose(to_numpy(ct.tensordot(x, ct.asarray(c, device=device))),
                               np.tensordot(a, c))
    with pytest.raises(ValueError):
        ct.tensordot(x, y, axes=([0], [0]))


def test_namespace_coverage_of_array_api_strict():
    """The standard's functions (array-api-strict's namespace) that ctensor has: printed,
    and these at least."""
    xp = pytest.importorskip("array_api_strict", reason="array-api-strict is not installed")
    names = [n for n in dir(xp) if not n.startswith("_") and callable(getattr(xp, n))
             and n not in ("Array",)]
    have = [n for n in names if hasattr(ct, n)]
    print(f"array API coverage: {len(have)} of {len(names)}; missing:",
          sorted(set(names) - set(have)))
    for name in ("sort", "argsort", "cumulative_sum", "nonzero", "searchsorted", "unique_all",
                 "unique_counts", "unique_inverse", "unique_values", "tril", "triu", "tile",
                 "repeat", "tensordot"):
        assert name in have


def test_take_along_axis_count_nonzero_positive_logical_xor(device):
    a = values(ct.float32, (3, 4), seed=10, nan=False)
    x = ct.asarray(a, device=device)
    order = ct.argsort(x, axis=1)
    np.testing.assert_array_equal(to_numpy(ct.take_along_axis(x, order, axis=1)),
                                  np.take_along_axis(a, np.argsort(a, axis=1, kind="stable"), 1))
    assert to_numpy(ct.count_nonzero(x)) == np.count_nonzero(a)
    np.testing.assert_array_equal(to_numpy(ct.count_nonzero(x, axis=0, keepdims=True)),
                                  np.count_nonzero(a, axis=0, keepdims=True))
    np.testing.assert_array_equal(to_numpy(ct.positive(x)), a)
    p, q = a > 0, a < 1
    np.testing.assert_array_equal(
        to_numpy(ct.logical_xor(ct.asarray(p, device=device), ct.asarray(q, device=device))),
        np.logical_xor(p, q))
