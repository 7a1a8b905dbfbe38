"""CUDA backend, LU family: ``getrf``, ``getrs`` and the triangular ``lu_solve``, on torch CUDA
tensors, issuing exactly the cuSOLVER / cuBLAS calls torch 2.11 makes for ``linalg.lu_factor``
and ``linalg.lu_solve``.

Inputs are validated, non-empty torch CUDA tensors (the caller handles ``n = 0`` and empty
batches). Every routine runs on torch's current stream and caching allocator through this
thread's handles (:func:`._context.bound`), never synchronizes and never writes its inputs.
What torch does with ATen ops around the library calls is done here with the same torch ops
(the column-major copies ``LU.copy_(A)`` / ``result.copy_(B)``, the NaN fix-up after unpivoted
cuSOLVER getrf, the ``arange`` pivots, the row permutation of the triangular path, the
transposes of ``left=False``), so that the bits are torch's.

``api`` picks the library entry point (torch's choice among them is the caller's dispatch):

* ``"legacy"``   ``cusolverDn<t>getrf`` / ``cusolverDn<t>getrs``, one call per matrix (torch's
                 ``lu_factor_looped_cusolver`` / ``lu_solve_looped_cusolver``);
* ``"batched"``  one ``cublas<t>getrfBatched`` / ``cublas<t>getrsBatched`` for the batch
                 (torch's ``lu_factor_batched_cublas`` / ``lu_solve_batched_cublas``);
* ``"X"``        ``cusolverDnXgetrf`` / ``cusolverDnXgetrs`` (64-bit API), one call per matrix:
                 a method of ours (no torch release calls them).

Sources mirrored (torch 2.11): ``aten/src/ATen/native/cuda/linalg/BatchLinearAlgebraLib.cpp``
(looped cuSOLVER), ``BatchLinearAlgebraLibBlas.cpp`` (cuBLAS batched and trsm),
``cuda/linalg/BatchLinearAlgebra.cpp`` (``lu_factor``, ``lu_solve_kernel``,
``triangular_solve_kernel``), ``CUDASolver.cpp`` (the getrf wrapper's per-matrix
bufferSize), ``native/BatchLinearAlgebra.cpp`` (``linalg_lu_factor_ex_out``,
``linalg_lu_solve_out``, ``linalg_solve_triangular_out``); call sequences checked against the
H200 API logs in ``tests/data/h200-torch2.11-cu130/lu-eigh/`` (tests/test_cuda_lu_calls.py).
"""
from __future__ import annotations

import numpy as np
import torch

from ..raw import cublas as cb
from ..raw import cusolver as cs
from ._context import bound, size_key
from .cuda import _dtype, _one, _pointers, on_tensor_device
from .cuda_copy import column_major_layout

APIS = ("legacy", "batched", "X")

#: torch's ``triangular_solve_kernel``: a loop of ``cublas<t>trsm`` when the batch is at most
#: this and n at least :data:`TRSM_LOOP_MIN_N`, else one ``cublas<t>trsmBatched`` per solve.
TRSM_LOOP_MAX_BATCH = 8
TRSM_LOOP_MIN_N = 64


def _check_api(api: str) -> None:
    if api not in APIS:
        raise ValueError(f"api must be one of {APIS}, got {api!r}")


def _count(shape) -> int:
    c = 1
    for d in shape:
        c *= d
    return c


def _clone_column_major(x: torch.Tensor) -> torch.Tensor:
    """torch's ``cloneBatchedColumnMajor``: a copy whose matrices are column-major, one after
    another (conjugate / negative bits resolved by the copy)."""
    return x.mT.clone(memory_format=torch.contiguous_format).mT


def _empty_column_major(batch_shape, r: int, c: int, like: torch.Tensor) -> torch.Tensor:
    shape, strides = column_major_layout(tuple(batch_shape), r, c)
    return torch.empty_strided(shape, strides, dtype=like.dtype, device=like.device)


# --------------------------------------------------------------------------- getrf
@on_tensor_device
def getrf(a: torch.Tensor, pivot: bool = True, api: str = "legacy"):
    """LU factorization ``A = P L U`` of ``a`` (..., m, n), as torch's CUDA ``linalg.lu_factor_ex``.

    Parameters
    ----------
    a : torch.Tensor (..., m, n), CUDA, float32 / float64 / complex64 / complex128
        Any strides and conjugate / negative views; never written. Non-empty.
    pivot : bool
        Partial pivoting (False: ``ipiv`` / ``PivotArray`` = NULL).
    api : {"legacy", "batched", "X"}
        ``"legacy"``: per matrix ``cusolverDn<t>getrf_bufferSize`` (asked for every matrix, as
        torch 2.11's wrapper does), a workspace of that many elements from torch's caching
        allocator, ``cusolverDn<t>getrf(m, n, A_i, lda = max(1, m), work, ipiv_i | NULL,
        info_i)``; for ``pivot=False`` then torch's NaN -> 0 fix-up of the whole LU
        (``nan_to_num_`` for real dtypes, ``where(LU == LU, LU, 0)`` for complex).
        ``"batched"``: one ``cublas<t>getrfBatched(n, Aarray, lda = max(1, n),
        PivotArray | NULL, infoArray, batch)`` with a device pointer array (square only;
        no NaN fix-up, as torch). ``"X"``: per matrix ``cusolverDnXgetrf`` (int64 pivots,
        converted to int32), its bufferSize asked once per (dtype, m, n), and the same NaN
        fix-up as ``"legacy"`` for ``pivot=False``.

    Returns
    -------
    LU : torch.Tensor (..., m, n)
        L (unit diagonal, not stored) and U, each matrix column-major (torch's strides).
    pivots : torch.Tensor int32 (..., min(m, n))
        1-based LAPACK pivots (``arange(1, k + 1)`` for ``pivot=False``).
    info : torch.Tensor int32 (batch,), on the device
        0, or k > 0 when U(k, k) is exactly zero (the factorization is completed).

    Raises
    ------
    ValueError
        Unknown ``api``; ``api="batched"`` with m != n.
    ~cusolver_trace.errors.CuSolverStatusError, ~cusolver_trace.errors.CuBlasStatusError
        A non-success library status.

    Examples
    --------
    >>> LU, piv, info = getrf(A, pivot=True, api="legacy")     # doctest: +SKIP
    """
    _check_api(api)
    a = a.detach()
    dt = _dtype(a.dtype)
    *bshape, m, n = a.shape
    if api == "batched" and m != n:
        raise ValueError(f"cublas{dt.prefix.upper()}getrfBatched factors square matrices only, "
                         f"got {m} x {n}")
    k = min(m, n)
    LU = _empty_column_major(bshape, m, n, a)
    LU.copy_(a)                                          # torch: LU.copy_(A)
    pivots = torch.empty((*bshape, k), dtype=torch.int32, device=a.device)
    batch = _count(bshape)
    info = torch.zeros(batch, dtype=torch.int32, device=a.device)
    ctx = bound(a.get_device())
    isz = LU.element_size()
    p0, step, i0 = LU.data_ptr(), m * n * isz, info.data_ptr()
    v0 = pivots.data_ptr() if pivot else 0
    lda = max(1, m)
    t = dt.prefix
    if api == "legacy":
        with ctx.cupy_stream():
            for b in range(batch):
                A = p0 + b * step
                # torch 2.11's at::cuda::solver::getrf asks for the size of every matrix and
                # allocates that many elements from the caching allocator (CUDASolver.cpp)
                lwork = cs.getrf_bufferSize(t, ctx.solver, m, n, A, lda)
                work = ctx.scratch.get(lwork * isz, ctx.stream).data_ptr()
                cs.getrf(t, ctx.solver, m, n, A, lda, work, v0 + 4 * k * b if pivot else 0,
                         i0 + 4 * b)
    elif api == "batched":
        ptrs = _pointers(p0, step, batch, a.device)
        with ctx.cupy_stream():
            cb.getrfBatched(t, ctx.blas, n, ptrs.data_ptr(), lda, v0, i0, batch)
    else:
        cdt = dt.cuda_data_type
        dbytes, hbytes = ctx.sizes.get_or(
            size_key("Xgetrf", cdt, 0, m, lda, n),
            lambda: cs.Xgetrf_bufferSize(ctx.solver, ctx.params, m, n, cdt, p0, lda, cdt))
        work = ctx.scratch.get(dbytes, ctx.stream).data_ptr()
        host = np.empty(hbytes, dtype=np.uint8) if hbytes else None
        hptr = host.ctypes.data if hbytes else 0
        piv64 = torch.empty((batch, k), dtype=torch.int64, device=a.device) if pivot else None
        q0 = piv64.data_ptr() if pivot else 0
        for b in range(batch):
            cs.Xgetrf(ctx.solver, ctx.params, m, n, cdt, p0 + b * step, lda,
                      q0 + 8 * k * b if pivot else 0, cdt, work, dbytes, hptr, hbytes, i0 + 4 * b)
        if pivot:
            pivots.copy_(piv64.view(pivots.shape))
    if not pivot:
        if api != "batched":
            nan_fixup_(LU)
        # torch's lu_factor: the trivial permutation, 1-based, for every matrix
        pivots.copy_(torch.arange(1, k + 1, dtype=torch.int32, device=a.device))
    return LU, pivots, info


def nan_fixup_(LU: torch.Tensor) -> torch.Tensor:
    """torch's fix-up after unpivoted cuSOLVER getrf (``lu_factor_looped_cusolver``, #53879):
    NaN -> 0 in the whole of ``LU``, in place; real: ``nan_to_num_(0, +inf, -inf)``; complex:
    ``LU.copy_(where(LU == LU, LU, 0))`` (an entry with a NaN part becomes 0)."""
    if LU.is_complex():
        LU.copy_(torch.where(LU.eq(LU), LU, torch.scalar_tensor(0.0, dtype=LU.dtype,
                                                                 device=LU.device)))
    else:
        LU.nan_to_num_(0.0, float("inf"), float("-inf"))
    return LU


# --------------------------------------------------------------------------- lu_solve front end
class _Solve:
    """torch's ``linalg_lu_solve_out`` up to the stub: the result (B, or Bᴴ for ``left=False``,
    copied into a column-major buffer of the broadcast batch shape), the column-major LU and
    contiguous pivots, and the operation."""

    __slots__ = ("result", "X", "LU", "pivots", "trans", "adjoint", "left", "n", "k", "batch_shape",
                 "batch", "dt")

    def __init__(self, LU, pivots, B, adjoint: bool, left: bool):
        LU, pivots, B = LU.detach(), pivots.detach(), B.detach()
        self.dt = _dtype(LU.dtype)
        n = LU.shape[-1]
        bshape = tuple(torch.broadcast_shapes(LU.shape[:-2], B.shape[:-2]))
        if left:
            k = B.shape[-1]
            result = _empty_column_major(bshape, n, k, LU)
            X = result
        else:
            # meta: C-contiguous (..., k, n); the impl solves Aᴴ Y = Bᴴ in its transpose
            k = B.shape[-2]
            result = torch.empty((*bshape, k, n), dtype=LU.dtype, device=LU.device)
            X = result.mT
            adjoint = not adjoint
        X.copy_(B if left else B.mH)                       # torch: result.copy_(B or B.mH())
        self.pivots = pivots.contiguous()                  # torch: pivots.expect_contiguous()
        # torch borrows LU when LU.mT() is contiguous, else cloneBatchedColumnMajor. Here a
        # conjugate / negative view is cloned too (resolved): the library reads memory, and a
        # borrowed conjugate view would be solved with the unconjugated values
        if LU.mT.is_contiguous() and not LU.is_conj() and not LU.is_neg():
            self.LU = LU
        else:
            self.LU = _clone_column_major(LU)
        self.trans = (cb.OP_C if self.dt.is_complex else cb.OP_T) if adjoint else cb.OP_N
        self.adjoint, self.left = adjoint, left
        self.result, self.X = result, X
        self.n, self.k, self.batch_shape, self.batch = n, k, bshape, _count(bshape)

    def lu_index(self) -> list:
        """torch's ``BroadcastLinearIndices``: for each matrix of the result's batch, the index
        of its LU (and pivots) in LU's own batch."""
        lu_shape = tuple(self.LU.shape[:-2])
        if lu_shape == self.batch_shape:
            return list(range(self.batch))
        return torch.arange(_count(lu_shape)).view(lu_shape).broadcast_to(
            self.batch_shape).reshape(-1).tolist()

    def expanded(self):
        """torch's ``maybe_expand_lu`` / ``maybe_expand_pivots``: when the batch counts of LU and
        the result differ, LU expanded to the result's batch and cloned column-major, and the
        pivots expanded and made contiguous; else both as they are."""
        if _count(self.LU.shape[:-2]) == self.batch:
            return self.LU, self.pivots
        n = self.n
        LU = _clone_column_major(self.LU.expand(*self.batch_shape, n, n))
        piv = self.pivots.expand(*self.batch_shape, n).contiguous()
        return LU, piv

    def finish(self) -> torch.Tensor:
        """The result as torch returns it: for ``left=False`` transposed back, and for complex
        dtypes with the conjugate bit set (``result._set_conj``): Xᴴ's memory read as X."""
        if self.left:
            return self.result
        return self.result.conj() if self.dt.is_complex else self.result


# --------------------------------------------------------------------------- getrs
@on_tensor_device
def getrs(LU: torch.Tensor, pivots: torch.Tensor, B: torch.Tensor, adjoint: bool = False,
          api: str = "legacy", *, left: bool = True):
    """Solve ``op(A) X = B`` (``left``) or ``X op(A) = B`` from ``A = P L U``, as torch's CUDA
    ``linalg.lu_solve`` on its getrs paths.

    Parameters
    ----------
    LU : torch.Tensor (..., n, n), CUDA
        getrf's factors (any strides; cloned column-major when not F-contiguous or when a
        conjugate / negative view). Never written.
    pivots : torch.Tensor int32 (..., n)
        getrf's 1-based pivots, LU's batch shape.
    B : torch.Tensor (..., n, k) (``left``) or (..., k, n) (``left=False``), LU's dtype
        Its batch shape broadcasts with LU's (torch's rule); never written.
    adjoint : bool
        Solve with Aᴴ (``trans`` = ``CUBLAS_OP_T`` for real, ``CUBLAS_OP_C`` for complex).
    api : {"legacy", "batched", "X"}
        ``"legacy"``: one ``cusolverDn<t>getrs(trans, n, k, LU_j, lda = max(1, n), ipiv_j, B_i,
        ldb = max(1, n), info)`` per matrix i of the result's batch, LU / pivots not expanded
        (j = LU's index of i, torch's ``BroadcastLinearIndices``), one device ``info`` shared by
        all calls. ``"batched"``: one ``cublas<t>getrsBatched(trans, n, k, LUarray, lda, ipiv,
        Barray, ldb = lda, &info, batch)``, LU expanded and cloned column-major (pivots expanded,
        contiguous) when LU's batch count differs from the result's; ``info`` on the host.
        ``"X"``: one ``cusolverDnXgetrs`` per matrix (int64 pivots), ``"legacy"``'s indexing.
    left : bool, keyword-only
        False: solve ``X op(A) = B`` as torch does, as ``op(A)ᴴ Xᴴ = Bᴴ``.

    Returns
    -------
    X : torch.Tensor
        (..., n, k) column-major (``left``), or (..., k, n) row-major with the conjugate bit set
        for complex dtypes (``left=False``), as torch's ``lu_solve`` returns it; the broadcast
        batch shape.
    info : torch.Tensor int32 (1,)
        The routine's info (illegal arguments only, never a singular factor): on the device
        for ``"legacy"`` / ``"X"``, a CPU tensor (cuBLAS writes a host int) for ``"batched"``.

    Raises
    ------
    ValueError
        Unknown ``api``.

    Examples
    --------
    >>> X, info = getrs(LU, piv, B, adjoint=False, api="legacy")      # doctest: +SKIP
    """
    _check_api(api)
    s = _Solve(LU, pivots, B, adjoint, left)
    n, k, nb = s.n, s.k, s.batch
    t, isz = s.dt.prefix, s.X.element_size()
    ld = max(1, n)
    ctx = bound(s.X.get_device())
    px, sx = s.X.data_ptr(), n * k * isz
    if api == "batched":
        LUe, pive = s.expanded()
        pa = _pointers(LUe.data_ptr(), n * n * isz, nb, LUe.device)
        pb = _pointers(px, sx, nb, LUe.device)
        host_info = np.zeros(1, dtype=np.int32)
        with ctx.cupy_stream():
            cb.getrsBatched(t, ctx.blas, s.trans, n, k, pa.data_ptr(), ld, pive.data_ptr(),
                            pb.data_ptr(), ld, host_info.ctypes.data, nb)
        return s.finish(), torch.from_numpy(host_info)
    info = torch.zeros(1, dtype=torch.int32, device=s.X.device)
    idx = s.lu_index()
    pl, sl = s.LU.data_ptr(), n * n * isz
    i0 = info.data_ptr()
    if api == "legacy":
        pp, sp = s.pivots.data_ptr(), 4 * n
        with ctx.cupy_stream():
            for i in range(nb):
                j = idx[i]
                cs.getrs(t, ctx.solver, s.trans, n, k, pl + j * sl, ld, pp + j * sp, px + i * sx,
                         ld, i0)
    else:
        cdt = s.dt.cuda_data_type
        piv64 = s.pivots.to(torch.int64)
        pp, sp = piv64.data_ptr(), 8 * n
        for i in range(nb):
            j = idx[i]
            cs.Xgetrs(ctx.solver, ctx.params, s.trans, n, k, cdt, pl + j * sl, ld, pp + j * sp,
                      cdt, px + i * sx, ld, i0)
    return s.finish(), info


# --------------------------------------------------------------------------- triangular path
def unpack_pivots(pivots: torch.Tensor, n: int) -> torch.Tensor:
    """The permutation of LAPACK ``pivots`` (int32, 1-based, (..., n)) as int64 indices
    ``perm`` (..., n): ``(Pᵀ A)[i] = A[perm[i]]``, the output of torch's ``unpack_pivots_stub``.

    Through ``torch.lu_unpack`` (which runs that kernel, then scatters P): the column j of P
    holds its single 1 in row ``perm[j]``."""
    shape = (*pivots.shape[:-1], n, n)   # only LU's shape is read when unpack_data=False
    P = torch.lu_unpack(pivots.new_empty(shape, dtype=torch.float32), pivots, unpack_data=False)[0]
    return P.argmax(dim=-2)


@on_tensor_device
def lu_solve_triangular(LU: torch.Tensor, pivots: torch.Tensor, B: torch.Tensor,
                        adjoint: bool = False, *, left: bool = True) -> torch.Tensor:
    """torch's triangular path of ``lu_solve_kernel``: the rows of B permuted by the pivots and
    two triangular solves through cuBLAS, as ``linalg_solve_triangular`` issues them.

    Parameters
    ----------
    LU, pivots, B, adjoint, left
        As :func:`getrs` (LU / pivots broadcast to B's batch as torch's ``maybe_expand_lu``).

    Returns
    -------
    X : torch.Tensor
        As :func:`getrs`.

    Notes
    -----
    Not adjoint: ``B1 = B.scatter(-2, inv_perm, B)`` (Pᵀ B), then ``trsm(LEFT, LOWER, N, UNIT)``
    and ``trsm(LEFT, UPPER, N, NON_UNIT)``. Adjoint: ``trsm(LEFT, UPPER, T | C, NON_UNIT)`` (Uᴴ)
    and ``trsm(LEFT, LOWER, T | C, UNIT)`` (Lᴴ) on the same column-major LU, then
    ``B.scatter_(-2, perm, B.clone())`` (P B). Each solve is a loop of ``cublas<t>trsm`` over the
    batch when batch <= 8 and n >= 64, else one ``cublas<t>trsmBatched``; m = n, n = k,
    alpha = 1 (host pointer), lda = ldb = max(1, n). (torch never takes this path with
    n <= 8; for n = 1 ``linalg_solve_triangular`` would flip to side RIGHT, which is not
    mirrored here.)
    """
    s = _Solve(LU, pivots, B, adjoint, left)
    n, k, nb = s.n, s.k, s.batch
    t, isz = s.dt.prefix, s.X.element_size()
    X = s.X
    LUe, pive = s.expanded()
    perm = unpack_pivots(pive, n)
    if not s.adjoint:
        id_perm = torch.arange(n, dtype=torch.int64, device=X.device).expand(perm.shape)
        inv_perm = perm.scatter(-1, perm, id_perm)
        B1 = X.scatter(-2, inv_perm.unsqueeze(-1).expand_as(X), X)
        X.copy_(B1)                                         # linalg_solve_triangular_out's copy
        solves = ((cb.LOWER, cb.OP_N, cb.UNIT), (cb.UPPER, cb.OP_N, cb.NON_UNIT))
    else:
        op = s.trans
        # on LU.mH(): the F-transposed view flips upper, the conjugate bit gives OP_C
        solves = ((cb.UPPER, op, cb.NON_UNIT), (cb.LOWER, op, cb.UNIT))
    ld = max(1, n)
    one = _one(t)
    ctx = bound(X.get_device())
    pa0, sa = LUe.data_ptr(), n * n * isz
    pb0, sb = X.data_ptr(), n * k * isz
    with ctx.cupy_stream():
        if nb <= TRSM_LOOP_MAX_BATCH and n >= TRSM_LOOP_MIN_N:
            for uplo, op, diag in solves:
                for i in range(nb):
                    cb.trsm(t, ctx.blas, cb.LEFT, uplo, op, diag, n, k, one, pa0 + i * sa, ld,
                            pb0 + i * sb, ld)
        else:
            pa = _pointers(pa0, sa, nb, X.device)
            pb = _pointers(pb0, sb, nb, X.device)
            for uplo, op, diag in solves:
                cb.trsmBatched(t, ctx.blas, cb.LEFT, uplo, op, diag, n, k, one, pa.data_ptr(), ld,
                               pb.data_ptr(), ld, nb)
    if s.adjoint:
        X.scatter_(-2, perm.unsqueeze(-1).expand_as(X), X.clone())
    return s.finish()
