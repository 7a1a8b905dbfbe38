"""CUDA backend, the LU family's faster paths: library calls torch does not make for
``linalg.inv`` / ``linalg.solve``, on torch CUDA tensors.

* :func:`matinv_batched` — one ``cublas<t>matinvBatched`` (n <= 32): getrfBatched and
  getriBatched in one call;
* :func:`getri_batched` — ``cublas<t>getrfBatched``, then ``cublas<t>getriBatched`` out of
  place (CuPy's ``linalg.inv`` for batches);
* :func:`gesv_batched` — ``cublas<t>getrfBatched``, then one ``cublas<t>getrsBatched`` with
  every right-hand side (or the identity) in the call;
* :func:`getri` — LAPACK ``?getri``'s algorithm for large matrices: getrf
  (``cusolverDn<t>getrf`` or ``cusolverDnXgetrf``), U⁻¹ in place of U (``cusolverDnXtrtri``,
  or the recursive GEMM-rich trtri plan of :func:`cusolver_trace.plans.trtri_plan`), then
  X·L = U⁻¹ with L unit lower (one right-side ``cublas<t>trsm``, or ?getri's blocked loop of
  GEMM and small trsm), then the pivots' column interchanges in reverse order
  (:func:`permute_columns`): 4n³/3 flops after getrf, where torch's two n×n triangular solves
  on the identity do 2n³.

Conventions as in :mod:`.cuda_lu`: inputs are validated, non-empty torch CUDA tensors (the
caller handles n = 0 and empty batches, broadcasting and ``left=False``); everything runs on
torch's current stream and caching allocator through this thread's handles, never
synchronizes and never writes its inputs; the prologue (column-major copies, an identity, the
zeroed ``info``) is one launch of :func:`.cuda_copy.column_major`. Each function returns
``(X, info)``: X column-major ``(..., n, k)``, ``info`` getrf's, int32 ``(batch,)`` on the
device (k > 0: U(k, k) is exactly zero; X is then not an inverse / solution).
"""
from __future__ import annotations

import numpy as np
import torch

from ..raw import cublas as cb
from ..raw import cusolver as cs
from . import cuda_copy
from ._context import bound, size_key
from .cuda import _dtype, _one, _pointers, _ptr, on_tensor_device
from .cuda_lu import _empty_column_major, getrf, unpack_pivots

#: ``cublas<t>matinvBatched`` inverts matrices of order at most this (cuBLAS documentation:
#: ``CUBLAS_STATUS_INVALID_VALUE`` for n > 32).
MATINV_MAX_N = 32

TRTRI_KINDS = ("xtrtri", "rec")
SOLVE_KINDS = ("trsm", "blocked")

#: Column block of the blocked X·L = U⁻¹ (LAPACK ``?getri``'s blocked loop): per block from the
#: right, one GEMM with the columns already final and one trsm with L's diagonal block, so
#: all but n²·nb of its n³ flops run in GEMM. 512: not yet measured (dgetri's ``ilaenv`` gives
#: 64 for the CPU; cuBLAS GEMM wants wide blocks).
GETRI_BLOCK = 512


def _trans(adjoint: bool, is_complex: bool) -> int:
    return (cb.OP_C if is_complex else cb.OP_T) if adjoint else cb.OP_N


def _batch_pointers(w: torch.Tensor, batch: int) -> torch.Tensor:
    """``Aarray`` of the column-major matrices of ``w`` (stored one after another)."""
    r, c = w.shape[-2:]
    return _pointers(w.data_ptr(), r * c * w.element_size(), batch, w.device)


# --------------------------------------------------------------------------- small matrices
@on_tensor_device
def matinv_batched(a: torch.Tensor):
    """A⁻¹ for each matrix of ``a`` (..., n, n), n <= 32, by one ``cublas<t>matinvBatched``.

    The prologue copies A column-major and zeroes ``info`` (one launch); then
    ``matinvBatched(n, Aarray, lda = n, Ainvarray, lda_inv = n, info, batch)``.

    Raises
    ------
    ValueError
        n > :data:`MATINV_MAX_N` (before any work).
    """
    dt = _dtype(a.dtype)
    *bshape, n, _ = a.shape
    if n > MATINV_MAX_N:
        raise ValueError(f"cublas{dt.prefix.upper()}matinvBatched inverts matrices of order "
                         f"<= {MATINV_MAX_N}, got n = {n} (use getri_batched)")
    W, _, info = cuda_copy.column_major(a, info=True)
    batch = info.shape[0]
    X = _empty_column_major(bshape, n, n, a)
    pa, px = _batch_pointers(W, batch), _batch_pointers(X, batch)
    ctx = bound(a.get_device())
    cb.matinvBatched(dt.prefix, ctx.blas, n, pa.data_ptr(), n, px.data_ptr(), n, info.data_ptr(),
                     batch)
    return X, info


@on_tensor_device
def getri_batched(a: torch.Tensor):
    """A⁻¹ for each matrix of ``a`` (..., n, n) by ``cublas<t>getrfBatched`` (in place on a
    column-major copy, pivoting) and ``cublas<t>getriBatched`` (out of place, into X).

    getriBatched's own ``infoArray`` (the same zero pivot as getrf's) goes to a scratch array;
    getrf's is returned.
    """
    dt = _dtype(a.dtype)
    *bshape, n, _ = a.shape
    W, _, info = cuda_copy.column_major(a, info=True)
    batch = info.shape[0]
    piv = torch.empty((batch, n), dtype=torch.int32, device=a.device)
    info_ri = torch.empty(batch, dtype=torch.int32, device=a.device)
    X = _empty_column_major(bshape, n, n, a)
    pa, px = _batch_pointers(W, batch), _batch_pointers(X, batch)
    ctx = bound(a.get_device())
    t = dt.prefix
    with ctx.cupy_stream():
        cb.getrfBatched(t, ctx.blas, n, pa.data_ptr(), n, piv.data_ptr(), info.data_ptr(), batch)
        cb.getriBatched(t, ctx.blas, n, pa.data_ptr(), n, piv.data_ptr(), px.data_ptr(), n,
                        info_ri.data_ptr(), batch)
    return X, info


@on_tensor_device
def gesv_batched(a: torch.Tensor, b: torch.Tensor | None, adjoint: bool = False):
    """Solve op(A)·X = B for each matrix by ``cublas<t>getrfBatched`` and one
    ``cublas<t>getrsBatched`` with all k right-hand sides of every matrix in the call.

    Parameters
    ----------
    a : torch.Tensor (..., n, n)
    b : torch.Tensor (..., n, k) or None
        ``a``'s batch shape (the caller broadcasts); None: the identity (X = op(A)⁻¹).
    adjoint : bool
        ``trans`` = T (real) / C (complex) in getrsBatched.

    The prologue is one launch: column-major copies of A and B (or the identity) and the
    zeroed ``info``; getrsBatched's ``info`` is a host int (illegal arguments only).
    """
    dt = _dtype(a.dtype)
    n = a.shape[-1]
    W, X, info = cuda_copy.column_major(a, b, identity=b is None, info=True)
    batch = info.shape[0]
    k = X.shape[-1]
    piv = torch.empty((batch, n), dtype=torch.int32, device=a.device)
    pa, pb = _batch_pointers(W, batch), _batch_pointers(X, batch)
    host_info = np.zeros(1, dtype=np.int32)
    ctx = bound(a.get_device())
    t = dt.prefix
    with ctx.cupy_stream():
        cb.getrfBatched(t, ctx.blas, n, pa.data_ptr(), n, piv.data_ptr(), info.data_ptr(), batch)
        cb.getrsBatched(t, ctx.blas, _trans(adjoint, dt.is_complex), n, k, pa.data_ptr(), n,
                        piv.data_ptr(), pb.data_ptr(), n, host_info.ctypes.data, batch)
    return X, info


# --------------------------------------------------------------------------- one large matrix
def permute_columns(X: torch.Tensor, pivots: torch.Tensor) -> torch.Tensor:
    """X·Pᵀ for the P of getrf's ``pivots`` (A = P·L·U): LAPACK ``?getri``'s column
    interchanges (columns j and ``pivots[j]`` swapped for j = n-1, …, 1) as one scatter: column
    ``perm[j]`` of the result is column j of X, where ``(Pᵀ·A)[i] = A[perm[i]]``
    (:func:`.cuda_lu.unpack_pivots`). Any device.

    Parameters
    ----------
    X : torch.Tensor (..., n, n)
        Any layout (for a column-major X the scatter moves whole contiguous columns).
    pivots : torch.Tensor int32 (..., n)
        1-based LAPACK pivots, X's batch shape.

    Returns
    -------
    torch.Tensor (..., n, n), column-major.

    Examples
    --------
    >>> import torch
    >>> X = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    >>> permute_columns(X, torch.tensor([2, 2], dtype=torch.int32))   # P swaps rows 1 and 2
    tensor([[2., 1.],
            [4., 3.]])
    """
    n = X.shape[-1]
    perm = unpack_pivots(pivots, n)
    S = X.mT                                      # S[..., j, :] is column j of X
    out = torch.empty(S.shape, dtype=X.dtype, device=X.device)
    out.scatter_(-2, perm.unsqueeze(-1).expand(S.shape), S)
    return out.mT


def _solve_right_lower_unit(ctx, t: str, n: int, pl: int, px: int, isz: int, kind: str):
    """X ← X·L⁻¹ for one matrix (X at ``px``, L the strictly lower part of the LU at ``pl``,
    unit diagonal, both n × n column-major, ld = n): ``"trsm"`` one
    ``cublas<t>trsm(RIGHT, LOWER, N, UNIT)``; ``"blocked"`` ?getri's blocked loop, for column
    blocks j = last … first: X[:, j] -= X[:, j+1:]·L[j+1:, j] (``cublas<t>gemm``), then
    X[:, j] ← X[:, j]·L[j, j]⁻¹ (``cublas<t>trsm`` on the nb × nb diagonal block)."""
    one = _one(t)
    if kind == "trsm" or n <= GETRI_BLOCK:
        cb.trsm(t, ctx.blas, cb.RIGHT, cb.LOWER, cb.OP_N, cb.UNIT, n, n, one, pl, n, px, n)
        return
    minus = _MINUS_ONE.get(t)
    if minus is None:
        arr = cb.scalar(t, -1.0)
        minus = _MINUS_ONE[t] = (arr, arr.ctypes.data)
    nb = GETRI_BLOCK
    for j0 in range(((n - 1) // nb) * nb, -1, -nb):
        j1 = min(j0 + nb, n)
        if j1 < n:
            cb.gemm(t, ctx.blas, cb.OP_N, cb.OP_N, n, j1 - j0, n - j1, minus[1],
                    px + j1 * n * isz, n, pl + (j1 + j0 * n) * isz, n, one, px + j0 * n * isz, n)
        cb.trsm(t, ctx.blas, cb.RIGHT, cb.LOWER, cb.OP_N, cb.UNIT, n, j1 - j0, one,
                pl + (j0 + j0 * n) * isz, n, px + j0 * n * isz, n)


_MINUS_ONE: dict = {}   # type letter -> (host scalar -1, its address)


@on_tensor_device
def getri(a: torch.Tensor, *, getrf_api: str = "legacy", trtri: str = "xtrtri",
          solve: str = "trsm"):
    """A⁻¹ for each matrix of ``a`` (..., n, n) by LAPACK ``?getri``'s algorithm.

    1. ``LU, pivots, info`` = :func:`.cuda_lu.getrf` (``getrf_api`` ``"legacy"``:
       ``cusolverDn<t>getrf`` per matrix, torch's call; ``"X"``: ``cusolverDnXgetrf``).
    2. X = U (the upper triangle of LU copied column-major, the rest zero: one launch), then
       X = U⁻¹ in place: ``trtri="xtrtri"`` one ``cusolverDnXtrtri(UPPER, NON_UNIT)`` per matrix;
       ``"rec"`` the recursive trtri plan (:func:`cusolver_trace.plans.trtri_plan`: trsm on
       diagonal blocks, trmm / GEMM for the rest), run by
       :func:`.cuda_plans.plan_runner`.
    3. X ← X·L⁻¹ (L's strictly lower part read from LU, whose upper part is not referenced):
       ``solve="trsm"`` one ``cublas<t>trsm(RIGHT, LOWER, N, UNIT, n, n, 1, LU, n, X, n)`` per
       matrix; ``"blocked"`` ?getri's blocked loop over column blocks of
       :data:`GETRI_BLOCK`, GEMM-rich (:func:`_solve_right_lower_unit`).
    4. A⁻¹ = X·Pᵀ (:func:`permute_columns`).

    Xtrtri's info (the same zero diagonal as getrf's) goes to a scratch array; getrf's is
    returned. Where U is singular the result holds inf / NaN.

    Raises
    ------
    ValueError
        Unknown ``getrf_api``, ``trtri`` or ``solve``.
    """
    if trtri not in TRTRI_KINDS:
        raise ValueError(f"trtri must be one of {TRTRI_KINDS}, got {trtri!r}")
    if solve not in SOLVE_KINDS:
        raise ValueError(f"solve must be one of {SOLVE_KINDS}, got {solve!r}")
    dt = _dtype(a.dtype)
    n = a.shape[-1]
    LU, pivots, info = getrf(a, True, getrf_api)
    X, _, tinfo = cuda_copy.column_major(LU, keep="upper", info=True)
    batch = info.shape[0]
    ctx = bound(a.get_device())
    isz = X.element_size()
    step = n * n * isz
    px, pl, t = X.data_ptr(), LU.data_ptr(), dt.prefix
    if trtri == "xtrtri":
        cdt = dt.cuda_data_type
        dbytes, hbytes = ctx.sizes.get_or(
            size_key("Xtrtri", cdt, cs.UPPER, n, n, cs.NON_UNIT),
            lambda: cs.Xtrtri_bufferSize(ctx.solver, cs.UPPER, cs.NON_UNIT, n, cdt, px, n))
        work = ctx.scratch.get(dbytes, ctx.stream).data_ptr()
        host = np.empty(max(hbytes, 1), dtype=np.uint8)
        hptr = host.ctypes.data if hbytes else 0
        for i in range(batch):
            cs.Xtrtri(ctx.solver, cs.UPPER, cs.NON_UNIT, n, cdt, px + i * step, n, work, dbytes,
                      hptr, hbytes, tinfo.data_ptr() + 4 * i)
    else:
        from ..plans import trtri_plan
        from .cuda_plans import plan_runner

        w = X.mT.reshape(batch, n, n)   # the column-major buffer, lda = n (a view)
        plan = trtri_plan(n, True)
        with ctx.cupy_stream():
            run = plan_runner(ctx, dt, (plan,), w)
            for i in range(batch):
                run(plan, _ptr(w, i), _ptr(tinfo, i))
    with ctx.cupy_stream():
        for i in range(batch):
            _solve_right_lower_unit(ctx, t, n, pl + i * step, px + i * step, isz, solve)
    return permute_columns(X, pivots), info
