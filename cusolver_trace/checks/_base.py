"""Plumbing shared by the checks: tensors in, per-matrix values out (:class:`BatchMax`)."""
from __future__ import annotations

import contextlib

import numpy as np
import torch

from .._dtypes import dtype_info


THRESHOLD = 30.0
"""LAPACK's pass threshold for the test ratios (TESTING/dtest.in)."""


# --------------------------------------------------------------------------- plumbing
class BatchMax(float):
    """A float (the max over the batch) with the per-matrix values attached.

    Attributes
    ----------
    per_matrix : numpy.ndarray
        float64 array of the batch shape (``()`` for a single matrix).
    """

    per_matrix: np.ndarray

    def __new__(cls, value: float, per_matrix) -> "BatchMax":
        obj = super().__new__(cls, value)
        obj.per_matrix = np.asarray(per_matrix, dtype=np.float64)
        return obj

    def __reduce__(self):
        return (BatchMax, (float(self), self.per_matrix))

    def __repr__(self) -> str:
        return f"BatchMax({float(self)!r}, batch_shape={self.per_matrix.shape})"


def batch_max(per: torch.Tensor) -> BatchMax:
    """Per-matrix values (on any device) → :class:`BatchMax` (one small host copy)."""
    arr = per.detach().to("cpu", torch.float64).numpy()
    return BatchMax(float(arr.max()) if arr.size else 0.0, arr)


def as_tensor(x, device=None) -> torch.Tensor:
    """A torch tensor of a supported dtype, without copying when avoidable.

    numpy arrays become CPU tensors (``torch.from_numpy``; read-only arrays and arrays
    with negative strides or non-native byte order are copied first). Lazy conjugate/negative
    views are resolved. ``device`` moves the result (used to bring a second
    operand to the first one's device).

    Raises
    ------
    TypeError
        Unsupported dtype (see :func:`cusolver_trace._dtypes.dtype_info`).
    """
    if isinstance(x, np.ndarray):
        dtype_info(x.dtype)   # our TypeError before torch's (e.g. longdouble)
        if any(s < 0 for s in x.strides) or not x.dtype.isnative or not x.flags.writeable:
            # a copy torch can own: negative strides and foreign byte order it cannot view,
            # and a read-only array it would view writable (its UserWarning)
            x = np.array(x, dtype=x.dtype.newbyteorder("="))
        x = torch.from_numpy(x)
    elif not isinstance(x, torch.Tensor):
        x = torch.as_tensor(x)
    dtype_info(x.dtype)
    x = x.resolve_conj().resolve_neg()
    return x if device is None else x.to(device)


def _pair(X, Y, what="X and Y"):
    X = as_tensor(X)
    Y = as_tensor(Y, X.device)
    if X.dtype != Y.dtype:
        raise TypeError(f"{what} must have the same dtype, got {X.dtype} and {Y.dtype}")
    return X, Y


def _square(A, name="A") -> int:
    if A.ndim < 2 or A.shape[-1] != A.shape[-2]:
        raise ValueError(f"{name} must have shape (..., n, n), got {tuple(A.shape)}")
    return A.shape[-1]


def _square_pair(A, X, name):
    """Two square operands of one dtype: (A, X, n, LAPACK eps, broadcast batch shape)."""
    A, X = _pair(A, X, f"A and {name}")
    n = _square(A)
    _square(X, name)
    return A, X, n, dtype_info(A.dtype).lapack_eps, torch.broadcast_shapes(A.shape[:-2], X.shape[:-2])


@contextlib.contextmanager
def ieee_fp32(t: torch.Tensor):
    """Forbid TF32 for float32/complex64 matmuls on CUDA, restoring the setting after.

    Uses the per-backend ``torch.backends.cuda.matmul.fp32_precision`` (torch >= 2.9;
    reading/writing it works whichever API the caller used) or, on older torch,
    ``allow_tf32``.
    """
    m = torch.backends.cuda.matmul
    if t.device.type != "cuda" or t.dtype not in (torch.float32, torch.complex64):
        yield
        return
    try:
        attr, saved, off = "fp32_precision", m.fp32_precision, "ieee"
    except (AttributeError, RuntimeError):  # torch < 2.9
        attr, saved, off = "allow_tf32", m.allow_tf32, False
    setattr(m, attr, off)
    try:
        yield
    finally:
        setattr(m, attr, saved)


def _herm(X: torch.Tensor, upper: bool) -> torch.Tensor:
    """The Hermitian matrix whose ``upper``/lower triangle is X's (real diagonal).

    This is what LAPACK's ``?lanhe``/``?hemm`` with ``UPLO`` see: the other
    triangle of X is never referenced.
    """
    T = X.triu(1) if upper else X.tril(-1)
    d = X.diagonal(dim1=-2, dim2=-1).real
    return T + T.mH + torch.diag_embed(d).to(X.dtype)


def _norm1(X: torch.Tensor) -> torch.Tensor:
    """Matrix 1-norm (max column sum of |x|), per matrix, working precision."""
    if X.shape[-1] == 0:
        return X.new_zeros(X.shape[:-2], dtype=X.real.dtype)
    return X.abs().sum(-2).amax(-1)


def _asum(X: torch.Tensor) -> torch.Tensor:
    """Per-column ``?asum``: sum |x| (real), sum |Re x| + |Im x| (complex, as dzasum)."""
    if X.is_complex():
        return (X.real.abs() + X.imag.abs()).sum(-2)
    return X.abs().sum(-2)


def _ratio(num, den, eps: float, bad) -> BatchMax:
    """``num / den / eps`` in float64, 1/eps where ``bad`` (LAPACK's convention)."""
    r = num.to(torch.float64) / den.to(torch.float64) / eps
    return torch.where(bad, torch.full_like(r, 1.0 / eps), r)



def passes(ratio) -> bool | np.ndarray:
    """``ratio < THRESHOLD`` (NaN fails). Arrays give an elementwise bool array.

    Examples
    --------
    >>> passes(2.5), passes(float("nan")), passes([1.0, 40.0]).tolist()
    (True, False, [True, False])
    """
    r = np.less(ratio, THRESHOLD)
    return bool(r) if np.ndim(r) == 0 else r
