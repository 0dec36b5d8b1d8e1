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
    raise TypeError(f"{what}: rtol must be None or a non-negative Python float")


def matrix_rank(x, /, *, rtol=None):
    return _C._linalg_matrix_rank(x, _rtol(rtol, "matrix_rank"))


def outer(x1, x2, /):
    return _C._linalg_outer(x1, x2)


def pinv(x, /, *, rtol=None):
    return _C._linalg_pinv(x, _rtol(rtol, "pinv"))


def qr(x, /, *, mode="reduced"):
    """x = Q @ R; mode 'reduced' or 'complete'."""
    return QRResult(*_C._linalg_qr(x, mode))


def slogdet(x, /):
    return SlogdetResult(*_C._linalg_slogdet(x))


def solve(x1, x2, /):
    """x with x1 @ x = x2; x2 of shape (M,) is one vector (the result is then (..., M))."""
    return _C._linalg_solve(x1, x2)


def svd(x, /, *, full_matrices=True):
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
    return _C._linalg_vector_norm(x, axis, float(ord), bool(keepdims))


def _index(value, what):
    if isinstance(value, bool) or not hasattr(value, "__index__"):
        raise TypeError(f"cross: {what} must be an int")
    return value.__index__()
