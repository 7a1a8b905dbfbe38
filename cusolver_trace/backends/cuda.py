"""CUDA backend: array-level routines on torch CUDA tensors through raw cuSOLVER / cuBLAS.

The only place (with :mod:`._context`) that imports :mod:`cusolver_trace.raw`.

Inputs are validated, non-empty torch CUDA tensors. Each routine makes a
column-major working copy (torch's layout: a contiguous ``(..., c, r)`` buffer
whose ``.mT`` is the ``(..., r, c)`` matrix), runs the raw calls on
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

import ctypes
import functools
import struct

import numpy as np
import torch

from .._dtypes import dtype_info
from ..raw import _load
from ..raw import cublas as cb
from ..raw import cusolver as cs
from . import _mirror, cuda_copy
from . import _waiting
from ._context import (LaunchArgs, Scratch, StreamRef, device_bytes, bound, context,
                       current_device, current_stream_ptr, on_device, size_key)

APIS = ("X", "legacy", "batched")


# --------------------------------------------------------------------------- enum conversions
def fill_mode(uplo) -> int:
    """``cublasFillMode_t`` (shared by cuSOLVER) for ``upper`` (bool) or ``"L"`` / ``"U"``.

    The one place where the project turns its ``upper`` flag into a fill mode.
    """
    if isinstance(uplo, str):
        if uplo not in ("L", "U"):
            raise ValueError(f"uplo must be 'L' or 'U', got {uplo!r}")
        return cb.UPPER if uplo == "U" else cb.LOWER
    return cb.UPPER if uplo else cb.LOWER


def operation(trans: str, is_complex: bool) -> int:
    """``cublasOperation_t`` for ``"N"`` / ``"C"`` (conjugate transpose; transpose for real types)."""
    if trans == "N":
        return cb.OP_N
    if trans == "C":
        return cb.OP_C if is_complex else cb.OP_T
    raise ValueError(f"trans must be 'N' or 'C', got {trans!r}")


def _side(side: str) -> int:
    return {"L": cb.LEFT, "R": cb.RIGHT}[side]


def available() -> str | None:
    """``None`` when the CUDA backend can run here, else the reason it cannot (one line)."""
    import torch

    if not torch.cuda.is_available():
        return f"no CUDA GPU is visible to torch {torch.__version__}"
    try:
        _load.cupy_cusolver()
        _load.nvmath_cusolverDn()
    except Exception as exc:  # GPUUnavailableError: CuPy / nvmath-python missing or broken
        return str(exc)
    return None


def library_versions(device) -> dict:
    """cuSOLVER and cuBLAS versions as the raw layer sees them (``cusolverGetProperty``,
    ``cublasGetVersion``), after one raw call on ``device`` so that both libraries are loaded."""
    a = torch.ones(1, 1, device=device, dtype=torch.float64)
    potrf(a, False, "X")
    major, minor, patch = (cs.getProperty(k) for k in (0, 1, 2))
    out = {"cusolver": {"version": f"{major}.{minor}.{patch}", "cusolverGetVersion": cs.getVersion()}}
    with on_device(a.device) as ctx:
        v = cb.getVersion(ctx.blas)
    out["cublas"] = {"version": f"{v // 10000}.{(v % 10000) // 100}.{v % 100}", "cublasGetVersion": v}
    return out


# --------------------------------------------------------------------------- the fast issue path
# What torch computes once in C++ per call costs microseconds per Python operation here, and at
# small n those microseconds are the whole call (issue 14). So every routine below issues the same
# library calls with the same arguments as before, and keeps out of the per-call path whatever
# does not change between calls: dtype facts, fill modes and operations, host scalars, the
# bufferSize answers of routines torch does not call (torch's own queries, such as
# cusolverDnXpotrf_bufferSize, are issued on every call as torch issues them, since they are
# part of the call sequence a trace compares), the workspace (one grow-only buffer per thread,
# device and stream, from torch's
# caching allocator), the handles' stream (set only when it changed), the device switch (only
# when the tensor is not on the current device) and the per-matrix pointer arithmetic (base +
# b·step). Working copies are one ``clone`` each; the identity right-hand side is built in place.
_DT: dict = {}                                   # torch dtype -> DtypeInfo
_UPLO = (cb.LOWER, cb.UPPER)                     # indexed by the upper flag
_ONE: dict = {}                                  # type letter -> (host scalar 1, its address)
_TRSM_OPS: dict = {}                             # (is_complex, upper) -> the two trsm operations


def _dtype(dtype):
    d = _DT.get(dtype)
    if d is None:
        d = _DT[dtype] = dtype_info(dtype)
    return d


def _one(t: str) -> int:
    """Host pointer to the scalar 1 of type ``t`` (``alpha`` of the trsm solves)."""
    s = _ONE.get(t)
    if s is None:
        arr = cb.scalar(t, 1.0)
        s = _ONE[t] = (arr, arr.ctypes.data)
    return s[1]


def _trsm_ops(is_complex: bool, upper: bool) -> tuple:
    """The two solves of A X = B: lower: L Y = B, then Lᴴ X = Y; upper: Uᴴ Y = B, then U X = Y."""
    key = (is_complex, upper)
    ops = _TRSM_OPS.get(key)
    if ops is None:
        ops = _TRSM_OPS[key] = tuple(operation(o, is_complex)
                                     for o in (("C", "N") if upper else ("N", "C")))
    return ops


def on_tensor_device(fn):
    """Decorator: run ``fn(x, ...)`` with ``x``'s device current in torch and CuPy.

    No device switch when ``x`` is on the current device already (the common case);
    otherwise the whole call runs under ``torch.cuda.device`` / ``cupy.cuda.Device``,
    since a library handle must only be used on the device it was created on.
    """
    @functools.wraps(fn)
    def run(x, *args, **kw):
        idx = x.get_device()
        if idx == _current_device():
            return fn(x, *args, **kw)
        with torch.cuda.device(idx), _load.cupy().cuda.Device(idx):
            return fn(x, *args, **kw)
    return run


_current_device = current_device   # a module name of its own: tests replace it


def work_copy(x: torch.Tensor) -> torch.Tensor:
    """Column-major working copy of ``x`` ``(..., r, c)``: a contiguous ``(..., c, r)`` tensor
    whose ``.mT`` is the copy of ``x`` (always a new buffer: conjugate / negative views are
    materialized, expanded inputs copied, the input never written). One launch of
    :func:`.cuda_copy.column_major` for the four dtypes of the routines, else one ``clone``."""
    if x.is_cuda and cuda_copy.supported(x.element_size(), x.is_complex()):
        return cuda_copy.column_major(x)[0].mT
    return x.mT.clone(memory_format=torch.contiguous_format)


def colmajor(x: torch.Tensor) -> torch.Tensor:
    """Contiguous ``(batch, c, r)`` copy of ``x`` ``(..., r, c)``: each matrix column-major.

    Conjugate / negative views are materialized; stride-0 (expanded) inputs get
    a real copy. The input is never written.
    """
    r, c = x.shape[-2:]
    w = work_copy(x)
    return w if w.dim() == 3 else w.view(-1, c, r)


def matrices(w: torch.Tensor, batch_shape) -> torch.Tensor:
    """The ``(..., r, c)`` view of a column-major working buffer made by :func:`colmajor`."""
    c, r = w.shape[-2:]
    return w.mT.reshape(*batch_shape, r, c)


def _info(w):
    return torch.zeros(w.shape[0], dtype=torch.int32, device=w.device)


def _ptr(w, b):
    return w.data_ptr() + b * w.stride(0) * w.element_size()


def _pointers(p0: int, step: int, batch: int, device) -> torch.Tensor:
    """``Aarray`` of a batch at ``p0 + b·step`` (see :func:`._context.pointer_array`)."""
    return torch.arange(p0, p0 + step * batch, step, dtype=torch.int64, device=device)


@on_tensor_device
def potrf(a: torch.Tensor, upper: bool, api: str = "X"):
    """Cholesky factor of ``a`` (..., n, n): ``(L, info)``; the other triangle of L is zero.

    Mirrors torch's CUDA ``linalg.cholesky`` (``Xpotrf`` for batch 1,
    ``potrfBatched`` for batch > 1): the matrix is copied, the ``uplo`` triangle factored
    in place, and the other triangle zeroed (in the copy's launch for ``Xpotrf`` /
    ``potrf``, which leave it untouched; after ``potrfBatched``, which does not).
    ``cusolverDnXpotrf_bufferSize`` is asked on every call, as torch does; the legacy
    ``potrf_bufferSize`` (not a call torch makes) once per (dtype, uplo, n) and device.
    """
    if api not in APIS:
        raise ValueError(f"api must be one of {APIS}, got {api!r}")
    dt = _dtype(a.dtype)
    n = a.shape[-1]
    # the copy and info zeroed in one launch. Xpotrf / potrf leave the other triangle
    # untouched (cuSOLVER's documentation), so it is zeroed in the same launch, before the
    # call, which gives torch's bits (its triu_ / tril_ zeroes it after the call).
    # potrfBatched with uplo = upper writes the other triangle too (measured on the H200:
    # it holds the mirror of the factor afterwards), so there the other triangle is zeroed
    # after the call, as torch does
    batched = api == "batched"
    L, _, info = cuda_copy.column_major(
        a, keep=None if batched else ("upper" if upper else "lower"), info=True)
    uplo, lda = _UPLO[bool(upper)], n
    batch = info.shape[0]
    ctx = bound(a.get_device())
    p0, i0 = L.data_ptr(), info.data_ptr()
    step = n * n * L.element_size()
    if api == "X":
        cdt = dt.cuda_data_type
        solver, params = ctx.solver, ctx.params
        # torch asks for the workspace size with A = NULL on every call, and passes
        # bufferOnHost = NULL when no host workspace is needed (the API log shows 0x0); so do
        # we: this query is one of torch's logged calls (compare --trace compares them), so
        # it is not cached here, unlike the sizes of the routines torch does not call
        dbytes, hbytes = cs.Xpotrf_bufferSize(solver, params, uplo, n, cdt, 0, lda, cdt)
        work = ctx.scratch.get(dbytes, ctx.binding.stream).data_ptr()
        if hbytes:
            host = np.empty(hbytes, dtype=np.uint8)
            hptr = host.ctypes.data
        else:
            hptr = 0
        for b in range(batch):
            cs.Xpotrf(solver, params, uplo, n, cdt, p0 + b * step, lda, cdt, work, dbytes,
                      hptr, hbytes, i0 + 4 * b)
    elif api == "legacy":
        t = dt.prefix
        with ctx.cupy_stream():
            lwork = ctx.sizes.get_or(size_key("potrf", t, uplo, n, lda),
                                     lambda: cs.potrf_bufferSize(t, ctx.solver, uplo, n, p0, lda))
            work = ctx.scratch.get(lwork * L.element_size(), ctx.stream).data_ptr()
            for b in range(batch):
                cs.potrf(t, ctx.solver, uplo, n, p0 + b * step, lda, work, lwork, i0 + 4 * b)
    else:
        ptrs = _pointers(p0, step, batch, a.device)
        with ctx.cupy_stream():
            cs.potrfBatched(dt.prefix, ctx.solver, uplo, n, ptrs.data_ptr(), lda, i0, batch)
        (L.triu_() if upper else L.tril_())
    return L, info


def _solve(c: torch.Tensor, b: torch.Tensor | None, upper: bool, api: str):
    """Xpotrs / potrs / potrsBatched with the factor ``c`` (..., n, n) on column-major copies
    of the right-hand sides ``b`` (..., n, k) (None: the identity), solved in place; returns
    ``(X, info)``."""
    dt = _dtype(c.dtype)
    n = c.shape[-1]
    k = n if b is None else b.shape[-1]
    if api == "batched" and k != 1:
        raise ValueError(f"cusolverDn{dt.prefix.upper()}potrsBatched supports nrhs = 1 only, "
                         f"got nrhs = {k}")
    if api not in APIS:
        raise ValueError(f"api must be one of {APIS}, got {api!r}")
    wc, X, info = cuda_copy.column_major(c, b, identity=b is None, info=True)
    uplo, ld = _UPLO[bool(upper)], n
    batch = info.shape[0]
    ctx = bound(c.get_device())
    isz = wc.element_size()
    pc, sc = wc.data_ptr(), n * n * isz
    px, sx, i0 = X.data_ptr(), n * k * isz, info.data_ptr()
    if api == "X":
        cdt = dt.cuda_data_type
        for i in range(batch):
            cs.Xpotrs(ctx.solver, ctx.params, uplo, n, k, cdt, pc + i * sc, ld, cdt, px + i * sx,
                      ld, i0 + 4 * i)
    elif api == "legacy":
        t = dt.prefix
        with ctx.cupy_stream():
            for i in range(batch):
                cs.potrs(t, ctx.solver, uplo, n, k, pc + i * sc, ld, px + i * sx, ld, i0 + 4 * i)
    else:
        pa, pb = _pointers(pc, sc, batch, c.device), _pointers(px, sx, batch, c.device)
        with ctx.cupy_stream():
            cs.potrsBatched(dt.prefix, ctx.solver, uplo, n, k, pa.data_ptr(), ld, pb.data_ptr(), ld,
                            i0, batch)
    return X, info


@on_tensor_device
def potrs(c: torch.Tensor, b: torch.Tensor, upper: bool, api: str = "X"):
    """Solve A X = B from A's factor ``c`` (..., n, n); ``b`` (..., n, k), same batch shape.

    ``api="X"``: one ``cusolverDnXpotrs`` per matrix (torch's path);
    ``"legacy"``: ``cusolverDn<t>potrs``; ``"batched"``: one ``potrsBatched``
    (cuSOLVER accepts nrhs = 1 only). Returns ``(X, info)``; cuSOLVER's potrs
    ``info`` reports illegal arguments only, never a singular factor.
    """
    return _solve(c, b, upper, api)   # nrhs = 1 for "batched" checked there, before any copy


@on_tensor_device
def potrs_identity(c: torch.Tensor, upper: bool, api: str = "X"):
    """Inverse from the factor by potrs on an identity right-hand side (torch's CUDA
    ``cholesky_inverse``, cuSOLVER path). Not exactly Hermitian; returns ``(Ainv, info)``."""
    return _solve(c, None, upper, api)


@on_tensor_device
def potri(c: torch.Tensor, upper: bool):
    """``cusolverDn<t>potri`` per matrix in one column-major working copy, then the other
    triangle mirrored in place (:func:`._mirror.mirror_triangle`): the factor's copy,
    which becomes the result, and potri's workspace are all the memory it takes. Returns
    ``(Ainv, info)``; real results are row-major, complex ones column-major views."""
    dt = _dtype(c.dtype)
    n, t = c.shape[-1], dt.prefix
    w, _, info = cuda_copy.column_major(c, info=True)
    uplo, lda = _UPLO[bool(upper)], n
    batch = info.shape[0]
    ctx = bound(c.get_device())
    isz = w.element_size()
    p0, step, i0 = w.data_ptr(), n * n * isz, info.data_ptr()
    lwork = ctx.sizes.get_or(size_key("potri", t, uplo, n, lda),
                             lambda: cs.potri_bufferSize(t, ctx.solver, uplo, n, p0, lda))
    work = ctx.scratch.get(lwork * isz, ctx.stream).data_ptr()
    for b in range(batch):
        cs.potri(t, ctx.solver, uplo, n, p0 + b * step, lda, work, lwork, i0 + 4 * b)
    store = w.mT.reshape(-1, n, n)   # the storage: contiguous, each matrix column-major
    with ctx.cupy_stream():
        _mirror.mirror_triangle(store, upper, dt)
    # a real symmetric matrix is its own transpose: the storage read row-major is the result
    return (w.mT if not dt.is_complex else w), info


@on_tensor_device
def trtri(c: torch.Tensor, upper: bool, unit_diagonal: bool = False):
    """``cusolverDnXtrtri`` per matrix: inverse of the ``upper`` / lower triangle (other zeroed)."""
    dt = _dtype(c.dtype)
    n, cdt = c.shape[-1], dt.cuda_data_type
    w, _, info = cuda_copy.column_major(c, info=True)
    uplo, lda = _UPLO[bool(upper)], n
    diag = cs.UNIT if unit_diagonal else cs.NON_UNIT
    batch = info.shape[0]
    ctx = bound(c.get_device())
    p0, step, i0 = w.data_ptr(), n * n * w.element_size(), info.data_ptr()
    dbytes, hbytes = ctx.sizes.get_or(
        size_key("Xtrtri", cdt, uplo, n, lda, diag),
        lambda: cs.Xtrtri_bufferSize(ctx.solver, uplo, diag, n, cdt, p0, lda))
    work = ctx.scratch.get(dbytes, ctx.stream).data_ptr()
    host = np.empty(hbytes, dtype=np.uint8) if hbytes else None
    hptr = host.ctypes.data if hbytes else 0
    for b in range(batch):
        cs.Xtrtri(ctx.solver, uplo, diag, n, cdt, p0 + b * step, lda, work, dbytes, hptr, hbytes,
                  i0 + 4 * b)
    out = w.triu_() if upper else w.tril_()
    if unit_diagonal:  # the diagonal is not referenced (LAPACK semantics): the inverse's is 1
        out.diagonal(dim1=-2, dim2=-1).fill_(1)
    return out, info


@on_tensor_device
def trsm_identity_inverse(c: torch.Tensor, upper: bool, batched: bool):
    """Inverse from the factor by two cuBLAS triangular solves on the identity.

    torch >= 2.12's CUDA ``cholesky_inverse`` / ``cholesky_solve`` for batch > 1:
    ``X = L⁻ᴴ (L⁻¹ I)`` (lower) or ``U⁻¹ (U⁻ᴴ I)`` (upper), through a loop of
    ``cublas<t>trsm`` (``batched=False``) or one ``cublas<t>trsmBatched`` per solve.
    """
    return _trsm(c, None, upper, batched)


@on_tensor_device
def trsm_solve(c: torch.Tensor, b: torch.Tensor, upper: bool, batched: bool):
    """Solve A X = B with A = L Lᴴ (or Uᴴ U) by two cuBLAS ``trsm`` (left side) calls per matrix."""
    return _trsm(c, b, upper, batched)


def _trsm(c: torch.Tensor, b: torch.Tensor | None, upper: bool, batched: bool):
    """Two left-side trsm solves on column-major copies of the right-hand sides ``b``
    (..., n, k) (None: the identity), in place."""
    dt = _dtype(c.dtype)
    n, t = c.shape[-1], dt.prefix
    k = n if b is None else b.shape[-1]
    wc, X, info = cuda_copy.column_major(c, b, identity=b is None, info=True)
    ld, uplo = n, _UPLO[bool(upper)]
    ops = _trsm_ops(dt.is_complex, bool(upper))
    one = _one(t)
    batch = info.shape[0]
    ctx = bound(c.get_device())
    isz = wc.element_size()
    pc, sc = wc.data_ptr(), n * n * isz
    px, sx = X.data_ptr(), n * k * isz
    if batched:
        pa, pb = _pointers(pc, sc, batch, c.device), _pointers(px, sx, batch, c.device)
        a_arr, b_arr = pa.data_ptr(), pb.data_ptr()
        with ctx.cupy_stream():
            for op in ops:
                cb.trsmBatched(t, ctx.blas, cb.LEFT, uplo, op, cb.NON_UNIT, n, k, one, a_arr, ld,
                               b_arr, ld, batch)
    else:
        with ctx.cupy_stream():
            for i in range(batch):
                for op in ops:
                    cb.trsm(t, ctx.blas, cb.LEFT, uplo, op, cb.NON_UNIT, n, k, one, pc + i * sc, ld,
                            px + i * sx, ld)
    return X, info


# --------------------------------------------------------------------------- cheap checks
# One kernel per call reduces, for each matrix of a batch, what the checks need to one small
# record on the device: the first exact zero on the factor's diagonal, whether the factor's
# triangle or the result holds a non-finite value, and the routine's own info. Hand-written
# because no library reduction gives all three in one pass; torch ops would take 6-8 launches a
# call. For the checked entry point (:func:`inverse_check`) the last block to finish also folds
# the whole batch into one "anything to report" word, stored straight into host-mapped pinned
# memory, so the common case costs one launch and one stream synchronization and copies
# nothing; the (batch, 3) record is copied to the host only when there is something to report.
# The kernel takes its 14 arguments as one struct passed by value (one NumPy buffer on the host,
# filled in one assignment): CuPy converts each separate Python argument on every launch, which
# was most of the launch's host time. The field order is _STATUS_FIELDS, the struct is made from it.
_STATUS_FIELDS = ("L", "lb", "lr", "lc", "X", "xb", "xr", "xc", "n", "upper", "info", "acc",
                  "counter", "summary")
_STATUS_SRC = ("struct StatusArgs { long long " + ", ".join(_STATUS_FIELDS) + "; };\n") + r"""
// One pass over e = start, start + step, ... < n·n per operand, in its own memory order (the
// index of the smaller stride runs fastest), so that a warp's loads are contiguous for row- and
// column-major matrices alike; both operands in one pass where their orders agree. (s, f), the
// (slow, fast) index pair of e, is advanced by additions: one 32-bit division before the loop
// (start and step < 65535 · 256), none in it (a 64-bit division per element would be most of
// the kernel's time for large matrices).
template<typename R, int NC, bool DO_L, bool DO_X>
__device__ __forceinline__ void status_scan(const R* Lb, long long lr, long long lc,
                                            const R* Xb, long long xr, long long xc, int n,
                                            int upper, bool fast_i, int& zero, int& badL,
                                            int& badX)
{
    const unsigned start = blockIdx.y * blockDim.x + threadIdx.x;
    const unsigned step = gridDim.y * blockDim.x;
    const unsigned un = (unsigned)n;
    const long long nn = (long long)n * n, ds = step / un, df = step % un;
    long long s = start / un, f = start % un;
#pragma unroll 4
    for (long long e = start; e < nn; e += step) {
        const long long i = fast_i ? f : s, j = fast_i ? s : f;
        if (DO_L && (upper ? (i <= j) : (i >= j))) {
            const R* p = Lb + i * lr + j * lc;
            R re = p[0];
            R im = (NC == 2) ? p[1] : (R)0;
            if (!isfinite(re) || !isfinite(im)) badL = 1;
            else if (i == j && re == (R)0 && im == (R)0) zero = max(zero, (int)(n - i));
        }
        if (DO_X) {
            const R* q = Xb + i * xr + j * xc;
            if (!isfinite(q[0]) || (NC == 2 && !isfinite(q[1]))) badX = 1;
        }
        s += ds; f += df;
        if (f >= n) { f -= n; ++s; }
    }
}

template<typename R, int NC>
__device__ void inverse_status_impl(const R* L, long long lb, long long lr, long long lc,
                                    const R* X, long long xb, long long xr, long long xc,
                                    int n, int upper, const int* info, int* acc,
                                    unsigned long long* counter, int* summary)
{
    const long long b = blockIdx.x;
    const R* Lb = L + b * lb;
    const R* Xb = X + b * xb;
    int zero = 0, badL = 0, badX = 0;
    const bool li = (lr < 0 ? -lr : lr) <= (lc < 0 ? -lc : lc);   // L's row index fastest
    const bool xi = (xr < 0 ? -xr : xr) <= (xc < 0 ? -xc : xc);   // X's row index fastest
    if (li == xi) {
        status_scan<R, NC, true, true>(Lb, lr, lc, Xb, xr, xc, n, upper, li, zero, badL, badX);
    } else {
        status_scan<R, NC, true, false>(Lb, lr, lc, Xb, xr, xc, n, upper, li, zero, badL, badX);
        status_scan<R, NC, false, true>(Lb, lr, lc, Xb, xr, xc, n, upper, xi, zero, badL, badX);
    }
    __shared__ int s_zero;
    if (threadIdx.x == 0) s_zero = 0;
    __syncthreads();
    if (zero) atomicMax(&s_zero, zero);
    int anyL = __syncthreads_or(badL);
    int anyX = __syncthreads_or(badX);
    if (threadIdx.x == 0) {
        int flags = (anyL ? 1 : 0) | (anyX ? 2 : 0);
        if (gridDim.y == 1) {  // one block per matrix: plain stores, acc needs no zeroing
            acc[3 * b] = s_zero;
            acc[3 * b + 1] = flags;
        } else {
            if (s_zero) atomicMax(&acc[3 * b], s_zero);
            if (flags) atomicOr(&acc[3 * b + 1], flags);
        }
        const int inf = (blockIdx.y == 0 && info) ? info[b] : 0;
        if (blockIdx.y == 0) acc[3 * b + 2] = inf;
        if (summary) {
            // counter[1] is the launch's "anything to report" word: a block with something
            // to report sets it, then (fenced) takes a ticket; the last block copies it into
            // host-mapped memory and resets both words for the next launch (the caller
            // synchronizes before the next one). One word instead of a scan of the record,
            // which a single block would read at a crawl for large batches.
            if (s_zero || flags || inf) atomicOr(counter + 1, 1ULL);
            __threadfence();
            unsigned long long total = (unsigned long long)gridDim.x * gridDim.y;
            if (atomicAdd(counter, 1ULL) == total - 1ULL) {
                *(volatile int*)summary = (int)atomicOr(counter + 1, 0ULL);
                counter[1] = 0ULL;
                counter[0] = 0ULL;
            }
        }
    }
}
#define STATUS(NAME, R, NC) extern "C" __global__ void NAME(StatusArgs a)                  \
    { inverse_status_impl<R, NC>((const R*)a.L, a.lb, a.lr, a.lc, (const R*)a.X, a.xb,     \
                                 a.xr, a.xc, (int)a.n, (int)a.upper, (const int*)a.info,   \
                                 (int*)a.acc, (unsigned long long*)a.counter,              \
                                 (int*)a.summary); }
STATUS(status_s, float, 1)
STATUS(status_d, double, 1)
STATUS(status_c, float, 2)
STATUS(status_z, double, 2)

// potrf's info with a NaN pivot flagged as Reference LAPACK's ?potrf reports it (cuSOLVER's
// potrf can return info = 0 on NaN input; +Inf is a valid pivot for both): where info[b] == 0
// and the factor has a NaN on its diagonal, info[b] = first such index + 1. One block per matrix, threads
// along the diagonal; in place. Hand-written for the same reason as the check kernel: torch
// ops take ~10 launches for this.
template<typename R, int NC>
__device__ void pivots_impl(const R* L, long long lb, long long ld, int n, int* info)
{
    const long long b = blockIdx.x;
    __shared__ int s_first;
    if (threadIdx.x == 0) s_first = n;
    __syncthreads();
    if (info[b] == 0) {
        const R* Lb = L + b * lb;
        for (int i = threadIdx.x; i < n; i += blockDim.x) {
            const R* p = Lb + (long long)i * ld;
            if (isnan(p[0]) || (NC == 2 && isnan(p[1]))) { atomicMin(&s_first, i); break; }
        }
    }
    __syncthreads();
    if (threadIdx.x == 0 && s_first < n) info[b] = s_first + 1;
}
#define PIVOTS(NAME, R, NC) extern "C" __global__ void NAME(const R* L, long long lb,          \
    long long ld, int n, int* info) { pivots_impl<R, NC>(L, lb, ld, n, info); }
PIVOTS(pivots_s, float, 1)
PIVOTS(pivots_d, double, 1)
PIVOTS(pivots_c, float, 2)
PIVOTS(pivots_z, double, 2)
"""
_STATUS_MOD: dict = {}     # device index -> CuPy RawModule of _STATUS_SRC
_STATUS_FN: dict = {}      # (device index, type letter) -> CuPy Function (launches with stream=)
_THREADS = 256
_PER_THREAD = 16           # elements per thread before a matrix gets a second block
_HOST_ALLOC_PORTABLE_MAPPED = 1 | 2  # cudaHostAllocPortable | cudaHostAllocMapped


def status_grid(batch: int, n: int) -> tuple:
    """The check kernel's grid: one block per matrix, more along y for large matrices
    (``_PER_THREAD`` elements per thread), at most 65535.

    Examples
    --------
    >>> status_grid(1000, 32), status_grid(1, 4096)
    ((1000, 1), (1, 4096))
    """
    return batch, max(1, min(65535, -(-n * n // (_THREADS * _PER_THREAD))))


def _status_function(idx: int, prefix: str, name: str = "status"):
    """The compiled check kernel (or ``name="pivots"``) for device ``idx`` (current) and
    type ``prefix``, cached."""
    fn = _STATUS_FN.get((idx, prefix, name))
    if fn is None:
        mod = _STATUS_MOD.get(idx)
        if mod is None:
            mod = _STATUS_MOD[idx] = _load.cupy().RawModule(code=_STATUS_SRC)
        kernel = mod.get_function(f"{name}_{prefix}")
        # the per-device Function behind CuPy's RawKernel: its call takes stream= directly
        fn = _STATUS_FN[idx, prefix, name] = getattr(kernel, "kernel", kernel)
    return fn


@on_tensor_device
def flag_nan_pivots(L: torch.Tensor, info: torch.Tensor) -> torch.Tensor:
    """potrf's ``info`` (int32, the batch shape of ``L`` (..., n, n)) with the first NaN on
    the diagonal of the factor reported where info is 0, as Reference LAPACK's ``?potrf``
    does (it stops at a NaN pivot; cuSOLVER's potrf does not; +Inf is a valid pivot for both). One kernel launch
    on torch's current stream, no synchronization; a contiguous int32 ``info`` is updated
    in place and returned, any other is copied first."""
    n = L.shape[-1]
    shape = info.shape
    flat = info.reshape(-1)
    if flat.dtype != torch.int32 or not flat.is_contiguous() or flat.data_ptr() != info.data_ptr():
        flat = flat.to(torch.int32).contiguous()
    batch = flat.numel()
    if batch == 0 or n == 0:
        return flat.reshape(shape)
    dt = _dtype(L.dtype)
    nc = 2 if dt.is_complex else 1
    L3 = _batched(L, n)   # alive until after the launch
    ptr, lb, lr, lc = _strided(L3, n, nc)
    idx = L.get_device()
    _status_function(idx, dt.prefix, "pivots")(
        (batch,), (64 if n >= 64 else 32,),
        (ptr, np.int64(lb), np.int64(lr + lc), np.int32(n), flat.data_ptr()),
        stream=StreamRef(current_stream_ptr(idx)))
    return flat.reshape(shape)


class CheckState:
    """What the checked entry point keeps per (thread, device): the kernel's ticket counter
    and "anything to report" word (3 int64 of device memory from torch's allocator, reset by
    the kernel itself; the third is the summary word where no mapped memory exists), a record
    buffer (:class:`._context.Scratch`), and one int32 of host-mapped pinned memory for the
    summary word (``word``, a ``ctypes.c_int32`` at its address; None where the driver gives
    no device-accessible mapping at the same address, and :func:`inverse_check` then copies
    the record instead)."""

    def __init__(self, device):
        # [ticket, "anything to report", the summary word where no mapped memory exists]
        self.counter = torch.zeros(3, dtype=torch.int64, device=device)
        self.counter_ptr = self.counter.data_ptr()
        # the record of the checked calls: read only after the call's synchronization (or
        # copied before it returns), so one grow-only buffer per stream serves every call
        # 64 KiB: the records of up to 5461 matrices without a new allocation, so that the
        # first checked call of a larger batch does not allocate on its way
        self.acc = Scratch(functools.partial(device_bytes, device.index), minimum=1 << 16)
        self.word_ptr, self.word = 0, None
        rt = _load.cupy().cuda.runtime
        try:
            ptr = rt.hostAlloc(4, _HOST_ALLOC_PORTABLE_MAPPED)
        except Exception:  # no mapped pinned memory here: inverse_check copies the record
            return
        try:
            attrs = rt.pointerGetAttributes(ptr)
            same = attrs.devicePointer == ptr  # unified addressing: one address for both sides
        except Exception:  # no attributes: do not trust the mapping
            same = False
        if not same:
            rt.freeHost(ptr)
            return
        self.word_ptr = ptr
        # a ctypes int32 at the mapped address: its ``.value`` is read and written in ~0.1 µs,
        # where a NumPy view's item access costs ~1 µs (and several on a call's first use)
        self.word = ctypes.c_int32.from_address(ptr)

    def close(self) -> None:
        ptr, self.word_ptr, self.word = self.word_ptr, 0, None
        if ptr:
            _load.cupy().cuda.runtime.freeHost(ptr)


def _batched(x: torch.Tensor, n: int) -> torch.Tensor:
    """``x`` (..., n, n) as at most 3-D: a view where the batch dimensions merge, else a copy
    (which the caller keeps alive until its kernel is launched: freed earlier, the caching
    allocator could hand the block to the next allocation before the kernel reads it)."""
    return x if x.dim() <= 3 else x.reshape(-1, n, n)


def _strided(x: torch.Tensor, n: int, nc: int):
    """``(pointer, batch stride, row stride, column stride)`` of ``x`` (at most 3-D, see
    :func:`_batched`) in real elements (``nc`` = 2 for complex)."""
    if x.dim() == 2:
        r, c = x.stride()
        return x.data_ptr(), 0, r * nc, c * nc
    b, r, c = x.stride()
    return x.data_ptr(), b * nc, r * nc, c * nc


# the struct's 14 int64 written into _StatusArgs.values in one call: struct.pack_into takes
# ~0.5 µs where a NumPy assignment of the tuple takes ~2 µs (10 on a call's first use)
_STATUS_STRUCT = struct.Struct(f"={len(_STATUS_FIELDS)}q")


class _StatusArgs(LaunchArgs):
    """The check kernel's argument struct (:class:`._context.LaunchArgs`, 14 int64), and the
    size-1 view of it that a CuPy launch passes by value (the CPU tests' fake kernel reads
    it). One per thread and device."""

    __slots__ = ("param",)

    def __init__(self):
        super().__init__(len(_STATUS_FIELDS))
        self.param = self.values.view(np.dtype((np.void, self.values.nbytes)))


def _launch_status(idx: int, prefix: str, grid: tuple, args: _StatusArgs, stream: int) -> None:
    """One ``cuLaunchKernel`` of the check kernel for type ``prefix`` on device ``idx``
    (current), stream ``stream``, with the struct in ``args``. Through the driver, as
    :mod:`.cuda_copy` launches: CuPy's ``Function.__call__`` converts its arguments on every
    call, a few µs of each checked call's host time. The CPU tests replace this function."""
    fn = _status_function(idx, prefix)
    _load.cupy_driver().launchKernel(fn.ptr, grid[0], grid[1], 1, _THREADS, 1, 1, 0, stream,
                                     args.params_ptr, 0)


def _status(L: torch.Tensor, X: torch.Tensor, upper: bool, info, summary: bool):
    """Launch the check kernel on torch's current stream of L's device (current):
    ``(acc, state, stream pointer, batch)``; ``state`` is None unless a summary word was
    asked for and is available. ``acc`` is the ``(batch, 3)`` int32 record, or with a
    summary word and one block per matrix the state's flat byte buffer holding it (see
    :func:`_record`)."""
    dt = _dtype(L.dtype)
    n = L.shape[-1]
    batch = L.numel() // (n * n) if n else 0
    if batch == 0 or n == 0:
        return torch.zeros((batch, 3), dtype=torch.int32, device=L.device), None, 0, batch
    grid = status_grid(batch, n)
    nc = 2 if dt.is_complex else 1
    if info is not None and (info.dim() != 1 or info.dtype != torch.int32
                             or not info.is_contiguous()):
        info = info.reshape(-1).to(torch.int32).contiguous()
    idx = L.get_device()
    stream = current_stream_ptr(idx)
    ctx = context(idx)
    state = None
    if summary:
        state = ctx.check_state
        if state is None:
            state = ctx.check_state = CheckState(L.device)
        if state.word is None:
            state = None
        else:
            state.word.value = -1  # anything but 0 if the kernel somehow did not store it
    if state is not None and grid[1] == 1:  # every entry written by the kernel: no zeroing
        acc = state.acc.get(12 * batch, stream)
    else:
        acc = (torch.empty if grid[1] == 1 else torch.zeros)((batch, 3), dtype=torch.int32,
                                                             device=L.device)
    args = ctx.status_args
    if args is None:
        args = ctx.status_args = _StatusArgs()
    L3, X3 = _batched(L, n), _batched(X, n)   # alive until after the launch
    _STATUS_STRUCT.pack_into(args.values, 0, *_strided(L3, n, nc), *_strided(X3, n, nc), n,
                             1 if upper else 0, 0 if info is None else info.data_ptr(),
                             acc.data_ptr(), 0 if state is None else state.counter_ptr,
                             0 if state is None else state.word_ptr)
    _launch_status(idx, dt.prefix, grid, args, stream)
    return acc, state, stream, batch


def _record(acc: torch.Tensor, batch: int) -> np.ndarray:
    """The ``(batch, 3)`` record on the host from what :func:`_status` returned (synchronizes)."""
    if acc.dtype == torch.uint8:
        acc = acc[: 12 * batch].view(torch.int32).view(batch, 3)
    return acc.cpu().numpy()


@on_tensor_device
def inverse_status(L: torch.Tensor, X: torch.Tensor, upper: bool, info: torch.Tensor | None):
    """Per-matrix check record of an inverse ``X`` from the factor ``L`` (both (..., n, n),
    same CUDA device and batch): an int32 device tensor ``(batch, 3)`` holding

    * ``n - i`` for the first exact zero ``L[i, i]`` (0: none),
    * flags: 1 = the ``upper`` / lower triangle of L has a non-finite entry, 2 = X has one,
    * the routine's own ``info`` (0 when ``info`` is None).

    One kernel launch on torch's current stream (plus a memset when a matrix is large
    enough to need several blocks); no synchronization.
    """
    return _status(L, X, upper, info, summary=False)[0]


@on_tensor_device
def inverse_check(L: torch.Tensor, X: torch.Tensor, upper: bool, info: torch.Tensor | None):
    """The checked entry point's check: the record of :func:`inverse_status` on the host, or
    None when every entry of it is zero (nothing to report).

    One kernel launch and one synchronization of torch's current stream; the kernel also
    stores one "anything to report" word into host-mapped memory, so the common case copies
    nothing, and the ``(batch, 3)`` record is copied only when there is something to report.
    """
    acc, state, stream, batch = _status(L, X, upper, info, summary=True)
    return finish_check(L.get_device(), state, acc, stream, batch)


def self_check_buffers(idx: int, batch: int):
    """The buffers of the checked entry point for a kernel that computes the check record
    itself (the fused kernels: the same ``(batch, 3)`` record as :func:`inverse_status` and
    the same summary word). Device ``idx`` is current; torch's current stream.

    Returns
    -------
    state : CheckState
    acc : uint8 device tensor
        At least ``12 * batch`` bytes: the record, written by the kernel.
    stream : int
        torch's current stream (raw pointer).
    summary : int
        Where the kernel stores the summary word: host-mapped memory, or (no mapping here)
        a device word that :func:`finish_check` never reads (it copies the record).
    """
    stream = current_stream_ptr(idx)
    ctx = context(idx)
    state = ctx.check_state
    if state is None:
        state = ctx.check_state = CheckState(torch.device("cuda", idx))
    acc = state.acc.get(12 * batch, stream)
    if state.word is None:
        return state, acc, stream, state.counter_ptr + 16
    state.word.value = -1  # anything but 0 if the kernel somehow did not store the word
    return state, acc, stream, state.word_ptr


def finish_check(idx: int, state, acc, stream: int, batch: int):
    """The one synchronization of a checked call: None when the launch's summary word says
    nothing is to report, else the ``(batch, 3)`` record on the host (copied only then; always
    where no host-mapped word exists). Host work deferred to the next wait
    (:mod:`._waiting`) runs first, while the check kernel runs."""
    if state is None or state.word is None:  # no mapped word here: copy the record (synchronizes)
        _waiting.run()   # deferred host work, hidden behind the check kernel's run
        host = _record(acc, batch)
        return host if host.any() else None
    try:
        if _waiting.PENDING:
            _waiting.run()
        _load.cupy().cuda.runtime.streamSynchronize(stream)
    except BaseException:
        # the launch may still be running: never share its counter and word with a later
        # launch (its last-block test would be off); the next check makes fresh ones
        context(idx).check_state = None
        raise
    if state.word.value == 0:
        return None
    return _record(acc, batch)
