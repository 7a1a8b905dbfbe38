"""CUDA plan executor: runs :mod:`cusolver_trace.plans` plans through raw cuBLAS / cuSOLVER.

Split from :mod:`.cuda` (which keeps the single-call routines and the check kernel);
everything that executes a plan lives here.

Streams. Stream 0 of a plan is torch's current stream (the handles of
:func:`~._context.on_device`). Streams 1, 2, … come from a per-(thread, device) pool of
side streams created once (``torch.cuda.Stream``), each with its own cuBLAS and cuSOLVER
handles bound to it for good (so no handle ever changes stream between calls, and each
handle's default cuBLAS workspace is used by one stream only), and CuPy's view of it
(CuPy-bound routines set the handle's stream to CuPy's current stream on every call, so
side-stream calls are issued with that stream current in CuPy). A plan scheduled by
:func:`cusolver_trace.plans.schedule` forks from stream 0 with an event, and joins back
to it with events before the run returns; tensors that side streams touch are marked
with ``record_stream``. Events (``torch.cuda.Event``, no timing) come from a
per-(thread, device) pool and are re-recorded from run to run (a wait captures the
event's state when it is issued). Workspaces come from torch's caching allocator, one per
stream.
"""
from __future__ import annotations

import contextlib
import threading

import numpy as np
import torch

from .._dtypes import dtype_info
from .. import plans as _plans
from ..plans import (Call, element_offset, hermitian_fill, inverse_plan, lauum_plan,
                     schedule, spd_inverse_plan, triangle, trtri_plan)
from ..raw import _load
from ..raw import cublas as cb
from ..raw import cublas_modes as cbm
from ..raw import cusolver as cs
from . import _mirror
from ._context import cupy_stream, on_device, pointer_array
from ._mirror import copy_triangle, mirror_triangle  # noqa: F401  (tests use mirror_triangle here)
from .cuda import _info, _ptr, _side, colmajor, fill_mode, matrices, operation

__all__ = ["plan_runner", "trtri_lauum", "gemm_lauum", "potrf_gemm_lauum", "potrf_trsm_batched_factor",
           "side_streams", "emulation"]

_pool = threading.local()


class _SideStream:
    """One pooled side stream and the library handles bound to it (made once)."""

    def __init__(self, device_index: int):
        self.torch = torch.cuda.Stream(device=device_index)
        self.ptr = self.torch.cuda_stream
        self.cupy = cupy_stream(_load.cupy(), self.torch, device_index)
        self.blas = cb.create()
        cb.setStream(self.blas, self.ptr)
        self._solver = None

    @property
    def solver(self) -> int:
        if self._solver is None:
            self._solver = cs.create()
            cs.setStream(self._solver, self.ptr)
        return self._solver


def side_streams(device_index: int, k: int) -> list:
    """The first ``k`` pooled side streams of this thread on ``device_index`` (made on first
    use, with the device current)."""
    pools = getattr(_pool, "streams", None)
    if pools is None:
        pools = _pool.streams = {}
    lst = pools.setdefault(device_index, [])
    while len(lst) < k:
        lst.append(_SideStream(device_index))
    return lst[:k]


def _events(device_index: int, k: int) -> list:
    pools = getattr(_pool, "events", None)
    if pools is None:
        pools = _pool.events = {}
    lst = pools.setdefault(device_index, [])
    while len(lst) < k:
        lst.append(torch.cuda.Event())
    return lst[:k]


@contextlib.contextmanager
def emulation(handles, enabled: bool):
    """cuBLAS FP64 fixed-point emulation (``CUBLAS_FP64_EMULATED_FIXEDPOINT_MATH``, strategy
    ``EAGER``) on ``handles`` for the duration of the block; their math mode and strategy
    are restored afterwards. ``enabled=False`` does nothing. Raises
    :class:`NotImplementedError` when the cuBLAS binding has no emulation."""
    if not enabled:
        yield
        return
    why = cbm.emulation_available()
    if why is not None:
        raise NotImplementedError(why)
    emu, eager = cbm.math_mode("FP64_EMULATED_FIXEDPOINT_MATH"), cbm.emulation_strategy("EAGER")
    saved = [(h, cbm.getMathMode(h), cbm.getEmulationStrategy(h)) for h in handles]
    try:
        for h, _, _ in saved:
            cbm.setMathMode(h, emu)
            cbm.setEmulationStrategy(h, eager)
        yield
    finally:
        for h, mode, strategy in saved:
            cbm.setMathMode(h, mode)
            cbm.setEmulationStrategy(h, strategy)


class _Stream:
    """What one plan stream issues with: handles, workspaces, CuPy stream (None: stream 0)."""

    __slots__ = ("blas", "solver", "cupy", "torch", "work", "host", "inv_ws", "scratch")


def plan_runner(ctx, dt, plans, w: torch.Tensor, *, extra=()):
    """A function ``run(plan, base_ptr, info_ptr)`` executing :mod:`cusolver_trace.plans`
    plans through raw cuBLAS / cuSOLVER on matrices of ``w`` (contiguous, column-major
    matrices with lda = ``w.shape[-1]``: ``(batch, n, n)``, or ``(batch, q, n, n)`` for
    the q-matrix plans of :func:`cusolver_trace.plans.inverse_plan`).

    Workspaces for every lauum / Xtrtri / potrf / trsm_inv block size in ``plans`` are
    sized once per stream. ``info_ptr`` receives Xtrtri's info (calls on stream 0; lauum's
    and the side streams' go to scratch); for plans with ``potrf`` blocks it is an int32
    array, block ``k`` writing slot ``k``. Calls with ``stream`` > 0 run on pooled side streams;
    ``record`` / ``wait`` pseudo-calls are cudaEventRecord / cudaStreamWaitEvent. The run
    returns with every side stream joined back to stream 0 when the plan was made by
    :func:`cusolver_trace.plans.schedule`. ``run.handles`` lists the cuBLAS handles used
    (for :func:`emulation`). ``run(plan, base_ptr, info_ptr, bases)``: with ``bases`` (one
    pointer per matrix of a q-matrix plan), matrix j of the plan (columns ``j·n`` to
    ``(j+1)·n - 1``) is addressed from ``bases[j]``, so its matrices may live in separate
    tensors (``extra``: those other than ``w``, marked for the side streams too).
    """
    t, cdt, isz, lda = dt.prefix, dt.cuda_data_type, dt.itemsize, w.shape[-1]
    real_t = dtype_info(dt.real_name).prefix  # syrk / herk take real alpha, beta for complex
    p0 = w.data_ptr()
    calls = [c for p in plans for c in p]
    nstreams = max((c.stream for c in calls), default=0) + 1
    idx = w.device.index if w.device.index is not None else torch.cuda.current_device()
    sides = side_streams(idx, nstreams - 1)
    events = _events(idx, max((c.event for c in calls), default=-1) + 1)
    lauum_lwork, dbytes, hbytes = 0, 0, 0
    for n, uplo in {(c.n, c.uplo) for c in calls if c.routine == "lauum"}:
        lauum_lwork = max(lauum_lwork, cs.lauum_bufferSize(t, ctx.solver, fill_mode(uplo), n, p0, lda))
    for n, uplo in {(c.n, c.uplo) for c in calls if c.routine == "trtri"}:
        d, h = cs.Xtrtri_bufferSize(ctx.solver, fill_mode(uplo), cs.NON_UNIT, n, cdt, p0, lda)
        dbytes, hbytes = max(dbytes, d), max(hbytes, h)
    potrf_lwork = 0
    for n, uplo in {(c.n, c.uplo) for c in calls if c.routine == "potrf"}:
        potrf_lwork = max(potrf_lwork, cs.potrf_bufferSize(t, ctx.solver, fill_mode(uplo), n, p0, lda))
    inv_n = max((c.n for c in calls if c.routine == "trsm_inv"), default=0)
    need_work = any(c.routine in ("lauum", "trtri", "potrf") for c in calls)
    cur = torch.cuda.current_stream(idx)
    res = []
    for s in range(nstreams):
        r = _Stream()
        side = sides[s - 1] if s else None
        r.blas, r.solver = (side.blas, side.solver if need_work else None) if side else (
            ctx.blas, ctx.solver)
        r.cupy, r.torch = (side.cupy, side.torch) if side else (None, cur)
        r.work = (ctx.workspace(max(dbytes, lauum_lwork * isz, potrf_lwork * isz))
                  if need_work else None)
        r.host = np.empty(max(hbytes, 1), dtype=np.uint8)
        r.inv_ws = (torch.empty(inv_n * inv_n, dtype=w.dtype, device=w.device)
                    if inv_n else None)  # trsm_inv's identity
        r.scratch = torch.zeros(1, dtype=torch.int32, device=w.device)
        if side is not None:  # allocated on stream 0, used on the side stream
            for x in (w, *extra, r.work, r.inv_ws, r.scratch):
                if x is not None:
                    x.record_stream(side.torch)
        res.append(r)
    flat, masks, scalars = w.reshape(-1), {}, {}

    def sc(prefix, v):  # host scalars, kept alive for the runner's lifetime
        if (prefix, v) not in scalars:
            scalars[prefix, v] = cb.scalar(prefix, v)
        return scalars[prefix, v].ctypes.data

    def issue(c, r, p, base_elem, info_ptr):
        u = fill_mode(c.uplo)
        if c.routine == "gemm":
            cb.gemm(t, r.blas, operation(c.trans, dt.is_complex),
                    operation(c.transb, dt.is_complex), c.m, c.n, c.k, sc(t, c.alpha),
                    p(c.a), lda, p(c.b), lda, sc(t, c.beta), p(c.c), lda)
        elif c.routine in ("trmm", "trmm_out"):
            b = c.c if c.routine == "trmm" else c.b
            cb.trmm(t, r.blas, _side(c.side), u, operation(c.trans, dt.is_complex),
                    cb.NON_UNIT, c.m, c.n, sc(t, c.alpha), p(c.a), lda, p(b), lda, p(c.c), lda)
        elif c.routine == "trsm":
            cb.trsm(t, r.blas, _side(c.side), u, operation(c.trans, dt.is_complex), cb.NON_UNIT,
                    c.m, c.n, sc(t, c.alpha), p(c.a), lda, p(c.c), lda)
        elif c.routine == "trsm_batched":   # device arrays of the T pointers, then the C's
            ptrs = torch.tensor([p(ai) for _, ai in c.blocks] + [p(ci) for ci, _ in c.blocks],
                                dtype=torch.int64)
            with torch.cuda.stream(r.torch):   # allocated and copied on the call's stream
                dev = ptrs.to(w.device, non_blocking=True)
            cb.trsmBatched(t, r.blas, _side(c.side), u, operation(c.trans, dt.is_complex),
                           cb.NON_UNIT, c.m, c.n, sc(t, c.alpha), dev.data_ptr(), lda,
                           dev.data_ptr() + 8 * len(c.blocks), lda, len(c.blocks))
        elif c.routine == "syrk":
            cb.syrk(t, r.blas, u, operation(c.trans, dt.is_complex), c.n, c.k,
                    sc(real_t, c.alpha), p(c.a), lda, sc(real_t, c.beta), p(c.c), lda)
        elif c.routine == "lauum":
            cs.lauum(t, r.solver, u, c.n, p(c.c), lda, r.work.data_ptr(), lauum_lwork,
                     r.scratch.data_ptr())
        elif c.routine == "potrf":  # info into slot k of the int32 array at info_ptr
            cs.potrf(t, r.solver, u, c.n, p(c.c), lda, r.work.data_ptr(), potrf_lwork,
                     info_ptr + 4 * c.k)
        elif c.routine == "trtri":
            cs.Xtrtri(r.solver, u, cs.NON_UNIT, c.n, cdt, p(c.c), lda, r.work.data_ptr(), dbytes,
                      r.host.ctypes.data if hbytes else 0, hbytes,
                      info_ptr if r.cupy is None else r.scratch.data_ptr())
        elif c.routine == "trsm_inv":  # X = T⁻¹·I in the workspace (ld = n), triangle back
            x = r.inv_ws[: c.n * c.n].as_strided((c.n, c.n), (1, c.n))
            with torch.cuda.stream(r.torch):
                x.zero_()
                x.diagonal().fill_(1)
                cb.trsm(t, r.blas, cb.LEFT, u, cb.OP_N, cb.NON_UNIT, c.n, c.n, sc(t, 1.0),
                        p(c.c), lda, x.data_ptr(), c.n)
                blk = flat.as_strided((c.n, c.n), (1, lda),
                                      flat.storage_offset() + base_elem + element_offset(*c.c, lda))
                # one mask per stream, made on that stream: a mask made on one stream and
                # read on another could be read before the kernels that fill it have run
                # (nothing in the plan orders two trsm_inv of different blocks)
                key = (c.n, c.uplo, c.stream)
                if key not in masks:
                    masks[key] = triangle(
                        torch.ones(c.n, c.n, dtype=torch.bool, device=w.device), c.uplo)
                blk.copy_(torch.where(masks[key], x, blk))
        else:
            raise ValueError(f"unknown routine {c.routine!r} in plan")

    def run(plan, base_ptr, info_ptr, bases=None):
        if bases is None:
            def p(ij):
                return base_ptr + element_offset(ij[0], ij[1], lda) * isz
        else:
            def p(ij):
                q, j = divmod(ij[1], lda)
                return bases[q] + element_offset(ij[0], j, lda) * isz

        base_elem = (base_ptr - p0) // isz
        for c in plan:
            r = res[c.stream]
            if c.routine == "record":
                events[c.event].record(r.torch)
            elif c.routine == "wait":
                r.torch.wait_event(events[c.event])
            elif r.cupy is None:
                issue(c, r, p, base_elem, info_ptr)
            else:
                with r.cupy:
                    issue(c, r, p, base_elem, info_ptr)

    run.handles = [r.blas for r in res]
    run.side_streams = [side.torch for side in sides]
    return run


def trtri_lauum(c: torch.Tensor, upper: bool, recursive: bool):
    """Inverse from the factor: W = L⁻¹ (one ``cusolverDnXtrtri``, or the recursive trtri
    plan), then W ← Wᴴ·W by the (recursive) lauum plan, on one column-major working copy,
    whose other triangle is then mirrored in place (:func:`mirror_triangle`); returns
    ``(full Hermitian inverse, info)`` (Xtrtri's info; zeros for the recursive
    trtri, whose diagonal blocks are inverted by trsm, which reports nothing).

    ``BLOCKING["streams"]`` > 1 runs the two plans as one, scheduled on that many streams
    (:func:`cusolver_trace.plans.schedule`); ``BLOCKING["syrk_kernel"]`` = ``"gemm"`` runs
    the lauum plan's syrk blocks as GEMM."""
    dt = dtype_info(c.dtype)
    n = c.shape[-1]
    w = colmajor(c)
    if dt.is_complex:
        _real_diagonal(w, upper)
    uplo = "U" if upper else "L"
    inv = trtri_plan(n, upper) if recursive else [Call("trtri", uplo, n, n, (0, 0))]
    mul = lauum_plan(n, upper, dtype=dt.name)
    plans = (inv, mul)
    streams = _plans.BLOCKING.get("streams", 1)   # read per call: tests replace the table
    if streams > 1:
        plans = (schedule(inv + mul, streams),)
    info = _info(w)
    with on_device(w.device) as ctx:
        run = plan_runner(ctx, dt, plans, w)
        for b in range(w.shape[0]):
            for plan in plans:
                run(plan, _ptr(w, b), _ptr(info, b))
        out = _hermitian(w, upper, "kernel", dt)   # in place: the copy is the result
    return out.reshape(c.shape), info


def _real_diagonal(w: torch.Tensor, upper: bool) -> None:
    """Give the complex factors in the working copy ``w`` (``(batch, n, n)``, ``w[b, j, i]``
    = L[i, j], as :func:`.cuda.colmajor` makes it) a real diagonal without changing L·Lᴴ
    (Uᴴ·U): each column of L (row of U) times the conjugate phase of its diagonal element, a
    unit complex number. cuSOLVER's lauum, as LAPACK's, takes its triangle's diagonal as real:
    with the factor's made real, the trtri_lauum plans return inv(L·Lᴴ) for any complex
    factor, as every method but ``potri`` (LAPACK's reading) does. A real positive diagonal
    element gives the factor 1: such factors are unchanged (up to the sign of a zero
    imaginary part). Zero or non-finite elements keep 1 (the check reports them from the
    factor itself)."""
    d = w.diagonal(dim1=-2, dim2=-1)
    a = d.abs()
    ok = (a > 0) & torch.isfinite(a)
    # real divisions: a complex division by a + 0i would not give exactly 1 for d = a
    phase = torch.where(ok, torch.complex(d.real / a, d.imag / a), torch.ones_like(d))
    w.mul_(phase.conj().unsqueeze(-2 if upper else -1))
    d.copy_(torch.where(ok, a.to(d.dtype), d))   # |d| exactly, not d·conj(d/|d|) rounded


def gemm_lauum(c: torch.Tensor, upper: bool, *, emulate: bool = False, overwrite: bool = False,
               **params):
    """Inverse from the factor by :func:`cusolver_trace.plans.inverse_plan`: the factor's
    column-major copy and an identity (two ``(batch, n, n)`` tensors, the plan's matrices
    0 and 1), the recursive trtri into the identity, then the lauum as one GEMM per block
    row into the copy, on the plan's streams; returns ``(full Hermitian inverse, None)``
    (cuBLAS reports no singular factor: the check kernel does). ``params`` override ``BLOCKING["gemm_lauum"]``;
    ``emulate`` runs the cuBLAS calls with FP64 fixed-point emulation (:func:`emulation`;
    FP64 / complex128 GEMM-class calls only). ``overwrite``: when each matrix of ``c`` is
    stored column-major in one contiguous buffer (``c.mT`` contiguous, as a
    :func:`.cuda.potrf` factor), the plan works in that storage (matrix 0) instead of a
    copy, and ``c`` is destroyed: the factor becomes the result (one n × n buffer less).
    One matrix of order >= :data:`TRIANGLE_COPY_MIN_N` stored that way is copied by its
    triangle only (:func:`copy_triangle`)."""
    dt = dtype_info(c.dtype)
    n = c.shape[-1]
    fill = _fill_mode(dt.name, params)
    plan = inverse_plan(n, upper, dtype=dt.name, **params)
    own = c.mT.reshape(-1, n, n) if overwrite and c.mT.is_contiguous() else None
    tri = own is None and _triangle_copy(c)
    mats = _plan_buffers(c.reshape(-1, n, n), plan, own, copy_first=not tri)
    with on_device(c.device) as ctx:
        if tri:
            copy_triangle(mats[0][0], c.reshape(n, n), upper, dt)
        run = plan_runner(ctx, dt, (plan.calls,), mats[0], extra=mats[1:])
        with emulation(run.handles, emulate):
            for b in range(mats[0].shape[0]):
                run(plan.calls, 0, 0, [_ptr(m, b) for m in mats])
        out = _hermitian(mats[plan.result], upper, fill, dt)
    return out.reshape(c.shape), None


#: The order from which :func:`gemm_lauum` copies only the factor's triangle into the plan's
#: matrix 0 (:func:`copy_triangle`), for one matrix stored column-major: the plan reads
#: nothing else of matrix 0 before writing it (tests/test_plans_dag_cpu.py runs every plan
#: variant with NaN in the other triangle), so the copy moves about half the bytes.
TRIANGLE_COPY_MIN_N = 2048


def _triangle_copy(c: torch.Tensor) -> bool:
    """Whether :func:`gemm_lauum` copies only the triangle of ``c``: one matrix of order at
    least :data:`TRIANGLE_COPY_MIN_N` stored column-major (``c.mT`` contiguous, as torch's
    and cuSOLVER's factors), no conjugate or negative bit (the copy moves elements as
    stored)."""
    n = c.shape[-1]
    return (n >= TRIANGLE_COPY_MIN_N and c.numel() == n * n and c.mT.is_contiguous()
            and not c.is_conj() and not c.is_neg())


def _fill_mode(dtype_name, params):
    fill = params.pop("fill", None) or _plans.BLOCKING.get("gemm_lauum", {}).get(dtype_name, {}).get(
        "fill", "where")
    if fill not in ("where", "kernel"):
        raise ValueError(f"fill must be 'where' or 'kernel', got {fill!r}")
    return fill


def _plan_buffers(x, plan, first=None, copy_first=True):
    """One contiguous ``(batch, n, n)`` tensor per matrix of the plan (each matrix stored
    column-major): matrix 0 the column-major copy of ``x`` (or ``first``, already that
    storage; ``copy_first=False``: left uninitialized, for the caller to fill), the
    ``identity`` ones I."""
    n = x.shape[-1]
    mats = []
    for q in range(plan.matrices):
        if q == 0 and first is not None:
            mats.append(first)
            continue
        m = torch.empty((x.shape[0], n, n), dtype=x.dtype, device=x.device)
        if q == 0 and copy_first:
            m.copy_(x.mT)
        elif q in plan.identity:
            m.zero_()
            m.diagonal(dim1=-2, dim2=-1).fill_(1)
        mats.append(m)
    return mats


def _hermitian(w, upper, fill, dt):
    """The full Hermitian matrices (batch, n, n) from the ``upper`` / lower triangle of the
    column-major working buffer ``w``: ``"where"`` builds a new tensor
    (:func:`cusolver_trace.plans.hermitian_fill`); ``"kernel"`` mirrors the triangle in
    place (one tiled transpose kernel, :func:`mirror_triangle`) and returns ``w`` itself for
    real types (a symmetric matrix stored column-major is the same matrix row-major:
    contiguous), its column-major view ``w.mT`` for complex ones."""
    if fill == "where":
        return hermitian_fill(w.mT, upper)
    _mirror.mirror_triangle(w, upper, dt)
    return w if not dt.is_complex else w.mT


def potrf_gemm_lauum(A: torch.Tensor, upper: bool = False, **params):
    """A → A⁻¹ as one plan (:func:`cusolver_trace.plans.spd_inverse_plan`): a recursive
    blocked potrf in place, then gemm_lauum's calls on the same buffer, scheduled together
    on the plan's streams. Returns ``(Ainv, info)``: the full Hermitian inverses and the
    factorization's LAPACK info (int32, ``(batch,)``: the first failing block's offset +
    its info, or, as for :func:`cusolver_trace.routines.potrf`, the first pivot whose
    inverse in the trtri buffer is not finite or zero — a non-finite pivot). No
    synchronization, no checks."""
    dt = dtype_info(A.dtype)
    n = A.shape[-1]
    fill = _fill_mode(dt.name, params)
    plan = spd_inverse_plan(n, upper, dtype=dt.name, **params)
    x = A.reshape(-1, n, n)
    mats = _plan_buffers(x, plan)
    slots = len(plan.info_slots)
    infos = torch.zeros((x.shape[0], max(slots, 1)), dtype=torch.int32, device=A.device)
    with on_device(A.device) as ctx:
        run = plan_runner(ctx, dt, (plan.calls,), mats[0], extra=(*mats[1:], infos))
        for b in range(x.shape[0]):
            run(plan.calls, 0, _ptr(infos, b), [_ptr(m, b) for m in mats])
        out = _hermitian(mats[plan.result], upper, fill, dt)
    offsets = torch.tensor(plan.info_slots or (0,), dtype=torch.int32, device=A.device)
    nz = infos != 0
    j = nz.to(torch.int32).argmax(dim=-1)
    val = infos.gather(1, j[:, None])[:, 0]
    info = torch.where(nz.any(dim=-1), val + torch.where(val > 0, offsets[j], 0), 0)
    vd = mats[1].diagonal(dim1=-2, dim2=-1)  # 1 / L[i, i]: the trtri's diagonal
    bad = ~torch.isfinite(vd) | (vd == 0)
    first = bad.to(torch.int32).argmax(dim=-1).to(torch.int32) + 1
    info = torch.where((info == 0) & bad.any(dim=-1), first, info).to(torch.int32)
    return out.reshape(A.shape), info


def potrf_trsm_batched_factor(A: torch.Tensor, upper: bool = False):
    """End-to-end A → A⁻¹ for batches of small matrices: ``(Ainv, L, info)``.

    One column-major working copy of A ``(..., n, n)``, one
    ``cusolverDn<t>potrfBatched`` on it, then two ``cublas<t>trsmBatched`` on an
    identity: X = L⁻ᴴ·(L⁻¹·I) (lower) or U⁻¹·(U⁻ᴴ·I) (upper). ``L`` is the factored
    working copy (only its ``upper`` / lower triangle is the factor; the other holds A's),
    ``info`` potrfBatched's (int32, shape ``(batch,)``); where it is non-zero the inverse
    is garbage. No synchronization, no checks. Flops (LAWN 41): potrf n³/3 + 2n³.
    """
    dt = dtype_info(A.dtype)
    n, t = A.shape[-1], dt.prefix
    w = colmajor(A)
    x = torch.eye(n, dtype=A.dtype, device=A.device).expand(w.shape).contiguous()
    info = _info(w)
    ops = tuple(operation(o, dt.is_complex) for o in (("C", "N") if upper else ("N", "C")))
    one = cb.scalar(t, 1.0)
    with on_device(A.device) as ctx:
        pa, px = pointer_array(w), pointer_array(x)
        cs.potrfBatched(t, ctx.solver, fill_mode(upper), n, pa.data_ptr(), n, info.data_ptr(),
                        w.shape[0])
        for op in ops:
            cb.trsmBatched(t, ctx.blas, cb.LEFT, fill_mode(upper), op, cb.NON_UNIT, n, n,
                           one.ctypes.data, pa.data_ptr(), n, px.data_ptr(), n, w.shape[0])
    return matrices(x, A.shape[:-2]), matrices(w, A.shape[:-2]), info
