"""ct.linalg: the array API standard's linalg extension (2023.12) over the C library's
ct_linalg_* (include/ctensor/linalg.h), for float32, float64, complex64 and complex128 stacks of
matrices (..., M, N). For complex input, symmetric reads Hermitian (eigh, eigvalsh, cholesky);
eigenvalues, singular values, logabsdet and the norms are real, slogdet's sign is det / |det|.

A singular matrix for inv and solve, or one that is not positive-definite for cholesky, raises
ctensor's InvalidArgumentError naming the function and the index of the first such matrix in
the stack. matmul, matrix_transpose, tensordot and vecdot are the main namespace's.
"""

import math
from collections import namedtuple

from ctensor import _ctensor as _C

__all__ = ["cholesky", "cross", "det", "diagonal", "eigh", "eigvalsh", "inv", "matmul",
           "matrix_norm", "matrix_power", "matrix_rank", "matrix_transpose", "outer", "pinv",
           "qr", "slogdet", "solve", "svd", "svdvals", "tensordot", "trace", "vecdot",
           "vector_norm"]

EighResult = namedtuple("EighResult", ["eigenvalues", "eigenvectors"])
QRResult = namedtuple("QRResult", ["Q", "R"])
SlogdetResult = namedtuple("SlogdetResult", ["sign", "logabsdet"])
SVDResult = namedtuple("SVDResult", ["U", "S", "Vh"])

matmul = _C.matmul
matrix_transpose = _C.matrix_transpose
tensordot = _C.tensordot
vecdot = _C.vecdot


def cholesky(x, /, *, upper=False):
    """The Cholesky factor of each symmetric positive-definite matrix (its lower triangle
    read): L with x = L @ L.mT, or its transpose when upper."""
    return _C._linalg_cholesky(x, bool(upper))


def cross(x1, x2, /, *, axis=-1):
    """The cross product of 3-vectors along axis (the other axes broadcast)."""
    return _C._linalg_cross(x1, x2, _index(axis, "axis"))


def det(x, /):
    return _C._linalg_det(x)


def diagonal(x, /, *, offset=0):
    return _C._linalg_diagonal(x, offset)


def eigh(x, /):
    """Eigenvalues (ascending) and eigenvectors (columns) of each symmetric matrix (its lower
    triangle read)."""
    return EighResult(*_C._linalg_eigh(x))


def eigvalsh(x, /):
    return _C._linalg_eigvalsh(x)


def inv(x, /):
    return _C._linalg_inv(x)


_MATRIX_ORDS = {"fro": "fro", "nuc": "nuc", math.inf: "inf", -math.inf: "-inf", 1: "1",
                -1: "-1", 2: "2", -2: "-2"}


def matrix_norm(x, /, *, keepdims=False, ord="fro"):
    """ord: 'fro', 'nuc', inf, -inf, 1, -1, 2 or -2, over the last two axes."""
    try:
        name = _MATRIX_ORDS[ord]
    except (KeyError, TypeError):
        raise ValueError(f"matrix_norm: ord={ord!r}; it must be one of 'fro', 'nuc', inf, -inf, "
                         "1, -1, 2, -2") from None
    return _C._linalg_matrix_norm(x, name, bool(keepdims))


def matrix_power(x, n, /):
    return _C._linalg_matrix_power(x, n)


def _rtol(rtol, what):
    if rtol is None:
        return -1.0
    if isinstance(rtol, (int, float)) and not isinstance(rtol, bool) and rtol >= 0:
        return float(rtol)
    raise TypeError(f"{what}: rtol must be None, a non-negative Python float or a real "
                    "floating-point array that broadcasts against x.shape[:-2]")


def _array_rtol(rtol, what):
    """rtol when it is an array (one tolerance per matrix of the stack), else None."""
    if not isinstance(rtol, _C.Tensor):
        return None
    if not _C.isdtype(rtol.dtype, "real floating"):
        _rtol(None if rtol is None else object(), what)
    return rtol


def _cutoff(s, rtol):
    """rtol times the largest singular value, per matrix: the bound below which a singular
    value counts as zero (s: (..., K) with K > 0; rtol: broadcast against s.shape[:-1])."""
    return _C.expand_dims(rtol, axis=-1) * _C.max(s, axis=-1, keepdims=True)


def matrix_rank(x, /, *, rtol=None):
    """The number of singular values above rtol times the largest (rtol: None, a float, or
    an array of one tolerance per matrix)."""
    tolerances = _array_rtol(rtol, "matrix_rank")
    if tolerances is None:
        return _C._linalg_matrix_rank(x, _rtol(rtol, "matrix_rank"))
    s = svdvals(x)
    if s.shape[-1] == 0:
        return _C.zeros(s.shape[:-1], dtype=_C.int64, device=x.device)
    return _C.sum(_C.astype(s > _cutoff(s, tolerances), _C.int64), axis=-1)


def outer(x1, x2, /):
    return _C._linalg_outer(x1, x2)


def pinv(x, /, *, rtol=None):
    """The Moore-Penrose pseudo-inverse, treating as zero the singular values at most rtol
    times the largest (rtol: None, a float, or an array of one tolerance per matrix)."""
    tolerances = _array_rtol(rtol, "pinv")
    if tolerances is None:
        return _C._linalg_pinv(x, _rtol(rtol, "pinv"))
    u, s, vh = svd(x, full_matrices=False)
    shape = x.shape[:-2] + (x.shape[-1], x.shape[-2])
    if s.shape[-1] == 0:
        return _C.zeros(shape, dtype=x.dtype, device=x.device)
    kept = s > _cutoff(s, tolerances)
    s_inv = _C.astype(_C.where(kept, 1 / _C.where(kept, s, 1), 0), x.dtype)
    v_scaled = _C.matrix_transpose(_C.conj(vh)) * _C.expand_dims(s_inv, axis=-2)
    return _C.broadcast_to(_C.matmul(v_scaled, _C.matrix_transpose(_C.conj(u))), shape)


def qr(x, /, *, mode="reduced"):
    """x = Q @ R; mode 'reduced' or 'complete'."""
    return QRResult(*_C._linalg_qr(x, mode))


def slogdet(x, /):
    return SlogdetResult(*_C._linalg_slogdet(x))


def solve(x1, x2, /):
    """x with x1 @ x = x2; x2 of shape (M,) is one vector (the result is then (..., M))."""
    return _C._linalg_solve(x1, x2)


def svd(x, /, *, full_matrices=True):
    """x = U diag(S) Vh. Gradients, as PyTorch's: of a full factorization of a non-square x,
    only U[..., :, :K] and Vh[..., :K, :] (K = min(M, N)) are differentiated; the other columns
    and rows are arbitrary bases of the complements, whose gradients are ignored."""
    return SVDResult(*_C._linalg_svd(x, bool(full_matrices)))


def svdvals(x, /):
    return _C._linalg_svdvals(x)


def trace(x, /, *, offset=0, dtype=None):
    out = _C._linalg_trace(x, offset)
    return out if dtype is None else _C.astype(out, dtype)


def vector_norm(x, /, *, axis=None, keepdims=False, ord=2):
    """The ord-norm over axis (None: every axis, as one vector); ord any real or +-inf."""
    if isinstance(ord, bool) or not isinstance(ord, (int, float)):
        raise TypeError(f"vector_norm: ord={ord!r}; it must be a Python int or float")
    if isinstance(axis, (tuple, list)) and len(axis) == 0:
        # no axis reduced: each element is a one-element vector, whose norm is |x_i| (for
        # ord 0, the count of its nonzero elements)
        magnitude = _C.abs(x)
        return _C.astype(x != 0, magnitude.dtype) if ord == 0 else magnitude
    return _C._linalg_vector_norm(x, axis, float(ord), bool(keepdims))


def _index(value, what):
    if isinstance(value, bool) or not hasattr(value, "__index__"):
        raise TypeError(f"cross: {what} must be an int")
    return value.__index__()
