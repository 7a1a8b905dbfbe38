"""LAPACK's test ratios (TESTING/LIN ``?pot01/02/03``), on torch tensors."""
from __future__ import annotations

import torch

from ._base import BatchMax, _asum, _herm, _norm1, _pair, _ratio, _square, _square_pair, \
    batch_max, ieee_fp32
from .._dtypes import dtype_info


def pot01(A, L, upper: bool = False) -> BatchMax:
    """Factorization ratio ‖L·Lᴴ − A‖₁ / (n · ‖A‖₁ · eps) (``?pot01``); upper: Uᴴ·U.

    Parameters
    ----------
    A : (..., n, n) tensor or array
        The matrix that was factored; only its lower (``upper=False``) or upper
        triangle is referenced, as by potrf.
    L : (..., n, n), same dtype as A
        The computed factor; only the matching triangle is referenced (as in
        ``?pot01``: whatever the other triangle holds is ignored — check it
        separately if it must be zero).
    upper : bool
        ``True`` when L holds U with A = Uᴴ·U.

    Returns
    -------
    BatchMax
        0 for n = 0; 1/eps where ‖A‖₁ <= 0 or (complex) a diagonal entry of the
        factor has a nonzero imaginary part; NaN/inf for non-finite inputs.
    """
    A, L, n, eps, batch = _square_pair(A, L, "L")
    if n == 0:
        return batch_max(torch.zeros(batch))
    F = L.triu() if upper else L.tril()
    with ieee_fp32(F):
        R = (F.mH @ F if upper else F @ F.mH) - A
    anorm = _norm1(_herm(A, upper))
    bad = (anorm <= 0).expand(batch)
    if F.is_complex():
        bad = bad | (F.diagonal(dim1=-2, dim2=-1).imag != 0).any(-1)
    return batch_max(_ratio(_norm1(_herm(R, upper)) / n, anorm, eps, bad))


def pot02(A, X, B, upper: bool = False) -> BatchMax:
    """Solve ratio maxⱼ ‖bⱼ − A·xⱼ‖₁ / (‖A‖₁ · ‖xⱼ‖₁ · eps) (``?pot02``).

    Parameters
    ----------
    A : (..., n, n)
        Hermitian matrix; only its lower (or ``upper``) triangle is referenced.
    X, B : (..., n, nrhs), same dtype as A
        Computed solution and right-hand side (batch dims broadcast).

    Returns
    -------
    BatchMax
        0 for n = 0 or nrhs = 0; 1/eps where ‖A‖₁ <= 0; a column with
        ‖xⱼ‖₁ = 0 counts 1/eps. For complex data the vector norms are LAPACK's
        ``dzasum`` (Σ |Re| + |Im|), as in ``zpot02``.
    """
    A, X = _pair(A, X, "A and X")
    _, B = _pair(A, B, "A and B")
    n = _square(A)
    if X.ndim < 2 or X.shape[-2] != n or X.shape[-2:] != B.shape[-2:]:
        raise ValueError(
            f"X and B must have shape (..., {n}, nrhs), got {tuple(X.shape)} and {tuple(B.shape)}")
    eps = dtype_info(A.dtype).lapack_eps
    batch = torch.broadcast_shapes(A.shape[:-2], X.shape[:-2], B.shape[:-2])
    if n == 0 or X.shape[-1] == 0:
        return batch_max(torch.zeros(batch))
    Ah = _herm(A, upper)
    with ieee_fp32(Ah):
        R = B - Ah @ X
    anorm = _norm1(Ah)
    xn = _asum(X).expand(*batch, X.shape[-1])
    col = _ratio(_asum(R) / anorm[..., None], xn, eps, xn <= 0)
    per = col.amax(-1)
    return batch_max(torch.where((anorm <= 0).expand(batch), 1.0 / eps, per))


def pot03(A, Ainv, upper: bool = False, fill: bool = False) -> BatchMax:
    """Inverse ratio ‖I − A·A⁻¹‖₁ / (n · ‖A‖₁ · ‖A⁻¹‖₁ · eps) (``?pot03``).

    Parameters
    ----------
    A : (..., n, n)
        Hermitian matrix; only its lower (or ``upper``) triangle is referenced.
    Ainv : (..., n, n), same dtype
        The computed inverse. By default it is used exactly as given (torch's
        GPU ``cholesky_inverse`` is not exactly Hermitian, and that is what its
        callers get); ``fill=True`` first expands it from its lower/``upper``
        triangle, as ``?pot03`` does for ``?potri`` output.

    Returns
    -------
    BatchMax
        0 for n = 0; 1/eps where ‖A‖₁ <= 0 or ‖A⁻¹‖₁ <= 0.
    """
    A, Ainv, n, eps, batch = _square_pair(A, Ainv, "Ainv")
    if n == 0:
        return batch_max(torch.zeros(batch))
    Ah = _herm(A, upper)
    Ai = _herm(Ainv, upper) if fill else Ainv
    with ieee_fp32(Ah):
        W = torch.eye(n, dtype=A.dtype, device=A.device) - Ah @ Ai
    anorm, ainorm = _norm1(Ah).expand(batch), _norm1(Ai).expand(batch)
    num = _norm1(W).to(torch.float64) / anorm.to(torch.float64)
    return batch_max(_ratio(num / n, ainorm, eps, (anorm <= 0) | (ainorm <= 0)))
