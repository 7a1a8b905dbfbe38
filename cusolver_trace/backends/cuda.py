"""CUDA backend: array-level routines on torch CUDA tensors through raw cuSOLVER / cuBLAS.

The only place (with :mod:`._context`) that imports :mod:`cusolver_trace.raw`.

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

from .._dtypes import dtype_info
from ..raw import _load
from ..raw import cublas as cb
from ..raw import cusolver as cs
from ._context import cupy_stream, on_device, pointer_array

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
    w, uplo, lda = colmajor(a), fill_mode(upper), max(1, a.shape[-1])
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
    wc, x, uplo, ld = colmajor(c), colmajor(b), fill_mode(upper), max(1, c.shape[-1])
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
    w, uplo, lda = colmajor(c), fill_mode(upper), max(1, c.shape[-1])
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
    w, uplo, lda = colmajor(c), fill_mode(upper), max(1, c.shape[-1])
    diag = cs.UNIT if unit_diagonal else cs.NON_UNIT
    info = _info(w)
    with on_device(c.device) as ctx:
        dbytes, hbytes = cs.Xtrtri_bufferSize(ctx.solver, uplo, diag, n, cdt, w.data_ptr(), lda)
        work, host = ctx.workspace(dbytes), np.empty(max(hbytes, 1), dtype=np.uint8)
        for b in range(w.shape[0]):
            cs.Xtrtri(ctx.solver, uplo, diag, n, cdt, _ptr(w, b), lda, work.data_ptr(), dbytes,
                      host.ctypes.data if hbytes else 0, hbytes, _ptr(info, b))
    out = matrices(w, c.shape[:-2])
    out = out.triu_() if upper else out.tril_()
    if unit_diagonal:  # the diagonal is not referenced (LAPACK semantics): the inverse's is 1
        out.diagonal(dim1=-2, dim2=-1).fill_(1)
    return out, info


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
    uplo = fill_mode(upper)
    # lower: L Y = B, then Lᴴ X = Y; upper: Uᴴ Y = B, then U X = Y
    ops = tuple(operation(o, dt.is_complex) for o in (("C", "N") if upper else ("N", "C")))
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


def potrf_trsm_batched(A: torch.Tensor, upper: bool = False):
    """End-to-end A → A⁻¹ for batches of small matrices: ``(Ainv, info)``.

    One column-major working copy of A ``(..., n, n)``, one
    ``cusolverDn<t>potrfBatched`` on it, then two ``cublas<t>trsmBatched`` on an
    identity: X = L⁻ᴴ·(L⁻¹·I) (lower) or U⁻¹·(U⁻ᴴ·I) (upper). ``info`` is
    potrfBatched's (int32, shape ``(batch,)``); where it is non-zero the inverse
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
    return matrices(x, A.shape[:-2]), info


# --------------------------------------------------------------------------- cheap checks
# One kernel per call reduces, for each matrix of a batch, what the checks need to one small
# record on the device: the first exact zero on the factor's diagonal, whether the factor's
# triangle or the result holds a non-finite value, and the routine's own info. The host then
# copies batch x 3 int32 (one synchronization, as torch's checks do). Hand-written because no
# library reduction gives all three in one pass; torch ops would take 6-8 launches a call.
_STATUS_SRC = r"""
template<typename R, int NC>
__device__ void inverse_status_impl(const R* L, long long lb, long long lr, long long lc,
                                    const R* X, long long xb, long long xr, long long xc,
                                    int n, int upper, const int* info, int* acc)
{
    const long long b = blockIdx.x;
    const long long nn = (long long)n * n;
    const R* Lb = L + b * lb;
    const R* Xb = X + b * xb;
    int zero = 0, badL = 0, badX = 0;
    for (long long e = (long long)blockIdx.y * blockDim.x + threadIdx.x; e < nn;
         e += (long long)gridDim.y * blockDim.x) {
        long long j = e / n, i = e - j * n;
        if (upper ? (i <= j) : (i >= j)) {
            const R* p = Lb + i * lr + j * lc;
            R re = p[0];
            R im = (NC == 2) ? p[1] : (R)0;
            if (!isfinite(re) || !isfinite(im)) badL = 1;
            else if (i == j && re == (R)0 && im == (R)0) zero = max(zero, (int)(n - i));
        }
        const R* q = Xb + i * xr + j * xc;
        if (!isfinite(q[0]) || (NC == 2 && !isfinite(q[1]))) badX = 1;
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
        if (blockIdx.y == 0) acc[3 * b + 2] = info ? info[b] : 0;
    }
}
#define STATUS(NAME, R, NC) extern "C" __global__ void NAME(                               \
    const R* L, long long lb, long long lr, long long lc,                                  \
    const R* X, long long xb, long long xr, long long xc,                                  \
    int n, int upper, const int* info, int* acc)                                           \
    { inverse_status_impl<R, NC>(L, lb, lr, lc, X, xb, xr, xc, n, upper, info, acc); }
STATUS(status_s, float, 1)
STATUS(status_d, double, 1)
STATUS(status_c, float, 2)
STATUS(status_z, double, 2)
"""
_STATUS_FN: dict = {}      # (device index, type letter) -> compiled kernel
_STATUS_STREAM: dict = {}  # (device index, torch stream pointer) -> CuPy view of that stream
_THREADS = 256
_PER_THREAD = 16           # elements per thread before a matrix gets a second block


def _status_launch(idx: int, prefix: str, grid, args) -> None:
    """Launch the check kernel on torch's current stream of device ``idx`` with as little
    host work as the launch allows (the check is timed inside every checked call):
    compiled function and stream view cached, no handle binding."""
    cp = _load.cupy()
    stream = torch.cuda.current_stream(idx)
    key = (idx, stream.cuda_stream)
    st = _STATUS_STREAM.get(key)
    if st is None:
        st = _STATUS_STREAM[key] = cupy_stream(cp, stream, idx)
    fn = _STATUS_FN.get((idx, prefix))
    if fn is None:
        with cp.cuda.Device(idx):
            fn = _STATUS_FN[idx, prefix] = cp.RawModule(code=_STATUS_SRC).get_function(
                f"status_{prefix}")
    if torch.cuda.current_device() != idx:
        with torch.cuda.device(idx), cp.cuda.Device(idx), st:
            fn(grid, (_THREADS,), args)
    else:
        with st:
            fn(grid, (_THREADS,), args)


def _batched_view(x: torch.Tensor) -> torch.Tensor:
    return x.reshape(-1, x.shape[-2], x.shape[-1])


def inverse_status(L: torch.Tensor, X: torch.Tensor, upper: bool, info: torch.Tensor | None):
    """Per-matrix check record of an inverse ``X`` from the factor ``L`` (both (..., n, n),
    same CUDA device and batch): an int32 device tensor ``(batch, 3)`` holding

    * ``n - i`` for the first exact zero ``L[i, i]`` (0: none),
    * flags: 1 = the ``upper`` / lower triangle of L has a non-finite entry, 2 = X has one,
    * the routine's own ``info`` (0 when ``info`` is None).

    One kernel launch on torch's current stream (plus a memset when a matrix is large
    enough to need several blocks); no synchronization.
    """
    dt = dtype_info(L.dtype)
    Lb, Xb = _batched_view(L), _batched_view(X)
    batch, n = Lb.shape[0], Lb.shape[-1]
    if batch == 0 or n == 0:
        return torch.zeros((batch, 3), dtype=torch.int32, device=L.device)
    per = max(1, min(65535, -(-n * n // (_THREADS * _PER_THREAD))))
    acc = (torch.empty if per == 1 else torch.zeros)((batch, 3), dtype=torch.int32, device=L.device)
    nc = 2 if dt.is_complex else 1
    if info is not None:
        info = info.reshape(-1)
        if not info.is_contiguous() or info.dtype != torch.int32:
            info = info.to(torch.int32).contiguous()
    idx = L.device.index if L.device.index is not None else torch.cuda.current_device()
    _status_launch(idx, dt.prefix, (batch, per),
                   (Lb.data_ptr(), *(s * nc for s in Lb.stride()), Xb.data_ptr(),
                    *(s * nc for s in Xb.stride()), np.int32(n), np.int32(bool(upper)),
                    0 if info is None else info.data_ptr(), acc.data_ptr()))
    return acc


def __getattr__(name):
    """``plan_runner`` / ``trtri_lauum`` live in :mod:`.cuda_plans` (importable from here too)."""
    if name in ("plan_runner", "trtri_lauum"):
        from . import cuda_plans

        return getattr(cuda_plans, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
