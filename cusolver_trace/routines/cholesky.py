"""``potrf``, ``potrs`` and ``trtri``: the Cholesky factorization, the solve from the factor,
and the triangular inverse, each with its implementation table (:data:`POTRF`,
:data:`POTRS`: cuSOLVER's entry points and the fused kernel as rows, LAPACK in the CPU
column)."""
from __future__ import annotations

import math

import numpy as np

from .._arrays import (Array, ArrayLike, Operand, as_numpy, flag, operand, require_square,
                       same_backend, wrap)
from ..backends import cpu as _cpu
from ..errors import NonFiniteError, SingularFactorError
from ._table import AutoRule, Impl, Table, cuda, device_of, empty_result, fused, raise_for_info


def _potrf(api):
    return lambda a, upper: cuda().potrf(a, upper, api)


def _potrs(api):
    return lambda c, b, upper: cuda().potrs(c, b, upper, api)


# workspace (Impl.workspace, n² beyond the inputs, float64), from the code, not measured:
# potrf 1.0 for every row (the factor is a new column-major buffer; cuSOLVER's workspace is
# the backend's grow-only scratch, kept between calls; potrf's check adds a triangle copy and
# its mask, 1.13, after the column); potrs 1.0 (the factor's column-major copy; fused reads
# the factor in place, 0.0), plus the n × nrhs result.
POTRF = Table("potrf", {
    "X": Impl("X", "cusolverDnXpotrf_bufferSize + cusolverDnXpotrf per matrix (64-bit API; "
              "torch's batch-1 path)", _potrf("X"), _cpu.potrf, "potrf", "cusolverDnXpotrf",
              "LAPACK {t}potrf", workspace=1.0),
    "legacy": Impl("legacy", "cusolverDn<t>potrf per matrix (32-bit API)", _potrf("legacy"),
                   _cpu.potrf, "potrf", "cusolverDn{T}potrf", "LAPACK {t}potrf", workspace=1.0),
    "batched": Impl("batched", "one cusolverDn<t>potrfBatched for the whole batch (torch's "
                    "batch > 1 path)", _potrf("batched"), _cpu.potrf, "potrf",
                    "cusolverDn{T}potrfBatched", "LAPACK {t}potrf", workspace=1.0),
    "fused": Impl("fused", "one cuSOLVERDx kernel for the whole batch (small n; the "
                  "cuda13-fused extra)", lambda a, upper: fused().potrf(a, upper), None,
                  "potrf", "cuSOLVERDx potrf (fused kernel)", workspace=1.0),
}, auto={
    "batch 1: torch's cusolverDnXpotrf": AutoRule("X", batch_max=1),
    "batches: torch's cusolverDn<t>potrfBatched": AutoRule("batched"),
})
"""The methods of :func:`potrf` (``method=``); ``"auto"`` is torch's choice for
``linalg.cholesky``. On the CPU every row but ``fused`` runs LAPACK ``?potrf``. Each row
states its CUDA workspace (:attr:`Impl.workspace`: 1.0 n², the factor)."""

POTRS = Table("potrs", {
    "X": Impl("X", "cusolverDnXpotrs per matrix (torch's path)", _potrs("X"), _cpu.potrs,
              "potrs", "cusolverDnXpotrs", "LAPACK {t}potrs", workspace=1.0),
    "legacy": Impl("legacy", "cusolverDn<t>potrs per matrix", _potrs("legacy"), _cpu.potrs,
                   "potrs", "cusolverDn{T}potrs", "LAPACK {t}potrs", workspace=1.0),
    "batched": Impl("batched", "one cusolverDn<t>potrsBatched (nrhs = 1 only)", _potrs("batched"),
                    _cpu.potrs, "potrs", "cusolverDn{T}potrsBatched", "LAPACK {t}potrs",
                    workspace=1.0),
    "fused": Impl("fused", "one cuSOLVERDx kernel for the whole batch (small n, any nrhs; the "
                  "cuda13-fused extra)", lambda c, b, upper: fused().potrs(c, b, upper), None,
                  "potrs", "cuSOLVERDx potrs (fused kernel)", workspace=0.0),
}, auto={"torch's cusolverDnXpotrs": AutoRule("X")})
"""The methods of :func:`potrs` (``method=``); ``"auto"`` is torch's ``Xpotrs``."""


def flag_nan_pivots(l, info):
    """cuSOLVER's potrf (and OpenBLAS's) can return info = 0 on NaN input; report the
    first NaN on the diagonal of the factor as Reference LAPACK's ``?potrf`` does (it stops
    at a NaN pivot; +Inf is a valid pivot there). ``info`` has the batch shape; no host
    synchronization. A CUDA ``info`` may be updated in place
    (:func:`backends.cuda.flag_nan_pivots`)."""
    if isinstance(l, np.ndarray):
        return _cpu.flag_nan_pivots(l, info)
    return cuda().flag_nan_pivots(l, info)  # one kernel, in place where it can be


def _nonfinite_members(l, upper: bool, batch_shape):
    """Per matrix, whether the ``upper`` / lower triangle of the factor ``l`` holds NaN / Inf
    (a device tensor or a NumPy array of the batch shape; no synchronization)."""
    if isinstance(l, np.ndarray):
        tri = np.triu(l) if upper else np.tril(l)
        return ~np.isfinite(tri).reshape(*batch_shape, -1).all(-1)
    tri = l.triu() if upper else l.tril()
    return ~tri.isfinite().reshape(*batch_shape, -1).all(-1)


def potrf(A: ArrayLike, upper: bool = False, *, check: bool = True,
          method: str = "auto") -> tuple[Array, Array]:
    """Cholesky factorization A = L·Lᴴ (or Uᴴ·U), like LAPACK / cuSOLVER ``?potrf``.

    Parameters
    ----------
    A : array (..., n, n)
        Hermitian positive definite; only the lower (``upper=False``) or upper
        triangle is read. float32, float64, complex64, complex128; torch (CUDA or
        CPU), CuPy or NumPy.
    upper : bool
        Factor the upper triangle (``uplo = CUBLAS_FILL_MODE_UPPER``).
    check : bool
        Raise when the factorization fails (``info != 0``) or the factor holds NaN / Inf
        (one synchronization); ``False`` returns info and checks nothing.
    method : str
        A row of :data:`POTRF` or ``"auto"`` (torch's choice: ``cusolverDnXpotrf`` for
        batch 1, ``cusolverDn<t>potrfBatched`` for batch > 1): ``"X"`` (64-bit API per
        matrix), ``"legacy"`` (``cusolverDn<t>potrf`` per matrix), ``"batched"``,
        ``"fused"`` (one cuSOLVERDx kernel for the whole batch, small n, the
        ``cuda13-fused`` extra, GPU only). CPU inputs run LAPACK ``?potrf`` for every
        row but ``"fused"``, which raises there.

    Returns
    -------
    L : array (..., n, n), same kind, dtype and device as A
        The factor; the other triangle is zero. Torch tensors come back with
        column-major strides, like ``torch.linalg.cholesky``.
    info : int32 array of the batch shape ``(...)``
        0, or the order of the first leading minor that is not positive
        definite (NaN pivots count as failures, as in Reference LAPACK).

    Raises
    ------
    NotPositiveDefiniteError
        (``numpy.linalg.LinAlgError``) with ``check=True``, naming the minor and
        the batch element.
    NonFiniteError
        (``LinAlgError``) with ``check=True``: the factor holds NaN / Inf although no
        minor failed (e.g. +Inf on A's diagonal).
    ValueError
        A is not square, has fewer than 2 dimensions, or ``method`` is unknown or GPU-only
        on a CPU input.
    TypeError
        Unsupported dtype or array type; ``upper`` / ``check`` not a bool.
    GPUUnavailableError
        A CUDA input, but CuPy / nvmath-python are missing.

    Mirrors ``torch.linalg.cholesky`` / ``torch.linalg.cholesky_ex`` (torch
    2.3 – 2.14 CUDA and CPU paths).

    Examples
    --------
    >>> import numpy as np, cusolver_trace as ct
    >>> L, info = ct.potrf(np.array([[4.0, 2.0], [2.0, 3.0]]))
    >>> L
    array([[2.        , 0.        ],
           [1.        , 1.41421356]])
    >>> int(info)
    0
    """
    a = operand(A, "A")
    upper, check = flag(upper, "upper"), flag(check, "check")
    n = require_square(a, "A")
    batch_shape = a.batch_shape
    used = POTRF.resolve(method, n, math.prod(batch_shape), a.dtype.name, device_of(a))
    if n == 0 or math.prod(batch_shape) == 0:
        return empty_result(a, a.shape, batch_shape)
    row = POTRF.rows[used]
    if a.on_gpu:
        l, info = row.cuda(a.data, upper)
    else:
        l, info = row.cpu(as_numpy(a), upper)
    info = info.reshape(batch_shape)
    if a.on_gpu:   # the CPU backend's potrf flags NaN pivots itself
        info = flag_nan_pivots(l, info)
    if check:
        _check_factor(row.routine_name(a.dtype.name, a.on_gpu), l, info, upper, batch_shape)
    return wrap(l, a), wrap(info, a)


def _check_factor(routine: str, l, info, upper: bool, batch_shape) -> None:
    """potrf's check: info first (the failing minor), then a non-finite factor; one
    transfer to the host."""
    bad = _nonfinite_members(l, upper, batch_shape)
    if isinstance(l, np.ndarray):
        flat_info, flat_bad = np.asarray(info).reshape(-1), np.asarray(bad).reshape(-1)
    else:
        import torch

        both = torch.stack([info.reshape(-1).to(torch.int32), bad.reshape(-1).to(torch.int32)])
        flat_info, flat_bad = both.cpu().numpy()
    raise_for_info(routine, flat_info.reshape(batch_shape), batch_shape)
    hit = np.flatnonzero(flat_bad)
    if hit.size:
        i = int(hit[0])
        raise NonFiniteError(routine, "the factor's " + ("upper" if upper else "lower")
                             + " triangle has non-finite entries (NaN / Inf in A)",
                             i if batch_shape else None, tuple(batch_shape))


def _solve_operands(L, B):
    c, b = operand(L, "L"), operand(B, "B")
    n = require_square(c, "L")
    same_backend(c, b)
    if b.shape[-2] != n:
        raise ValueError(f"B must have n = {n} rows to match L {c.shape}, got shape {b.shape}")
    try:
        batch_shape = tuple(np.broadcast_shapes(c.batch_shape, b.batch_shape))
    except ValueError:
        raise ValueError(f"batch shapes of L {c.shape} and B {b.shape} do not broadcast") from None
    return c, b, n, batch_shape


def broadcast(op: Operand, batch_shape):
    """``op``'s data broadcast to ``batch_shape`` (a view)."""
    shape = tuple(batch_shape) + op.shape[-2:]
    if op.on_gpu:
        return op.data.expand(shape)
    return np.broadcast_to(as_numpy(op), shape)


def potrs(L: ArrayLike, B: ArrayLike, upper: bool = False, *, method: str = "X") -> Array:
    """Solve A·X = B given the Cholesky factor of A, like ``?potrs``.

    Parameters
    ----------
    L : array (..., n, n)
        Factor from :func:`potrf`; only its lower (or ``upper``) triangle is read.
    B : array (..., n, nrhs)
        Right-hand sides; batch dimensions broadcast against L's.
    upper : bool
        L holds U with A = Uᴴ·U.
    method : str
        A row of :data:`POTRS` or ``"auto"`` (= ``"X"``): ``cusolverDnXpotrs`` per matrix
        (torch's path), ``"legacy"`` (``cusolverDn<t>potrs`` per matrix), ``"batched"``
        (one ``cusolverDn<t>potrsBatched``, ``nrhs == 1`` only), ``"fused"`` (one
        cuSOLVERDx kernel for the whole batch, small n, any nrhs; the ``cuda13-fused``
        extra, GPU only). CPU inputs run LAPACK ``?potrs`` for every row but ``"fused"``.

    Returns
    -------
    X : array (..., n, nrhs), same kind, dtype and device as B.

    Raises
    ------
    ValueError
        Shapes do not match / broadcast, L and B on different devices, unknown method,
        ``method="fused"`` on CPU inputs.
    TypeError
        Unsupported or mismatched dtypes.

    potrs reports illegal arguments only: a singular factor yields inf / nan
    silently, as in cuSOLVER and LAPACK. Mirrors ``torch.cholesky_solve(B, L)``.

    Examples
    --------
    >>> import numpy as np, cusolver_trace as ct
    >>> L, _ = ct.potrf(np.array([[4.0, 2.0], [2.0, 3.0]]))
    >>> ct.potrs(L, np.array([[6.0], [5.0]]))
    array([[1.],
           [1.]])
    """
    c, b, n, batch_shape = _solve_operands(L, B)
    upper = flag(upper, "upper")
    used = POTRS.resolve(method, n, math.prod(batch_shape), c.dtype.name, device_of(c))
    out_shape = tuple(batch_shape) + b.shape[-2:]
    if n == 0 or b.shape[-1] == 0 or 0 in batch_shape:
        return empty_result(b, out_shape, batch_shape)[0]
    row = POTRS.rows[used]
    cc, bb = broadcast(c, batch_shape), broadcast(b, batch_shape)
    x, info = (row.cuda if c.on_gpu else row.cpu)(cc, bb, upper)
    raise_for_info(row.routine_name(c.dtype.name, c.on_gpu), info, batch_shape)
    return wrap(x, b)


def factor_operand(L, name="L"):
    """``(operand, n, batch)`` of a square factor argument."""
    c = operand(L, name)
    n = require_square(c, name)
    return c, n, math.prod(c.batch_shape)


def trtri(T: ArrayLike, upper: bool = False, *, unit_diagonal: bool = False,
          check: bool = True) -> Array:
    """Inverse of a triangular matrix, like ``?trtri`` (GPU: ``cusolverDnXtrtri``).

    Parameters
    ----------
    T : array (..., n, n)
        Only the lower (or ``upper``) triangle is read; with ``unit_diagonal`` the
        diagonal is not read either and taken as ones.
    upper : bool
        Invert the upper triangle.
    unit_diagonal : bool
        Assume a unit diagonal (``diag = CUBLAS_DIAG_UNIT``); the result's diagonal is 1.
    check : bool
        Raise when a diagonal element is exactly zero (one synchronization).

    Returns
    -------
    Tinv : array (..., n, n), same kind as T; triangular (the other triangle zero).

    Raises
    ------
    SingularFactorError
        A diagonal element is exactly zero (``check=True``).

    Examples
    --------
    >>> import numpy as np, cusolver_trace as ct
    >>> ct.trtri(np.array([[4.0, 0.0], [2.0, 3.0]]), unit_diagonal=True)
    array([[ 1.,  0.],
           [-2.,  1.]])
    """
    c, n, batch = factor_operand(T, "T")
    upper, check = flag(upper, "upper"), flag(check, "check")
    unit_diagonal = flag(unit_diagonal, "unit_diagonal")
    if n == 0 or batch == 0:
        return empty_result(c, c.shape, c.batch_shape)[0]
    if c.on_gpu:
        x, info = cuda().trtri(c.data, upper, unit_diagonal)
        routine = "cusolverDnXtrtri"
    else:
        x, info = _cpu.trtri(as_numpy(c), upper, unit_diagonal)
        routine = _cpu.routine_name(c.dtype.name, "trtri")
    if check:
        raise_for_info(routine, info.reshape(c.batch_shape), c.batch_shape, SingularFactorError)
    return wrap(x, c)
