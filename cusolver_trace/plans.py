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

from typing import NamedTuple

import torch

from ._dtypes import dtype_info

__all__ = ["BLOCKING", "Call", "element_offset", "split_point", "lauum_plan", "trtri_plan",
           "run_plan_reference", "triangle"]

#: trmm whose triangle has order > ``trmm_base`` into two half-size trmm and one gemm.
#: ``lauum_base`` may be a dict by dtype name. Defaults measured on the H200 (rec_trtri_lauum):
#: the trsm kernel beats Xtrtri blocks (25.8 vs 27.6 ms, float64 n = 8192); trtri_base 1024
#: beats 512 / 256 / 128 (24.8 vs 25.8 / 27.2 / 28.7 ms); cuSOLVER's own lauum on the whole
#: matrix beats the recursive syrk/trmm/gemm lauum in float64 (23.1 vs 24.8 ms at 8192) and
#: complex128 (26.7 vs 28.3 ms at 6144), ties in complex64, and loses badly in float32
#: (29.7 vs 20.9 ms at 8192): float32 recurses from 512; syrk_base / trmm_base change < 2 %.
BLOCKING = {"lauum_base": {"float32": 512, "float64": 16384, "complex64": 16384,
                           "complex128": 16384},
            "trtri_base": 1024, "block": 256, "syrk_base": 2048, "trmm_base": 2048,
            "trtri_kernel": "trsm"}




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


def element_offset(i: int, j: int, lda: int) -> int:
    """Offset in elements of element (i, j) of a column-major matrix: ``i + j·lda``."""
    return i + j * lda


def split_point(n: int, block: int) -> int:
    """Where a recursive step splits order ``n``: n/2 rounded up to a multiple of
    ``block`` (so that big blocks stay aligned), kept inside ``[1, n - 1]``."""
    k = -(-(n // 2) // block) * block
    return min(max(k, 1), n - 1)


def _syrk_calls(uplo, n, k, c, a, syrk_base, block):
    """C (order n at ``c``) += Wᴴ·W (lower; W the k×n panel at ``a``) or W·Wᴴ (upper;
    W n×k): one syrk/herk, or split into two half-size ones and one gemm."""
    trans = "C" if uplo == "L" else "N"
    if n <= syrk_base:
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
    return (_syrk_calls(uplo, n1, k, c, a, syrk_base, block) + [mid]
            + _syrk_calls(uplo, n2, k, c2, a2, syrk_base, block))


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
               dtype="float64", offset: int = 0) -> list[Call]:
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
    ``offset`` places the block at (offset, offset).
    """
    base, block, syrk_base, trmm_base = (BLOCKING[k] if v is None else v for k, v in (
        ("lauum_base", base), ("block", block), ("syrk_base", syrk_base),
        ("trmm_base", trmm_base)))
    if isinstance(base, dict):
        base = base[dtype_info(dtype).name]
    uplo, o = ("U" if upper else "L"), offset
    if n <= max(base, 1):
        return [Call("lauum", uplo, n, n, (o, o))]
    k = split_point(n, block)
    m = n - k
    kw = dict(base=base, block=block, syrk_base=syrk_base, trmm_base=trmm_base)
    d2 = (o + k, o + k)
    if upper:
        panel = (o, o + k)  # W12, k × m
        mid = (_syrk_calls(uplo, k, m, (o, o), panel, syrk_base, block)
               + _trmm_calls(uplo, "R", "C", k, m, panel, d2, 1.0, trmm_base, block))
    else:
        panel = (o + k, o)  # W21, m × k
        mid = (_syrk_calls(uplo, k, m, (o, o), panel, syrk_base, block)
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


def _set_triangle(view, value, uplo, hermitian=False):
    keep = torch.ones(view.shape, dtype=torch.bool, device=view.device)
    view.copy_(torch.where(_tri(keep, uplo), value, view))
    if hermitian and view.is_complex():  # herk / lauum leave a real diagonal (imaginary part 0)
        view.diagonal().imag.zero_()


def run_plan_reference(plan, buf: torch.Tensor, lda: int, base: int = 0) -> None:
    """Execute ``plan`` with torch ops on a flat column-major buffer, in place.

    ``buf`` is a 1-D tensor holding a column-major matrix with leading
    dimension ``lda`` starting at element ``base``; every block is the
    ``as_strided`` view at :func:`element_offset` — the same offsets the GPU
    executor turns into device pointers. lauum/trtri/syrk write only their
    ``uplo`` triangle, as cuSOLVER/cuBLAS do. For tests and for CPU tensors
    (not tuned for speed).
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
            C.copy_(c.alpha * (A @ B) + c.beta * C)
        else:
            raise ValueError(f"unknown routine {c.routine!r} in plan")

