"""Inverse of A = L·Lᴴ (or Uᴴ·U) from its Cholesky factor: torch's way and faster ones.

torch's CUDA ``cholesky_inverse`` solves with the identity (``cusolverDnXpotrs``,
nrhs = n: 2n³ flops in ``trsm``), where ``?potri`` needs 2n³/3 (LAWN 41). This
module adds methods that do the potri amount of work in GEMM-class cuBLAS
kernels, all on torch CUDA tensors ``(..., n, n)`` (float32, float64,
complex64, complex128), returning the **full Hermitian** inverse:

================== =============================================================
method             what runs (per matrix unless batched)
================== =============================================================
``torch``          ``torch.cholesky_inverse`` itself
``potrs``          ``cusolverDnXpotrs`` on the identity (torch's batch-1 path)
``potri``          ``cusolverDn<t>potri`` + mirror of the triangle
``trsm``           two ``cublas<t>trsm`` on the identity (torch >= 2.12, batch <= 8)
``trsm_batched``   two ``cublas<t>trsmBatched`` on the identity, whole batch at once
``trtri_lauum``    ``cusolverDnXtrtri`` (W = L⁻¹), then W ← Wᴴ·W by a *recursive
                   blocked lauum* (``cublas<t>syrk``/``herk``, ``trmm``, ``gemm``;
                   ``cusolverDn<t>lauum`` on diagonal blocks <= ``BLOCKING["lauum_base"]``:
                   by default one lauum for the whole matrix up to n = 16384, float32
                   recursing from 512 — what measured fastest on an H200)
``rec_trtri_lauum`` the same, with trtri also recursive: two half-size inverses
                   and two ``trmm`` per level; diagonal blocks <= ``BLOCKING["trtri_base"]``
                   inverted by ``cublas<t>trsm`` on an identity (``Xtrtri`` alone takes
                   44 ms at n = 8192 on an H200, 4 TFLOP/s: this is the method's gain)
``auto``           chosen by shape from :data:`AUTO_TABLE`
================== =============================================================

plus :func:`potrf_trsm_batched`, an end-to-end A → A⁻¹ path (one
``potrfBatched`` and two ``trsmBatched`` on one column-major buffer).

The recursive algorithms are written as **plans**: lists of :class:`Call`
(routine, sizes, block offsets) made by the pure functions :func:`lauum_plan`
and :func:`trtri_plan`. A plan runs on the GPU through the raw cuBLAS /
cuSOLVER bindings (pointer = base + (i + j·lda)·itemsize, see
:func:`element_offset`) or on the CPU through :func:`run_plan_reference`
(torch ops on ``as_strided`` views of the same column-major buffer, same
offsets), so the blocking and its index arithmetic are tested without a GPU.

Accuracy: each method is judged by LAPACK's ``?pot03`` ratio
(:func:`cusolver_trace.checks.pot03` < 30). Flop counts (LAWN 41, real):
potri (= trtri + lauum) 2n³/3; potrs/trsm on the identity 2n³.
"""
from __future__ import annotations

from typing import Callable, NamedTuple

import numpy as np
import torch

from . import _cuda_impl as _cu
from . import _lapack_impl as _cpu
from ._dtypes import dtype_info

__all__ = [
    "METHODS", "GPU_ONLY_METHODS", "AUTO_TABLE", "BLOCKING", "FLOP_COUNT",
    "auto_method", "inverse", "inverse_ex", "cuda_inverse", "potrf_trsm_batched",
    "Call", "lauum_plan", "trtri_plan", "split_point", "element_offset", "run_plan_reference",
]

METHODS = ("auto", "torch", "potrs", "potri", "trsm", "trsm_batched", "trtri_lauum",
           "rec_trtri_lauum")
"""Methods of :func:`inverse` / :func:`cuda_inverse` (inverse from the factor)."""

GPU_ONLY_METHODS = ("trsm", "trsm_batched")
"""cuBLAS-only methods: CPU tensors raise ValueError for them."""

FLOP_COUNT = {"torch": "inverse_potrs", "potrs": "inverse_potrs", "trsm": "inverse_potrs",
              "trsm_batched": "inverse_potrs", "potri": "potri", "trtri_lauum": "potri",
              "rec_trtri_lauum": "potri"}
"""The LAWN 41 count of the work each method's algorithm does on CUDA
(:func:`cusolver_trace.checks.flops` names). torch on the CPU runs potri."""

#: Which method ``"auto"`` picks. ONE table: rules are tried in order, the first whose
#: conditions all hold wins. Conditions: ``device`` ("cuda"/"cpu"), ``batch_min``,
#: ``batch_max``, ``n_min``, ``n_max`` (inclusive), ``dtypes`` (tuple of names).
#: Source: CUDA-event medians on an NVIDIA H200, torch 2.11.0+cu130, cuSOLVER 12.0.4 /
#: cuBLAS 13.1 (`cusolver-trace sweep`, 2026-11-30); time relative to torch.cholesky_inverse
#: (< 1 = faster), rec_trtri_lauum with the default BLOCKING: float64 1.03 / 0.85 / 0.70 / 0.49
#: (n = 4096 / 6144 / 8192 / 16384); float32 0.84 / 0.66 / 0.58 (6144 / 8192 / 12288);
#: complex64 0.77 / 0.61 (4096 / 6144); complex128 0.60 (6144), 0.83 (4096, earlier blocking).
#: trsm_batched at n = 512: 0.46–0.86 (batch 8 – 1000); at n <= 128 torch's MAGMA path
#: (0.1–0.3 ms) beats the Python-driven raw path (0.35–0.7 ms, host-bound). Shapes not
#: measured fall through to torch. Update these rows from `cusolver-trace sweep`.
AUTO_TABLE = {
    "cpu: LAPACK potri (torch's CPU path)": dict(device="cpu", method="potri"),
    "batches of 512 x 512": dict(device="cuda", batch_min=2, n_min=512, n_max=512,
                                 method="trsm_batched"),
    "one large complex matrix": dict(device="cuda", batch_max=1, n_min=4096,
                                     dtypes=("complex64", "complex128"), method="rec_trtri_lauum"),
    "one large matrix": dict(device="cuda", batch_max=1, n_min=6144, method="rec_trtri_lauum"),
    "otherwise: torch's own choice": dict(method="torch"),
}

#: Recursive blocking: diagonal blocks of order <= ``lauum_base`` go to cuSOLVER ``lauum``, those
#: <= ``trtri_base`` to ``trtri_kernel`` (``"trsm"``: cuBLAS trsm on an identity in a workspace;
#: ``"xtrtri"``: ``cusolverDnXtrtri``); split points are multiples of ``block``; a syrk/herk
#: update of order > ``syrk_base`` is split into two half-size syrk/herk and one gemm, and a
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


def auto_method(n: int, batch: int = 1, dtype="float64", device="cuda") -> str:
    """The method ``"auto"`` runs for ``batch`` matrices of order ``n`` (first matching
    rule of :data:`AUTO_TABLE`)."""
    dev = torch.device(device).type
    name = dtype_info(dtype).name
    for rule in AUTO_TABLE.values():
        if (rule.get("device", dev) == dev and batch >= rule.get("batch_min", 0)
                and batch <= rule.get("batch_max", batch) and n >= rule.get("n_min", 0)
                and n <= rule.get("n_max", n) and name in rule.get("dtypes", (name,))):
            return rule["method"]
    raise LookupError(f"AUTO_TABLE has no rule for n={n} batch={batch} {name} on {dev}")


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


# --------------------------------------------------------------------------- executors
def _tri(x, uplo):
    return x.tril() if uplo == "L" else x.triu()


def _op(x, trans):
    return x.mH if trans == "C" else x


def _set_triangle(view, value, uplo):
    keep = torch.ones(view.shape, dtype=torch.bool, device=view.device)
    view.copy_(torch.where(_tri(keep, uplo), value, view))


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
            _set_triangle(C, T.mH @ T if c.uplo == "L" else T @ T.mH, c.uplo)
        elif c.routine in ("trtri", "trsm_inv"):
            T = _tri(C, c.uplo)
            eye = torch.eye(c.n, dtype=C.dtype, device=C.device)
            _set_triangle(C, torch.linalg.solve_triangular(T, eye, upper=c.uplo == "U"), c.uplo)
        elif c.routine == "syrk":
            A = _op(view(c.a, *((c.k, c.n) if c.trans == "C" else (c.n, c.k))), c.trans)
            _set_triangle(C, c.alpha * (A @ A.mH) + c.beta * C, c.uplo)
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


def _cuda_runner(ctx, dt, plans, w: torch.Tensor) -> Callable:
    """A function ``run(plan, base_ptr, info_ptr)`` executing plans through raw cuBLAS /
    cuSOLVER on matrices of ``w`` (contiguous ``(batch, n, n)``, column-major, lda = n).

    Workspaces for every lauum / Xtrtri / trsm_inv block size in ``plans`` are sized once.
    """
    from .raw import cublas as cb
    from .raw import cusolver as cs

    t, cdt, isz, lda = dt.prefix, dt.cuda_data_type, dt.itemsize, w.shape[-1]
    uplo_ = {"L": cb.LOWER, "U": cb.UPPER}
    op_ = {"N": cb.OP_N, "C": cb.OP_C if dt.is_complex else cb.OP_T}
    side_ = {"L": cb.LEFT, "R": cb.RIGHT}
    real_t = dtype_info(dt.real_name).prefix  # syrk / herk take real alpha, beta for complex
    p0 = w.data_ptr()
    lauum_lwork, dbytes, hbytes = 0, 0, 0
    for n, uplo in {(c.n, c.uplo) for p in plans for c in p if c.routine == "lauum"}:
        lauum_lwork = max(lauum_lwork, cs.lauum_bufferSize(t, ctx.solver, uplo_[uplo], n, p0, lda))
    for n, uplo in {(c.n, c.uplo) for p in plans for c in p if c.routine == "trtri"}:
        d, h = cs.Xtrtri_bufferSize(ctx.solver, uplo_[uplo], cs.NON_UNIT, n, cdt, p0, lda)
        dbytes, hbytes = max(dbytes, d), max(hbytes, h)
    work = ctx.workspace(max(dbytes, lauum_lwork * isz))
    host = np.empty(max(hbytes, 1), dtype=np.uint8)
    inv_n = max((c.n for p in plans for c in p if c.routine == "trsm_inv"), default=0)
    inv_ws = torch.empty(inv_n * inv_n, dtype=w.dtype, device=w.device)  # trsm_inv's identity
    flat, masks = w.reshape(-1), {}
    scalars = {}

    def sc(prefix, v):  # host scalars, kept alive for the runner's lifetime
        if (prefix, v) not in scalars:
            scalars[prefix, v] = cb.scalar(prefix, v)
        return scalars[prefix, v].ctypes.data

    def run(plan, base_ptr, info_ptr):
        def p(ij):
            return base_ptr + element_offset(ij[0], ij[1], lda) * isz

        base_elem = (base_ptr - p0) // isz
        for c in plan:
            u = uplo_[c.uplo]
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
                    masks[c.n, c.uplo] = _tri(torch.ones(c.n, c.n, dtype=torch.bool, device=w.device),
                                              c.uplo)
                blk.copy_(torch.where(masks[c.n, c.uplo], x, blk))
            elif c.routine == "syrk":
                cb.syrk(t, ctx.blas, u, op_[c.trans], c.n, c.k, sc(real_t, c.alpha), p(c.a), lda,
                        sc(real_t, c.beta), p(c.c), lda)
            elif c.routine == "trmm":
                cb.trmm(t, ctx.blas, side_[c.side], u, op_[c.trans], cb.NON_UNIT, c.m, c.n,
                        sc(t, c.alpha), p(c.a), lda, p(c.c), lda, p(c.c), lda)
            elif c.routine == "gemm":
                cb.gemm(t, ctx.blas, op_[c.trans], op_[c.transb], c.m, c.n, c.k, sc(t, c.alpha),
                        p(c.a), lda, p(c.b), lda, sc(t, c.beta), p(c.c), lda)
            else:
                raise ValueError(f"unknown routine {c.routine!r} in plan")

    return run


def _zero_pivot_info(w: torch.Tensor) -> torch.Tensor:
    """1-based index of the first exactly-zero diagonal element per matrix (0 if none),
    int32 on w's device: trtri's ``info`` for a singular triangle. No synchronization."""
    zero = (w.diagonal(dim1=-2, dim2=-1) == 0).reshape(w.shape[0], -1)
    first = zero.to(torch.int32).argmax(dim=-1).to(torch.int32) + 1
    return torch.where(zero.any(dim=-1), first, 0).to(torch.int32)


def _trtri_lauum(c: torch.Tensor, upper: bool, recursive: bool):
    """W = L⁻¹ (one Xtrtri, or the recursive trtri plan), then the (recursive) lauum plan,
    on one column-major working copy; returns (full Hermitian inverse, info)."""
    dt = dtype_info(c.dtype)
    n = c.shape[-1]
    w = _cu.colmajor(c)
    inv = trtri_plan(n, upper) if recursive else [Call("trtri", "U" if upper else "L", n, n, (0, 0))]
    mul = lauum_plan(n, upper, dtype=dt.name)
    # the recursive trtri inverts diagonal blocks (trsm reports nothing; Xtrtri's info would be
    # block-relative): report the first zero pivot of the whole factor, as trtri does
    info = _zero_pivot_info(w) if recursive or w.device.type != "cuda" else \
        torch.zeros(w.shape[0], dtype=torch.int32, device=w.device)
    if w.device.type == "cuda":
        from ._gpu import on_device

        with on_device(w.device) as ctx:
            run = _cuda_runner(ctx, dt, (inv, mul), w)
            scratch = torch.zeros(1, dtype=torch.int32, device=w.device)
            for b in range(w.shape[0]):
                base = _cu._ptr(w, b)
                run(inv, base, scratch.data_ptr() if recursive else _cu._ptr(info, b))
                run(mul, base, scratch.data_ptr())
    else:
        flat = w.reshape(-1)
        for b in range(w.shape[0]):
            run_plan_reference(inv, flat, n, b * n * n)
            run_plan_reference(mul, flat, n, b * n * n)
    return _cu.hermitian_from_triangle(_cu.matrices(w, c.shape[:-2]), upper), info


# --------------------------------------------------------------------------- public API
def _zeros_info(c):
    return torch.zeros(int(np.prod(c.shape[:-2], dtype=np.int64)), dtype=torch.int32,
                       device=c.device)


def cuda_inverse(c: torch.Tensor, upper: bool, method: str = "auto"):
    """Inverse from the factor on CUDA, without checks or synchronization: ``(Ainv, info)``.

    Same contract as the :mod:`cusolver_trace._cuda_impl` routines: ``c`` is a
    validated, non-empty CUDA tensor ``(..., n, n)``; ``Ainv`` has c's shape;
    ``info`` is an int32 device tensor of shape ``(batch,)`` (potri's / Xtrtri's
    ``info``, or the first zero diagonal element for the recursive trtri;
    zeros for the solve-based methods, which report nothing).

    Raises
    ------
    ValueError  unknown ``method``.
    """
    if method == "auto":
        batch = int(np.prod(c.shape[:-2], dtype=np.int64))
        method = auto_method(c.shape[-1], batch, c.dtype, "cuda")
    if method == "torch":
        return torch.cholesky_inverse(c, upper=upper), _zeros_info(c)
    if method == "potrs":
        return _cu.potrs_identity(c, upper, "X")
    if method == "potri":
        return _cu.potri(c, upper)
    if method in ("trsm", "trsm_batched"):
        return _cu.trsm_identity_inverse(c, upper, batched=method == "trsm_batched")
    if method in ("trtri_lauum", "rec_trtri_lauum"):
        return _trtri_lauum(c, upper, recursive=method == "rec_trtri_lauum")
    raise ValueError(f"method must be one of {METHODS}, got {method!r}")


def _cpu_inverse(c: torch.Tensor, upper: bool, method: str):
    if method == "auto":
        method = auto_method(c.shape[-1], 1, c.dtype, "cpu")
    if method in GPU_ONLY_METHODS:
        raise ValueError(f"method {method!r} runs cuBLAS and needs a CUDA tensor")
    if method == "torch":
        return torch.cholesky_inverse(c, upper=upper), _zeros_info(c)
    if method in ("trtri_lauum", "rec_trtri_lauum"):  # the same plans, torch ops (for checking)
        return _trtri_lauum(c, upper, recursive=method == "rec_trtri_lauum")
    if method not in ("potri", "potrs"):
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    a = c.detach().resolve_conj().resolve_neg().numpy()
    if method == "potri":
        x, info = _cpu.potri(a, upper)
    else:
        x, info = _cpu.potrs(a, np.broadcast_to(np.eye(a.shape[-1], dtype=a.dtype), a.shape), upper)
    return torch.from_numpy(np.ascontiguousarray(x)), torch.from_numpy(info.reshape(-1))


def _validate(L) -> torch.Tensor:
    if not isinstance(L, torch.Tensor):
        raise TypeError(f"L must be a torch tensor, got {type(L).__name__}")
    if L.ndim < 2 or L.shape[-1] != L.shape[-2]:
        raise ValueError(f"L must have shape (..., n, n), got {tuple(L.shape)}")
    dtype_info(L.dtype)
    return L


def inverse_ex(L: torch.Tensor, upper: bool = False, method: str = "auto"):
    """:func:`inverse` without checks and without synchronizing: ``(Ainv, info)``,
    ``info`` int32 of shape ``(batch,)`` on L's device (see :func:`cuda_inverse`)."""
    L = _validate(L)
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    if L.numel() == 0:
        return torch.zeros_like(L), _zeros_info(L)
    if L.device.type == "cuda":
        return cuda_inverse(L, upper, method)
    return _cpu_inverse(L, upper, method)


_ROUTINE = {"torch": "torch.cholesky_inverse", "potrs": "cusolverDnXpotrs",
            "potri": "cusolverDn{T}potri", "trsm": "cublas{T}trsm",
            "trsm_batched": "cublas{T}trsmBatched", "trtri_lauum": "cusolverDnXtrtri",
            "rec_trtri_lauum": "recursive trtri (cublas{T}trmm, cublas{T}trsm on diagonal blocks)"}


def inverse(L: torch.Tensor, upper: bool = False, method: str = "auto") -> torch.Tensor:
    """Full Hermitian inverse of A = L·Lᴴ (or Uᴴ·U) from its Cholesky factor.

    Parameters
    ----------
    L : torch.Tensor (..., n, n)
        The factor (e.g. ``torch.linalg.cholesky(A)``); only its lower
        (``upper=False``) or upper triangle is read. float32, float64,
        complex64, complex128; CUDA (cuSOLVER/cuBLAS on torch's current stream)
        or CPU (LAPACK through scipy).
    upper : bool
        L holds U with A = Uᴴ·U (``uplo = upper``).
    method : str
        One of :data:`METHODS` (table in the module docstring). ``"auto"``
        picks by shape from :data:`AUTO_TABLE`. On the CPU, ``"potri"`` and
        ``"potrs"`` are LAPACK, ``"torch"`` torch's own (LAPACK potri),
        ``"trtri_lauum"`` / ``"rec_trtri_lauum"`` run the same recursive plans
        with torch ops (for checking, not speed); ``"trsm"`` /
        ``"trsm_batched"`` need CUDA.

    Returns
    -------
    torch.Tensor (..., n, n), L's dtype and device: A⁻¹. Exactly Hermitian for
    potri and the trtri_lauum methods (one triangle computed, then mirrored);
    the solve-based methods (torch on CUDA, potrs, trsm) return the solve's
    result as is, Hermitian to rounding.

    Work (LAWN 41 real flops, complex ×4): potri / trtri_lauum methods
    2n³/3 (trtri n³/3 + lauum n³/3); potrs / trsm / torch on CUDA 2n³.

    Raises
    ------
    SingularFactorError  (``numpy.linalg.LinAlgError``) a diagonal element of L
        is exactly zero (synchronizes to read ``info``, as torch does).
    ValueError  unknown method, a cuBLAS-only method on a CPU tensor, non-square L.
    TypeError   not a torch tensor, or unsupported dtype.
    GPUUnavailableError  CUDA tensor but CuPy / nvmath-python missing.
    """
    from .routines import _check_inverse, raise_for_info
    from .errors import SingularFactorError

    x, info = inverse_ex(L, upper, method)
    if L.numel():
        dt, dev = dtype_info(L.dtype), L.device.type
        used = auto_method(L.shape[-1], info.numel(), L.dtype, dev) if method == "auto" else method
        if dev == "cpu" and used in ("potri", "potrs", "torch"):
            routine = _cpu.routine_name(dt.name, "potrs" if used == "potrs" else "potri")
        else:
            routine = _ROUTINE[used].format(T=dt.prefix.upper())
        batch_shape = tuple(L.shape[:-2])
        raise_for_info(routine, info.reshape(batch_shape), batch_shape, SingularFactorError)
        _check_inverse(routine, x, L, batch_shape)
    return x


def potrf_trsm_batched(A: torch.Tensor, upper: bool = False):
    """End-to-end A → A⁻¹ for batches of small matrices: ``(Ainv, info)``.

    One column-major working copy of A ``(..., n, n)`` (CUDA), one
    ``cusolverDn<t>potrfBatched`` on it, then two ``cublas<t>trsmBatched`` on an
    identity: X = L⁻ᴴ·(L⁻¹·I) (lower) or U⁻¹·(U⁻ᴴ·I) (upper). ``info`` is
    potrfBatched's (int32, shape ``(batch,)``: order of the first non-positive
    leading minor); where it is non-zero the inverse is garbage. No
    synchronization, no checks. Flops (LAWN 41): potrf n³/3 + 2n³.
    """
    from ._gpu import on_device, pointer_array
    from .raw import cublas as cb
    from .raw import cusolver as cs

    dt = dtype_info(A.dtype)
    n, t = A.shape[-1], dt.prefix
    w = _cu.colmajor(A)
    x = torch.eye(n, dtype=A.dtype, device=A.device).expand(w.shape).contiguous()
    info = torch.zeros(w.shape[0], dtype=torch.int32, device=A.device)
    op_h = cb.OP_C if dt.is_complex else cb.OP_T
    ops = (op_h, cb.OP_N) if upper else (cb.OP_N, op_h)
    one = cb.scalar(t, 1.0)
    with on_device(A.device) as ctx:
        pa, px = pointer_array(w), pointer_array(x)
        cs.potrfBatched(t, ctx.solver, cs.UPPER if upper else cs.LOWER, n, pa.data_ptr(), n,
                        info.data_ptr(), w.shape[0])
        for op in ops:
            cb.trsmBatched(t, ctx.blas, cb.LEFT, cb.UPPER if upper else cb.LOWER, op, cb.NON_UNIT,
                           n, n, one.ctypes.data, pa.data_ptr(), n, px.data_ptr(), n, w.shape[0])
    return _cu.matrices(x, A.shape[:-2]), info
