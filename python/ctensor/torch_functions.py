"""PyTorch's everyday module functions, beside the array API's namespace.

ct.tensor, ct.from_numpy, ct.cat, ct.randint, ct.randperm, ct.allclose, ct.isclose, ct.numel,
ct.clamp, ct.topk, ct.median, ct.nanmedian, ct.flatten, ct.unsqueeze, ct.transpose, ct.permute,
ct.cumsum, ct.cumprod, ct.gather, ct.index_select, ct.split, ct.chunk, ct.softmax, ct.log_softmax,
ct.is_tensor, ...; the dtype aliases ct.float (float32), ct.double, ct.half, ct.long (int64),
ct.int (int32), ct.short; and ct.max / ct.min, which are the standard's reductions unless called
in PyTorch's words (a dim, given by keyword or as the second argument, gives (values, indices); a
second array gives the elementwise maximum). The namespace's functions take dim= and keepdim=
themselves (C).
"""
import builtins

from ctensor import _ctensor as _C
from ctensor import tensor_methods as _m

return_types = _m.return_types

# The dtype aliases PyTorch has (each is the dtype object itself).
float = _C.float32  # noqa: A001
double = _C.float64
half = _C.float16
long = _C.int64
int = _C.int32  # noqa: A001
short = _C.int16


def get_default_dtype():
    return _C.float32


def is_tensor(obj):
    return isinstance(obj, _C.Tensor)


def is_floating_point(x):
    return _C.isdtype(x.dtype, "real floating")


def numel(x):
    return x.numel()


def tensor(data, dtype=None, device=None, requires_grad=False):
    """A new array holding a copy of data. Without dtype, PyTorch's inference: Python floats
    give float32, ints int64, bools bool; an array (NumPy, ctensor) keeps its dtype. A list
    of arrays (such as 0-d losses) is stacked."""
    if isinstance(data, (list, tuple)) and data and all(isinstance(e, _C.Tensor) for e in data):
        data = _C.stack([e.detach() for e in data])
    return _C.asarray(data, dtype=dtype, device=device, copy=True, requires_grad=requires_grad)


def as_tensor(data, dtype=None, device=None):
    """data as an array, sharing its memory when the dtype and device allow."""
    return _C.asarray(data, dtype=dtype, device=device)


def from_numpy(ndarray):
    """A CPU array sharing ndarray's memory (writes through either are seen by both)."""
    if not hasattr(ndarray, "__array_interface__") or not hasattr(ndarray, "dtype"):
        raise TypeError(f"from_numpy: expected a numpy.ndarray, not {builtins.type(ndarray)}")
    return _C.asarray(ndarray, device="cpu", copy=False)


def cat(tensors, dim=0, **kwargs):
    """The arrays joined along dim (the standard's concat)."""
    return _C.concat(tensors, axis=kwargs.pop("axis", dim), **kwargs)


concatenate = cat


def max(x, /, *args, axis=None, keepdims=False, **kwargs):  # noqa: A001
    """The standard's max(x, /, *, axis=None, keepdims=False), or PyTorch's: max(x, dim)
    and max(x, dim=d) give (values, indices); max(x, other) the elementwise maximum."""
    if args or "dim" in kwargs:
        return _m.max(x, *args, **kwargs)
    return _C.max(x, axis=axis, keepdims=keepdims, **kwargs)


def min(x, /, *args, axis=None, keepdims=False, **kwargs):  # noqa: A001
    """The standard's min(x, /, *, axis=None, keepdims=False), or PyTorch's (see max)."""
    if args or "dim" in kwargs:
        return _m.min(x, *args, **kwargs)
    return _C.min(x, axis=axis, keepdims=keepdims, **kwargs)


def randint(low, high=None, size=None, *, dtype=None, device=None):
    """Integers drawn uniformly from [low, high) (randint(high, size) draws from [0, high)),
    int64 unless dtype says, from ctensor's seeded stream (ct.manual_seed)."""
    if size is None:
        if high is None or builtins.isinstance(high, builtins.int):
            raise TypeError("randint(low=0, high, size): size (a tuple) is required")
        low, high, size = 0, low, high
    elif high is None:
        raise TypeError("randint(low=0, high, size): high is required")
    if high <= low:
        raise ValueError(f"randint: high ({high}) must be greater than low ({low})")
    if builtins.isinstance(size, builtins.int):
        size = (size,)
    # A float64 draw in [0, 1) scaled below high - low (exact for ranges below 2**53).
    u = _C.rand(*size, dtype=_C.float64, device=device)
    out = _C.floor(u * builtins.float(high - low)) + builtins.float(low)
    return out.to(_C.int64 if dtype is None else dtype)


def randperm(n, *, dtype=None, device=None):
    """A random permutation of 0 .. n-1 (int64), from ctensor's seeded stream."""
    out = _C.argsort(_C.rand(n, dtype=_C.float64, device=device))
    return out if dtype is None else out.to(dtype)


def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """|a - b| <= atol + rtol * |b|, elementwise (NaNs equal when equal_nan)."""
    close = _C.abs(a - b) <= atol + rtol * _C.abs(b)
    if not isinstance(close, _C.Tensor):
        close = _C.asarray(close)
    close = close | (a == b)  # equal infinities
    if equal_nan:
        close = close | (_C.isnan(a) & _C.isnan(b))
    return close


def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """Whether every element of a is close to b's (isclose), as a Python bool."""
    return builtins.bool(_C.all(isclose(a, b, rtol, atol, equal_nan)).item())


def clamp(x, min=None, max=None):  # noqa: A002
    return _m.clamp(x, min, max)


def topk(x, k, dim=-1, largest=True, sorted=True):  # noqa: A002
    return _m.topk(x, k, dim, largest, sorted)


def median(x, dim=None, keepdim=False, **kwargs):
    return _m.median(x, dim, keepdim, **kwargs)


def nanmedian(x, dim=None, keepdim=False, **kwargs):
    return _m.nanmedian(x, dim, keepdim, **kwargs)


def flatten(x, start_dim=0, end_dim=-1):
    return x.flatten(start_dim, end_dim)


def unsqueeze(x, dim):
    return x.unsqueeze(dim)


def transpose(x, dim0, dim1):
    return x.transpose(dim0, dim1)


def permute(x, dims):
    return x.permute(dims)


def cumsum(x, dim, dtype=None):
    return _C.cumulative_sum(x, axis=dim, dtype=dtype)


def cumprod(x, dim, dtype=None):
    return _C.cumulative_prod(x, axis=dim, dtype=dtype)


def gather(x, dim, index):
    return _m.gather(x, dim, index)


def index_select(x, dim, index):
    return _m.index_select(x, dim, index)


def split(x, split_size_or_sections, dim=0):
    return _m.split(x, split_size_or_sections, dim)


def chunk(x, chunks, dim=0):
    return _m.chunk(x, chunks, dim)


def masked_fill(x, mask, value):
    return _m.masked_fill(x, mask, value)


def softmax(x, dim, dtype=None):
    return _m.softmax(x, dim, dtype)


def log_softmax(x, dim, dtype=None):
    return _m.log_softmax(x, dim, dtype)


def norm(x, p="fro", dim=None, keepdim=False):
    return _m.norm(x, p, dim, keepdim)


def mm(a, b):
    return _C.matmul(a, b)


bmm = mm
