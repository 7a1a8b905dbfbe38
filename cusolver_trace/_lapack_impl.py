"""CPU backend: the same routines through ``scipy.linalg.lapack`` (Reference-LAPACK semantics).

Inputs are NumPy arrays ``(..., n, n)`` (already validated); each matrix is
handed to the LAPACK wrapper, which makes a Fortran-ordered working copy, so
inputs are never modified. Returns results plus an ``info`` array of the batch
shape (``int32``). This mirrors torch's CPU path: ``?potrf`` / ``?potrs`` /
``?potri`` (+ mirror of the computed triangle) in a loop over the batch.
"""
from __future__ import annotations

import numpy as np
import scipy.linalg.lapack as _lapack

from ._dtypes import dtype_info


def routine_name(dtype, base: str) -> str:
    return f"LAPACK {dtype_info(dtype).prefix}{base}"


def _fn(dtype, base):
    return getattr(_lapack, dtype_info(dtype).prefix + base)


def _loop(batch_shape, body):
    info = np.zeros(batch_shape, dtype=np.int32)
    for idx in np.ndindex(*batch_shape):
        info[idx] = body(idx)
    return info


def hermitian_from_triangle(x: np.ndarray, upper: bool) -> np.ndarray:
    """Full Hermitian matrix from the ``upper`` / lower triangle of ``x`` (..., n, n)."""
    if upper:
        t = np.triu(x)
        return t + np.swapaxes(np.triu(x, 1), -1, -2).conj()
    t = np.tril(x)
    return t + np.swapaxes(np.tril(x, -1), -1, -2).conj()


def potrf(a: np.ndarray, upper: bool):
    """``?potrf`` per matrix; the other triangle of the factor is zero (LAPACK's ``clean``)."""
    fn, out = _fn(a.dtype, "potrf"), np.empty_like(a)

    def body(i):
        out[i], info = fn(a[i], lower=not upper, clean=1)
        return info

    return out, _loop(a.shape[:-2], body)


def potrs(c: np.ndarray, b: np.ndarray, upper: bool):
    """``?potrs`` per matrix; ``c`` and ``b`` already broadcast to one batch shape."""
    fn, out = _fn(c.dtype, "potrs"), np.empty_like(b)

    def body(i):
        out[i], info = fn(c[i], b[i], lower=not upper)
        return info

    return out, _loop(c.shape[:-2], body)


def potri(c: np.ndarray, upper: bool):
    """``?potri`` per matrix, then the full Hermitian inverse (mirror of the computed triangle)."""
    fn, out = _fn(c.dtype, "potri"), np.empty_like(c)

    def body(i):
        out[i], info = fn(c[i], lower=not upper)
        return info

    info = _loop(c.shape[:-2], body)
    return hermitian_from_triangle(out, upper), info


def trtri(c: np.ndarray, upper: bool, unit_diagonal: bool = False):
    """``?trtri`` per matrix (inverse of the ``upper`` / lower triangle; the other is zeroed)."""
    fn, out = _fn(c.dtype, "trtri"), np.empty_like(c)

    def body(i):
        out[i], info = fn(c[i], lower=not upper, unitdiag=int(unit_diagonal))
        return info

    info = _loop(c.shape[:-2], body)
    return (np.triu(out) if upper else np.tril(out)), info


def potrs_identity(c: np.ndarray, upper: bool):
    """Inverse by ``?potrs`` on the identity (the cuSOLVER path's algorithm, on the CPU)."""
    n = c.shape[-1]
    eye = np.broadcast_to(np.eye(n, dtype=c.dtype), c.shape)
    return potrs(c, eye, upper)
