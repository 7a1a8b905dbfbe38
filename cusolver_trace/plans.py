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

This module holds the table and the plan builders, and is where every public name is
imported from; the rest lives in private modules: :mod:`._plan_types` (:class:`Call`,
:class:`Plan`, :func:`element_offset`), :mod:`._plan_schedule` (the blocks each call touches,
the streams and events: :func:`schedule`, :func:`check_schedule`) and
:mod:`._plan_reference` (the torch executor: :func:`run_plan_reference`,
:func:`run_inverse_reference`).
"""
from __future__ import annotations

import functools

import numpy as np

from ._dtypes import dtype_info
from ._plan_reference import (first_info, hermitian_fill, run_inverse_reference,
                              run_plan_reference, triangle)
from ._plan_schedule import (STREAM_CALLS, ScheduleError, access, call_flops, check_schedule,
                             schedule)
from ._plan_types import Call, Plan, element_offset

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
               "potrf_base": 1024, "syrk_kernel": "gemm", "fill": "where", "trtri_scratch": False,
               "trtri_batched": False}
#: Measured on the H200 (float64, checks on, torch interleaved): trtri_base 1024 beats 512
#: (4.07 vs 4.26 ms at n = 4096, 14.8 vs 16.3 ms at 8192; 79.9 vs 79.1 ms at 16384, within
#: noise); 2 streams beat 1 (16.3 vs 17.9 ms at 8192, 79.1 vs 86.9 at 16384); trmm as gemm,
#: lauum_block 256 / 1024, trmm_base 512 / 2048, 3 streams: within ±3 %.
#: Then (2026-12-01, same bench, devrun/s3/A/plans.log): float64 trtri_scratch beats the
#: in-place trmm (12.76 vs 14.68 ms at 8192, 3.77 vs 4.12 at 4096, 79.8 vs 79.5 at 16384:
#: one more n x n buffer); float32 / complex64 / complex128 take trtri_base 1024 and the
#: mirror kernel (fill="kernel": 13.19 vs 14.59 ms float32 8192, 17.68 vs 20.08 complex128
#: 6144, 17.75 vs 19.16 complex64 6144).
#: Then (issue 27, memory): float64 puts that scratch in the result's unused triangle
#: (trtri_scratch="triangle") and mirrors in place (fill="kernel"): two n x n buffers, the
#: same speed (12.33 vs 12.08 ms at 8192, 72.7 vs 74.6 at 16384). A grid of 72 combinations
#: (2026-12-03, benchmarks/results/h200-2026-12-03-c, scripts/runC.sh, no check): trtri_base
#: 512, 6 streams, lauum_block 256 is the best or within 1 % of it at 4096 / 8192 / 16384:
#: 2.47 / 10.63 / 66.2 ms against 3.15 / 11.47 / 71.1 with 1024, 2 streams, 512.
#: Then (2026-12-03, session 11, same bench: benchmarks/results/h200-2026-12-03-d, run2_tune3.txt,
#: scripts/tune3.py): the diagonal blocks
#: inverted by one batched trsm (trtri_batched) with trtri_base 512, 4 streams: 1.956 / 8.885 /
#: 63.26 ms at 4096 / 8192 / 16384 against 2.577 / 9.965 / 66.72 with the trsm per block
#: (trtri_base 128 / 256 and 6 streams within 1-8 % of it; lauum_block 512 slower).
_GEMM_LAUUM_BY_DTYPE = {"float64": {"trtri_base": 512, "streams": 4, "lauum_block": 256,
                                    "trtri_scratch": "triangle", "fill": "kernel",
                                    "trtri_batched": True},
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


# --------------------------------------------------------------------------- the two-buffer inverse

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
    Call(routine='trmm', uplo='U', m=2, n=3, c=(1, 5), k=0, a=(5, 5), b=(0, 0), side='R', trans='N', transb='N', alpha=1.0, beta=1.0, stream=0, event=-1, blocks=())
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
    if r in ("trmm", "trsm", "trmm_out", "trsm_batched"):
        return c._replace(uplo=uplo, m=c.n, n=c.m, c=tp(c.c), a=tp(c.a),
                          b=tp(c.b) if r == "trmm_out" else c.b,
                          side="R" if c.side == "L" else "L",
                          blocks=tuple((tp(ci), tp(ai)) for ci, ai in c.blocks))
    if r == "gemm":
        return c._replace(uplo=uplo, m=c.n, n=c.m, c=tp(c.c), a=tp(c.b), b=tp(c.a),
                          trans=c.transb, transb=c.trans)
    raise ValueError(f"unknown routine {r!r} in plan")


def _order(n) -> int:
    """``n`` as the plans' matrix order: an int >= 0 (numpy integers too, not bool)."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
        raise ValueError(f"n must be an int >= 0, got {n!r}")
    return int(n)


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
    if not (isinstance(p["trtri_scratch"], bool) or p["trtri_scratch"] == "triangle"):
        raise ValueError(f"trtri_scratch must be True, False or 'triangle', got "
                         f"{p['trtri_scratch']!r}")
    if p["fill"] not in ("where", "kernel"):
        raise ValueError(f"fill must be 'where' or 'kernel', got {p['fill']!r}")
    if not isinstance(p["trtri_batched"], bool):
        raise ValueError(f"trtri_batched must be True or False, got {p['trtri_batched']!r}")
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
       ``trtri_batched``: all of them at once, before the rest, one cublas<t>trsmBatched
       per order (``"trsm_batched"``; the recursion then splits at multiples of
       ``min(block, trtri_base)``);
       triangles of order > ``trmm_base`` are split into half-size products and a gemm;
       ``trmm_kernel="gemm"`` runs the remaining out-of-place trmm as gemm (V's other
       triangle is exactly zero, so that is exact; the zero half is wasted work).
       ``trtri_scratch=True`` puts L21·V11 in a third matrix instead (both products out of
       place, no in-place ordering; one more n × n buffer); ``trtri_scratch="triangle"``
       puts it in matrix 0's other (strict upper) triangle, which nothing reads: out of
       place in two buffers (the sub-problem of order m + k at offset o uses the m × k
       block at rows o…o+m−1, columns o+m…o+m+k−1).
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
    >>> p = inverse_plan(1000, dtype="float64", streams=2)   # float64: scratch in a triangle
    >>> p.matrices, p.identity, p.result, p.streams
    (2, (1,), 0, 2)
    >>> inverse_plan(1000, trtri_scratch=True).matrices
    3
    >>> inverse_plan(1000, dtype="float32").matrices
    2
    >>> check_schedule(p.calls)
    """
    p = _gemm_lauum_params(dtype, params)
    return _inverse_plan(_order(n), bool(upper), tuple(sorted(p.items())))


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
    return Plan(tuple(calls), n, upper, matrices=3 if p["trtri_scratch"] is True else 2,
                identity=(1,),
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
    ``BLOCKING["gemm_lauum"]``). With ``trtri_batched`` (float64's default) the diagonal
    blocks' inversion waits for the whole factorization instead of overlapping it (22.8
    against 22.3 ms at n = 8192 float64 on the H200, while the inverse alone gains 11 %:
    ``benchmarks/results/h200-2026-12-03-d/run2_tune3.txt``). Work: potrf n³/3 + the
    inverse's.

    Examples
    --------
    >>> p = spd_inverse_plan(3000, potrf_base=1024)
    >>> p.info_slots
    (0, 768, 1536, 2304)
    >>> check_schedule(p.calls)
    """
    p = _gemm_lauum_params(dtype, params)
    return _spd_inverse_plan(_order(n), bool(upper), tuple(sorted(p.items())))


@functools.lru_cache(maxsize=64)
def _spd_inverse_plan(n, upper, items):
    p = dict(items)
    fac, slots = _potrf_calls(n, p)
    return _gemm_lauum_plan(fac + _inverse_calls(n, p), n, upper, p, info_slots=slots)


def _inverse_calls(n, p):
    """The lower-triangular calls of :func:`inverse_plan` (unscheduled)."""
    tb, blk, mb, kern = p["trtri_base"], p["block"], p["trmm_base"], p["trmm_kernel"]
    leaves: dict = {}   # order -> offsets of the diagonal blocks inverted together

    def V(i, j):
        return (i, n + j)

    def trtri(nn, o):
        if nn <= max(tb, 1):
            if p["trtri_batched"]:
                leaves.setdefault(nn, []).append(o)
                return []
            return [Call("trsm", "L", nn, nn, V(o, o), a=(o, o), side="L", trans="N")]
        k = split_point(nn, min(blk, tb))
        m = nn - k
        if p["trtri_scratch"]:  # L21·V11 into scratch, then V21 = −V22·that: all out of place
            # matrix 2, or the m × k block at (o, o + m) of matrix 0: inside its strict upper
            # triangle (rows < o + m <= columns), which holds nothing the plan reads
            W = (o, o + m) if p["trtri_scratch"] == "triangle" else (o + k, 2 * n + o)
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
    calls = [Call("trsm", "L", nn, nn, V(o[0], o[0]), a=(o[0], o[0]), side="L", trans="N")
             if len(o) == 1 else
             Call("trsm_batched", "L", nn, nn, V(o[0], o[0]), a=(o[0], o[0]), side="L",
                  trans="N", blocks=tuple((V(i, i), (i, i)) for i in o))
             for nn, o in leaves.items()] + calls
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
