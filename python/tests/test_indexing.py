"""Basic indexing and assignment against NumPy: ints, slices, `...`, None and tuples; bad
indices are IndexErrors. Integer arrays and boolean masks: test_indexing_advanced.py."""

import numpy as np
import pytest

import ctensor as ct
from conftest import to_numpy

KEYS = [
    0, -1, (1, 2), slice(None), slice(1, None), slice(None, None, -1), slice(-3, None, 2),
    (Ellipsis, 1), (None, 0), (slice(None), None, 1), (1, Ellipsis, None), (), Ellipsis,
    (0, slice(4, 0, -2)), (slice(10, 20),), (-2, -3),
]


@pytest.mark.parametrize("key", KEYS, ids=repr)
def test_basic_indexing_matches_numpy(device, key):
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    x = ct.asarray(a, device=device)
    out = x[key]
    expected = a[key]
    assert out.shape == expected.shape
    np.testing.assert_array_equal(to_numpy(out), expected)


@pytest.mark.parametrize("key", [
    (None, None, None, None, None, 0, 0, 0, 0), (None,) * 5 + (Ellipsis, 0, 0),
    (None, "rows", None, "cols"), (None, None, "rows", "cols", 0),
], ids=repr)
def test_new_axes_are_placed_after_integers_apply(device, key):
    # the view in between never holds more axes than the result: 5 new axes and 4 integers
    # on a 4-d array make a 5-d result, though 9 axes were once held at the same time
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4, 1)
    arrays = {"rows": np.array([0, 1]), "cols": np.array([0, 2])}
    x = ct.asarray(a, device=device)
    out = x[tuple(ct.asarray(arrays[k], device=device) if isinstance(k, str) else k
                  for k in key)]
    expected = a[tuple(arrays[k] if isinstance(k, str) else k for k in key)]
    assert out.shape == expected.shape
    np.testing.assert_array_equal(to_numpy(out), expected)


def test_basic_indexing_gives_views(device):
    x = ct.zeros((3, 4), device=device)
    row = x[1]
    row[2] = 7
    x[0, ::2] = 1
    x[2] = ct.asarray([1.0, 2.0, 3.0, 4.0], device=device)
    x[..., 3] = 9
    assert x.tolist() == [[1, 0, 1, 9], [0, 0, 7, 9], [1, 2, 3, 9]]


def test_integer_array_index(device):
    a = np.arange(12).reshape(3, 4)
    x = ct.asarray(a, device=device)
    i = ct.asarray([2, 0, -1], device=device)
    np.testing.assert_array_equal(to_numpy(x[i]), a[[2, 0, -1]])
    j = ct.asarray([[1, 3], [0, 0]], device=device)
    np.testing.assert_array_equal(to_numpy(x[:, j]), a[:, [[1, 3], [0, 0]]])


def test_bad_indices(device):
    x = ct.zeros((2, 3), device=device)
    for key in (2, (0, 3), (0, 0, 0), -3, "a", 1.5):
        with pytest.raises(IndexError):
            x[key]
    with pytest.raises(IndexError, match="ellipsis"):
        x[..., ...]
    with pytest.raises(ValueError):
        x[::0]


def test_iteration_walks_the_first_axis_as_numpy(device):
    """iter(x) gives x[0], x[1], ... (views); a 0-d array is not iterable, as in NumPy."""
    a = np.arange(6.0).reshape(3, 2)
    x = ct.asarray(a, device=device)
    rows = list(x)
    assert len(rows) == 3 and all(r.shape == (2,) for r in rows)
    assert [to_numpy(r).tolist() for r in rows] == a.tolist()
    rows[1][0] = 9.0  # a view: writes reach x
    assert float(x[1, 0]) == 9.0
    assert [float(v) for v in x[0]] == [0.0, 1.0]
    assert list(ct.zeros((0, 2), device=device)) == []
    with pytest.raises(TypeError, match="0-d"):
        iter(ct.asarray(1.0, device=device))
