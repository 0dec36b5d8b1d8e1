"""The namespace's one rule for array arguments (python/src/asarray.c, ctpy_tensor_arg): a
function that reads an array takes a Tensor or an array-like (a Python number, a nested
list, a NumPy array, a DLPack producer), converted as ct.asarray converts it, as NumPy's
functions do; an array-like beside a Tensor joins the Tensor's device. What is no array-like
is the same TypeError, naming the function, from every file's functions (elementwise and
reductions, manipulation, sorting and searching, creation, dtypes)."""

import numpy as np
import pytest

import ctensor as ct
from conftest import to_numpy

# One function of each C file that takes arrays, called on x, with NumPy's answer.
CALLS = {
    "add": (lambda x: ct.add(x, x), lambda a: np.add(a, a)),  # math.c
    "sqrt": (ct.sqrt, np.sqrt),
    "sum": (ct.sum, np.sum),
    "argmax": (ct.argmax, np.argmax),
    "where": (lambda x: ct.where([True, False, True, False], x, 0.0),
              lambda a: np.where([True, False, True, False], a, 0.0)),
    "clip": (lambda x: ct.clip(x, 1, 2), lambda a: np.clip(a, 1, 2)),
    "reshape": (lambda x: ct.reshape(x, (2, 2)), lambda a: np.reshape(a, (2, 2))),  # manipulate.c
    "flip": (ct.flip, np.flip),
    "concat": (lambda x: ct.concat([x, x]), lambda a: np.concatenate([a, a])),
    "take": (lambda x: ct.take(x, [0, 3]), lambda a: np.take(a, [0, 3])),
    "sort": (ct.sort, np.sort),  # sorting.c
    "cumulative_sum": (ct.cumulative_sum, np.cumsum),
    "searchsorted": (lambda x: ct.searchsorted([0.0, 2.0, 5.0], x),
                     lambda a: np.searchsorted([0.0, 2.0, 5.0], a)),
    "repeat": (lambda x: ct.repeat(x, [1, 0, 2, 1]), lambda a: np.repeat(a, [1, 0, 2, 1])),
    "zeros_like": (ct.zeros_like, np.zeros_like),  # creation.c
    "astype": (lambda x: ct.astype(x, ct.float64), lambda a: a.astype(np.float64)),  # dtypes.c
}

VALUES = [1.0, 4.0, 2.0, 9.0]
ARRAY_LIKES = {
    "list": lambda: list(VALUES),
    "tuple": lambda: tuple(VALUES),
    "numpy": lambda: np.asarray(VALUES, np.float32),
}


@pytest.mark.parametrize("kind", sorted(ARRAY_LIKES))
@pytest.mark.parametrize("name", sorted(CALLS))
def test_every_file_takes_array_likes(name, kind):
    call, reference = CALLS[name]
    out = call(ARRAY_LIKES[kind]())
    expected = reference(np.asarray(VALUES, np.float32))
    np.testing.assert_allclose(to_numpy(out), expected, rtol=1e-6)
    tensor_out = call(ct.asarray(VALUES))
    np.testing.assert_array_equal(to_numpy(tensor_out), to_numpy(out))


@pytest.mark.parametrize("name", sorted(CALLS))
def test_every_file_refuses_the_same_way(name):
    call, _ = CALLS[name]
    with pytest.raises(TypeError, match=r"cannot make an array from <object object .*: give a "
                                        r"Tensor, a Python number, a nested list"):
        call(object())


@pytest.mark.parametrize("call, name", [
    (lambda: ct.sqrt("abc"), "sqrt"),
    (lambda: ct.reshape("abc", (3,)), "reshape"),
    (lambda: ct.sort("abc"), "sort"),
    (lambda: ct.ones_like("abc"), "ones_like"),
    (lambda: ct.astype("abc", ct.float32), "astype"),
    (lambda: ct.stack([ct.ones((2,)), "abc"]), "stack"),
])
def test_the_refusal_names_the_function(call, name):
    with pytest.raises(TypeError, match=rf"^{name}: cannot make an array from 'abc'"):
        call()


def test_an_array_like_joins_the_tensors_device(device):
    x = ct.asarray([3.0, 1.0, 2.0], device=device)
    index = ct.asarray([1, 0], device=device)
    ones = [1.0, 1.0, 1.0]
    for out in (ct.add(ones, x), ct.take(x, [2, 0]), ct.take([5.0, 6.0], index),
                ct.searchsorted(ct.sort(x), [2.5]), ct.searchsorted([0.0, 5.0], x),
                ct.concat([[0.0], x]), ct.stack([ones, x]), ct.vecdot(ones, x),
                ct.take_along_axis([5.0, 6.0], index), ct.tensordot(ones, x, axes=1),
                ct.where([True, False, True], x, 0.0), ct.where(x > 1, ones, x),
                ct.logical_xor([True, False, True], x > 1), ct.repeat([5.0, 6.0], index)):
        assert out.device == device
    assert ct.concat([[0.0], x]).tolist() == [0.0, 3.0, 1.0, 2.0]
    assert ct.vecdot(x, [1.0, 1.0, 1.0]).item() == 6.0


def test_a_tensor_is_taken_as_it_is(device):
    x = ct.asarray([[1.0, 2.0], [3.0, 4.0]], device=device)
    assert ct.astype(x, ct.float32, copy=False) is x
    view = ct.reshape(x, (4,))
    x[0, 0] = 7.0
    assert view.tolist()[0] == 7.0  # a view of x, not of a copy
