"""Recursive blocked plans for the inverse from a Cholesky factor: pure, testable anywhere.

The recursive algorithms (blocked ``trtri`` and ``lauum``) are written as
**plans**: lists of :class:`Call` (routine, sizes, block offsets) made by the
pure functions :func:`lauum_plan` and :func:`trtri_plan`. A plan runs on the
GPU through the raw cuBLAS / cuSOLVER bindings
(:func:`cusolver_trace.backends.cuda_plans.plan_runner`: pointer = base +
(i + j·lda)·itemsize, see :func:`element_offset`) or anywhere through
:func:`run_plan_reference` (torch ops on ``as_strided`` views of the same
column-major buffer, same offsets), so the blocking and its index arithmetic
are tested without a GPU.

Blocking parameters live in one table, :data:`BLOCKING`.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import torch

from ._dtypes import dtype_info

__all__ = ["BLOCKING", "Call", "element_offset", "split_point", "lauum_plan", "trtri_plan",
           "run_plan_reference", "triangle", "Plan", "inverse_plan", "access", "schedule",
           "check_schedule", "ScheduleError", "transpose_call", "call_flops", "hermitian_fill",
           "run_inverse_reference", "STREAM_CALLS", "spd_inverse_plan", "first_info"]

#: trmm whose triangle has order > ``trmm_base`` into two half-size trmm and one gemm.
#: ``lauum_base`` may be a dict by dtype name. Defaults measured on the H200 (rec_trtri_lauum):
#: the trsm kernel beats Xtrtri blocks (25.8 vs 27.6 ms, float64 n = 8192); trtri_base 1024
#: beats 512 / 256 / 128 (24.8 vs 25.8 / 27.2 / 28.7 ms); cuSOLVER's own lauum on the whole
#: matrix beats the recursive syrk/trmm/gemm lauum in float64 (23.1 vs 24.8 ms at 8192) and
#: complex128 (26.7 vs 28.3 ms at 6144), ties in complex64, and loses badly in float32
#: (29.7 vs 20.9 ms at 8192): float32 recurses from 512; syrk_base / trmm_base change < 2 %.
#: ``syrk_kernel`` ``"gemm"`` runs the lauum plan's base syrk/herk blocks as GEMM on the whole
#: square (the other triangle is wasted work in the unused triangle); ``streams`` > 1 schedules
#: the rec_trtri_lauum plans on that many streams (:func:`schedule`).
#: ``"gemm_lauum"``: the parameters of :func:`inverse_plan` / :func:`spd_inverse_plan` per dtype
#: (not yet tuned on a GPU: the device script sweeps them), and ``fill``, how the CUDA executor
#: makes the full Hermitian result (``"where"``: a new tensor by ``torch.where``; ``"kernel"``:
#: a tiled mirror kernel in place).
_GEMM_LAUUM = {"trtri_base": 512, "block": 256, "trmm_base": 1024, "trmm_kernel": "trmm",
               "lauum_block": 512, "lauum_diag": "gemm", "streams": 2,
               "potrf_base": 1024, "syrk_kernel": "gemm", "fill": "where", "trtri_scratch": False}
#: Measured on the H200 (float64, checks on, torch interleaved): trtri_base 1024 beats 512
#: (4.07 vs 4.26 ms at n = 4096, 14.8 vs 16.3 ms at 8192; 79.9 vs 79.1 ms at 16384, within
#: noise); 2 streams beat 1 (16.3 vs 17.9 ms at 8192, 79.1 vs 86.9 at 16384); trmm as gemm,
#: lauum_block 256 / 1024, trmm_base 512 / 2048, 3 streams: within ±3 %.
#: Then (2026-12-01, same bench, devrun/s3/A/plans.log): float64 trtri_scratch beats the
#: in-place trmm (12.76 vs 14.68 ms at 8192, 3.77 vs 4.12 at 4096, 79.8 vs 79.5 at 16384:
#: one more n x n buffer); float32 / complex64 / complex128 take trtri_base 1024 and the
#: mirror kernel (fill="kernel": 13.19 vs 14.59 ms float32 8192, 17.68 vs 20.08 complex128
#: 6144, 17.75 vs 19.16 complex64 6144).
_GEMM_LAUUM_BY_DTYPE = {"float64": {"trtri_base": 1024, "trtri_scratch": True},
                        "float32": {"trtri_base": 1024, "fill": "kernel"},
                        "complex64": {"trtri_base": 1024, "fill": "kernel"},
                        "complex128": {"trtri_base": 1024, "fill": "kernel"}}
BLOCKING = {"lauum_base": {"float32": 512, "float64": 16384, "complex64": 16384,
                           "complex128": 16384},
            "trtri_base": 1024, "block": 256, "syrk_base": 2048, "trmm_base": 2048,
            "trtri_kernel": "trsm", "syrk_kernel": "syrk", "streams": 1,
            "gemm_lauum": {name: dict(_GEMM_LAUUM, **_GEMM_LAUUM_BY_DTYPE.get(name, {}))
                           for name in ("float32", "float64", "complex64", "complex128")}}
_BLOCKING_DEFAULTS = {k: (dict(v) if isinstance(v, dict) else v) for k, v in BLOCKING.items()}


def _blocking(key):
    """``BLOCKING[key]``, or its default when a caller replaced the table without it."""
    return BLOCKING[key] if key in BLOCKING else _BLOCKING_DEFAULTS[key]




# --------------------------------------------------------------------------- plans
class Call(NamedTuple):
    """One BLAS / LAPACK call of a plan, on blocks of one column-major matrix.

    Block positions are ``(row, col)`` of the block's first element in the whole
    matrix; the call's pointer is ``base + element_offset(row, col, lda)·itemsize``.

    ``routine``: ``"lauum"`` (C ← Tᴴ·T lower / T·Tᴴ upper, in place), ``"trtri"``
    (C ← C⁻¹ in place, cusolverDnXtrtri), ``"trsm_inv"`` (C ← C⁻¹: cuBLAS trsm on
    an identity in a workspace, the triangle copied back), ``"syrk"``
    (C ← alpha·op(A)·op(A)ᴴ + beta·C; herk for complex), ``"trmm"`` (C ← alpha·op(T)·C (side ``"L"``) or alpha·C·op(T)
    (``"R"``), T triangular at ``a``; in place: cuBLAS's B = C), ``"gemm"``
    (C ← alpha·op(A)·op(B) + beta·C). ``m × n`` is the block written
    (lauum/trtri/syrk: ``m == n``), ``k`` the inner dimension (syrk, gemm).
    ``trans`` / ``transb``: ``"N"`` or ``"C"`` (conjugate transpose; transpose
    for real types). Only the ``uplo`` triangle of a lauum/trtri/syrk block is
    read or written.

    Added for the multi-buffer, multi-stream plans (:func:`inverse_plan`): ``"trsm"``
    (C ← alpha·op(T)⁻¹·C (side L) or alpha·C·op(T)⁻¹ (R), T triangular at ``a``, in
    place), ``"trmm_out"`` (C ← alpha·op(T)·B (side L) or alpha·B·op(T) (R), T at ``a``,
    B at ``b``, C at ``c``: out of place, C not read), and the stream pseudo-calls
    ``"record"`` (record event ``event`` on stream ``stream``: cudaEventRecord) and
    ``"wait"`` (stream ``stream`` waits for event ``event``: cudaStreamWaitEvent).
    ``stream`` is the stream a call is issued on (0: torch's current stream; 1, 2, …:
    side streams from a pool). A gemm with ``beta == 0`` does not read C.
    """

    routine: str
    uplo: str
    m: int
    n: int
    c: tuple
    k: int = 0
    a: tuple = (0, 0)
    b: tuple = (0, 0)
    side: str = "L"
    trans: str = "N"
    transb: str = "N"
    alpha: float = 1.0
    beta: float = 1.0
    stream: int = 0
    event: int = -1


def element_offset(i: int, j: int, lda: int) -> int:
    """Offset in elements of element (i, j) of a column-major matrix: ``i + j·lda``."""
    return i + j * lda


def split_point(n: int, block: int) -> int:
    """Where a recursive step splits order ``n``: n/2 rounded up to a multiple of
    ``block`` (so that big blocks stay aligned), kept inside ``[1, n - 1]``."""
    k = -(-(n // 2) // block) * block
    return min(max(k, 1), n - 1)


def _syrk_calls(uplo, n, k, c, a, syrk_base, block, kernel="syrk"):
    """C (order n at ``c``) += Wᴴ·W (lower; W the k×n panel at ``a``) or W·Wᴴ (upper;
    W n×k): one syrk/herk (``kernel="gemm"``: one gemm on the whole n × n block), or split
    into two half-size ones and one gemm."""
    trans = "C" if uplo == "L" else "N"
    if n <= syrk_base:
        if kernel == "gemm":
            return [Call("gemm", uplo, n, n, c, k=k, a=a, b=a, trans=trans,
                         transb="N" if trans == "C" else "C")]
        return [Call("syrk", uplo, n, n, c, k=k, a=a, trans=trans)]
    n1 = split_point(n, block)
    n2 = n - n1
    c2 = (c[0] + n1, c[1] + n1)
    if uplo == "L":  # columns of W split: C21 += W2ᴴ·W1
        a2 = (a[0], a[1] + n1)
        mid = Call("gemm", "L", n2, n1, (c[0] + n1, c[1]), k=k, a=a2, b=a, trans="C", transb="N")
    else:            # rows of W split: C12 += W1·W2ᴴ
        a2 = (a[0] + n1, a[1])
        mid = Call("gemm", "U", n1, n2, (c[0], c[1] + n1), k=k, a=a, b=a2, trans="N", transb="C")
    return (_syrk_calls(uplo, n1, k, c, a, syrk_base, block, kernel) + [mid]
            + _syrk_calls(uplo, n2, k, c2, a2, syrk_base, block, kernel))


def _trmm_calls(uplo, side, trans, m, n, c, a, alpha, trmm_base, block):
    """C (m × n at ``c``) ← alpha·op(T)·C (side L) or alpha·C·op(T) (side R), T triangular at
    ``a``: one trmm, or (order > ``trmm_base``) T split into two half-size trmm and a gemm
    with T's off-diagonal block, ordered so that each step reads C blocks not yet updated."""
    order = m if side == "L" else n
    if order <= trmm_base:
        return [Call("trmm", uplo, m, n, c, a=a, side=side, trans=trans, alpha=alpha)]
    t1 = split_point(order, block)
    t2 = order - t1
    a2 = (a[0] + t1, a[1] + t1)
    off = (a[0] + t1, a[1]) if uplo == "L" else (a[0], a[1] + t1)  # T21 or T12 as stored
    lower_op = (uplo == "L") == (trans == "N")  # op(T) is lower triangular

    def rec(mm, nn, cc, aa):
        return _trmm_calls(uplo, side, trans, mm, nn, cc, aa, alpha, trmm_base, block)

    if side == "L":  # rows of C split: C1 (t1 × n), C2 (t2 × n)
        c2 = (c[0] + t1, c[1])
        if lower_op:  # C2 = P21·C1 + P22·C2, C1 = P11·C1
            return (rec(t2, n, c2, a2) + [Call("gemm", uplo, t2, n, c2, k=t1, a=off, b=c,
                                               trans=trans, alpha=alpha)] + rec(t1, n, c, a))
        return (rec(t1, n, c, a) + [Call("gemm", uplo, t1, n, c, k=t2, a=off, b=c2, trans=trans,
                                         alpha=alpha)] + rec(t2, n, c2, a2))
    c2 = (c[0], c[1] + t1)  # columns of C split: C1 (m × t1), C2 (m × t2)
    if lower_op:  # C1 = C1·P11 + C2·P21, C2 = C2·P22
        return (rec(m, t1, c, a) + [Call("gemm", uplo, m, t1, c, k=t2, a=c2, b=off, transb=trans,
                                         alpha=alpha)] + rec(m, t2, c2, a2))
    return (rec(m, t2, c2, a2) + [Call("gemm", uplo, m, t2, c2, k=t1, a=c, b=off, transb=trans,
                                       alpha=alpha)] + rec(m, t1, c, a))


def lauum_plan(n: int, upper: bool = False, *, base: int | None = None, block: int | None = None,
               syrk_base: int | None = None, trmm_base: int | None = None,
               dtype="float64", offset: int = 0, syrk_kernel: str | None = None) -> list[Call]:
    """Recursive blocked lauum: the lower triangle of Wᴴ·W (W lower) or the upper of W·Wᴴ (W upper).

    Split at k = :func:`split_point` (n): W = [[W11, 0], [W21, W22]] (lower) gives

    * result11 = W11ᴴ·W11 (recursive) + W21ᴴ·W21 (syrk/herk, ``trans = C``),
    * result21 = W22ᴴ·W21 (trmm, side L, lower, ``trans = C``),
    * result22 = W22ᴴ·W22 (recursive),

    in that order, in place (each step reads only blocks not yet overwritten).
    Upper: result11 = W11·W11ᴴ + W12·W12ᴴ, result12 = W12·W22ᴴ (trmm, side R),
    result22 = W22·W22ᴴ. Orders <= ``base`` are one cuSOLVER ``lauum``; large
    syrk / trmm steps are split further (``syrk_base``, ``trmm_base``). Defaults
    come from :data:`BLOCKING` (``lauum_base`` for ``dtype`` when it is a dict);
    ``offset`` places the block at (offset, offset). ``syrk_kernel="gemm"`` runs the base
    syrk/herk blocks as GEMM on the whole square block (writing the unused triangle too).
    """
    base, block, syrk_base, trmm_base, syrk_kernel = (_blocking(k) if v is None else v for k, v in (
        ("lauum_base", base), ("block", block), ("syrk_base", syrk_base),
        ("trmm_base", trmm_base), ("syrk_kernel", syrk_kernel)))
    if syrk_kernel not in ("syrk", "gemm"):
        raise ValueError(f"syrk kernel must be 'syrk' or 'gemm', got {syrk_kernel!r}")
    if isinstance(base, dict):
        base = base[dtype_info(dtype).name]
    uplo, o = ("U" if upper else "L"), offset
    if n <= max(base, 1):
        return [Call("lauum", uplo, n, n, (o, o))]
    k = split_point(n, block)
    m = n - k
    kw = dict(base=base, block=block, syrk_base=syrk_base, trmm_base=trmm_base,
              syrk_kernel=syrk_kernel)
    d2 = (o + k, o + k)
    if upper:
        panel = (o, o + k)  # W12, k × m
        mid = (_syrk_calls(uplo, k, m, (o, o), panel, syrk_base, block, syrk_kernel)
               + _trmm_calls(uplo, "R", "C", k, m, panel, d2, 1.0, trmm_base, block))
    else:
        panel = (o + k, o)  # W21, m × k
        mid = (_syrk_calls(uplo, k, m, (o, o), panel, syrk_base, block, syrk_kernel)
               + _trmm_calls(uplo, "L", "C", m, k, panel, d2, 1.0, trmm_base, block))
    return (lauum_plan(k, upper, offset=o, **kw) + mid
            + lauum_plan(m, upper, offset=o + k, **kw))


def trtri_plan(n: int, upper: bool = False, *, base: int | None = None, block: int | None = None,
               trmm_base: int | None = None, kernel: str | None = None,
               offset: int = 0) -> list[Call]:
    """Recursive triangular inverse from trmm: L = [[L11, 0], [L21, L22]] →

    W11 = L11⁻¹ and W22 = L22⁻¹ (recursive), then W21 = −W22·L21 (trmm side L,
    alpha −1) and W21 ← W21·W11 (trmm side R): −L22⁻¹·L21·L11⁻¹. Upper:
    W12 = −W11·U12, then W12 ← W12·W22. Orders <= ``base`` are one ``"trsm_inv"``
    (``kernel="trsm"``) or ``"trtri"`` (``kernel="xtrtri"``) call, non-unit
    diagonal; trmm steps with a triangle of order > ``trmm_base`` are split further.
    """
    base, block, trmm_base, kernel = (BLOCKING[k] if v is None else v for k, v in (
        ("trtri_base", base), ("block", block), ("trmm_base", trmm_base),
        ("trtri_kernel", kernel)))
    if kernel not in ("trsm", "xtrtri"):
        raise ValueError(f"trtri kernel must be 'trsm' or 'xtrtri', got {kernel!r}")
    uplo, o = ("U" if upper else "L"), offset
    if n <= max(base, 1):
        return [Call("trsm_inv" if kernel == "trsm" else "trtri", uplo, n, n, (o, o))]
    k = split_point(n, block)
    m = n - k
    d1, d2 = (o, o), (o + k, o + k)
    if upper:
        off, rows, cols, first, second = (o, o + k), k, m, d1, d2
    else:
        off, rows, cols, first, second = (o + k, o), m, k, d2, d1
    kw = dict(base=base, block=block, trmm_base=trmm_base, kernel=kernel)
    return (trtri_plan(k, upper, offset=o, **kw) + trtri_plan(m, upper, offset=o + k, **kw)
            + _trmm_calls(uplo, "L", "N", rows, cols, off, first, -1.0, trmm_base, block)
            + _trmm_calls(uplo, "R", "N", rows, cols, off, second, 1.0, trmm_base, block))


# --------------------------------------------------------------------------- reference executor
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
        elif c.routine == "trsm":
            r = c.m if c.side == "L" else c.n
            T = _op(_tri(view(c.a, r, r), c.uplo), c.trans)
            if c.side == "L":
                X = torch.linalg.solve_triangular(T, C.clone(), upper=_op_upper(c), left=True)
            else:
                X = torch.linalg.solve_triangular(T, C.clone(), upper=_op_upper(c), left=False)
            C.copy_(c.alpha * X)
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



# --------------------------------------------------------------------------- regions and streams
STREAM_CALLS = ("record", "wait")
"""Pseudo-calls that order streams and touch no matrix."""


class ScheduleError(ValueError):
    """A stream / event program that could let a call read or write a block before the call
    it depends on (in the plan's sequential order) is finished."""


def _rect(pos, rows, cols):
    return (int(pos[0]), int(pos[0]) + int(rows), int(pos[1]), int(pos[1]) + int(cols))


def access(c: Call) -> tuple[tuple, tuple]:
    """The blocks a call may read and write: ``(reads, writes)``, each a tuple of half-open
    rectangles ``(row0, row1, col0, col1)`` in the plan's buffer coordinates.

    Triangular operands count as their whole square (a superset: never misses a
    conflict). Stream pseudo-calls touch nothing. A gemm with ``beta == 0`` and
    ``trmm_out`` do not read C.

    Examples
    --------
    >>> access(Call("gemm", "L", 2, 3, (4, 0), k=5, a=(0, 8), b=(0, 0), trans="C", beta=0.0))
    (((0, 5, 8, 10), (0, 5, 0, 3)), ((4, 6, 0, 3),))
    """
    r = c.routine
    if r in STREAM_CALLS:
        return (), ()
    C = _rect(c.c, c.m, c.n)
    if r in ("lauum", "trtri", "trsm_inv", "potrf"):
        return (C,), (C,)
    if r == "syrk":
        A = _rect(c.a, c.k, c.n) if c.trans == "C" else _rect(c.a, c.n, c.k)
        return (A, C), (C,)
    if r in ("trmm", "trsm", "trmm_out"):
        t = c.m if c.side == "L" else c.n
        T = _rect(c.a, t, t)
        if r == "trmm_out":
            return (T, _rect(c.b, c.m, c.n)), (C,)
        return (T, C), (C,)
    if r == "gemm":
        A = _rect(c.a, c.k, c.m) if c.trans == "C" else _rect(c.a, c.m, c.k)
        B = _rect(c.b, c.n, c.k) if c.transb == "C" else _rect(c.b, c.k, c.n)
        return ((A, B, C) if c.beta != 0 else (A, B)), (C,)
    raise ValueError(f"unknown routine {r!r} in plan")


def call_flops(c: Call) -> float:
    """Multiply-adds × 2 (real flops for real types) of one call, for scheduling costs.

    Examples
    --------
    >>> call_flops(Call("gemm", "L", 2, 3, (0, 0), k=4))
    48.0
    """
    r = c.routine
    if r == "gemm":
        return 2.0 * c.m * c.n * c.k
    if r == "syrk":
        return 1.0 * c.n * (c.n + 1) * c.k
    if r in ("trmm", "trsm", "trmm_out"):
        t = c.m if c.side == "L" else c.n
        return 1.0 * c.m * c.n * t
    if r == "trsm_inv":
        return 1.0 * c.n ** 3
    if r in ("lauum", "trtri", "potrf"):
        return c.n ** 3 / 3.0
    return 0.0


def _overlaps(rects: np.ndarray, q) -> np.ndarray:
    return ((rects[:, 0] < q[1]) & (q[0] < rects[:, 1])
            & (rects[:, 2] < q[3]) & (q[2] < rects[:, 3]))


def _dependencies(ops) -> list[list[int]]:
    """For each call, the earlier calls it conflicts with (read-after-write,
    write-after-read, write-after-write on overlapping blocks)."""
    deps = []
    w_rects, w_owner, r_rects, r_owner = [], [], [], []
    for i, c in enumerate(ops):
        reads, writes = access(c)
        found = set()
        if w_rects:
            W, WO = np.asarray(w_rects), np.asarray(w_owner)
            for q in reads + writes:
                found.update(WO[_overlaps(W, q)].tolist())
        if r_rects:
            R, RO = np.asarray(r_rects), np.asarray(r_owner)
            for q in writes:
                found.update(RO[_overlaps(R, q)].tolist())
        deps.append(sorted(found))
        w_rects += writes
        w_owner += [i] * len(writes)
        r_rects += reads
        r_owner += [i] * len(reads)
    return deps


def schedule(calls, streams: int = 2, *, launch: float = 5e8, event_cost: float = 2e8) -> list[Call]:
    """Spread a sequential plan over ``streams`` streams, with events where a call depends
    on a call of another stream.

    The dependencies come from :func:`access` (every pair of calls touching overlapping
    blocks, one of them writing, keeps its order). Each call goes, in list order, to the
    stream where a simple cost model (``call_flops`` + ``launch`` per call, ``event_cost``
    per cross-stream wait; streams independent) lets it start first; ties go to the stream
    of its latest dependency. Then ``"wait"`` pseudo-calls are put before a call for each
    dependency not already ordered before it (vector clocks: waits already made cover
    their stream's earlier calls), a ``"record"`` right after each call waited on, a fork
    (stream 0 records, each side stream waits before its first call) and a join (stream 0
    waits for each side stream's last call). The host issues the calls in the returned
    order, which keeps the original order of the matrix calls; :func:`check_schedule`
    proves the result equivalent to the sequential plan.

    ``streams <= 1`` returns the matrix calls on stream 0, without events. Results are
    cached (plans are pure): the same calls and streams give the same list.
    """
    return list(_schedule(tuple(calls), int(streams), float(launch), float(event_cost)))


@functools.lru_cache(maxsize=64)
def _schedule(calls, streams, launch, event_cost):
    ops = [c for c in calls if c.routine not in STREAM_CALLS]
    if streams <= 1 or len(ops) <= 1:
        return tuple(c._replace(stream=0, event=-1) for c in ops)
    deps = _dependencies(ops)
    cost = [call_flops(c) + launch for c in ops]
    free = [0.0] * streams
    fin, st = [0.0] * len(ops), [0] * len(ops)
    for i in range(len(ops)):
        last = max(deps[i], key=lambda d: fin[d], default=None)
        best = None
        for s in range(streams):
            ready = max((fin[d] + (event_cost if st[d] != s else 0.0) for d in deps[i]),
                        default=0.0)
            start = max(free[s], ready)
            key = (start, 0 if (last is not None and st[last] == s) else 1, s)
            if best is None or key < best[0]:
                best = (key, s, start)
        _, s, start = best
        st[i], fin[i] = s, start + cost[i]
        free[s] = fin[i]
    return tuple(_emit(ops, deps, st, streams))


def _emit(ops, deps, st, streams):
    slots = [[] for _ in ops]
    head, tail = [], []
    vc = [[0] * streams for _ in range(streams)]  # vc[s][t]: stream t's calls known done in s
    count = [0] * streams
    count[0] = vc[0][0] = 1  # the work issued before the plan on stream 0 ("start")
    start_vc = list(vc[0])
    seq, after, event_of = [0] * len(ops), [None] * len(ops), {}
    events = {"start": None}
    nxt = [0]

    def new_event():
        nxt[0] += 1
        return nxt[0] - 1

    def merge(s, other):
        vc[s] = [max(x, y) for x, y in zip(vc[s], other)]

    for i, c in enumerate(ops):
        s = st[i]
        if vc[s][0] < 1:  # a side stream's first call: fork from stream 0
            if events["start"] is None:
                events["start"] = new_event()
                head.append(Call("record", "L", 0, 0, (0, 0), stream=0, event=events["start"]))
            slots[i].append(Call("wait", "L", 0, 0, (0, 0), stream=s, event=events["start"]))
            merge(s, start_vc)
        for d in sorted(deps[i], key=lambda d: -seq[d]):
            t = st[d]
            if vc[s][t] >= seq[d]:
                continue
            if d not in event_of:
                event_of[d] = new_event()
                slots[d].append(Call("record", "L", 0, 0, (0, 0), stream=t, event=event_of[d]))
            slots[i].append(Call("wait", "L", 0, 0, (0, 0), stream=s, event=event_of[d]))
            merge(s, after[d])
        slots[i].append(c._replace(stream=s, event=-1))
        count[s] += 1
        seq[i] = vc[s][s] = count[s]
        after[i] = list(vc[s])
    for s in range(1, streams):  # join: stream 0 waits for each side stream's last call
        if count[s] and vc[0][s] < count[s]:
            last = max(i for i in range(len(ops)) if st[i] == s)
            if last not in event_of:
                event_of[last] = new_event()
                slots[last].append(Call("record", "L", 0, 0, (0, 0), stream=s,
                                        event=event_of[last]))
            tail.append(Call("wait", "L", 0, 0, (0, 0), stream=0, event=event_of[last]))
            merge(0, after[last])
    return head + [c for slot in slots for c in slot] + tail


def _conflict(a_reads, a_writes, b_reads, b_writes) -> bool:
    def hit(p, q):
        return p[0] < q[1] and q[0] < p[1] and p[2] < q[3] and q[2] < p[3]

    return (any(hit(w, x) for w in a_writes for x in b_reads + b_writes)
            or any(hit(r, w) for r in a_reads for w in b_writes))


def check_schedule(calls) -> None:
    """Prove a stream / event program equivalent to its sequential order, or raise.

    CUDA semantics: calls on one stream run in issue order; ``record`` on stream s
    captures everything issued to s so far; ``wait`` on stream s orders everything
    issued to s afterwards after the captured work (of the latest ``record`` of that
    event issued before the wait). The work issued before the plan is a call on stream
    0 writing every block, and the work after it a call on stream 0 reading every block.
    For every pair of calls that touch overlapping blocks with at least one writing
    (:func:`access`), the earlier one (in list order) must happen before the later one.

    Raises
    ------
    ScheduleError
        Naming the two calls that may race (or the call not joined back to stream 0, or
        a wait for an event never recorded).

    Examples
    --------
    >>> g = Call("gemm", "L", 2, 2, (0, 0), k=2, a=(0, 2), b=(0, 2), beta=0.0)
    >>> check_schedule([g, g._replace(stream=0)])          # one stream: always ordered
    >>> check_schedule([g._replace(stream=1)])
    Traceback (most recent call last):
      ...
    cusolver_trace.plans.ScheduleError: call 0 (gemm on stream 1) may start before the work issued before the plan on stream 0 (no wait on a fork event)
    """
    vc: dict = {0: {0: 1}}
    count = {0: 1}
    events: dict = {}
    done = []  # (index, call, stream, seq, reads, writes)
    for idx, c in enumerate(calls):
        s = c.stream
        clock = vc.setdefault(s, {})
        if c.routine == "record":
            events[c.event] = dict(clock)
            continue
        if c.routine == "wait":
            if c.event not in events:
                raise ScheduleError(f"call {idx} (wait on stream {s}) waits for event {c.event}, "
                                    "which no earlier call recorded")
            for t, q in events[c.event].items():
                clock[t] = max(clock.get(t, 0), q)
            continue
        reads, writes = access(c)
        if clock.get(0, 0) < 1:
            raise ScheduleError(f"call {idx} ({c.routine} on stream {s}) may start before the "
                                "work issued before the plan on stream 0 (no wait on a fork event)")
        for j, cj, t, q, rj, wj in done:
            if clock.get(t, 0) < q and _conflict(rj, wj, reads, writes):
                raise ScheduleError(
                    f"call {idx} ({c.routine} on stream {s}) may race with call {j} "
                    f"({cj.routine} on stream {t}): they touch overlapping blocks and no "
                    "event orders them")
        count[s] = count.get(s, 0) + 1
        clock[s] = count[s]
        done.append((idx, c, s, count[s], reads, writes))
    end = vc[0]
    for j, cj, t, q, _, _ in done:
        if end.get(t, 0) < q:
            raise ScheduleError(f"call {j} ({cj.routine} on stream {t}) is not joined back to "
                                "stream 0 before the plan ends")


# --------------------------------------------------------------------------- the two-buffer inverse
@dataclass(frozen=True)
class Plan:
    """A plan over a buffer of ``matrices`` column-major n × n matrices side by side
    (n × matrices·n, lda = n; matrix q's element (i, j) is at (i, q·n + j)).

    Before the calls run, matrix 0 holds the input (a Cholesky factor: its ``uplo``
    triangle is read, the rest may hold anything) and each matrix in ``identity`` is the
    identity. Afterwards the ``uplo`` triangle of matrix ``result`` holds the result.
    ``calls`` may carry streams and events (:func:`schedule`); ``streams`` is how many.
    ``info_slots``: for plans that factor first (:func:`spd_inverse_plan`), the diagonal
    offset of each ``potrf`` block, in order; block ``j`` writes its ``info`` into slot
    ``j`` (its ``k`` field), and the factorization's info is ``info_slots[j] + info[j]``
    for the first non-zero slot ``j``.
    """

    calls: tuple
    n: int
    upper: bool
    matrices: int = 1
    identity: tuple = ()
    result: int = 0
    streams: int = 1
    info_slots: tuple = ()

    @property
    def uplo(self) -> str:
        return "U" if self.upper else "L"


def _trmm_out_calls(uplo, side, trans, m, n, c, b, a, alpha, trmm_base, block, kernel):
    """C (m × n at ``c``) ← alpha·op(T)·B (side L) or alpha·B·op(T) (side R), B at ``b``, T
    triangular at ``a``, out of place: one trmm (``kernel="gemm"``: one gemm with T's whole
    square, which needs T's other triangle to be zero), or T split into two half-size
    products and one gemm accumulating T's off-diagonal block's part."""
    order = m if side == "L" else n
    if order <= trmm_base:
        if kernel == "gemm":
            if side == "L":
                return [Call("gemm", uplo, m, n, c, k=m, a=a, b=b, trans=trans, alpha=alpha,
                             beta=0.0)]
            return [Call("gemm", uplo, m, n, c, k=n, a=b, b=a, transb=trans, alpha=alpha,
                         beta=0.0)]
        return [Call("trmm_out", uplo, m, n, c, a=a, b=b, side=side, trans=trans, alpha=alpha)]
    t1 = split_point(order, block)
    t2 = order - t1
    a2 = (a[0] + t1, a[1] + t1)
    off = (a[0] + t1, a[1]) if uplo == "L" else (a[0], a[1] + t1)
    lower_op = (uplo == "L") == (trans == "N")

    def rec(mm, nn, cc, bb, aa):
        return _trmm_out_calls(uplo, side, trans, mm, nn, cc, bb, aa, alpha, trmm_base, block,
                               kernel)

    if side == "L":  # rows of B and C split
        c2, b2 = (c[0] + t1, c[1]), (b[0] + t1, b[1])
        head = rec(t1, n, c, b, a) + rec(t2, n, c2, b2, a2)
        if lower_op:  # C2 += P21·B1
            return head + [Call("gemm", uplo, t2, n, c2, k=t1, a=off, b=b, trans=trans,
                                alpha=alpha)]
        return head + [Call("gemm", uplo, t1, n, c, k=t2, a=off, b=b2, trans=trans,  # C1 += P12·B2
                            alpha=alpha)]
    c2, b2 = (c[0], c[1] + t1), (b[0], b[1] + t1)  # columns split
    head = rec(m, t1, c, b, a) + rec(m, t2, c2, b2, a2)
    if lower_op:  # C1 += B2·P21
        return head + [Call("gemm", uplo, m, t1, c, k=t2, a=b2, b=off, transb=trans, alpha=alpha)]
    return head + [Call("gemm", uplo, m, t2, c2, k=t1, a=b, b=off, transb=trans, alpha=alpha)]


def _flip(t):
    return "N" if t == "C" else "C"


def transpose_call(c: Call, n: int) -> Call:
    """The same call on the conjugate transpose of every matrix of the buffer: what turns a
    lower-triangular plan into the upper one (X ↔ Xᴴ: products reverse, uplo and side
    flip). Positions map (i, q·n + j) → (j, q·n + i); alphas and betas are real.

    Examples
    --------
    >>> transpose_call(Call("trmm", "L", 3, 2, (5, 1), a=(5, 5), side="L"), 8)
    Call(routine='trmm', uplo='U', m=2, n=3, c=(1, 5), k=0, a=(5, 5), b=(0, 0), side='R', trans='N', transb='N', alpha=1.0, beta=1.0, stream=0, event=-1)
    """
    def tp(p):
        q = p[1] // n
        return (p[1] - q * n, p[0] + q * n)

    r = c.routine
    uplo = "U" if c.uplo == "L" else "L"
    if r in STREAM_CALLS:
        return c
    if r in ("lauum", "trtri", "trsm_inv", "potrf"):
        return c._replace(uplo=uplo, c=tp(c.c))
    if r == "syrk":
        return c._replace(uplo=uplo, c=tp(c.c), a=tp(c.a), trans=_flip(c.trans))
    if r in ("trmm", "trsm", "trmm_out"):
        return c._replace(uplo=uplo, m=c.n, n=c.m, c=tp(c.c), a=tp(c.a),
                          b=tp(c.b) if r == "trmm_out" else c.b,
                          side="R" if c.side == "L" else "L")
    if r == "gemm":
        return c._replace(uplo=uplo, m=c.n, n=c.m, c=tp(c.c), a=tp(c.b), b=tp(c.a),
                          trans=c.transb, transb=c.trans)
    raise ValueError(f"unknown routine {r!r} in plan")


def _gemm_lauum_params(dtype, overrides):
    name = dtype_info(dtype).name
    p = dict(_blocking("gemm_lauum")[name])
    unknown = set(overrides) - set(p)
    if unknown:
        raise TypeError(f"unknown inverse_plan parameter(s): {', '.join(sorted(unknown))}")
    p.update({k: v for k, v in overrides.items() if v is not None})
    if p["trmm_kernel"] not in ("trmm", "gemm"):
        raise ValueError(f"trmm_kernel must be 'trmm' or 'gemm', got {p['trmm_kernel']!r}")
    if p["lauum_diag"] not in ("gemm", "trmm"):
        raise ValueError(f"lauum_diag must be 'gemm' or 'trmm', got {p['lauum_diag']!r}")
    if not isinstance(p["trtri_scratch"], bool):
        raise ValueError(f"trtri_scratch must be a bool, got {p['trtri_scratch']!r}")
    if p["fill"] not in ("where", "kernel"):
        raise ValueError(f"fill must be 'where' or 'kernel', got {p['fill']!r}")
    if p["syrk_kernel"] not in ("syrk", "gemm"):
        raise ValueError(f"syrk_kernel must be 'syrk' or 'gemm', got {p['syrk_kernel']!r}")
    for k in ("trtri_base", "block", "trmm_base", "lauum_block", "streams", "potrf_base"):
        if not isinstance(p[k], int) or isinstance(p[k], bool) or p[k] < 1:
            raise ValueError(f"{k} must be a positive int, got {p[k]!r}")
    return p


def inverse_plan(n: int, upper: bool = False, *, dtype="float64", **params) -> Plan:
    """The inverse from a Cholesky factor in two buffers (three with ``trtri_scratch``), its
    flops in GEMM, on several streams.

    Matrix 0 holds L (lower; ``upper``: U), matrix 1 starts as the identity.

    1. **trtri into matrix 1**, recursive: V11 = L11⁻¹ and V22 = L22⁻¹ (independent:
       different streams), then L21 ← L21·V11 (trmm in place, in matrix 0, which is no
       longer needed afterwards) and V21 ← −V22·L21 (out of place). Orders <=
       ``trtri_base`` are one cuBLAS trsm on the identity block of V (no copies);
       triangles of order > ``trmm_base`` are split into half-size products and a gemm;
       ``trmm_kernel="gemm"`` runs the remaining out-of-place trmm as gemm (V's other
       triangle is exactly zero, so that is exact; the zero half is wasted work).
       ``trtri_scratch=True`` puts L21·V11 in a third matrix instead (both products out of
       place, no in-place ordering; one more n × n buffer).
    2. **lauum out of place, one gemm per block row** (``lauum_block`` rows each): block
       row i of A⁻¹'s lower triangle is R[i, :i+1] = V[i:, i]ᴴ·V[i:, :i+1], reading V only,
       so all block rows are independent (spread over the streams); ``lauum_diag="trmm"``
       does the diagonal block's triangle with a trmm and the rest with a gemm instead of
       one gemm over the zero triangle.

    The upper plan is the same on the conjugate transposes (:func:`transpose_call`). The
    result is the ``uplo`` triangle of matrix 0. Work: n³/3 + n³/3 multiply-adds as
    potri, plus the wasted triangles (about ``1.5·lauum_block/n`` of the total with
    ``lauum_diag="gemm"``). Parameters default to ``BLOCKING["gemm_lauum"][dtype]``;
    ``streams`` (default 2) schedules the calls with :func:`schedule`.

    Examples
    --------
    >>> p = inverse_plan(1000, dtype="float64", streams=2)   # float64: trtri_scratch
    >>> p.matrices, p.identity, p.result, p.streams
    (3, (1,), 0, 2)
    >>> inverse_plan(1000, dtype="float32").matrices
    2
    >>> check_schedule(p.calls)
    """
    p = _gemm_lauum_params(dtype, params)
    return _inverse_plan(int(n), bool(upper), tuple(sorted(p.items())))


@functools.lru_cache(maxsize=64)
def _inverse_plan(n, upper, items):
    p = dict(items)
    return _gemm_lauum_plan(_inverse_calls(n, p), n, upper, p)


def _gemm_lauum_plan(calls, n, upper, p, **extra) -> Plan:
    """The :class:`Plan` of lower-triangular gemm_lauum-style ``calls`` (their upper
    transposes with ``upper``), scheduled on ``p["streams"]`` streams, in 2 matrices (3 with
    ``trtri_scratch``), matrix 1 the identity, the result in matrix 0."""
    if upper:
        calls = [transpose_call(c, n) for c in calls]
    calls = schedule(calls, p["streams"])
    return Plan(tuple(calls), n, upper, matrices=3 if p["trtri_scratch"] else 2, identity=(1,),
                result=0, streams=max((c.stream for c in calls), default=0) + 1, **extra)


def _potrf_calls(n, p):
    """Recursive blocked Cholesky (lower) in place on matrix 0: L11 = potrf(A11),
    L21 = A21·L11⁻ᴴ (trsm), A22 −= L21·L21ᴴ (syrk, or gemm on the whole square with
    ``syrk_kernel="gemm"``), then A22; orders <= ``potrf_base`` are one cuSOLVER potrf whose
    ``k`` field is its info slot. Returns (calls, block offsets)."""
    pb, blk = p["potrf_base"], p["block"]
    calls, slots = [], []

    def rec(nn, o):
        if nn <= max(pb, 1):
            calls.append(Call("potrf", "L", nn, nn, (o, o), k=len(slots)))
            slots.append(o)
            return
        k = split_point(nn, blk)
        m = nn - k
        rec(k, o)
        calls.append(Call("trsm", "L", m, k, (o + k, o), a=(o, o), side="R", trans="C"))
        if p["syrk_kernel"] == "gemm":
            calls.append(Call("gemm", "L", m, m, (o + k, o + k), k=k, a=(o + k, o), b=(o + k, o),
                              transb="C", alpha=-1.0))
        else:
            calls.append(Call("syrk", "L", m, m, (o + k, o + k), k=k, a=(o + k, o), trans="N",
                              alpha=-1.0))
        rec(m, o + k)

    if n > 0:
        rec(n, 0)
    return calls, tuple(slots)


def spd_inverse_plan(n: int, upper: bool = False, *, dtype="float64", **params) -> Plan:
    """A → A⁻¹ as one plan: a recursive blocked Cholesky factorization in place on matrix 0
    (cuSOLVER potrf on diagonal blocks of order <= ``potrf_base``, trsm, syrk or gemm for
    the trailing update), then :func:`inverse_plan`'s calls on the same buffer, all
    scheduled together, so the inverse of the first diagonal blocks can start while the
    factorization's trailing updates still run on another stream.

    Matrix 0 holds A (its ``uplo`` triangle is read), matrix 1 the identity; the result is
    the ``uplo`` triangle of matrix 0; ``info_slots`` gives the potrf blocks' offsets.
    Parameters as :func:`inverse_plan` plus ``potrf_base`` and ``syrk_kernel`` (defaults in
    ``BLOCKING["gemm_lauum"]``). Work: potrf n³/3 + the inverse's.

    Examples
    --------
    >>> p = spd_inverse_plan(3000, potrf_base=1024)
    >>> p.info_slots
    (0, 768, 1536, 2304)
    >>> check_schedule(p.calls)
    """
    p = _gemm_lauum_params(dtype, params)
    return _spd_inverse_plan(int(n), bool(upper), tuple(sorted(p.items())))


@functools.lru_cache(maxsize=64)
def _spd_inverse_plan(n, upper, items):
    p = dict(items)
    fac, slots = _potrf_calls(n, p)
    return _gemm_lauum_plan(fac + _inverse_calls(n, p), n, upper, p, info_slots=slots)


def _inverse_calls(n, p):
    """The lower-triangular calls of :func:`inverse_plan` (unscheduled)."""
    tb, blk, mb, kern = p["trtri_base"], p["block"], p["trmm_base"], p["trmm_kernel"]

    def V(i, j):
        return (i, n + j)

    def trtri(nn, o):
        if nn <= max(tb, 1):
            return [Call("trsm", "L", nn, nn, V(o, o), a=(o, o), side="L", trans="N")]
        k = split_point(nn, blk)
        m = nn - k
        if p["trtri_scratch"]:  # L21·V11 into matrix 2, then V21 = −V22·that: all out of place
            W = (o + k, 2 * n + o)
            return (trtri(k, o) + trtri(m, o + k)
                    + _trmm_out_calls("L", "R", "N", m, k, W, (o + k, o), V(o, o), 1.0, mb, blk,
                                      kern)
                    + _trmm_out_calls("L", "L", "N", m, k, V(o + k, o), W, V(o + k, o + k),
                                      -1.0, mb, blk, kern))
        return (trtri(k, o) + trtri(m, o + k)
                + _trmm_calls("L", "R", "N", m, k, (o + k, o), V(o, o), 1.0, mb, blk)
                + _trmm_out_calls("L", "L", "N", m, k, V(o + k, o), (o + k, o), V(o + k, o + k),
                                  -1.0, mb, blk, kern))

    calls = trtri(n, 0) if n > 0 else []
    lb = p["lauum_block"]
    for i0 in range(0, n, lb):
        ib = min(lb, n - i0)
        r1 = i0 + ib
        if p["lauum_diag"] == "gemm":
            calls.append(Call("gemm", "L", ib, r1, (i0, 0), k=n - i0, a=V(i0, i0), b=V(i0, 0),
                              trans="C", beta=0.0))
        else:
            calls += _trmm_out_calls("L", "L", "C", ib, r1, (i0, 0), V(i0, 0), V(i0, i0), 1.0,
                                     mb, blk, "trmm")
            if r1 < n:
                calls.append(Call("gemm", "L", ib, r1, (i0, 0), k=n - r1, a=V(r1, i0),
                                  b=V(r1, 0), trans="C"))
    return calls


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
    :func:`spd_inverse_plan`, the matrices A themselves); returns the Hermitian inverses
    (..., n, n). ``info``: a list that receives each matrix's factorization info. Streams and events are ignored: the list order is
    the sequential order that :func:`check_schedule` proves the streams equivalent to."""
    n = factor.shape[-1]
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
