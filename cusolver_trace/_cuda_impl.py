"""CUDA backend: array-level routines on torch CUDA tensors through raw cuSOLVER / cuBLAS.

Inputs are validated, non-empty torch CUDA tensors. Each routine makes a
batched column-major working copy (torch's layout: a contiguous ``(batch, c, r)``
buffer whose ``.mT`` is the ``(batch, r, c)`` matrix), runs the raw calls on
torch's current stream, and returns ``(result, info)`` with ``info`` an
``int32`` device tensor of shape ``(batch,)``; nothing is synchronized and
``info`` is not inspected here (see :mod:`cusolver_trace.routines`).

``api`` picks which cuSOLVER entry point runs:

* ``"X"``        64-bit generic API, one call per matrix (``cusolverDnXpotrf`` /
                 ``cusolverDnXpotrs``) — torch's batch-1 path;
* ``"legacy"``   32-bit typed API, one call per matrix (``cusolverDn<t>potrf`` ...);
* ``"batched"``  one ``cusolverDn<t>potrfBatched`` / ``potrsBatched`` call for the
                 whole batch — torch's batch > 1 ``linalg.cholesky`` path.
"""
from __future__ import annotations

import numpy as np
import torch

from ._dtypes import dtype_info
from ._gpu import on_device, pointer_array
from .raw import cublas as cb
from .raw import cusolver as cs

APIS = ("X", "legacy", "batched")


def colmajor(x: torch.Tensor) -> torch.Tensor:
    """Contiguous ``(batch, c, r)`` copy of ``x`` ``(..., r, c)``: each matrix column-major.

    Conjugate / negative views are materialized; stride-0 (expanded) inputs get
    a real copy. The input is never written.
    """
    r, c = x.shape[-2:]
    w = torch.empty((int(np.prod(x.shape[:-2], dtype=np.int64)), c, r), dtype=x.dtype,
                    device=x.device)
    w.copy_(x.mT.reshape(-1, c, r))
    return w


def matrices(w: torch.Tensor, batch_shape) -> torch.Tensor:
    """The ``(..., r, c)`` view of a column-major working buffer made by :func:`colmajor`."""
    c, r = w.shape[-2:]
    return w.mT.reshape(*batch_shape, r, c)


def hermitian_from_triangle(x: torch.Tensor, upper: bool) -> torch.Tensor:
    """Full Hermitian matrix from the ``upper`` / lower triangle of ``x`` (..., n, n)."""
    if upper:
        return x.triu() + x.triu(1).mH
    return x.tril() + x.tril(-1).mH


def _uplo(upper: bool) -> int:
    return cs.UPPER if upper else cs.LOWER


def _info(w):
    return torch.zeros(w.shape[0], dtype=torch.int32, device=w.device)


def _ptr(w, b):
    return w.data_ptr() + b * w.stride(0) * w.element_size()


def potrf(a: torch.Tensor, upper: bool, api: str = "X"):
    """Cholesky factor of ``a`` (..., n, n): ``(L, info)``; the other triangle of L is zero.

    Mirrors torch's CUDA ``linalg.cholesky`` (``Xpotrf`` for batch 1,
    ``potrfBatched`` for batch > 1): the whole matrix is copied, the ``uplo``
    triangle factored in place, and the other triangle zeroed afterwards.
    """
    dt = dtype_info(a.dtype)
    n, t, cdt = a.shape[-1], dt.prefix, dt.cuda_data_type
    w, uplo, lda = colmajor(a), _uplo(upper), max(1, a.shape[-1])
    info = _info(w)
    with on_device(a.device) as ctx:
        if api == "X":
            # torch asks for the workspace size with A = NULL, and passes bufferOnHost = NULL
            # when no host workspace is needed (the API log shows 0x0); so do we
            dbytes, hbytes = cs.Xpotrf_bufferSize(ctx.solver, ctx.params, uplo, n, cdt, 0, lda, cdt)
            work, host = ctx.workspace(dbytes), np.empty(max(hbytes, 1), dtype=np.uint8)
            for b in range(w.shape[0]):
                cs.Xpotrf(ctx.solver, ctx.params, uplo, n, cdt, _ptr(w, b), lda, cdt,
                          work.data_ptr(), dbytes, host.ctypes.data if hbytes else 0, hbytes, _ptr(info, b))
        elif api == "legacy":
            lwork = cs.potrf_bufferSize(t, ctx.solver, uplo, n, w.data_ptr(), lda)
            work = ctx.workspace(lwork * dt.itemsize)
            for b in range(w.shape[0]):
                cs.potrf(t, ctx.solver, uplo, n, _ptr(w, b), lda, work.data_ptr(), lwork,
                         _ptr(info, b))
        elif api == "batched":
            ptrs = pointer_array(w)
            cs.potrfBatched(t, ctx.solver, uplo, n, ptrs.data_ptr(), lda, info.data_ptr(), w.shape[0])
        else:
            raise ValueError(f"api must be one of {APIS}, got {api!r}")
    out = matrices(w, a.shape[:-2])
    (out.triu_() if upper else out.tril_())
    return out, info


def potrs(c: torch.Tensor, b: torch.Tensor, upper: bool, api: str = "X"):
    """Solve A X = B from A's factor ``c`` (..., n, n); ``b`` (..., n, k), same batch shape.

    ``api="X"``: one ``cusolverDnXpotrs`` per matrix (torch's path);
    ``"legacy"``: ``cusolverDn<t>potrs``; ``"batched"``: one ``potrsBatched``
    (cuSOLVER accepts nrhs = 1 only). Returns ``(X, info)``; cuSOLVER's potrs
    ``info`` reports illegal arguments only, never a singular factor.
    """
    dt = dtype_info(c.dtype)
    n, k, t, cdt = c.shape[-1], b.shape[-1], dt.prefix, dt.cuda_data_type
    wc, x, uplo, ld = colmajor(c), colmajor(b), _uplo(upper), max(1, c.shape[-1])
    info = _info(wc)
    with on_device(c.device) as ctx:
        if api == "X":
            for i in range(wc.shape[0]):
                cs.Xpotrs(ctx.solver, ctx.params, uplo, n, k, cdt, _ptr(wc, i), ld, cdt, _ptr(x, i),
                          ld, _ptr(info, i))
        elif api == "legacy":
            for i in range(wc.shape[0]):
                cs.potrs(t, ctx.solver, uplo, n, k, _ptr(wc, i), ld, _ptr(x, i), ld, _ptr(info, i))
        elif api == "batched":
            if k != 1:
                raise ValueError(f"cusolverDn{t.upper()}potrsBatched supports nrhs = 1 only, got nrhs = {k}")
            pa, pb = pointer_array(wc), pointer_array(x)
            cs.potrsBatched(t, ctx.solver, uplo, n, k, pa.data_ptr(), ld, pb.data_ptr(), ld,
                            info.data_ptr(), wc.shape[0])
        else:
            raise ValueError(f"api must be one of {APIS}, got {api!r}")
    return matrices(x, b.shape[:-2]), info


def potrs_identity(c: torch.Tensor, upper: bool, api: str = "X"):
    """Inverse from the factor by potrs on an identity right-hand side (torch's CUDA
    ``cholesky_inverse``, cuSOLVER path). Not exactly Hermitian; returns ``(Ainv, info)``."""
    n = c.shape[-1]
    eye = torch.eye(n, dtype=c.dtype, device=c.device).expand(c.shape)
    return potrs(c, eye, upper, api)


def potri(c: torch.Tensor, upper: bool):
    """``cusolverDn<t>potri`` per matrix, then the full Hermitian inverse from its triangle."""
    dt = dtype_info(c.dtype)
    n, t = c.shape[-1], dt.prefix
    w, uplo, lda = colmajor(c), _uplo(upper), max(1, c.shape[-1])
    info = _info(w)
    with on_device(c.device) as ctx:
        lwork = cs.potri_bufferSize(t, ctx.solver, uplo, n, w.data_ptr(), lda)
        work = ctx.workspace(lwork * dt.itemsize)
        for b in range(w.shape[0]):
            cs.potri(t, ctx.solver, uplo, n, _ptr(w, b), lda, work.data_ptr(), lwork, _ptr(info, b))
    return hermitian_from_triangle(matrices(w, c.shape[:-2]), upper), info


def trtri(c: torch.Tensor, upper: bool, unit_diagonal: bool = False):
    """``cusolverDnXtrtri`` per matrix: inverse of the ``upper`` / lower triangle (other zeroed)."""
    dt = dtype_info(c.dtype)
    n, cdt = c.shape[-1], dt.cuda_data_type
    w, uplo, lda = colmajor(c), _uplo(upper), max(1, c.shape[-1])
    diag = cs.UNIT if unit_diagonal else cs.NON_UNIT
    info = _info(w)
    with on_device(c.device) as ctx:
        dbytes, hbytes = cs.Xtrtri_bufferSize(ctx.solver, uplo, diag, n, cdt, w.data_ptr(), lda)
        work, host = ctx.workspace(dbytes), np.empty(max(hbytes, 1), dtype=np.uint8)
        for b in range(w.shape[0]):
            cs.Xtrtri(ctx.solver, uplo, diag, n, cdt, _ptr(w, b), lda, work.data_ptr(), dbytes,
                      host.ctypes.data if hbytes else 0, hbytes, _ptr(info, b))
    out = matrices(w, c.shape[:-2])
    return (out.triu_() if upper else out.tril_()), info


def trsm_identity_inverse(c: torch.Tensor, upper: bool, batched: bool):
    """Inverse from the factor by two cuBLAS triangular solves on the identity.

    torch >= 2.12's CUDA ``cholesky_inverse`` / ``cholesky_solve`` for batch > 1:
    ``X = L⁻ᴴ (L⁻¹ I)`` (lower) or ``U⁻¹ (U⁻ᴴ I)`` (upper), through a loop of
    ``cublas<t>trsm`` (``batched=False``) or one ``cublas<t>trsmBatched`` per solve.
    """
    n = c.shape[-1]
    eye = torch.eye(n, dtype=c.dtype, device=c.device).expand(c.shape)
    return trsm_solve(c, eye, upper, batched)


def trsm_solve(c: torch.Tensor, b: torch.Tensor, upper: bool, batched: bool):
    """Solve A X = B with A = L Lᴴ (or Uᴴ U) by two cuBLAS ``trsm`` (left side) calls per matrix."""
    dt = dtype_info(c.dtype)
    n, k, t = c.shape[-1], b.shape[-1], dt.prefix
    wc, x, ld = colmajor(c), colmajor(b), max(1, c.shape[-1])
    uplo = cb.UPPER if upper else cb.LOWER
    op_h = cb.OP_C if dt.is_complex else cb.OP_T
    # lower: L Y = B, then Lᴴ X = Y; upper: Uᴴ Y = B, then U X = Y
    ops = (cb.OP_N, op_h) if not upper else (op_h, cb.OP_N)
    one = cb.scalar(t, 1.0)
    with on_device(c.device) as ctx:
        if batched:
            pa, pb = pointer_array(wc), pointer_array(x)
            for op in ops:
                cb.trsmBatched(t, ctx.blas, cb.LEFT, uplo, op, cb.NON_UNIT, n, k, one.ctypes.data,
                               pa.data_ptr(), ld, pb.data_ptr(), ld, wc.shape[0])
        else:
            for i in range(wc.shape[0]):
                for op in ops:
                    cb.trsm(t, ctx.blas, cb.LEFT, uplo, op, cb.NON_UNIT, n, k, one.ctypes.data,
                            _ptr(wc, i), ld, _ptr(x, i), ld)
    return matrices(x, b.shape[:-2]), _info(wc)
