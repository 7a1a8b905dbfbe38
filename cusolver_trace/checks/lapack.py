"""LAPACK's test ratios (TESTING/LIN ``?pot01/02/03``, ``?get01/02/03``), on torch tensors."""
from __future__ import annotations

import math

import numpy as np
import torch

from ._base import BatchMax, _asum, _herm, _norm1, _pair, _ratio, _square, \
    _square_pair, batch_max, ieee_fp32
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

    Examples
    --------
    >>> import numpy as np
    >>> A = np.array([[4.0, 2.0], [2.0, 3.0]])
    >>> bool(pot01(A, np.linalg.cholesky(A)) < 30)
    True
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
        ``dzasum`` (``Σ |Re| + |Im|``), as in ``zpot02``.
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


def _pivots(pivots, k: int | None = None, device=None) -> torch.Tensor:
    """getrf's ``ipiv`` as a tensor of shape (..., k) (any k if None) of an integer dtype,
    moved to ``device`` (TypeError / ValueError otherwise)."""
    # numpy: a copy torch can own (read-only or negative-stride arrays it cannot view)
    p = pivots if isinstance(pivots, torch.Tensor) else torch.from_numpy(np.array(pivots))
    if p.is_floating_point() or p.is_complex() or p.dtype == torch.bool:
        raise TypeError(f"pivots must be an integer tensor, got {p.dtype}")
    if p.ndim < 1 or (k is not None and p.shape[-1] != k):
        raise ValueError(f"pivots must have shape (..., {'k' if k is None else k})"
                         f"{'' if k is None else ' (min(m, n) of A)'}, got {tuple(p.shape)}")
    return p if device is None else p.to(device)


def _row_permutation(piv: torch.Tensor, m: int, batch) -> tuple[torch.Tensor, torch.Tensor]:
    """``perm`` with ``A[perm] = L·U`` (getrf's interchanges, row i with row ipiv(i), applied in
    order i = 1 … k, as dlaswp does) and whether every pivot lies in 1..m, per matrix.

    The interchanges are a sequential recurrence over k; they are applied here on the host,
    vectorized over the batch (the pivots are a few integers per matrix)."""
    k = piv.shape[-1]
    p = piv.expand(*batch, k).reshape(-1, k).to("cpu", torch.int64).numpy()
    valid = ((p >= 1) & (p <= m)).all(-1)
    p = np.where(valid[:, None], p - 1, np.arange(k))
    perm = np.tile(np.arange(m), (p.shape[0], 1))
    rows = np.arange(p.shape[0])
    for i in range(k):
        j = p[:, i]
        held = perm[rows, i]
        perm[rows, i] = perm[rows, j]
        perm[rows, j] = held
    to = dict(device=piv.device)
    return (torch.from_numpy(perm).reshape(*batch, m).to(**to),
            torch.from_numpy(valid).reshape(batch).to(**to))


def get01(A, LU, pivots) -> BatchMax:
    """Factorization ratio ‖P·L·U − A‖₁ / (n · ‖A‖₁ · eps) (``?get01``).

    LAPACK's ``dget01``: "reconstructs a matrix A from its L*U factorization and computes
    the residual norm(L*U - A) / ( N * norm(A) * EPS )", with the row interchanges of
    ``IPIV`` applied to L·U (``dlaswp``); N is the number of columns.

    Parameters
    ----------
    A : (..., m, n) tensor or array
        The matrix that was factored (all of it is read).
    LU : (..., m, n), same dtype as A
        getrf's output: L (unit lower trapezoidal, m × min(m, n)) strictly below the
        diagonal, U (min(m, n) × n) on and above it; the unit diagonal of L is implied.
    pivots : (..., min(m, n)) integer tensor or array
        getrf's ``ipiv`` (1-based: row i was interchanged with row ``pivots[i]``), as
        ``torch.linalg.lu_factor`` returns it. Batch dimensions of the three broadcast.

    Returns
    -------
    BatchMax
        0 when m = 0 or n = 0. Where ‖A‖₁ = 0: 0 if the residual is 0, else 1/eps (as
        ``dget01``). inf for a matrix whose pivots leave 1..m (no permutation is defined;
        LAPACK would read out of bounds). NaN/inf for non-finite inputs.

    Raises
    ------
    ValueError
        Shapes that do not match.
    TypeError
        Dtypes that differ or are unsupported; non-integer pivots.

    Examples
    --------
    >>> from cusolver_trace.checks import THRESHOLD
    >>> A = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    >>> LU, piv = torch.linalg.lu_factor(A)
    >>> piv.tolist(), float(get01(A, LU, piv)) < THRESHOLD
    ([2, 2], True)
    >>> float(get01(A, LU, torch.tensor([1, 2], dtype=torch.int32))) > THRESHOLD   # P forgotten
    True
    """
    A, LU = _pair(A, LU, "A and LU")
    if A.ndim < 2 or LU.shape[-2:] != A.shape[-2:]:
        raise ValueError(f"A and LU must have shape (..., m, n), got {tuple(A.shape)} and "
                         f"{tuple(LU.shape)}")
    m, n = A.shape[-2:]
    k = min(m, n)
    piv = _pivots(pivots, k, A.device)
    batch = torch.broadcast_shapes(A.shape[:-2], LU.shape[:-2], piv.shape[:-1])
    if m == 0 or n == 0:
        return batch_max(torch.zeros(batch))
    eps = dtype_info(A.dtype).lapack_eps
    perm, valid = _row_permutation(piv, m, batch)
    L = LU[..., :, :k].tril(-1) + torch.eye(m, k, dtype=LU.dtype, device=LU.device)
    with ieee_fp32(L):
        R = L @ LU[..., :k, :].triu()
    # L·U − A[perm]: the entries of P·L·U − A with its rows permuted (the same 1-norm)
    R = R - A.expand(*batch, m, n).gather(-2, perm.unsqueeze(-1).expand(*batch, m, n))
    anorm, resid = _norm1(A).expand(batch), _norm1(R)
    r = resid.to(torch.float64) / n / anorm.to(torch.float64) / eps
    r = torch.where(anorm <= 0, torch.where(resid != 0, 1.0 / eps, 0.0), r)
    return batch_max(torch.where(valid, r, math.inf))


def get02(A, X, B, adjoint: bool = False) -> BatchMax:
    """Solve ratio maxⱼ ‖bⱼ − op(A)·xⱼ‖₁ / (‖op(A)‖₁ · ‖xⱼ‖₁ · eps) (``?get02``).

    LAPACK's ``dget02``: "RESID = norm(B - op(A)*X) / ( norm(op(A)) * norm(X) * EPS )",
    "the maximum over the number of right hand sides"; ‖op(A)‖₁ is ``dlange('1')`` of A
    (trans N) or ``dlange('I')`` (trans T / C), vector norms are ``dasum`` (``dzasum``:
    Σ |Re| + |Im| for complex, as in ``zget02``).

    Parameters
    ----------
    A : (..., m, n)
    X : (..., n, nrhs) (``adjoint``: (..., m, nrhs)), same dtype as A
        The computed solution.
    B : (..., m, nrhs) (``adjoint``: (..., n, nrhs))
        The right-hand side. Batch dimensions of the three broadcast.
    adjoint : bool
        op(A) = Aᴴ (getrs trans T for real, C for complex; ``lu_solve(adjoint=True)``).
        ``left=False`` (X·op(A) = B) is judged as op(A)ᴴ·Xᴴ = Bᴴ:
        ``get02(A, X.mH, B.mH, adjoint=not adjoint)``.

    Returns
    -------
    BatchMax
        0 for m = 0, n = 0 or nrhs = 0; 1/eps where ‖op(A)‖₁ = 0 and for a column with
        ‖xⱼ‖₁ = 0 (LAPACK assigns 1/eps there; this takes the max with the other
        columns, so a zero column never hides a worse one).

    Raises
    ------
    ValueError
        Shapes that do not match.
    TypeError
        Dtypes that differ or are unsupported.

    Examples
    --------
    >>> from cusolver_trace.checks import THRESHOLD
    >>> A = torch.tensor([[2.0, 1.0], [0.0, 4.0]])
    >>> X = torch.tensor([[1.0], [1.0]])
    >>> float(get02(A, X, A @ X)), float(get02(A, X, A.mT @ X, adjoint=True))
    (0.0, 0.0)
    >>> float(get02(A, X, A.mT @ X)) > THRESHOLD
    True
    """
    A, X = _pair(A, X, "A and X")
    _, B = _pair(A, B, "A and B")
    if A.ndim < 2:
        raise ValueError(f"A must have shape (..., m, n), got {tuple(A.shape)}")
    m, n = A.shape[-2:]
    n1, n2 = (n, m) if adjoint else (m, n)
    if X.ndim < 2 or B.ndim < 2 or X.shape[-2] != n2 or B.shape[-2] != n1 \
            or X.shape[-1] != B.shape[-1]:
        raise ValueError(f"X and B must have shapes (..., {n2}, nrhs) and (..., {n1}, nrhs) for A "
                         f"{tuple(A.shape)}{' (adjoint)' if adjoint else ''}, got {tuple(X.shape)} "
                         f"and {tuple(B.shape)}")
    eps = dtype_info(A.dtype).lapack_eps
    batch = torch.broadcast_shapes(A.shape[:-2], X.shape[:-2], B.shape[:-2])
    if m == 0 or n == 0 or X.shape[-1] == 0:
        return batch_max(torch.zeros(batch))
    opA = A.mH if adjoint else A
    with ieee_fp32(A):
        R = B - opA @ X
    anorm = _norm1(opA)
    xn = _asum(X).expand(*batch, X.shape[-1])
    col = _ratio(_asum(R) / anorm[..., None], xn, eps, xn <= 0)
    return batch_max(torch.where((anorm <= 0).expand(batch), 1.0 / eps, col.amax(-1)))


def get03(A, Ainv) -> BatchMax:
    """Inverse ratio ‖I − A⁻¹·A‖₁ / (n · ‖A‖₁ · ‖A⁻¹‖₁ · eps) (``?get03``).

    LAPACK's ``dget03``: "norm( I - AINV*A ) / ( N * norm(A) * norm(AINV) * EPS )"
    (note the order, AINV·A; ``?pot03`` forms A·AINV). The residual and the norms are
    computed in the working precision, the division ``resid · rcond / eps / n`` with
    rcond = 1/‖A‖₁/‖A⁻¹‖₁ in float64.

    Parameters
    ----------
    A, Ainv : (..., n, n), same dtype; batch dimensions broadcast.

    Returns
    -------
    BatchMax
        0 for n = 0; 1/eps where ‖A‖₁ = 0 or ‖A⁻¹‖₁ = 0 (as ``dget03``).

    Raises
    ------
    ValueError
        A or Ainv not square.
    TypeError
        Dtypes that differ or are unsupported.

    Examples
    --------
    >>> from cusolver_trace.checks import THRESHOLD
    >>> A = torch.tensor([[4.0, 3.0], [6.0, 3.0]], dtype=torch.float64)
    >>> float(get03(A, torch.linalg.inv(A))) < THRESHOLD, float(get03(A, A)) > THRESHOLD
    (True, True)
    """
    A, Ainv, n, eps, batch = _square_pair(A, Ainv, "Ainv")
    if n == 0:
        return batch_max(torch.zeros(batch))
    with ieee_fp32(A):
        W = torch.eye(n, dtype=A.dtype, device=A.device) - Ainv @ A
    anorm, ainorm = _norm1(A).expand(batch), _norm1(Ainv).expand(batch)
    num = _norm1(W).to(torch.float64) / anorm.to(torch.float64)
    return batch_max(_ratio(num / n, ainorm, eps, (anorm <= 0) | (ainorm <= 0)))


def lu_det_P(pivots) -> torch.Tensor:
    """det(P) of getrf's pivots, as torch computes it for ``linalg.det`` / ``slogdet``.

    (−1) to the number of i with ``pivots[i] != i + 1`` (each such entry is one row
    interchange), as an int64 tensor of ±1 of the batch shape, on the pivots' device: the
    same ops as ATen's ``lu_det_P`` (``arange(1, k + 1) != pivots``, summed as int64,
    ``fmod 2``, ``* -2 + 1``). The pivots are not checked.

    Examples
    --------
    >>> lu_det_P(torch.tensor([[1, 2, 3], [3, 2, 3], [2, 3, 3]], dtype=torch.int32)).tolist()
    [1, -1, 1]
    """
    p = _pivots(pivots)
    k = p.shape[-1]
    return (torch.arange(1, k + 1, dtype=p.dtype, device=p.device) != p).sum(
        -1, dtype=torch.int64).fmod(2).mul(-2).add(1)
