"""Hostile but legal input from Python (issue 37), in the manner of the C fuzzers: containers
that change while they are read, every integer argument at the edges of the C integer types,
every dtype with the Python numbers it cannot hold, uint64 indices beyond int64, malformed
protocol arguments (corrupt checkpoint metadata: test_checkpoint_args.py). Nothing may crash or answer wrongly, and
every failure is a Python exception that names the argument (or the value and the dtype)."""

import random
import warnings

import numpy as np
import pytest
from conftest import DEVICES, NUMPY_DTYPES, to_numpy

import ctensor as ct
from ctensor import _ctensor

# ---- containers that change while they are read ----


class FloatLike:
    """A number (only __float__) whose conversion runs action first."""

    def __init__(self, value, action):
        self.value, self.action = value, action

    def __float__(self):
        self.action()
        return float(self.value)


class IndexLike:
    """An int (only __index__) whose conversion runs action first."""

    def __init__(self, value, action):
        self.value, self.action = value, action

    def __index__(self):
        self.action()
        return int(self.value)


def test_asarray_survives_the_issue_reproduction():
    items = [1.0] * 10
    items[3] = FloatLike(1.0, items.clear)
    x = ct.asarray(items)  # the snapshot taken when asarray was called
    assert x.shape == (10,) and to_numpy(x).tolist() == [1.0] * 10
    assert items == []


def _mutations(target):
    """Ways to change a list under its reader."""
    return [
        target.clear,
        lambda: target.extend([[0.0] * 7] * 1000),
        lambda: target.__delitem__(slice(None, None, 2)),
        lambda: target.__setitem__(slice(None), [object()] * 3),
        lambda: target.append(target),
    ]


def _random_nest(rng, shape):
    """A nested list of shape with ints and halves (exact in float32), and its plain copy."""
    if not shape:
        value = rng.randrange(-50, 50) + (0.5 if rng.random() < 0.5 else 0)
        return value, value
    pairs = [_random_nest(rng, shape[1:]) for _ in range(shape[0])]
    return [p[0] for p in pairs], [p[1] for p in pairs]


def _lists_in(nest):
    out = [nest]
    for item in nest:
        if isinstance(item, list):
            out += _lists_in(item)
    return out


@pytest.mark.parametrize("seed", range(300))
def test_asarray_fuzz_containers_changed_while_read(seed):
    rng = random.Random(seed)
    shape = tuple(rng.randrange(1, 5) for _ in range(rng.randrange(1, 4)))
    nest, plain = _random_nest(rng, shape)
    lists, plain_lists = _lists_in(nest), _lists_in(plain)
    for _ in range(rng.randrange(1, 4)):  # hostile leaves, each changing some list
        at = rng.randrange(len(lists))
        row, plain_row = lists[at], plain_lists[at]
        if isinstance(row[0], list):
            continue  # only leaves are numbers
        i = rng.randrange(len(row))
        victim = rng.choice(lists)
        action = rng.choice(_mutations(victim))
        value = rng.randrange(-9, 9)
        row[i] = (IndexLike if rng.random() < 0.5 else FloatLike)(value, action)
        plain_row[i] = value if isinstance(row[i], IndexLike) else float(value)
    entry = rng.choice(["asarray", "Tensor", "setitem", "concat"])
    dtype = rng.choice([ct.float64, None])  # None: inferred (exact int64 for ints alone)
    expected = np.asarray(plain, dtype=np.float64)
    if entry == "asarray":
        got = ct.asarray(nest, dtype=dtype)
    elif entry == "Tensor":
        got = ct.Tensor(nest, dtype=dtype)
    elif entry == "setitem":
        got = ct.zeros(shape, dtype=ct.float64)
        got[...] = nest
    else:
        got = ct.concat([ct.zeros(shape, dtype=ct.float64), nest])[shape[0]:]
    assert got.shape == expected.shape
    np.testing.assert_array_equal(to_numpy(got).astype(np.float64), expected)


@pytest.mark.parametrize("action", range(5))
def test_an_index_list_changed_while_read(action):
    key = [1, 2, 3, 4]
    key[2] = IndexLike(3, _mutations(key)[action])
    assert to_numpy(ct.arange(10)[key]).tolist() == [1, 2, 3, 4]
    key = [1, 2, 3, 4]
    key[0] = IndexLike(1, _mutations(key)[action])
    x = ct.arange(10)
    x[key] = 0
    assert to_numpy(x).tolist() == [0, 0, 0, 0, 0, 5, 6, 7, 8, 9]


def test_shapes_and_array_lists_are_read_from_a_snapshot():
    shape = [None, 3, 1]
    shape[0] = IndexLike(2, shape.clear)  # emptied before its next entries are read
    assert ct.zeros(shape).shape == (2, 3, 1)
    shape = [None, 3]
    shape[0] = IndexLike(2, lambda: shape.__setitem__(slice(None), [object()] * 5))
    assert ct.reshape(ct.ones((2, 3)), shape).shape == (2, 3)
    arrays = [None, ct.ones(2), ct.ones(2)]
    arrays[0] = [FloatLike(2.0, arrays.clear), 3.0]
    np.testing.assert_array_equal(to_numpy(ct.concat(arrays)), [2, 3, 1, 1, 1, 1])
    arrays = [None, ct.ones(2)]
    arrays[0] = [FloatLike(2.0, lambda: arrays.extend([ct.ones(2)] * 2000)), 3.0]
    np.testing.assert_array_equal(to_numpy(ct.stack(arrays)), [[2, 3], [1, 1]])


def test_a_sequence_that_lies_about_its_length_is_an_exception():
    class Liar:
        def __len__(self):
            return 2**62

        def __getitem__(self, i):
            if i >= 2:
                raise IndexError(i)
            return 3

    assert ct.zeros(Liar()).shape == (3, 3)  # iterated, not measured

    class Huge:
        def __len__(self):
            return 2**62

        def __getitem__(self, i):
            return 1

    with pytest.raises((MemoryError, ValueError, OverflowError)):
        ct.zeros(Huge())


def test_a_nested_sequence_of_shared_rows_too_big_for_memory():
    row = [0.0] * 1000
    for _ in range(7):
        row = [row] * 1000
    with pytest.raises(MemoryError, match="asarray"):
        ct.asarray(row)


# ---- integer arguments at the edges of the C integer types ----

EDGES = [2**31, -(2**31), 2**31 - 1, 2**32, 2**32 + 1, 2**63, -(2**63), 2**63 - 1,
         -(2**63) - 1, 2**64, 2**64 + 1, -(2**64)]


@pytest.fixture
def memory_limit():
    """Every device limited to 256 MiB, so that a legal but huge size fails fast wherever
    the default placement puts it (the fake GPU's memory is the host's)."""
    for device in DEVICES:
        ct.set_memory_limit(device, 256 << 20)
    yield
    for device in DEVICES:
        ct.set_memory_limit(device, 0)


X = None


def _x():
    global X
    if X is None:
        X = ct.reshape(ct.arange(6, dtype=ct.float32), (2, 3))
    return X


def _square():
    return ct.reshape(ct.arange(4, dtype=ct.float32), (2, 2))


# (name, call(v), the words one of which the message must hold)
AXIS_CALLS = [
    ("sum", lambda v: ct.sum(_x(), axis=v), ("axis",)),
    ("sum tuple", lambda v: ct.sum(_x(), axis=(0, v)), ("axis",)),
    ("prod", lambda v: ct.prod(_x(), axis=v), ("axis",)),
    ("max", lambda v: ct.max(_x(), axis=v), ("axis",)),
    ("min", lambda v: ct.min(_x(), axis=v), ("axis",)),
    ("mean", lambda v: ct.mean(_x(), axis=v), ("axis",)),
    ("any", lambda v: ct.any(_x(), axis=v), ("axis",)),
    ("all", lambda v: ct.all(_x(), axis=v), ("axis",)),
    ("var", lambda v: ct.var(_x(), axis=v), ("axis",)),
    ("std", lambda v: ct.std(_x(), axis=v), ("axis",)),
    ("argmax", lambda v: ct.argmax(_x(), axis=v), ("axis",)),
    ("argmin", lambda v: ct.argmin(_x(), axis=v), ("axis",)),
    ("cumulative_sum", lambda v: ct.cumulative_sum(_x(), axis=v), ("axis",)),
    ("flip", lambda v: ct.flip(_x(), axis=v), ("axis",)),
    ("squeeze", lambda v: ct.squeeze(ct.ones((1, 3)), axis=v), ("axis",)),
    ("permute_dims", lambda v: ct.permute_dims(_x(), (0, v)), ("axes", "axis")),
    ("moveaxis source", lambda v: ct.moveaxis(_x(), v, 0), ("source", "axes")),
    ("moveaxis destination", lambda v: ct.moveaxis(_x(), 0, v), ("destination", "axes")),
    ("concat", lambda v: ct.concat([_x(), _x()], axis=v), ("axis",)),
    ("stack", lambda v: ct.stack([_x(), _x()], axis=v), ("axis",)),
    ("roll axis", lambda v: ct.roll(_x(), 1, axis=v), ("axis",)),
    ("expand_dims", lambda v: ct.expand_dims(_x(), axis=v), ("axis",)),
    ("unstack", lambda v: ct.unstack(_x(), axis=v), ("axis",)),
    ("take", lambda v: ct.take(_x(), ct.asarray([0]), axis=v), ("axis",)),
    ("take_along_axis", lambda v: ct.take_along_axis(_x(), ct.asarray([[0]]), axis=v),
     ("axis",)),
    ("repeat axis", lambda v: ct.repeat(_x(), 2, axis=v), ("axis",)),
    ("vecdot", lambda v: ct.vecdot(_x(), _x(), axis=v), ("axis",)),
    ("sort", lambda v: ct.sort(_x(), axis=v), ("axis",)),
    ("argsort", lambda v: ct.argsort(_x(), axis=v), ("axis",)),
    ("count_nonzero", lambda v: ct.count_nonzero(_x(), axis=v), ("axis",)),
    ("tensordot int", lambda v: ct.tensordot(_x(), _x(), axes=v), ("axes",)),
    ("tensordot pair", lambda v: ct.tensordot(_x(), _x(), axes=([v], [0])), ("axes", "axis")),
    ("getitem", lambda v: _x()[v], ("index",)),
    ("getitem advanced", lambda v: _x()[[0], v], ("index",)),
]

SIZE_CALLS = [
    ("reshape", lambda v: ct.reshape(_x(), (v,)), ("shape", "size")),
    ("broadcast_to", lambda v: ct.broadcast_to(_x(), (v, 3)), ("shape", "size", "broadcast")),
    ("zeros", lambda v: ct.zeros((v,)), ("shape", "size")),
    ("ones", lambda v: ct.ones((2, v)), ("shape", "size")),
    ("empty", lambda v: ct.empty(v), ("shape", "size")),
    ("full", lambda v: ct.full((v,), 1.0), ("shape", "size")),
    # (the C ops name a count whose product overflows as the element count)
    ("tile", lambda v: ct.tile(_x(), (v,)), ("repetitions", "repeat count", "element count")),
    ("repeat", lambda v: ct.repeat(_x(), v, axis=0), ("repeats", "repeat count",
                                                      "element count")),
]


@pytest.mark.parametrize("value", EDGES)
@pytest.mark.parametrize("name, call, words", AXIS_CALLS, ids=[c[0] for c in AXIS_CALLS])
def test_an_axis_at_the_edges_is_refused_by_name(name, call, words, value):
    with pytest.raises((IndexError, ValueError, OverflowError)) as raised:
        call(value)
    assert any(w in str(raised.value) for w in words), str(raised.value)


@pytest.mark.parametrize("value", EDGES)
@pytest.mark.parametrize("name, call, words", SIZE_CALLS, ids=[c[0] for c in SIZE_CALLS])
def test_a_size_at_the_edges_is_refused_by_name(memory_limit, name, call, words, value):
    with pytest.raises((ValueError, OverflowError, MemoryError)) as raised:
        call(value)
    if not isinstance(raised.value, MemoryError):  # a legal size the limit refuses
        assert any(w in str(raised.value) for w in words), str(raised.value)


@pytest.mark.parametrize("value", EDGES)
def test_arguments_that_take_any_int(value):
    """roll's shift, tril/triu/eye's k: any Python int means what NumPy's does, or a refusal
    that names the argument where it exceeds int64."""
    x = _x()
    if -(2**63) <= value < 2**63:
        np.testing.assert_array_equal(to_numpy(ct.roll(x, value, axis=1)),
                                      np.roll(to_numpy(x), value % 3, axis=1))
    else:
        with pytest.raises(OverflowError, match="shift"):
            ct.roll(x, value, axis=1)
    kept = np.ones((2, 3), bool) if value > 0 else np.zeros((2, 3), bool)
    np.testing.assert_array_equal(to_numpy(ct.tril(x, k=value)), np.where(kept, to_numpy(x), 0))
    np.testing.assert_array_equal(to_numpy(ct.triu(x, k=value)), np.where(~kept, to_numpy(x), 0))
    np.testing.assert_array_equal(to_numpy(ct.eye(2, k=value)), np.zeros((2, 2)))


@pytest.mark.parametrize("wrong", [1.5, "0", b"0", [0]])
def test_an_axis_of_the_wrong_type_is_a_type_error(wrong):
    with pytest.raises(TypeError, match="axis"):
        ct.sum(_x(), axis=wrong)
    with pytest.raises(TypeError, match="axis"):
        ct.expand_dims(_x(), axis=wrong)


def test_the_silent_wrong_answers_of_the_issue():
    x = ct.ones((2, 3))
    for call in (lambda: ct.sum(x, axis=2**32), lambda: ct.permute_dims(x, (0, 2**32 + 1)),
                 lambda: ct.flip(x, axis=2**32), lambda: ct.cumulative_sum(x, axis=2**32),
                 lambda: ct.argmax(x, axis=2**32), lambda: ct.squeeze(x, axis=2**32),
                 lambda: ct.moveaxis(x, 0, 2**32 + 1), lambda: ct.concat([x, x], axis=2**32),
                 lambda: ct.stack([x, x], axis=2**32), lambda: ct.roll(x, 1, axis=2**32)):
        with pytest.raises(ValueError, match="out of range"):
            call()


# ---- Python numbers an integer dtype cannot hold ----

INT_DTYPES = [ct.int8, ct.int16, ct.int32, ct.int64, ct.uint8, ct.uint16, ct.uint32, ct.uint64]
ALL_DTYPES = list(NUMPY_DTYPES) + [ct.bfloat16]


def _refused(dtype):
    info = ct.iinfo(dtype)
    return [info.min - 1, info.max + 1, 2**64, -(2**63) - 1, -(2**64), 2**100, float("nan"),
            float("inf"), float("-inf"), 1e30, -1e30, float(info.max) * 4 + 4]


def _assignments(dtype, value):
    """Every way a Python number enters an array of dtype: (how, call giving the array, the
    flat position value lands at)."""

    def into(key, v):
        x = ct.zeros(4, dtype=dtype)
        x[key] = v
        return x

    return [
        ("asarray scalar", lambda: ct.asarray(value, dtype=dtype), 0),
        ("asarray list", lambda: ct.asarray([0, value], dtype=dtype), 1),
        ("asarray nested", lambda: ct.asarray([[value], [1]], dtype=dtype), 0),
        ("Tensor", lambda: ct.Tensor([value], dtype=dtype), 0),
        ("full", lambda: ct.full((2,), value, dtype=dtype), 1),
        ("x[1] = v", lambda: into(1, value), 1),
        ("x[:] = v", lambda: into(slice(None), value), 3),
        ("x[[1, 2]] = v", lambda: into([1, 2], value), 2),
        ("x[:2] = [v, 0]", lambda: into(slice(0, 2), [value, 0]), 0),
        ("x[[1]] = [v]", lambda: into([1], [value]), 1),
    ]


@pytest.mark.parametrize("dtype", INT_DTYPES, ids=str)
def test_python_numbers_out_of_an_integer_dtype_raise(dtype):
    for value in _refused(dtype):
        for how, call, _ in _assignments(dtype, value):
            expected = ValueError if value != value else OverflowError
            with pytest.raises(expected) as raised:
                call()
            text = str(raised.value)
            assert str(dtype).split(".")[-1] in text, (how, value, text)


@pytest.mark.parametrize("dtype", INT_DTYPES, ids=str)
def test_python_numbers_in_an_integer_dtype_are_exact(dtype):
    info = ct.iinfo(dtype)
    values = [info.min, info.max, 0, True, 2.75]
    values += [-0.75] + ([float(info.min)] if info.min else [])
    for value in values:
        want = int(value)  # truncated toward zero, as NumPy's
        for how, call, at in _assignments(dtype, value):
            got = to_numpy(call()).astype(object).reshape(-1)
            assert int(got[at]) == want, (how, value, got)


def test_a_refused_assignment_leaves_the_array_as_it_was():
    x = ct.arange(4)
    for key in (1, slice(None), [0, 1]):
        with pytest.raises(ValueError):
            x[key] = float("nan")
        with pytest.raises(OverflowError):
            x[key] = float("inf")
        with pytest.raises(OverflowError):
            x[key] = 2**63
    assert to_numpy(x).tolist() == [0, 1, 2, 3]


@pytest.mark.parametrize("dtype", [d for d in ALL_DTYPES if d not in INT_DTYPES], ids=str)
def test_float_and_bool_dtypes_take_any_python_number(dtype):
    for value in (2**64, -(2**64), 2**63, 1e300, float("nan"), float("inf"), True, -0.0):
        for how, call, _ in _assignments(dtype, value):
            assert call().dtype == dtype, how
    with pytest.raises(OverflowError):  # a double cannot hold it
        ct.asarray([2**1100], dtype=dtype)


def test_ints_that_no_integer_dtype_holds_together():
    with pytest.raises(OverflowError, match="float64"):
        ct.asarray([2**64 - 1, -1])
    np.testing.assert_array_equal(to_numpy(ct.asarray([2**64 - 1, -1], dtype=ct.float64)),
                                  [2.0**64, -1.0])
    with pytest.raises(OverflowError, match="out of bounds"):
        ct.asarray([2**64])
    with pytest.raises(OverflowError, match="out of bounds"):
        ct.asarray([-(2**63) - 1])


def _extremes(dtype):
    if dtype in INT_DTYPES:
        info = ct.iinfo(dtype)
        return [info.min, info.max, 0, 1]
    if dtype == ct.bool:
        return [True, False]
    return [0.0, -2.5, 1e4, 3e38 if dtype in (ct.float32, ct.float64, ct.bfloat16) else 6e4]


@pytest.mark.parametrize("source", ALL_DTYPES, ids=str)
def test_astype_of_every_dtype_pair(source):
    x = ct.asarray(_extremes(source), dtype=source)
    for target in ALL_DTYPES:
        invalid_possible = source not in INT_DTYPES and source != ct.bool and target in INT_DTYPES
        with warnings.catch_warnings():
            # a cast that cannot meet an invalid value warns of nothing
            warnings.simplefilter("ignore" if invalid_possible else "error")
            got = x.astype(target)
        assert got.dtype == target and got.shape == x.shape
        if source in NUMPY_DTYPES and target in NUMPY_DTYPES and (
                source in INT_DTYPES or source == ct.bool) and target != ct.float16:
            with np.errstate(all="ignore"):
                want = to_numpy(x).astype(NUMPY_DTYPES[target])
            np.testing.assert_array_equal(to_numpy(got), want)


@pytest.mark.parametrize("source", [ct.float16, ct.float32, ct.float64, ct.bfloat16], ids=str)
def test_astype_of_invalid_floats_to_integers_warns_as_numpy(source):
    for bad in (float("nan"), float("inf"), float("-inf"), 1e30):
        if bad == 1e30 and source == ct.float16:
            continue  # float16 has no 1e30
        x = ct.asarray([1.0, bad], dtype=source)
        for target in INT_DTYPES:
            with pytest.warns(RuntimeWarning, match="invalid value encountered in cast"):
                got = x.astype(target)
            assert got.dtype == target and int(to_numpy(got)[0]) == 1
            with pytest.warns(RuntimeWarning, match="invalid value encountered in cast"):
                ct.astype(x, target)
            with pytest.warns(RuntimeWarning, match="invalid value encountered in cast"):
                ct.asarray(x, dtype=target)


def test_astype_at_the_edges_of_the_range():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        x = ct.asarray([127.9, -128.9, -0.9], dtype=ct.float64)
        assert to_numpy(x.astype(ct.int8)).tolist() == [127, -128, 0]
        assert to_numpy(ct.asarray([-2.0**63], dtype=ct.float64).astype(ct.int64))[0] == -2**63
    for value, target in ((128.0, ct.int8), (-129.0, ct.int8), (-1.0, ct.uint8),
                          (2.0**63, ct.int64), (2.0**64, ct.uint64)):
        with pytest.warns(RuntimeWarning):
            ct.asarray([value], dtype=ct.float64).astype(target)


# ---- uint64 indices beyond int64 ----


def test_uint64_indices_beyond_int64_are_index_errors(device):
    x = ct.arange(10, device=device)
    for bad in (2**64 - 1, 2**63, 10):
        index = ct.asarray([2, bad], dtype=ct.uint64, device=device)
        with pytest.raises(IndexError, match="out of range"):
            x[index]
        with pytest.raises(IndexError, match="out of range"):
            x[index] = 0
        with pytest.raises(IndexError, match="out of range"):
            ct.reshape(x, (2, 5))[ct.asarray([0], dtype=ct.uint64, device=device), index]
    assert to_numpy(x).tolist() == list(range(10))
    for dtype in (ct.uint8, ct.uint16, ct.uint32, ct.uint64):
        index = ct.asarray([9, 0, 3], dtype=dtype, device=device)
        assert to_numpy(x[index]).tolist() == [9, 0, 3]
        y = ct.arange(10, device=device)
        y[index] = 0
        assert to_numpy(y).tolist() == [0, 1, 2, 0, 4, 5, 6, 7, 8, 0]


# ---- malformed protocol and keyword arguments ----


@pytest.mark.parametrize("bad", ["x", (1,), ("a", 1), 1.5, [1, 0], (1, 2, 3)])
def test_dlpack_max_version_of_the_wrong_form_is_a_type_error(bad):
    with pytest.raises(TypeError, match="max_version"):
        ct.ones(2).__dlpack__(max_version=bad)


@pytest.mark.parametrize("bad", ["x", (1,), ("a", 1), 1.5])
def test_dlpack_dl_device_of_the_wrong_form_is_a_type_error(bad):
    with pytest.raises(TypeError, match="dl_device"):
        ct.ones(2).__dlpack__(dl_device=bad)


@pytest.mark.parametrize("bad", ["zz", "", "XY", "ij "])
def test_meshgrid_refuses_an_unknown_indexing(bad):
    with pytest.raises(ValueError, match="indexing"):
        ct.meshgrid(ct.ones(2), ct.ones(3), indexing=bad)
    assert [a.shape for a in ct.meshgrid(ct.ones(2), ct.ones(3), indexing="ij")] == [(2, 3)] * 2
    assert [a.shape for a in ct.meshgrid(ct.ones(2), ct.ones(3), indexing="xy")] == [(3, 2)] * 2


# (corrupt checkpoint structure, "ctensor.tree": test_checkpoint_args.py)


def test_ddp_flags_changed_while_read():
    """DistributedDataParallel's C handle (one rank): a flag whose __bool__ empties both lists
    it is given leaves the handle holding every tensor."""
    ct.distributed.init()
    tensors = [ct.ones(2) for _ in range(3)]

    class Emptying:
        def __bool__(self):
            flags.clear()
            tensors.clear()
            return True

    flags = [Emptying(), False, True]
    assert _ctensor._ddp(tensors, flags, 0, 0) is not None


def test_deep_nesting_is_a_value_error_not_a_recursion_error():
    nest = [1.0]
    for _ in range(100000):
        nest = [nest]
    with pytest.raises(ValueError, match="deeper than"):
        ct.asarray(nest)
    cyclic = []
    cyclic.append(cyclic)
    with pytest.raises(ValueError, match="deeper than"):
        ct.asarray(cyclic)


@pytest.mark.parametrize("value", EDGES)
def test_arange_ends_at_the_edges(memory_limit, value):
    """An integer range is exact or refused: never wrapped into its dtype, never rounded
    through a double."""
    for call in (lambda: ct.arange(value), lambda: ct.arange(0, value, max(abs(value) // 4, 1)),
                 lambda: ct.arange(value, value + 3), lambda: ct.arange(value - 3, value)):
        try:
            got = call()
        except (OverflowError, MemoryError, ValueError) as e:
            assert isinstance(e, MemoryError) or "arange" in str(e) or "int64" in str(e), str(e)
            continue
        values = to_numpy(got).astype(object).tolist()
        assert all(isinstance(v, int) for v in values)
        if len(values) > 1:
            steps = {b - a for a, b in zip(values, values[1:])}
            assert len(steps) == 1, values  # no wrapped or saturated element


def test_arange_into_a_small_dtype_refuses_what_it_cannot_hold():
    with pytest.raises(OverflowError, match="uint8"):
        ct.arange(250, 260, dtype=ct.uint8)
    with pytest.raises(OverflowError, match="int8"):
        ct.arange(0, 300, 100, dtype=ct.int8)
    assert to_numpy(ct.arange(0, 256, 255, dtype=ct.uint8)).tolist() == [0, 255]
    with pytest.raises(ValueError, match="step"):
        ct.arange(0, 10, 0)


@pytest.mark.parametrize("column", [2**31, -2**31 - 1, 2**63, 2**64, 1.5])
def test_read_csv_label_column_beyond_int_is_refused_by_name(tmp_path, column):
    path = tmp_path / "t.csv"
    path.write_text("1,2,3\n4,5,6\n")
    with pytest.raises((ValueError, OverflowError, TypeError), match="label_column"):
        ct.data.read_csv(path, label_column=column)
