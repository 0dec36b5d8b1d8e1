"""Advanced indexing and assignment against NumPy, on every device present: integer arrays
(Tensors and lists, broadcast together, ints among them, adjacent or separated), boolean
masks over leading or inner axes mixed with other items, assignment of scalars and arrays
through both, repeated indices (ctensor keeps the last value in C order), bad keys as
IndexError, and the gradient through a gather."""

import numpy as np
import pytest

import ctensor as ct
from conftest import NUMPY_DTYPES, to_numpy

A = np.arange(2 * 3 * 4 * 5, dtype=np.float64).reshape(2, 3, 4, 5)

I0 = np.array([1, 0, -1])
I1 = np.array([[2], [0]])
I2 = np.array([3, -4, 0])


def keys():
    """(NumPy key) for A; the ctensor key is made from it by ct_key."""
    return [
        I0 % 2,
        [1, 0],
        (slice(None), I0),
        (slice(None), I1, I2),  # adjacent, broadcast: B in their place
        (slice(None), I1, slice(None), I2),  # separated: B first
        (0, slice(None), I2),  # an int among arrays, separated from them
        (slice(None), 1, I2),  # adjacent int and array
        (Ellipsis, I2),
        (None, slice(None), I0),
        (1, I0, I2 % 4, slice(1, None)),
        (np.array([], dtype=np.int64),),
        (slice(None), [[0, 1], [2, 0]]),
        (I0 % 2, I1, I2 % 4, np.array([4, 0, 1])),
        (A[:, 0, 0, 0] > 30,),
        (A[:, :, 0, 0] % 2 == 0,),
        (A[:, :, 0, 0] > 100, slice(1, None)),
        (slice(None), A[0, :, :, 0] % 3 == 0),
        (A[:, 0, 0, 0] > 0, slice(None), I2),
        (A[:, 0, 0, 0] > 0, 1, Ellipsis, [0, 2]),
    ]


def ct_key(key, device):
    items = key if isinstance(key, tuple) else (key,)
    made = tuple(ct.asarray(k, device=device) if isinstance(k, np.ndarray) else k for k in items)
    return made if isinstance(key, tuple) else made[0]


KEY_IDS = [f"key{i}" for i in range(len(keys()))]


@pytest.mark.parametrize("key", keys(), ids=KEY_IDS)
def test_advanced_indexing_matches_numpy(device, key):
    x = ct.asarray(A, device=device)
    expected = A[key]
    out = x[ct_key(key, device)]
    assert out.shape == expected.shape
    np.testing.assert_array_equal(to_numpy(out), expected)


@pytest.mark.parametrize("key", keys(), ids=KEY_IDS)
def test_advanced_assignment_matches_numpy(device, key):
    expected = A.copy()
    shape = A[key].shape
    # distinct values, so that repeated positions show which value stayed
    values = np.arange(np.prod(shape), dtype=np.float64).reshape(shape) + 1000
    expected[key] = values
    expected_scalar = A.copy()
    expected_scalar[key] = -7
    x = ct.asarray(A.copy(), device=device)  # asarray would share A's memory on the CPU
    y = ct.asarray(A.copy(), device=device)
    x[ct_key(key, device)] = ct.asarray(values, device=device)
    y[ct_key(key, device)] = -7
    if len(np.unique(np.ravel_multi_index(_positions(key), A.shape))) == _positions(key)[0].size:
        np.testing.assert_array_equal(to_numpy(x), expected)
    np.testing.assert_array_equal(to_numpy(y), expected_scalar)


def _positions(key):
    """The positions of A that key picks, as index arrays of A's rank."""
    grid = np.indices(A.shape)
    return tuple(g[key].ravel() for g in grid)


def test_repeated_indices_keep_the_last_value(device):
    x = ct.zeros((4, 2), dtype=ct.int32, device=device)
    x[[1, 3, 1, -3]] = ct.asarray([[1, 1], [2, 2], [3, 3], [4, 4]], dtype=ct.int32, device=device)
    assert x.tolist() == [[0, 0], [4, 4], [0, 0], [2, 2]]
    m = ct.zeros((2, 2), device=device)
    rows, cols = ct.asarray([0, 0, 1], device=device), ct.asarray([1, 1, 0], device=device)
    m[rows, cols] = ct.asarray([5.0, 6.0, 7.0], device=device)
    assert m.tolist() == [[0, 6], [7, 0]]


@pytest.mark.parametrize("dtype", list(NUMPY_DTYPES) + [ct.bfloat16], ids=str)
def test_every_dtype(device, dtype):
    x = ct.asarray((np.arange(12) % 5).reshape(3, 4), device=device).astype(dtype)
    a = to_numpy(x)  # the values in dtype (bool: 0 and 1)
    np.testing.assert_array_equal(to_numpy(x[[2, 0]]), a[[2, 0]])
    np.testing.assert_array_equal(to_numpy(x[x > 0]), a[a > 0])
    x[x > 0] = 1
    x[[0], [3]] = 0
    a[a > 0] = 1
    a[[0], [3]] = 0
    np.testing.assert_array_equal(to_numpy(x), a)


def test_value_dtype_is_converted_and_broadcast(device):
    x = ct.zeros((3, 4), dtype=ct.int64, device=device)
    x[[0, 2]] = ct.asarray([1.9, 2.0, 3.0, 4.0], device=device)
    x[x == 0] = 9
    assert x.tolist() == [[1, 2, 3, 4], [9, 9, 9, 9], [1, 2, 3, 4]]


def test_assignment_through_a_view_that_is_not_one_axis_of_memory(device):
    a = np.arange(24.0).reshape(4, 6)
    x = ct.asarray(a.copy(), device=device)
    v = x[::2, ::3]  # the indexed axes do not merge into one axis of x's memory
    v[ct.asarray([0, 1], device=device), ct.asarray([1, 0], device=device)] = -1
    a[::2, ::3][[0, 1], [1, 0]] = -1
    np.testing.assert_array_equal(to_numpy(x), a)


def test_gradient_through_a_gather(device):
    x = ct.asarray(np.arange(6.0).reshape(2, 3), device=device).requires_grad_()
    rows, cols = ct.asarray([1, 1, 0], device=device), ct.asarray([2, 2, 0], device=device)
    y = x[rows, cols] * ct.asarray([1.0, 2.0, 3.0], device=device)
    ct.sum(y).backward()
    assert x.grad.tolist() == [[3, 0, 0], [0, 0, 3]]
    z = ct.asarray(np.arange(4.0), device=device).requires_grad_()
    ct.sum(z[z > 1]).backward()
    assert z.grad.tolist() == [0, 0, 1, 1]


def test_bad_advanced_keys(device):
    x = ct.zeros((2, 3), device=device)
    cases = [
        ([0, 2],),
        (ct.asarray([0, 5], device=device),),
        (slice(None), ct.asarray([-4], device=device)),
        (ct.asarray([0, 1], device=device), ct.asarray([0, 3], device=device)),
        (ct.asarray([0, 1], device=device), ct.asarray([0, 1, 2], device=device)),
        (ct.asarray([True, False, True], device=device),),
        (ct.asarray(True, device=device), 0),  # a 0-d mask is valid only as the sole index
        (ct.asarray([0.5], device=device),),
        (ct.asarray([0, 1], device=device), 5),
    ]
    for key in cases:
        with pytest.raises(IndexError):
            x[key]
        with pytest.raises(IndexError):
            x[key] = 1
    assert x.tolist() == [[0, 0, 0], [0, 0, 0]]  # nothing was written
    with pytest.raises(ValueError):
        x[[0, 1]] = ct.ones((3, 3), device=device)


def test_assignment_to_a_leaf_that_requires_grad_is_refused(device):
    x = ct.zeros(3, device=device).requires_grad_()
    with pytest.raises(ct.StateError):
        x[[0]] = 1
