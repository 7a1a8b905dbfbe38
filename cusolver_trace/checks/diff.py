"""Difference metrics: max |x − y|, relative Frobenius difference, ulps, bit equality."""
from __future__ import annotations

from typing import Callable

import torch

from ._base import BatchMax, _pair, _square, as_tensor, batch_max


def _per_matrix(t: torch.Tensor, reduce: Callable) -> torch.Tensor:
    """Apply ``reduce(flat, dim=-1)`` per matrix (last two dims; all of a 0-/1-D tensor)."""
    if t.ndim >= 2:
        flat = t.reshape(*t.shape[:-2], t.shape[-2] * t.shape[-1])
    else:
        flat = t.reshape(-1)
    if flat.shape[-1] == 0:
        return torch.zeros(flat.shape[:-1], dtype=torch.float64, device=t.device)
    return reduce(flat, dim=-1)


def _fro(X: torch.Tensor) -> torch.Tensor:
    """Per-matrix Frobenius norm, scaled by max |x| so that it neither overflows nor
    underflows (torch's ``vector_norm`` does neither)."""
    a = X.abs().to(torch.float64)
    s = _per_matrix(a, torch.amax)
    inner = _per_matrix(a / s.reshape(*s.shape, *([1] * min(2, X.ndim))), torch.linalg.vector_norm)
    return torch.where(s == 0, 0.0, torch.where(torch.isinf(s), s, s * inner))


def max_abs_diff(X, Y) -> BatchMax:
    """Per-matrix max |x − y| (modulus for complex), as float64.

    Positions where X and Y are equal (including equal infinities) or both NaN
    count 0; a NaN against a number gives NaN.
    """
    X, Y = _pair(X, Y)
    if X.shape != Y.shape:
        raise ValueError(f"shapes differ: {tuple(X.shape)} vs {tuple(Y.shape)}")
    d = (X - Y).abs()
    same = (X == Y) | (torch.isnan(X) & torch.isnan(Y))
    return batch_max(_per_matrix(torch.where(same, 0, d), torch.amax))


def rel_fro_diff(X, Y) -> BatchMax:
    """Per-matrix ‖X − Y‖_F / ‖Y‖_F (MAGMA's check; Y is the reference).

    0 when both are zero, inf when only Y is; NaN if any entry is NaN.
    Norms are computed with scaling in float64, so "large"/"small" LAPACK test
    matrices do not overflow.
    """
    X, Y = _pair(X, Y)
    if X.shape != Y.shape:
        raise ValueError(f"shapes differ: {tuple(X.shape)} vs {tuple(Y.shape)}")
    num, den = _fro(X - Y), _fro(Y)
    return batch_max(torch.where(num == 0, 0.0, num / den))


def asymmetry(X) -> BatchMax:
    """Per-matrix ‖X − Xᴴ‖_F / ‖X‖_F (0 for a zero matrix). X: (..., n, n)."""
    X = as_tensor(X)
    _square(X, "X")
    num, den = _fro(X - X.mH), _fro(X)
    return batch_max(torch.where(num == 0, 0.0, num / den))


def nonfinite_count(X) -> int:
    """Number of elements that are NaN or ±inf (a complex element counts once)."""
    X = as_tensor(X)
    return int((~torch.isfinite(X)).sum())


def _bits(X: torch.Tensor) -> torch.Tensor:
    """Raw IEEE bits as a signed integer tensor (complex: trailing dim of 2 = re, im)."""
    R = torch.view_as_real(X) if X.is_complex() else X
    return R.view(torch.int32 if R.dtype == torch.float32 else torch.int64)


def bitwise_equal(X, Y) -> bool:
    """Exact bit equality of every element (NaN payloads and the sign of zero count).

    False when shapes or dtypes differ; ``-0.0`` and ``+0.0`` are not bitwise equal.

    Examples
    --------
    >>> import numpy as np
    >>> bitwise_equal(np.array([[0.0]]), np.array([[-0.0]])), max_ulp_distance(np.array([[0.0]]), np.array([[-0.0]]))
    (False, 0)
    """
    X, Y = as_tensor(X), as_tensor(Y)
    if X.shape != Y.shape or X.dtype != Y.dtype:
        return False
    return bool(torch.equal(_bits(X), _bits(Y.to(X.device))))


_I64_MAX = torch.iinfo(torch.int64).max


def ulp_distance(X, Y) -> torch.Tensor:
    """Elementwise distance in units in the last place, an int64 tensor of X's shape.

    The IEEE bits are reinterpreted as integers and mapped sign-magnitude →
    monotonic (``k = bits`` for bits >= 0, ``k = INT_MIN − bits`` otherwise), so
    the distance ``|k(x) − k(y)|`` counts the representable numbers between x and y:
    adjacent floats are 1 apart, the largest finite number is 1 from inf, and
    **+0 and −0 are 0 ulps apart** (equal by IEEE ordering; :func:`bitwise_equal`
    tells them apart). Exactly equal values → 0; NaN vs NaN → 0; NaN vs a number
    → ``-1`` (a sentinel, counted by :func:`nan_mismatches`). float64 distances
    across zero saturate at 2**63 − 1. Complex: the larger of the real and
    imaginary parts' distances (−1 if either part is a NaN mismatch).
    """
    X, Y = _pair(X, Y)
    if X.shape != Y.shape:
        raise ValueError(f"shapes differ: {tuple(X.shape)} vs {tuple(Y.shape)}")
    bx, by = _bits(X), _bits(Y)
    imin = torch.iinfo(bx.dtype).min
    kx, ky = (torch.where(b < 0, imin - b.to(torch.int64), b.to(torch.int64)) for b in (bx, by))
    ax, ay = kx.abs(), ky.abs()
    across = (kx < 0) != (ky < 0)
    d = torch.where(across, torch.where(ax > _I64_MAX - ay, _I64_MAX, ax + ay), (kx - ky).abs())
    rx = torch.view_as_real(X) if X.is_complex() else X
    ry = torch.view_as_real(Y) if Y.is_complex() else Y
    nx, ny = torch.isnan(rx), torch.isnan(ry)
    d = torch.where(nx & ny, 0, torch.where(nx ^ ny, -1, d))
    if X.is_complex():
        d = torch.where((d == -1).any(-1), -1, d.amax(-1))
    return d


def max_ulp_distance(X, Y) -> int:
    """Largest :func:`ulp_distance` over all elements, NaN mismatches excluded
    (count them with :func:`nan_mismatches`). Per matrix:
    ``ulp_distance(X, Y).flatten(-2).amax(-1)``."""
    d = ulp_distance(X, Y)
    return int(d.max().clamp_min(0)) if d.numel() else 0


def nan_mismatches(X, Y) -> int:
    """Number of elements where exactly one of X, Y is NaN (complex: in either part)."""
    return int((ulp_distance(X, Y) == -1).sum())
