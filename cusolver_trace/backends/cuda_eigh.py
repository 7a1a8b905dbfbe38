"""CUDA backend, symmetric / Hermitian eigensolvers: ``syevd`` on torch CUDA tensors, issuing
exactly the cuSOLVER calls torch makes for ``linalg.eigh`` / ``eigvalsh``, and the routines
torch does not call, as methods of ours.

Inputs are validated, non-empty torch CUDA tensors (the caller handles ``n = 0`` and empty
batches). Every routine runs on torch's current stream and caching allocator through this
thread's handles (:func:`._context.bound`), never synchronizes and never writes its input.
torch's front end (``_linalg_eigh_out``) is done here with the same torch ops: the eigenvectors'
column-major buffer ``V.copy_(A)`` (for ``eigvalsh`` a column-major clone as scratch), the
eigenvalues ``W`` (the real dtype, contiguous, shape (..., n)), ``info`` zeros.

``api`` picks the library routine (torch's choice among them is the caller's dispatch):

* ``"Xsyevd"``        one ``cusolverDnXsyevd`` per matrix, params NULL, the workspace sizes
                      asked once with matrix 0 (torch 2.11's ``apply_syevd``);
* ``"XsyevBatched"``  one ``cusolverDnXsyevBatched`` for the batch, default params (torch 2.11
                      for batch > 1 and n <= 32; torch 2.12+ always); ``chunk`` splits a batch
                      into calls of at most that many matrices (a method of ours: torch's one
                      call fails with ``CUSOLVER_STATUS_INTERNAL_ERROR`` from batch 65,536 on,
                      measured on the H200);
* ``"syevj"``         one ``cusolverDn<t>syevj`` / ``heevj`` per matrix with one default
                      ``syevjInfo`` and one workspace size (torch 2.11's ``apply_syevj``,
                      float32 with 32 <= n <= 512);
* ``"syevjBatched"``  ``cusolverDn<t>syevjBatched`` / ``heevjBatched`` (n <= 32), sorted, with
                      ``tol`` and ``max_sweeps`` (a method of ours; no cu13 torch calls it);
* ``"syevd"``         one legacy 32-bit ``cusolverDn<t>syevd`` / ``heevd`` per matrix (ours).

Sources mirrored (torch 2.11): ``aten/src/ATen/native/cuda/linalg/BatchLinearAlgebraLib.cpp``
(``linalg_eigh_cusolver``, ``apply_syevd``, ``apply_syevj``, ``apply_syevj_batched``) and
``native/BatchLinearAlgebra.cpp`` (``_linalg_eigh_out``); call sequences checked against the H200
API logs in ``tests/data/h200-torch2.11-cu130/lu-eigh/`` (tests/test_eigh_dispatch_rows.py).
"""
from __future__ import annotations

import math

import numpy as np
import torch

from .._dtypes import dtype_info
from ..raw import cusolver as cs
from ..raw import cusolver_eig as ce
from ._context import bound
from .cuda import _dtype, on_tensor_device
from .cuda_copy import column_major_layout

APIS = ("Xsyevd", "XsyevBatched", "syevj", "syevjBatched", "syevd")

#: The largest order ``cusolverDn<t>syevjBatched`` takes.
SYEVJ_BATCHED_MAX_N = 32

#: The largest batch one ``cusolverDnXsyevBatched`` call ran on the H200 (cuSOLVER 12.0.4):
#: 65,536 and more fail with ``CUSOLVER_STATUS_INTERNAL_ERROR`` (torch 2.11, n = 2 … 32).
XSYEV_BATCHED_MAX = 32768


def _check_api(api: str) -> None:
    if api not in APIS:
        raise ValueError(f"api must be one of {APIS}, got {api!r}")


@on_tensor_device
def syevd(a: torch.Tensor, upper: bool = False, vectors: bool = True, api: str = "Xsyevd", *,
          chunk: int | None = None, tol: float | None = None, max_sweeps: int | None = None):
    """Eigenvalues (and eigenvectors) of the Hermitian matrices whose ``upper`` / lower
    triangle ``a`` holds, as torch's CUDA ``linalg.eigh`` / ``eigvalsh``.

    Parameters
    ----------
    a : torch.Tensor (..., n, n), CUDA, float32 / float64 / complex64 / complex128
        Any strides and conjugate / negative views; never written; only the triangle is read.
        Non-empty.
    upper : bool
        ``uplo``: torch's ``UPLO == 'U'``.
    vectors : bool
        ``jobz``: eigenvectors too (``eigh``) or eigenvalues only (``eigvalsh``).
    api : {"Xsyevd", "XsyevBatched", "syevj", "syevjBatched", "syevd"}
        The routine (module docstring).
    chunk : int, optional
        ``"XsyevBatched"`` only: at most this many matrices per call (default: one call).
    tol, max_sweeps : float, int, optional
        ``"syevjBatched"`` only: ``cusolverDnXsyevjSetTolerance`` / ``SetMaxSweeps`` (default
        cuSOLVER's: machine eps, 100 sweeps).

    Returns
    -------
    W : torch.Tensor (..., n), the real dtype
        Eigenvalues, ascending.
    V : torch.Tensor (..., n, n) or None
        Eigenvectors as columns, each matrix column-major (torch's strides); None for
        ``vectors=False``.
    info : torch.Tensor int32 (batch,), on the device
        0, or k > 0: the algorithm did not converge (cuSOLVER's ``info``).

    Raises
    ------
    ValueError
        Unknown ``api``; ``"syevjBatched"`` with n > 32; a bad ``chunk`` / ``tol`` /
        ``max_sweeps``.
    ~cusolver_trace.errors.CuSolverStatusError
        A non-success library status (e.g. torch's one ``XsyevBatched`` call on a batch of
        65,536 or more).

    Examples
    --------
    >>> W, V, info = syevd(A, upper=False, vectors=True, api="XsyevBatched")  # doctest: +SKIP
    """
    _check_api(api)
    a = a.detach()
    dt = _dtype(a.dtype)
    *bshape, n, _ = a.shape
    batch = math.prod(bshape)
    if api == "syevjBatched" and n > SYEVJ_BATCHED_MAX_N:
        raise ValueError(f"cusolverDn{dt.prefix.upper()}syevjBatched takes n <= "
                         f"{SYEVJ_BATCHED_MAX_N}, got n = {n}")
    if chunk is not None and (isinstance(chunk, bool) or not isinstance(chunk, int) or chunk < 1):
        raise ValueError(f"chunk must be an int >= 1, got {chunk!r}")
    shape, strides = column_major_layout(tuple(bshape), n, n)
    V = torch.empty_strided(shape, strides, dtype=a.dtype, device=a.device)
    V.copy_(a)                                    # torch: V.copy_(A) / cloneBatchedColumnMajor
    real = dtype_info(dt.real_name)
    W = torch.empty((*bshape, n), dtype=real.torch, device=a.device)
    info = torch.zeros(batch, dtype=torch.int32, device=a.device)
    ctx = bound(a.get_device())
    isz, rsz = V.element_size(), W.element_size()
    p0, w0, i0 = V.data_ptr(), W.data_ptr(), info.data_ptr()
    step, wstep = n * n * isz, n * rsz
    lda = max(1, n)
    jobz = ce.EIG_MODE_VECTOR if vectors else ce.EIG_MODE_NOVECTOR
    uplo = cs.UPPER if upper else cs.LOWER
    cdt, wdt, t = dt.cuda_data_type, real.cuda_data_type, dt.prefix
    if api == "Xsyevd":
        # torch 2.11 apply_syevd: params = NULL, sizes asked once with matrix 0
        dbytes, hbytes = ce.Xsyevd_bufferSize(ctx.solver, 0, jobz, uplo, n, cdt, p0, lda, wdt, w0,
                                              cdt)
        work = ctx.scratch.get(dbytes, ctx.stream).data_ptr()
        host = np.empty(max(hbytes, 1), dtype=np.uint8)
        for b in range(batch):
            ce.Xsyevd(ctx.solver, 0, jobz, uplo, n, cdt, p0 + b * step, lda, wdt, w0 + b * wstep,
                      cdt, work, dbytes, host.ctypes.data if hbytes else 0, hbytes, i0 + 4 * b)
    elif api == "XsyevBatched":
        per = batch if chunk is None else min(chunk, batch)
        for b0 in range(0, batch, per):
            m = min(per, batch - b0)
            A_, W_ = p0 + b0 * step, w0 + b0 * wstep
            # asked on every call, as torch does (a cached size would drop a logged call)
            dbytes, hbytes = ce.XsyevBatched_bufferSize(ctx.solver, ctx.params, jobz, uplo, n,
                                                        cdt, A_, lda, wdt, W_, cdt, m)
            work = ctx.scratch.get(dbytes, ctx.stream).data_ptr()
            host = np.empty(max(hbytes, 1), dtype=np.uint8)
            ce.XsyevBatched(ctx.solver, ctx.params, jobz, uplo, n, cdt, A_, lda, wdt, W_, cdt, work,
                            dbytes, host.ctypes.data if hbytes else 0, hbytes, i0 + 4 * b0, m)
    elif api in ("syevj", "syevjBatched"):
        params = ce.createSyevjInfo()
        try:
            if api == "syevjBatched":
                if tol is not None:
                    ce.XsyevjSetTolerance(params, tol)
                if max_sweeps is not None:
                    ce.XsyevjSetMaxSweeps(params, max_sweeps)
                ce.XsyevjSetSortEig(params, 1)
                lwork = ce.syevjBatched_bufferSize(t, ctx.solver, jobz, uplo, n, p0, lda, w0,
                                                   params, batch)
                work = ctx.scratch.get(max(lwork, 1) * isz, ctx.stream).data_ptr()
                ce.syevjBatched(t, ctx.solver, jobz, uplo, n, p0, lda, w0, work, lwork, i0,
                                params, batch)
            else:
                lwork = ce.syevj_bufferSize(t, ctx.solver, jobz, uplo, n, p0, lda, w0, params)
                work = ctx.scratch.get(max(lwork, 1) * isz, ctx.stream).data_ptr()
                for b in range(batch):
                    ce.syevj(t, ctx.solver, jobz, uplo, n, p0 + b * step, lda, w0 + b * wstep,
                             work, lwork, i0 + 4 * b, params)
        finally:
            ce.destroySyevjInfo(params)
    else:
        lwork = ce.syevd_bufferSize(t, ctx.solver, jobz, uplo, n, p0, lda, w0)
        work = ctx.scratch.get(max(lwork, 1) * isz, ctx.stream).data_ptr()
        for b in range(batch):
            ce.syevd(t, ctx.solver, jobz, uplo, n, p0 + b * step, lda, w0 + b * wstep, work,
                     lwork, i0 + 4 * b)
    return W, (V if vectors else None), info
