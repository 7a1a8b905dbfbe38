"""The reference executor of plans: :func:`run_plan_reference` runs a plan's calls with
torch ops on ``as_strided`` views of one flat column-major buffer (the offsets of
:func:`~cusolver_trace.plans.element_offset`, which the CUDA executor turns into device
pointers), and :func:`run_inverse_reference` runs an inverse :class:`~cusolver_trace.plans.Plan`
on a batch; with :func:`hermitian_fill` and :func:`first_info`, which assemble a plan's
result and its LAPACK ``info``. For tests and CPU tensors (not tuned for speed).
"""
from __future__ import annotations

import torch

from ._plan_types import Plan, element_offset


def triangle(x, uplo):
    """The ``uplo`` (``"L"`` / ``"U"``) triangle of ``x`` (..., n, n), the other zeroed."""
    return x.tril() if uplo == "L" else x.triu()


_tri = triangle


def _op(x, trans):
    return x.mH if trans == "C" else x


def _op_upper(c) -> bool:
    """Whether op(T) of a trmm / trsm call is upper triangular."""
    return (c.uplo == "U") == (c.trans == "N")


def _set_triangle(view, value, uplo, hermitian=False):
    keep = torch.ones(view.shape, dtype=torch.bool, device=view.device)
    view.copy_(torch.where(_tri(keep, uplo), value, view))
    if hermitian and view.is_complex():  # herk / lauum leave a real diagonal (imaginary part 0)
        view.diagonal().imag.zero_()


def run_plan_reference(plan, buf: torch.Tensor, lda: int, base: int = 0,
                       infos: dict | None = None) -> None:
    """Execute ``plan`` with torch ops on a flat column-major buffer, in place.

    ``buf`` is a 1-D tensor holding a column-major matrix with leading
    dimension ``lda`` starting at element ``base``; every block is the
    ``as_strided`` view at :func:`element_offset` — the same offsets the GPU
    executor turns into device pointers. lauum/trtri/syrk write only their
    ``uplo`` triangle, as cuSOLVER/cuBLAS do. A ``potrf`` call stores its LAPACK
    ``info`` in ``infos[call.k]`` (when ``infos`` is given). For tests and for CPU
    tensors (not tuned for speed).
    """
    so = buf.storage_offset() + base

    def view(ij, r, c):
        return buf.as_strided((r, c), (1, lda), so + element_offset(ij[0], ij[1], lda))

    for c in plan:
        C = view(c.c, c.m, c.n)
        if c.routine == "lauum":
            T = _tri(C, c.uplo)
            _set_triangle(C, T.mH @ T if c.uplo == "L" else T @ T.mH, c.uplo, hermitian=True)
        elif c.routine in ("trtri", "trsm_inv"):
            T = _tri(C, c.uplo)
            eye = torch.eye(c.n, dtype=C.dtype, device=C.device)
            _set_triangle(C, torch.linalg.solve_triangular(T, eye, upper=c.uplo == "U"), c.uplo)
        elif c.routine == "syrk":
            A = _op(view(c.a, *((c.k, c.n) if c.trans == "C" else (c.n, c.k))), c.trans)
            _set_triangle(C, c.alpha * (A @ A.mH) + c.beta * C, c.uplo, hermitian=True)
        elif c.routine == "trmm":
            r = c.m if c.side == "L" else c.n
            T = _op(_tri(view(c.a, r, r), c.uplo), c.trans)
            C.copy_(c.alpha * (T @ C if c.side == "L" else C @ T))
        elif c.routine == "gemm":
            A = _op(view(c.a, *((c.k, c.m) if c.trans == "C" else (c.m, c.k))), c.trans)
            B = _op(view(c.b, *((c.n, c.k) if c.transb == "C" else (c.k, c.n))), c.transb)
            if c.beta == 0:  # cuBLAS does not read C then (it may hold NaN)
                C.copy_(c.alpha * (A @ B))
            else:
                C.copy_(c.alpha * (A @ B) + c.beta * C)
        elif c.routine == "trmm_out":
            r = c.m if c.side == "L" else c.n
            T = _op(_tri(view(c.a, r, r), c.uplo), c.trans)
            B = view(c.b, c.m, c.n)
            C.copy_(c.alpha * (T @ B if c.side == "L" else B @ T))
        elif c.routine in ("trsm", "trsm_batched"):
            r = c.m if c.side == "L" else c.n
            for ci, ai in (c.blocks if c.routine == "trsm_batched" else ((c.c, c.a),)):
                Ci = view(ci, c.m, c.n)
                T = _op(_tri(view(ai, r, r), c.uplo), c.trans)
                X = torch.linalg.solve_triangular(T, Ci.clone(), upper=_op_upper(c),
                                                  left=c.side == "L")
                Ci.copy_(c.alpha * X)
        elif c.routine == "potrf":
            T = _tri(C, c.uplo)
            H = T + _tri(C, c.uplo).mH - torch.diag_embed(T.diagonal())
            F, info = torch.linalg.cholesky_ex(H, upper=c.uplo == "U")
            if int(info):  # LAPACK leaves the failed column on; the caller only reads info
                F = torch.where(torch.isfinite(F), F, torch.full_like(F, float("nan")))
            _set_triangle(C, F, c.uplo)
            if infos is not None:
                infos[c.k] = int(info)
        elif c.routine in ("record", "wait"):
            continue  # stream pseudo-calls: the list order is the sequential order
        else:
            raise ValueError(f"unknown routine {c.routine!r} in plan")


def hermitian_fill(x: torch.Tensor, upper: bool) -> torch.Tensor:
    """The Hermitian matrix whose ``upper`` / lower triangle is that of ``x`` (..., n, n),
    as a new tensor: one ``torch.where`` over the triangle and its conjugate transpose, and
    the diagonal's imaginary part zeroed (complex) so that the result is exactly Hermitian."""
    n = x.shape[-1]
    i = torch.arange(n, device=x.device)
    keep = (i[:, None] <= i[None, :]) if upper else (i[:, None] >= i[None, :])
    out = torch.where(keep, x, x.mH)
    if out.is_complex():
        out.diagonal(dim1=-2, dim2=-1).imag.zero_()
    return out


def first_info(infos, slots) -> int:
    """The factorization's LAPACK ``info`` from its blocks' (``infos[j]`` for block ``j``
    at diagonal offset ``slots[j]``): the offset plus the info of the first failing block,
    0 when none failed.

    Examples
    --------
    >>> first_info([0, 0, 3, 1], (0, 10, 20, 30))
    23
    """
    for j, o in enumerate(slots):
        if int(infos[j]) != 0:
            return int(infos[j]) + (o if int(infos[j]) > 0 else 0)
    return 0


def run_inverse_reference(plan: Plan, factor: torch.Tensor, info: list | None = None) -> torch.Tensor:
    """Run an inverse :class:`Plan` with torch ops (:func:`run_plan_reference`) on the
    factors ``factor`` (..., n, n) (only the plan's ``uplo`` triangle is read; for a
    :func:`~cusolver_trace.plans.spd_inverse_plan`, the matrices A themselves); returns the
    Hermitian inverses (..., n, n). ``info``: a list that receives each matrix's
    factorization info. Streams and events are ignored: the list order is the sequential
    order that :func:`~cusolver_trace.plans.check_schedule` proves the streams equivalent to."""
    n = factor.shape[-1]
    if n == 0 or factor.numel() == 0:   # nothing to invert: the empty result
        return factor.new_zeros(factor.shape)
    batch = factor.reshape(-1, n, n)
    q = plan.matrices
    buf = torch.zeros((batch.shape[0], q, n, n), dtype=factor.dtype, device=factor.device)
    buf[:, 0].copy_(batch.mT)                      # column-major: buf[b, q] is Mᵀ row-major
    for m in plan.identity:
        buf[:, m].diagonal(dim1=-2, dim2=-1).fill_(1)
    flat = buf.reshape(-1)
    for b in range(buf.shape[0]):
        infos = {}
        run_plan_reference(plan.calls, flat, n, b * q * n * n, infos)
        if info is not None:
            info.append(first_info([infos.get(j, 0) for j in range(len(plan.info_slots))],
                                   plan.info_slots))
    res = buf[:, plan.result].mT
    return hermitian_fill(res, plan.upper).reshape(factor.shape)
