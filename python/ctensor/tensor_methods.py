"""PyTorch's everyday Tensor methods on ctensor.Tensor, with PyTorch's meanings.

The methods that are one call of a namespace function (x.sum(dim=1) is ct.sum(x, dim=1),
x.exp() is ct.exp(x)) are that C function bound as a method; those that compose several calls
(max with a dim, topk, split, scatter_ ...) are Python here; the one-call shape methods (view,
reshape, permute, flatten ...) and the conversions (float, long ...) are C
(python/src/tensor_torch.c, tensor.c). Where PyTorch's method and
the array API's function differ, the method is PyTorch's: x.std() corrects by 1, x.sort()
gives (values, indices), x.nonzero() gives an (N, ndim) array, x.squeeze(d) leaves a dimension
whose size is not 1. `x.size` (C: python/src/tensor_size.c) stays the standard's element
count, an int that is also callable as PyTorch's x.size() / x.size(d).
"""
import builtins
import collections
import math
import types

from ctensor import _ctensor as _C

# torch.return_types: (values, indices) pairs.
return_types = types.SimpleNamespace(
    max=collections.namedtuple("max", ["values", "indices"]),
    min=collections.namedtuple("min", ["values", "indices"]),
    sort=collections.namedtuple("sort", ["values", "indices"]),
    topk=collections.namedtuple("topk", ["values", "indices"]),
    median=collections.namedtuple("median", ["values", "indices"]),
    nanmedian=collections.namedtuple("nanmedian", ["values", "indices"]),
)

def _axis(dim, ndim, name):
    dim = builtins.int(dim)
    if not -ndim <= dim < builtins.max(ndim, 1):
        raise IndexError(f"{name}: dimension {dim} is out of range for {ndim} dimensions")
    return dim % builtins.max(ndim, 1)


def _dim_arg(dim, kwargs, name):
    """The dim of a PyTorch method called with dim= or axis=."""
    if "axis" in kwargs:
        if dim is not None:
            raise TypeError(f"{name}: give dim= or axis=, not both")
        return kwargs.pop("axis")
    return dim


def _keepdim(keepdim, kwargs):
    return kwargs.pop("keepdims", keepdim)


def _extreme(which, self, dim=None, keepdim=False, **kwargs):
    """max/min: of all elements; of two arrays (elementwise); or along dim, (values, indices)."""
    dim = _dim_arg(dim, kwargs, which)
    keepdim = _keepdim(keepdim, kwargs)
    if kwargs:
        raise TypeError(f"{which}: unexpected arguments {sorted(kwargs)}")
    if isinstance(dim, _C.Tensor):
        return (_C.maximum if which == "max" else _C.minimum)(self, dim)
    reduce = _C.max if which == "max" else _C.min
    if dim is None:
        return reduce(self)
    arg = _C.argmax if which == "max" else _C.argmin
    return getattr(return_types, which)(reduce(self, axis=dim, keepdims=keepdim),
                                        arg(self, axis=dim, keepdims=keepdim))


def max(self, dim=None, keepdim=False, **kwargs):  # noqa: A001 (PyTorch's name)
    return _extreme("max", self, dim, keepdim, **kwargs)


def min(self, dim=None, keepdim=False, **kwargs):  # noqa: A001
    return _extreme("min", self, dim, keepdim, **kwargs)


def _moment(fn, self, dim, unbiased, keepdim, correction, kwargs):
    dim = _dim_arg(dim, kwargs, fn.__name__)
    keepdim = _keepdim(keepdim, kwargs)
    if correction is None:
        correction = 1 if unbiased is None or unbiased else 0
    return fn(self, axis=dim, correction=correction, keepdims=keepdim, **kwargs)


def std(self, dim=None, unbiased=None, keepdim=False, *, correction=None, **kwargs):
    """PyTorch's std: corrected by 1 (Bessel's) unless unbiased=False or correction= says."""
    return _moment(_C.std, self, dim, unbiased, keepdim, correction, kwargs)


def var(self, dim=None, unbiased=None, keepdim=False, *, correction=None, **kwargs):
    """PyTorch's var: corrected by 1 (Bessel's) unless unbiased=False or correction= says."""
    return _moment(_C.var, self, dim, unbiased, keepdim, correction, kwargs)


def norm(self, p="fro", dim=None, keepdim=False):
    """The p-norm over dim (all elements by default): 2 ("fro"), 1, inf, -inf, or any p > 0."""
    a = _C.abs(self)
    if p in ("fro", 2):
        return _C.sqrt(_C.sum(a * a, axis=dim, keepdims=keepdim))
    if p == 1:
        return _C.sum(a, axis=dim, keepdims=keepdim)
    if p == math.inf:
        return _C.max(a, axis=dim, keepdims=keepdim)
    if p == -math.inf:
        return _C.min(a, axis=dim, keepdims=keepdim)
    if isinstance(p, (builtins.int, builtins.float)) and p > 0:
        return _C.sum(a ** p, axis=dim, keepdims=keepdim) ** (1.0 / p)
    raise ValueError(f"norm: p={p!r} is not supported; use 'fro', a number > 0, inf or -inf")


def squeeze(self, dim=None, **kwargs):
    """Dimensions of size 1 removed: all of them, or those of dim (an int or a tuple) that
    have size 1 (PyTorch leaves the others; the standard's squeeze raises)."""
    dim = _dim_arg(dim, kwargs, "squeeze")
    shape = self.shape
    dims = range(len(shape)) if dim is None else dim if isinstance(dim, tuple) else (dim,)
    ones = tuple(d for d in (_axis(d, len(shape), "squeeze") for d in dims) if shape[d] == 1)
    return _C.squeeze(self, axis=ones) if ones else self


def sort(self, dim=-1, descending=False, stable=False, **kwargs):
    """(values, indices) along dim; every sort is stable."""
    dim = _dim_arg(dim, kwargs, "sort")
    indices = _C.argsort(self, axis=dim, descending=descending)
    return return_types.sort(_C.take_along_axis(self, indices, axis=dim), indices)


def argsort(self, dim=-1, descending=False, stable=False, **kwargs):
    return _C.argsort(self, axis=_dim_arg(dim, kwargs, "argsort"), descending=descending)


def topk(self, k, dim=-1, largest=True, sorted=True):  # noqa: A002 (PyTorch's name)
    """(values, indices) of the k largest (smallest: largest=False) along dim, in order."""
    n = self.shape[_axis(dim, self.ndim, "topk")] if self.ndim else 1
    if not 0 <= k <= n:
        raise ValueError(f"topk: k={k} is out of range for a dimension of size {n}")
    order = _C.argsort(self, axis=dim, descending=largest)
    key = [slice(None)] * self.ndim
    key[dim] = slice(0, k)
    indices = order[tuple(key)]
    return return_types.topk(_C.take_along_axis(self, indices, axis=dim), indices)


def _median(name, self, dim, keepdim, kwargs):
    dim = _dim_arg(dim, kwargs, name)
    keepdim = _keepdim(keepdim, kwargs)
    if kwargs:
        raise TypeError(f"{name}: unexpected arguments {sorted(kwargs)}")
    out = _C._median(self, dim, keepdim, name == "nanmedian")
    return out if dim is None else getattr(return_types, name)(*out)


def median(self, dim=None, keepdim=False, **kwargs):
    """The median of all elements (of an even count the lower of the two middle ones, not
    NumPy's mean of them; NaN if there is a NaN), or along dim (values, indices): a row
    holding a NaN gives NaN and the index of its first NaN."""
    return _median("median", self, dim, keepdim, kwargs)


def nanmedian(self, dim=None, keepdim=False, **kwargs):
    """median ignoring NaN (NaN only for a row of NaNs)."""
    return _median("nanmedian", self, dim, keepdim, kwargs)


def nan_to_num_(self, nan=0.0, posinf=None, neginf=None):
    self[...] = _C.nan_to_num(self, nan, posinf, neginf)
    return self


def lerp_(self, end, weight):
    self[...] = _C.lerp(self, end, weight)
    return self


def cumsum(self, dim, dtype=None):
    return _C.cumulative_sum(self, axis=dim, dtype=dtype)


def cumprod(self, dim, dtype=None):
    return _C.cumulative_prod(self, axis=dim, dtype=dtype)


def diff(self, n=1, dim=-1, prepend=None, append=None):
    return _C.diff(self, n, axis=dim, prepend=prepend, append=append)


def nonzero(self, as_tuple=False):
    """The indices of the non-zero elements: an (N, ndim) int64 array, or with as_tuple=True
    one index array per dimension (the array API's ct.nonzero)."""
    found = _C.nonzero(self)
    return found if as_tuple else _C.stack(found, axis=1)


def expand(self, *sizes):
    """A broadcast view; -1 keeps a dimension's size."""
    if len(sizes) == 1 and not isinstance(sizes[0], builtins.int):
        sizes = tuple(sizes[0])
    lead = len(sizes) - self.ndim
    shape = tuple(self.shape[i - lead] if s == -1 and i >= lead else s
                  for i, s in enumerate(sizes))
    return _C.broadcast_to(self, shape)


def repeat(self, *sizes):
    """The array tiled sizes[d] times along each dimension (NumPy's tile)."""
    if len(sizes) == 1 and not isinstance(sizes[0], builtins.int):
        sizes = tuple(sizes[0])
    if len(sizes) < self.ndim:
        raise ValueError(f"repeat: {len(sizes)} counts for an array of {self.ndim} dimensions; "
                         "give one per dimension")
    return _C.tile(self, sizes)


def _slice_along(self, dim, start, stop):
    key = [slice(None)] * self.ndim
    key[dim] = slice(start, stop)
    return self[tuple(key)]


def split(self, split_size_or_sections, dim=0):
    """Views of pieces along dim: of split_size each (the last may be shorter), or of the
    sizes in a list."""
    dim = _axis(dim, self.ndim, "split")
    n = self.shape[dim]
    if isinstance(split_size_or_sections, builtins.int):
        step = split_size_or_sections
        if step <= 0:
            raise ValueError(f"split: split_size must be positive, not {step}")
        sizes = [builtins.min(step, n - s) for s in range(0, n, step)] or [0]
    else:
        sizes = list(split_size_or_sections)
        if sum(sizes) != n:
            raise ValueError(f"split: the sizes {sizes} add up to {sum(sizes)}, not to the "
                             f"dimension's {n}")
    out, start = [], 0
    for s in sizes:
        out.append(_slice_along(self, dim, start, start + s))
        start += s
    return tuple(out)


def chunk(self, chunks, dim=0):
    """At most `chunks` views along dim, each of ceil(n / chunks) but the last."""
    if chunks <= 0:
        raise ValueError(f"chunk: chunks must be positive, not {chunks}")
    n = self.shape[_axis(dim, self.ndim, "chunk")]
    return split(self, builtins.max(1, -(-n // chunks)), dim)


def gather(self, dim, index):
    return _C.take_along_axis(self, index, axis=dim)


def index_select(self, dim, index):
    return _C.take(self, index, axis=dim)


def _full_index(self, dim, index):
    """The advanced-index key that puts index's values along dim and every other position
    where it stands (PyTorch's scatter/gather addressing)."""
    dim = _axis(dim, self.ndim, "scatter_")
    key = []
    for d in range(index.ndim):
        if d == dim:
            key.append(index)
        else:
            shape = [1] * index.ndim
            shape[d] = index.shape[d]
            key.append(_C.reshape(_C.arange(index.shape[d], device=index.device), shape))
    return tuple(key)


def scatter_(self, dim, index, src=None, value=None, **kwargs):
    """self[index[i][j]][j] = src[i][j] (for dim 0; likewise for others), in place."""
    if src is None:
        src = kwargs.pop("value", value)
    if kwargs or src is None:
        raise TypeError("scatter_(dim, index, src) or scatter_(dim, index, value=v)")
    key = _full_index(self, dim, index)
    if isinstance(src, _C.Tensor):
        src = src[tuple(slice(0, s) for s in index.shape)]
    self[key] = src
    return self


def scatter(self, dim, index, src=None, value=None):
    return scatter_(self.clone(), dim, index, src, value)


def where(self, condition, other):
    return _C.where(condition, self, other)


def masked_fill(self, mask, value):
    """value where mask is true, self elsewhere, in self's dtype."""
    if isinstance(value, _C.Tensor):
        value = value.to(self.dtype)
    return _C.where(mask, value, self)


def masked_fill_(self, mask, value):
    self[...] = masked_fill(self, mask, value)
    return self


def clamp(self, min=None, max=None):  # noqa: A002 (PyTorch's names)
    if min is None and max is None:
        raise ValueError("clamp: give min=, max= or both")
    return _C.clip(self, min, max)


def clamp_(self, min=None, max=None):  # noqa: A002
    self[...] = clamp(self, min, max)
    return self


def _inplace(op):
    def method(self, other, *, alpha=None):
        if alpha is not None:
            other = other * alpha
        return op(self, other)
    return method


def zero_(self):
    self[...] = 0
    return self


def fill_(self, value):
    self[...] = value
    return self


def copy_(self, src, non_blocking=False):
    """src's values (broadcast, converted to self's dtype, from any device) into self."""
    if isinstance(src, _C.Tensor) and src.device != self.device:
        src = src.to(self.device)
    self[...] = src
    return self


def type(self, dtype=None, non_blocking=False):  # noqa: A001 (PyTorch's name)
    """The dtype's name ("ctensor.float32") without an argument, else the array as dtype."""
    if dtype is None:
        return f"ctensor.{self.dtype.name}"
    return self.to(dtype)


def softmax(self, dim, dtype=None):
    from ctensor.nn import functional
    return functional.softmax(self if dtype is None else self.to(dtype), dim=dim)


def log_softmax(self, dim, dtype=None):
    from ctensor.nn import functional
    return functional.log_softmax(self if dtype is None else self.to(dtype), dim=dim)


def _iadd(a, b):
    a += b
    return a


def _isub(a, b):
    a -= b
    return a


def _imul(a, b):
    a *= b
    return a


def _idiv(a, b):
    a /= b
    return a


def _methods():
    methods = {
        "max": max, "min": min, "std": std, "var": var, "norm": norm, "squeeze": squeeze,
        "sort": sort, "argsort": argsort, "topk": topk, "cumsum": cumsum, "cumprod": cumprod,
        "diff": diff, "nonzero": nonzero, "median": median, "nanmedian": nanmedian,
        "nan_to_num_": nan_to_num_, "lerp_": lerp_,
        "expand": expand, "expand_as": lambda self, other: _C.broadcast_to(self, other.shape),
        "repeat": repeat, "split": split, "chunk": chunk, "gather": gather,
        "index_select": index_select, "scatter_": scatter_, "scatter": scatter, "where": where,
        "masked_fill": masked_fill, "masked_fill_": masked_fill_, "clamp": clamp,
        "clip": clamp, "clamp_": clamp_, "clip_": clamp_, "add_": _inplace(_iadd),
        "sub_": _inplace(_isub), "mul_": _inplace(_imul), "div_": _inplace(_idiv),
        "zero_": zero_, "fill_": fill_, "copy_": copy_, "type": type,
        "type_as": lambda self, other: self.to(other.dtype),
        "view_as": lambda self, other: self.view(other.shape),
        "reshape_as": lambda self, other: self.reshape(other.shape),
        "unbind": lambda self, dim=0: _C.unstack(self, axis=dim),
        "flip": lambda self, *dims: _C.flip(
            self, axis=tuple(dims[0]) if len(dims) == 1 and not isinstance(dims[0], builtins.int)
            else dims),
        "softmax": softmax, "log_softmax": log_softmax,
        "is_floating_point": lambda self: _C.isdtype(self.dtype, "real floating"),
        "is_cuda": property(lambda self: self.device.type == "cuda"),
        "data": property(lambda self: self.detach()),
        "element_size": lambda self: self.dtype.itemsize,
        "mm": _C.matmul, "matmul": _C.matmul, "dot": _C.vecdot,
        # complex numbers: PyTorch's properties and methods (copies, not views)
        "real": property(_C.real), "imag": property(_C.imag), "conj": _C.conj,
        "is_complex": lambda self: _C.isdtype(self.dtype, "complex floating"),
    }
    # One call of a namespace function each (the C function bound as the method).
    for name in ("sum", "mean", "prod", "all", "any", "argmax", "argmin", "abs", "exp", "log",
                 "sqrt", "rsqrt", "neg", "relu", "sigmoid", "tanh", "sin", "cos", "floor",
                 "ceil", "round", "trunc", "sign", "square", "log1p", "expm1", "log2", "log10",
                 "reciprocal", "isnan", "isinf", "isfinite", "logical_not", "pow", "eq", "ne",
                 "lt", "le", "gt", "ge", "add", "sub", "mul", "div", "maximum", "minimum",
                 "logical_and", "logical_or", "remainder", "floor_divide", "atan2", "nansum",
                 "nanmean", "nan_to_num", "lerp", "quantile", "nanquantile"):
        fn = getattr(_C, name, None)
        if fn is not None:
            methods[name] = fn
    methods.update(negative=_C.neg, greater=_C.gt, less=_C.lt,
                   subtract=_C.sub, multiply=_C.mul, divide=_C.div, true_divide=_C.div)
    return methods


_C._install_tensor_methods(_methods())
