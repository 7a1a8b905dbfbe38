"""CUDA plan executor: runs :mod:`cusolver_trace.plans` plans through raw cuBLAS / cuSOLVER.

Split from :mod:`.cuda` (which keeps the single-call routines and the check kernel);
everything that executes a plan lives here. Calls run on torch's current stream.
"""
from __future__ import annotations

import numpy as np
import torch

from .._dtypes import dtype_info
from ..plans import Call, element_offset, lauum_plan, triangle, trtri_plan
from ..raw import cublas as cb
from ..raw import cusolver as cs
from ._context import on_device
from .cuda import (_info, _ptr, _side, colmajor, fill_mode, hermitian_from_triangle, matrices,
                   operation)

__all__ = ["plan_runner", "trtri_lauum"]


def plan_runner(ctx, dt, plans, w: torch.Tensor):
    """A function ``run(plan, base_ptr, info_ptr)`` executing :mod:`cusolver_trace.plans`
    plans through raw cuBLAS / cuSOLVER on matrices of ``w`` (contiguous ``(batch, n, n)``,
    column-major, lda = n).

    Workspaces for every lauum / Xtrtri / trsm_inv block size in ``plans`` are sized once.
    """
    t, cdt, isz, lda = dt.prefix, dt.cuda_data_type, dt.itemsize, w.shape[-1]
    real_t = dtype_info(dt.real_name).prefix  # syrk / herk take real alpha, beta for complex
    p0 = w.data_ptr()
    lauum_lwork, dbytes, hbytes = 0, 0, 0
    for n, uplo in {(c.n, c.uplo) for p in plans for c in p if c.routine == "lauum"}:
        lauum_lwork = max(lauum_lwork, cs.lauum_bufferSize(t, ctx.solver, fill_mode(uplo), n, p0, lda))
    for n, uplo in {(c.n, c.uplo) for p in plans for c in p if c.routine == "trtri"}:
        d, h = cs.Xtrtri_bufferSize(ctx.solver, fill_mode(uplo), cs.NON_UNIT, n, cdt, p0, lda)
        dbytes, hbytes = max(dbytes, d), max(hbytes, h)
    work = ctx.workspace(max(dbytes, lauum_lwork * isz))
    host = np.empty(max(hbytes, 1), dtype=np.uint8)
    inv_n = max((c.n for p in plans for c in p if c.routine == "trsm_inv"), default=0)
    inv_ws = torch.empty(inv_n * inv_n, dtype=w.dtype, device=w.device)  # trsm_inv's identity
    flat, masks, scalars = w.reshape(-1), {}, {}

    def sc(prefix, v):  # host scalars, kept alive for the runner's lifetime
        if (prefix, v) not in scalars:
            scalars[prefix, v] = cb.scalar(prefix, v)
        return scalars[prefix, v].ctypes.data

    def run(plan, base_ptr, info_ptr):
        def p(ij):
            return base_ptr + element_offset(ij[0], ij[1], lda) * isz

        base_elem = (base_ptr - p0) // isz
        for c in plan:
            u = fill_mode(c.uplo)
            if c.routine == "lauum":
                cs.lauum(t, ctx.solver, u, c.n, p(c.c), lda, work.data_ptr(), lauum_lwork, info_ptr)
            elif c.routine == "trtri":
                cs.Xtrtri(ctx.solver, u, cs.NON_UNIT, c.n, cdt, p(c.c), lda, work.data_ptr(), dbytes,
                          host.ctypes.data if hbytes else 0, hbytes, info_ptr)
            elif c.routine == "trsm_inv":  # X = T⁻¹·I in the workspace (ld = n), triangle back
                x = inv_ws[: c.n * c.n].as_strided((c.n, c.n), (1, c.n))
                x.zero_()
                x.diagonal().fill_(1)
                cb.trsm(t, ctx.blas, cb.LEFT, u, cb.OP_N, cb.NON_UNIT, c.n, c.n, sc(t, 1.0),
                        p(c.c), lda, x.data_ptr(), c.n)
                blk = flat.as_strided((c.n, c.n), (1, lda),
                                      flat.storage_offset() + base_elem + element_offset(*c.c, lda))
                if (c.n, c.uplo) not in masks:
                    masks[c.n, c.uplo] = triangle(
                        torch.ones(c.n, c.n, dtype=torch.bool, device=w.device), c.uplo)
                blk.copy_(torch.where(masks[c.n, c.uplo], x, blk))
            elif c.routine == "syrk":
                cb.syrk(t, ctx.blas, u, operation(c.trans, dt.is_complex), c.n, c.k,
                        sc(real_t, c.alpha), p(c.a), lda, sc(real_t, c.beta), p(c.c), lda)
            elif c.routine == "trmm":
                cb.trmm(t, ctx.blas, _side(c.side), u, operation(c.trans, dt.is_complex),
                        cb.NON_UNIT, c.m, c.n, sc(t, c.alpha), p(c.a), lda, p(c.c), lda, p(c.c), lda)
            elif c.routine == "gemm":
                cb.gemm(t, ctx.blas, operation(c.trans, dt.is_complex),
                        operation(c.transb, dt.is_complex), c.m, c.n, c.k, sc(t, c.alpha),
                        p(c.a), lda, p(c.b), lda, sc(t, c.beta), p(c.c), lda)
            else:
                raise ValueError(f"unknown routine {c.routine!r} in plan")

    return run


def trtri_lauum(c: torch.Tensor, upper: bool, recursive: bool):
    """Inverse from the factor: W = L⁻¹ (one ``cusolverDnXtrtri``, or the recursive trtri
    plan), then W ← Wᴴ·W by the (recursive) lauum plan, on one column-major working copy;
    returns ``(full Hermitian inverse, info)`` (Xtrtri's info; zeros for the recursive
    trtri, whose diagonal blocks are inverted by trsm, which reports nothing)."""
    dt = dtype_info(c.dtype)
    n = c.shape[-1]
    w = colmajor(c)
    uplo = "U" if upper else "L"
    inv = trtri_plan(n, upper) if recursive else [Call("trtri", uplo, n, n, (0, 0))]
    mul = lauum_plan(n, upper, dtype=dt.name)
    info = _info(w)
    with on_device(w.device) as ctx:
        run = plan_runner(ctx, dt, (inv, mul), w)
        scratch = torch.zeros(1, dtype=torch.int32, device=w.device)
        for b in range(w.shape[0]):
            base = _ptr(w, b)
            run(inv, base, scratch.data_ptr() if recursive else _ptr(info, b))
            run(mul, base, scratch.data_ptr())
    return hermitian_from_triangle(matrices(w, c.shape[:-2]), upper), info
