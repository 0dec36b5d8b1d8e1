"""Order statistics and NaN-aware ops as PyTorch has them (median, nanmedian, quantile,
nanquantile, nansum, nanmean, nan_to_num, lerp), module functions and Tensor methods, on every
device, against NumPy. Where PyTorch's rule differs from NumPy's the test says so: median of
an even count is the lower middle value (NumPy's median is the mean of the two middle ones),
and median along a dim gives (values, indices)."""

import math
import warnings

import numpy as np
import pytest

import ctensor as ct
from conftest import device_array, to_numpy

NAN = float("nan")
METHODS = ["linear", "lower", "higher", "midpoint", "nearest"]


def data(shape, seed=0, nan_rows=True):
    """Distinct values, and NaN in a few places (one whole row when there are rows)."""
    rng = np.random.default_rng(seed)
    v = rng.permutation(int(np.prod(shape))).astype(np.float64).reshape(shape) - 5.0
    if nan_rows and v.ndim == 2:
        v[0, 1] = NAN
        v[-1, :] = NAN
    return v


def ref_median(v, axis, ignore_nan):
    """PyTorch's median along axis: the lower middle of the stably sorted row; with NaN, the
    first NaN (its value and index); ignoring NaN, the lower middle of the numbers."""
    v = np.moveaxis(v, axis, -1)
    values = np.empty(v.shape[:-1])
    indices = np.empty(v.shape[:-1], dtype=np.int64)
    for at in np.ndindex(v.shape[:-1]):
        row = v[at]
        order = np.argsort(row, kind="stable")  # NaN last, in their order
        nans = int(np.isnan(row).sum())
        if ignore_nan:
            k = 0 if nans == row.size else (row.size - nans - 1) // 2
        else:
            k = row.size - nans if nans else (row.size - 1) // 2
        indices[at] = order[k]
        values[at] = row[order[k]]
    return values, indices


@pytest.mark.parametrize("shape", [(3, 5), (4, 6), (2, 3, 4)])
@pytest.mark.parametrize("dtype", [ct.float32, ct.float64])
def test_median_along_dim_values_indices_nan_rows(device, shape, dtype):
    v = data(shape)
    x = ct.asarray(v, dtype=dtype, device=device)
    for dim in range(-len(shape), len(shape)):
        for name in ("median", "nanmedian"):
            for keepdim in (False, True):
                got = getattr(ct, name)(x, dim, keepdim=keepdim)
                same = getattr(x, name)(dim=dim, keepdim=keepdim)
                values, indices = ref_median(v, dim, name == "nanmedian")
                if keepdim:
                    values = np.expand_dims(values, dim)
                    indices = np.expand_dims(indices, dim)
                assert type(got).__name__ == name and got.values is got[0]
                np.testing.assert_array_equal(to_numpy(got.values), values.astype(np.float32 if
                                              dtype == ct.float32 else np.float64))
                np.testing.assert_array_equal(to_numpy(got.indices), indices)
                np.testing.assert_array_equal(to_numpy(same.indices), indices)
                assert got.indices.dtype == ct.int64 and got.values.dtype == dtype


def test_median_of_all_elements_is_the_lower_middle(device):
    x = ct.asarray([4.0, 1.0, 3.0, 2.0], device=device)
    # PyTorch: 2.0; NumPy's median would be 2.5.
    assert ct.median(x).item() == 2.0 and np.median([4.0, 1.0, 3.0, 2.0]) == 2.5
    assert x.median().ndim == 0 and x.nanmedian().item() == 2.0
    y = ct.asarray([1.0, NAN, 3.0, 2.0, 0.0], device=device)
    assert math.isnan(ct.median(y).item()) and ct.nanmedian(y).item() == 1.0
    assert math.isnan(ct.nanmedian(ct.asarray([NAN, NAN], device=device)).item())
    # integers: the dtype is kept
    z = ct.asarray([[5, 1], [3, 2]], dtype=ct.int32, device=device)
    assert ct.median(z).item() == 2 and ct.median(z).dtype == ct.int32
    assert ct.median(z, 1).values.tolist() == [1, 2]


def test_median_empty_and_errors(device):
    # PyTorch: the median of an empty tensor is NaN; along an empty dim, an error.
    assert math.isnan(ct.median(ct.zeros((0, 3), device=device)).item())
    with pytest.raises(ValueError, match="size 0"):
        ct.median(ct.zeros((0, 3), device=device), 0)
    assert ct.median(ct.zeros((0, 3), device=device), 1).values.shape == (0,)
    with pytest.raises(ValueError, match="axis"):
        ct.median(ct.zeros((2, 3), device=device), 2)


def test_median_gradient_flows_to_the_picked_element(device):
    x = device_array(np.array([[3.0, 1.0, 2.0], [9.0, NAN, 7.0]]), device, requires_grad=True)
    ct.nanmedian(x, 1).values.sum().backward()
    # row 0: 2.0 (index 2); row 1 ignoring NaN: 7, 9 -> the lower, 7.0 (index 2)
    assert to_numpy(x.grad).tolist() == [[0, 0, 1], [0, 0, 1]]


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("dtype", [ct.float32, ct.float64])
def test_quantile_against_numpy(device, method, dtype):
    v = data((4, 7), seed=1)
    x = ct.asarray(v, dtype=dtype, device=device)
    q = [0.0, 0.2, 0.5, 0.75, 1.0]
    tol = 1e-5 if dtype == ct.float32 else 1e-12
    for dim in (None, 0, 1, -1):
        for keepdim in (False, True):
            want = np.quantile(v, q, axis=dim, keepdims=keepdim, method=method)
            got = ct.quantile(x, q, dim, keepdim, interpolation=method)
            np.testing.assert_allclose(to_numpy(got), want, rtol=tol, atol=tol)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # the row of NaNs: NaN
                want = np.nanquantile(v, q, axis=dim, keepdims=keepdim, method=method)
            qt = ct.asarray(q, dtype=dtype, device=device)
            got = x.nanquantile(qt, dim=dim, keepdim=keepdim, interpolation=method)
            np.testing.assert_allclose(to_numpy(got), want, rtol=tol, atol=tol)
            # a float q gives no q dimension
            want = np.quantile(v, 0.3, axis=dim, keepdims=keepdim, method=method)
            got = x.quantile(0.3, dim, keepdim, interpolation=method)
            assert got.shape == np.shape(want)
            np.testing.assert_allclose(to_numpy(got), want, rtol=tol, atol=tol)


def test_quantile_errors_and_empty(device):
    x = ct.asarray([[1.0, 2.0], [3.0, 4.0]], device=device)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        ct.quantile(x, 1.5)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        ct.quantile(x, [0.5, -0.1])
    with pytest.raises(TypeError, match="x's dtype"):
        ct.quantile(x, ct.asarray([0.5], dtype=ct.float64, device=device))
    with pytest.raises(TypeError, match="floating"):
        ct.quantile(ct.asarray([1, 2], device=device), 0.5)
    with pytest.raises(ValueError, match="interpolation"):
        ct.quantile(x, 0.5, interpolation="cubic")
    # PyTorch: quantiles of an empty tensor are NaN, of the result's shape
    e = ct.quantile(ct.zeros((3, 0), device=device), [0.5, 0.7], dim=1)
    assert e.shape == (2, 3) and np.isnan(to_numpy(e)).all()


def test_quantile_gradient_is_the_linear_weights(device):
    v = np.array([4.0, 0.0, 2.0, 1.0, 3.0])
    x = device_array(v, device, requires_grad=True)
    q = device_array(np.array(0.3), device, requires_grad=True)
    y = ct.quantile(x, q)  # rank 1.2 of 0, 1, 2, 3, 4: 1 + 0.2 (2 - 1)
    assert abs(y.item() - 1.2) < 1e-6
    y.backward()
    np.testing.assert_allclose(to_numpy(x.grad), [0, 0, 0.2, 0.8, 0], atol=1e-6)
    np.testing.assert_allclose(to_numpy(q.grad), 4.0, atol=1e-5)  # (n - 1) (x[j] - x[i])


@pytest.mark.parametrize("dtype", [ct.float32, ct.float64, ct.float16])
def test_nansum_nanmean_against_numpy(device, dtype):
    v = data((3, 4))
    x = ct.asarray(v, dtype=dtype, device=device)
    tol = 2e-3 if dtype == ct.float16 else 1e-6
    for dim in (None, 0, 1, -1, (0, 1)):
        for keepdim in (False, True):
            np.testing.assert_allclose(to_numpy(ct.nansum(x, dim, keepdim)),
                                       np.nansum(v, axis=dim, keepdims=keepdim), rtol=tol)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # the row of NaNs: NaN
                want = np.nanmean(v, axis=dim, keepdims=keepdim)
            np.testing.assert_allclose(to_numpy(x.nanmean(dim=dim, keepdim=keepdim)), want,
                                       rtol=tol)
    assert ct.nansum(x, dtype=ct.float64).dtype == ct.float64
    # integers: nansum is sum (int64); PyTorch's nanmean refuses them
    i = ct.asarray([1, 2, 3], dtype=ct.int32, device=device)
    assert ct.nansum(i).item() == 6 and ct.nansum(i).dtype == ct.int64
    with pytest.raises(TypeError, match="floating"):
        ct.nanmean(i)


def test_nan_reductions_gradient_is_zero_at_nan(device):
    x = device_array(np.array([1.0, NAN, 3.0, NAN]), device, requires_grad=True)
    ct.nanmean(x).backward()
    assert to_numpy(x.grad).tolist() == [0.5, 0.0, 0.5, 0.0]
    y = device_array(np.array([1.0, NAN, 3.0]), device, requires_grad=True)
    y.nansum().backward()
    assert to_numpy(y.grad).tolist() == [1.0, 0.0, 1.0]


@pytest.mark.parametrize("dtype", [ct.float32, ct.float64, ct.float16])
def test_nan_to_num_against_numpy(device, dtype):
    npd = {ct.float32: np.float32, ct.float64: np.float64, ct.float16: np.float16}[dtype]
    v = np.array([NAN, np.inf, -np.inf, 1.5, -0.25], dtype=npd)
    x = ct.asarray(v, device=device)
    np.testing.assert_array_equal(to_numpy(ct.nan_to_num(x)), np.nan_to_num(v))
    np.testing.assert_array_equal(to_numpy(x.nan_to_num(nan=-1.0, posinf=7.0, neginf=-9.0)),
                                  np.nan_to_num(v, nan=-1.0, posinf=7.0, neginf=-9.0))
    i = ct.asarray([1, 2], device=device)
    assert ct.nan_to_num(i).tolist() == [1, 2] and ct.nan_to_num(i).dtype == i.dtype
    y = x.clone()
    assert y.nan_to_num_() is y and to_numpy(y)[0] == 0.0


def test_nan_to_num_gradient(device):
    x = device_array(np.array([1.0, NAN, np.inf, -2.0, -np.inf]), device, requires_grad=True)
    ct.nan_to_num(x).sum().backward()
    # PyTorch's: 1 where finite, 0 where replaced
    assert to_numpy(x.grad).tolist() == [1.0, 0.0, 0.0, 1.0, 0.0]


def test_lerp_formula_broadcast_and_gradients(device):
    rng = np.random.default_rng(3)
    s, e = rng.uniform(-3, 3, (2, 3)), rng.uniform(-3, 3, (2, 3))
    w = np.array([-0.5, 0.3, 1.0])
    a, b = device_array(s, device, True), device_array(e, device, True)
    wt = device_array(w, device, True)
    y = ct.lerp(a, b, wt)
    np.testing.assert_allclose(to_numpy(y), s + w * (e - s), rtol=1e-12)
    # exact at the ends, as PyTorch's two-sided formula
    assert (to_numpy(a.lerp(b, 1.0)) == e).all() and (to_numpy(ct.lerp(a, b, 0.0)) == s).all()
    np.testing.assert_allclose(to_numpy(ct.lerp(a, b, 0.75)), s + 0.75 * (e - s), rtol=1e-12)
    y.sum().backward()
    np.testing.assert_allclose(to_numpy(a.grad), np.broadcast_to(1 - w, (2, 3)), rtol=1e-12)
    np.testing.assert_allclose(to_numpy(b.grad), np.broadcast_to(w, (2, 3)), rtol=1e-12)
    np.testing.assert_allclose(to_numpy(wt.grad), (e - s).sum(0), rtol=1e-12)
    with pytest.raises(TypeError, match="floating"):
        ct.lerp(ct.asarray([1, 2], device=device), ct.asarray([3, 4], device=device), 0.5)
    c = ct.asarray([0.0, 10.0], device=device)
    assert c.lerp_(ct.asarray([10.0, 20.0], device=device), 0.5) is c and c.tolist() == [5, 15]
