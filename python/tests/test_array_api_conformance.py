"""Points of the array API standard (2023.12) that its conformance suite
(data-apis/array-api-tests, tools/array-api-tests.sh) found ctensor missing, each checked
from the standard's text on every device: the signatures it gives (keyword and positional
parameters, readable by inspect.signature), vecdot's result dtype, a sole 0-d boolean index,
linear algebra on empty (0 x 0) matrices, and pinv/matrix_rank with an array rtol."""

import inspect

import numpy as np
import pytest

import ctensor as ct


def _params(func):
    return {p.name: p.kind for p in inspect.signature(func).parameters.values()}


def test_signatures_are_the_standards():
    P = inspect.Parameter
    # permute_dims(x, /, axes) and broadcast_to(x, /, shape): axes and shape by keyword too
    assert _params(ct.permute_dims)["axes"] == P.POSITIONAL_OR_KEYWORD
    assert _params(ct.broadcast_to)["shape"] == P.POSITIONAL_OR_KEYWORD
    # max and min: axis and keepdims keyword-only (PyTorch's forms still accepted)
    for reduce in (ct.max, ct.min):
        kinds = _params(reduce)
        assert kinds["axis"] == kinds["keepdims"] == P.KEYWORD_ONLY
    assert _params(ct.clip)["min"] == _params(ct.clip)["max"] == P.POSITIONAL_OR_KEYWORD
    assert _params(ct.tensordot)["axes"] == P.KEYWORD_ONLY
    assert _params(ct.vecdot)["axis"] == P.KEYWORD_ONLY
    assert list(_params(ct.matmul)) == ["x1", "x2"]
    assert list(_params(ct.matrix_transpose)) == ["x"]
    assert ct.linalg.matmul is ct.matmul and ct.linalg.vecdot is ct.vecdot


def test_keyword_forms_run(device):
    x = ct.asarray([[1.0, 2.0], [3.0, 4.0]], device=device)
    assert ct.permute_dims(x, axes=(1, 0)).tolist() == [[1.0, 3.0], [2.0, 4.0]]
    assert ct.broadcast_to(x[0], shape=(3, 2)).shape == (3, 2)
    assert ct.max(x, axis=0, keepdims=True).tolist() == [[3.0, 4.0]]
    assert ct.min(x, axis=1).tolist() == [1.0, 3.0]
    assert ct.clip(x, min=2.0, max=3.0).tolist() == [[2.0, 2.0], [3.0, 3.0]]
    values, indices = ct.max(x, 1)  # PyTorch's max(x, dim)
    assert values.tolist() == [2.0, 4.0] and indices.tolist() == [1, 1]


@pytest.mark.parametrize("dtype", ["uint8", "int8", "int16", "uint32", "int64", "float32"])
def test_vecdot_result_has_the_promoted_dtype(device, dtype):
    """The standard: vecdot's result has the dtype of x1 and x2 promoted (an integer sum
    wraps in that dtype, as NumPy's does)."""
    a = np.array([[100, 120, 7], [3, 4, 5]], dtype=dtype)
    b = np.array([[2, 3, 1], [1, 1, 1]], dtype=dtype)
    out = ct.vecdot(ct.asarray(a, device=device), ct.asarray(b, device=device))
    assert out.dtype == getattr(ct, dtype)
    np.testing.assert_array_equal(np.asarray(out.to("cpu")), np.sum(a * b, axis=-1, dtype=dtype))
    wider = "float64" if dtype == "float32" else "int64"  # the same kind, by the table
    mixed = ct.vecdot(ct.asarray(a, device=device), ct.asarray(b.astype(wider), device=device))
    assert mixed.dtype == ct.result_type(getattr(ct, dtype), getattr(ct, wider))


def test_sole_0d_boolean_index(device):
    """The standard: x[key] for a 0-d boolean key is x[None][key[None]]; an assignment
    through it writes all of x or nothing."""
    x = ct.asarray([[1.0, 2.0], [3.0, 4.0]], device=device)
    assert x[ct.asarray(True, device=device)].shape == (1, 2, 2)
    assert x[ct.asarray(False, device=device)].shape == (0, 2, 2)
    scalar = ct.asarray(5, device=device)
    assert scalar[ct.asarray(True, device=device)].tolist() == [5]
    assert scalar[(ct.asarray(False, device=device),)].shape == (0,)
    x[ct.asarray(False, device=device)] = 9.0
    assert x.tolist() == [[1.0, 2.0], [3.0, 4.0]]
    x[ct.asarray(True, device=device)] = 9.0
    assert x.tolist() == [[9.0, 9.0], [9.0, 9.0]]
    with pytest.raises(IndexError, match="sole index"):
        x[ct.asarray(True, device=device), 0]


def test_python_bool_index_is_a_0d_mask(device):
    """x[True] and x[False] are x[None] and its empty selection, as in NumPy and PyTorch, not
    x[1] and x[0] (a bool is an int in Python); among other items a Python bool is refused as a
    0-d mask is, never taken as an integer."""
    a = np.array([[1.0, 2.0], [3.0, 4.0]])
    x = ct.asarray(a, device=device)
    for key in (True, False, (True,), (False,)):
        got = x[key]
        assert got.shape == a[key].shape
        np.testing.assert_array_equal(np.asarray(got.to("cpu")), a[key])
    assert ct.asarray(5, device=device)[True].tolist() == [5]
    x[False] = 7.0
    assert x.tolist() == [[1.0, 2.0], [3.0, 4.0]]
    x[True] = 7.0
    assert x.tolist() == [[7.0, 7.0], [7.0, 7.0]]
    with pytest.raises(IndexError, match="sole index"):
        x[0, True]
    with pytest.raises(IndexError, match="sole index"):
        x[True, 0] = 1.0
    assert x.tolist() == [[7.0, 7.0], [7.0, 7.0]]


@pytest.mark.parametrize("dtype", ["float32", "float64", "complex128"])
def test_linalg_of_empty_matrices(device, dtype):
    """A stack of 0 x 0 matrices: empty factors and inverses, det 1 (the empty product)."""
    x = ct.zeros((3, 0, 0), dtype=getattr(ct, dtype), device=device)
    assert ct.linalg.cholesky(x).shape == (3, 0, 0)
    assert ct.linalg.inv(x).shape == (3, 0, 0)
    assert ct.linalg.solve(x, ct.zeros((3, 0, 2), dtype=x.dtype, device=device)).shape == (3, 0, 2)
    assert ct.linalg.eigvalsh(x).shape == (3, 0)
    assert ct.linalg.eigh(x).eigenvectors.shape == (3, 0, 0)
    assert ct.linalg.det(x).tolist() == [1, 1, 1]
    sign, logabsdet = ct.linalg.slogdet(x)
    assert sign.tolist() == [1, 1, 1] and logabsdet.tolist() == [0.0, 0.0, 0.0]


def test_pinv_and_matrix_rank_take_an_array_rtol(device):
    """The standard: rtol may be an array, one tolerance per matrix of the stack."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((3, 4, 2))
    a[1, :, 1] = a[1, :, 0] * 1e-6  # nearly rank 1: a tolerance of 1e-3 drops a value
    rtol = np.array([1e-9, 1e-3, 0.9])
    x = ct.asarray(a, device=device)
    r = ct.asarray(rtol, device=device)
    expected = np.linalg.pinv(a, rcond=rtol)
    np.testing.assert_allclose(np.asarray(ct.linalg.pinv(x, rtol=r).to("cpu")), expected,
                               rtol=1e-9, atol=1e-12)
    assert ct.linalg.matrix_rank(x, rtol=r).tolist() == [2, 1, 1]
    empty = ct.zeros((0, 2, 3), device=device)
    assert ct.linalg.pinv(empty, rtol=ct.zeros((0,), device=device)).shape == (0, 3, 2)
    assert ct.linalg.matrix_rank(empty, rtol=ct.zeros((0,), device=device)).shape == (0,)


# The standard's functions whose C definitions carry a text signature, so that
# inspect.signature (and the conformance suite's signature checks) can read them.
INSPECTABLE = ["arange", "linspace", "eye", "zeros", "ones", "empty", "full", "squeeze",
               "broadcast_arrays", "concat", "moveaxis", "roll", "meshgrid", "take", "tile",
               "repeat", "where", "isdtype", "result_type", "can_cast", "astype"]


@pytest.mark.parametrize("name", INSPECTABLE)
def test_namespace_functions_are_inspectable(name):
    assert inspect.signature(getattr(ct, name)).parameters


def test_signature_details():
    P = inspect.Parameter
    assert _params(ct.isdtype) == {"dtype": P.POSITIONAL_OR_KEYWORD, "kind": P.POSITIONAL_OR_KEYWORD}
    assert ct.isdtype(dtype=ct.float32, kind="real floating")
    assert _params(ct.result_type) == {"arrays_and_dtypes": P.VAR_POSITIONAL}
    assert _params(ct.meshgrid)["indexing"] == P.KEYWORD_ONLY
    assert _params(ct.arange)["stop"] == _params(ct.arange)["step"] == P.POSITIONAL_OR_KEYWORD
    assert _params(ct.linspace)["num"] == P.POSITIONAL_OR_KEYWORD
    assert _params(ct.ones(2).to_device)["device"] == P.POSITIONAL_OR_KEYWORD


def test_asarray_of_0d_arrays(device):
    """A nested sequence whose elements are 0-d arrays (a stack's elements, x[i, j]) reads
    each as its Python scalar: complex ones too."""
    z = ct.asarray([[1 + 2j, 3j]], dtype=ct.complex64, device=device)
    out = ct.asarray([z[0, 0], z[0, 1]], dtype=ct.complex64)
    assert out.dtype == ct.complex64 and out.tolist() == [1 + 2j, 3j]
    assert ct.asarray([ct.asarray(True), ct.asarray(False)]).dtype == ct.bool
    assert ct.asarray([ct.asarray(3), ct.asarray(4)]).tolist() == [3, 4]
    assert ct.asarray([ct.asarray(1.5)], dtype=ct.float64).tolist() == [1.5]


def test_roll_over_several_axes(device):
    """The standard: shift a tuple with an axis tuple of the same length, or an int shift
    applied to every axis given."""
    a = np.arange(24.0).reshape(2, 3, 4)
    x = ct.asarray(a, device=device)

    def rolled(*args, **kwargs):
        return np.asarray(ct.roll(x, *args, **kwargs).to("cpu"))

    np.testing.assert_array_equal(rolled((1, -2), axis=(0, 2)), np.roll(a, (1, -2), axis=(0, 2)))
    np.testing.assert_array_equal(rolled(5, axis=(1, 2)), np.roll(a, 5, axis=(1, 2)))
    np.testing.assert_array_equal(rolled(7), np.roll(a, 7))
    np.testing.assert_array_equal(rolled(-1, axis=-1), np.roll(a, -1, axis=-1))
    with pytest.raises(ValueError):
        ct.roll(x, (1, 2), axis=0)


def test_vecdot_contracted_axis_sizes_must_match(device):
    """The standard: the contracted axis has the same size in x1 and x2 (not broadcast)."""
    with pytest.raises(ct.ShapeError):
        ct.vecdot(ct.zeros(0, device=device), ct.zeros(1, device=device))
    with pytest.raises(ct.ShapeError):
        ct.vecdot(ct.ones((2, 1), device=device), ct.ones((2, 3), device=device))
    assert ct.vecdot(ct.ones((2, 3), device=device), ct.ones(3, device=device)).tolist() == [3, 3]


def test_vector_norm_over_no_axis(device):
    """axis=() reduces nothing: each element is a one-element vector, its norm |x_i|."""
    x = ct.asarray([0.0, -2.0, 3.0], device=device)
    assert ct.linalg.vector_norm(x, axis=()).tolist() == [0.0, 2.0, 3.0]
    assert ct.linalg.vector_norm(x, axis=(), ord=0).tolist() == [0.0, 1.0, 1.0]
    z = ct.asarray([3 + 4j], dtype=ct.complex128, device=device)
    out = ct.linalg.vector_norm(z, axis=(), ord=float("inf"))
    assert out.dtype == ct.float64 and out.tolist() == [5.0]


def test_boolean_mask_with_an_empty_axis(device):
    """The standard: each size of a boolean index equals the indexed axis's or is 0 (it
    then selects no element)."""
    x = ct.asarray([[1.0, 2.0, 3.0]], device=device)
    assert x[ct.zeros((0,), dtype=ct.bool, device=device)].shape == (0, 3)
    assert x[ct.zeros((1, 0), dtype=ct.bool, device=device)].shape == (0,)
    x[ct.zeros((0,), dtype=ct.bool, device=device)] = 7.0
    assert x.tolist() == [[1.0, 2.0, 3.0]]
    with pytest.raises(IndexError):
        x[ct.zeros((2,), dtype=ct.bool, device=device)]


def test_full_takes_a_0d_array_as_fill_value(device):
    """As array-api-strict's full: a 0-d array's value fills, in its dtype unless one is asked
    for; full_like keeps x's dtype; an array of another rank is refused."""
    x = ct.full((3,), ct.asarray(2, dtype=ct.int16, device=device), device=device)
    assert x.dtype == ct.int16 and x.tolist() == [2, 2, 2]
    y = ct.full((2,), ct.asarray(1.5, device=device), dtype=ct.float64, device=device)
    assert y.dtype == ct.float64 and y.tolist() == [1.5, 1.5]
    z = ct.full_like(ct.zeros((2,), dtype=ct.int32, device=device), ct.asarray(7, device=device))
    assert z.dtype == ct.int32 and z.tolist() == [7, 7]
    with pytest.raises(TypeError, match="0-d array"):
        ct.full((2,), ct.asarray([1.0], device=device), device=device)


@pytest.mark.parametrize("dtype", ["complex64", "complex128", "bool"])
def test_repeat_with_an_array_of_counts_takes_any_dtype(device, dtype):
    """The standard's repeat: x may have any dtype; repeats is an int or a 1-D integer array
    (one count per element along the axis, or one for all); a non-integer repeats is refused."""
    values = [1 + 2j, 3 - 1j] if dtype != "bool" else [True, False]
    x = ct.asarray(values, dtype=getattr(ct, dtype), device=device)
    counts = ct.asarray([2, 1], dtype=ct.uint8, device=device)
    assert ct.repeat(x, counts).tolist() == np.repeat(values, [2, 1]).tolist()
    assert ct.repeat(x, ct.asarray([3], device=device)).tolist() == np.repeat(values, 3).tolist()
    empty = ct.asarray([], dtype=x.dtype, device=device)
    assert ct.repeat(empty, ct.asarray([], dtype=ct.uint8, device=device)).shape == (0,)
    with pytest.raises(ct.DTypeError, match="integer dtype"):
        ct.repeat(x, ct.asarray([1.0, 2.0], device=device))


def test_setitem_of_a_python_complex_keeps_complex128_precision(device):
    """x[key] = value: a Python complex converts straight into x's dtype (the standard's
    __setitem__ casts value to x's dtype), not through complex64 first."""
    x = ct.zeros((2,), dtype=ct.complex128, device=device)
    x[0] = complex(1.0, 16777217.0)  # 2**24 + 1: exact in float64, not in float32
    x[1:] = 16777217 + 0.5j
    assert x.tolist() == [complex(1.0, 16777217.0), complex(16777217.0, 0.5)]
    y = ct.zeros((1,), device=device)
    with pytest.raises(ct.DTypeError, match="complex"):
        y[0] = 1j
