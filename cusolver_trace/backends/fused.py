"""Fused backend: one cuSOLVERDx kernel per call for batches of small matrices.

cuSOLVERDx is cuSOLVER's device-side library: ``potrf`` / ``potrs`` run inside a
kernel, on matrices in shared memory, ``batches_per_block`` matrices per thread block.
This module builds one kernel per (operation, n, nrhs, dtype, fill mode, layouts,
batches per block, block size, GPU architecture):

1. ``nvmath.device.Solver`` (nvmath-python's front end to libmathdx) generates the
   cuSOLVERDx device functions (``potrf``, ``potrs``) as LTO-IR with a C ABI;
2. NVRTC compiles the kernel below (global ↔ shared copies, the calls, info) to LTO-IR;
3. nvJitLink links both with cuSOLVERDx's universal fatbin into one cubin.

The cubin is cached in memory and on disk (``$XDG_CACHE_HOME/cusolver_trace/fused``,
keyed by every input above plus the versions of nvmath-python, libmathdx, NVRTC and
nvJitLink and the kernel source), so a new process loads it without compiling. It is
launched through CuPy on torch's current stream. The kernel is written here in CUDA C++
rather than as a numba-cuda kernel because its launch must cost a few µs from Python:
a CuPy ``Function`` call takes raw pointers, while a numba kernel call goes through
numba's argument marshalling (tens of µs); numba-cuda is still needed, as
``nvmath.device`` imports it.

Layout (:func:`plan_call`). Inputs are torch tensors ``(..., n, n)`` whose matrices are
contiguous either row by row (``stride(-1) == 1``, torch's default) or column by column
(``.mT`` contiguous, as ``torch.linalg.cholesky`` returns); any other stride pattern is
first copied with ``.contiguous()``. Each block copies its matrices to shared memory
element for element, in the same order (coalesced, no transposition), and cuSOLVERDx is
told how to read them: ``layout="native"`` declares the buffer's own order
(``arrangement`` ``col_major`` for a column-major tensor) with the caller's fill mode;
``layout="row_major"`` (the default: cuSOLVERDx's row-major kernels measured faster on an
H200) reads a column-major buffer as the row-major buffer of the transpose, so the fill
mode flips (a column-major L is a row-major Lᵀ, upper). For complex matrices that
transpose is the conjugate of the factor cuSOLVERDx expects, which makes it solve with
conj(A): harmless for the inverse (conj(A)⁻¹ read back transposed is A⁻¹, A being
Hermitian) and for potrf (the factor of conj(A), read back transposed, is A's), and undone
in ``solve`` by conjugating B on load and X on store. Results come back in the input's
memory order.

Everything above the ``# --- GPU`` line is pure Python (shapes, keys, the kernel
source, the disk cache) and is tested without a GPU.
"""
from __future__ import annotations

import functools
import hashlib
import json
import math
import os
import tempfile
import threading
from dataclasses import asdict, dataclass
from pathlib import Path

from .._dtypes import dtype_info
from . import _context
from .cuda_copy import column_major_layout

__all__ = ["EXTRA", "FusedUnavailableError", "FusedKey", "OPS", "arrangement_of", "rhs_chunk",
           "shared_bytes", "grid_size", "kernel_source", "cache_key", "DiskCache", "fits",
           "available", "potrf", "potrs", "cholesky_inverse", "potrf_inverse", "SMEM_LIMIT",
           "plan_call", "LAYOUT", "LAYOUTS"]

EXTRA = "cusolver-trace[cuda13-fused]"
"""The pip extra that installs what this backend needs."""

OPS = ("potrf", "inverse", "potrf_inverse", "solve")
"""Kernels: A → (L, info); L → A⁻¹; A → (A⁻¹, info); (L, B) → A⁻¹·B."""

#: Shared memory a block may use on sm_80 / sm_90 (227 KiB opt-in); smaller GPUs report
#: their own through the device attribute at launch time.
SMEM_LIMIT = 227 * 1024

#: Static shared memory the cuSOLVERDx functions add to every kernel (``.nv.shared`` of
#: each cubin compiled here: 1 KiB); kept free when sizing the dynamic part, checked again
#: against the loaded kernel's own figure.
CUSOLVERDX_STATIC_SMEM = 1024

_DTYPES = {  # name -> (C++ real type, is complex, itemsize)
    "float32": ("float", False, 4),
    "float64": ("double", False, 8),
    "complex64": ("float", True, 8),
    "complex128": ("double", True, 16),
}


try:
    from ..errors import GPUUnavailableError as _Base
except ImportError:  # pragma: no cover - errors is part of the package
    _Base = RuntimeError


class FusedUnavailableError(_Base):
    """The fused (cuSOLVERDx) method cannot run here: its extra (:data:`EXTRA`) is not
    installed or does not load. A :class:`~cusolver_trace.errors.GPUUnavailableError`."""


# --------------------------------------------------------------------------- pure layout math
def arrangement_of(shape, strides) -> str | None:
    """How the matrices of a ``(..., r, c)`` tensor lie in memory.

    Parameters
    ----------
    shape, strides : sequence of int
        Of the tensor, in elements (torch's ``.shape`` / ``.stride()``).

    Returns
    -------
    ``"row_major"`` when the whole tensor is one contiguous buffer of matrices stored row
    by row (C order), ``"col_major"`` when it is one of matrices stored column by column
    (``x.mT`` C-contiguous), None otherwise (the caller copies). Dimensions of size 1
    do not count; a 1 x 1 matrix is ``row_major``.

    Examples
    --------
    >>> arrangement_of((10, 4, 4), (16, 4, 1))
    'row_major'
    >>> arrangement_of((10, 4, 4), (16, 1, 4))
    'col_major'
    >>> arrangement_of((10, 4, 4), (32, 4, 1)) is None
    True
    """
    shape, strides = tuple(shape), tuple(strides)
    if len(shape) < 2:
        raise ValueError(f"need (..., r, c), got shape {shape}")

    def contiguous(sh, st):
        expect = 1
        for n, s in zip(reversed(sh), reversed(st)):
            if n != 1 and s != expect:
                return False
            expect *= n
        return True

    if contiguous(shape, strides):
        return "row_major"
    sh = shape[:-2] + (shape[-1], shape[-2])
    st = strides[:-2] + (strides[-1], strides[-2])
    if contiguous(sh, st):
        return "col_major"
    return None


def grid_size(batch: int, batches_per_block: int) -> int:
    """Thread blocks for ``batch`` matrices, ``batches_per_block`` per block (the last
    block may be partly empty: the kernel pads it with identity matrices and writes
    nothing back for them).

    Examples
    --------
    >>> grid_size(10, 4), grid_size(8, 4), grid_size(1, 32)
    (3, 2, 1)
    """
    if batch < 0 or batches_per_block < 1:
        raise ValueError(f"bad batch {batch} / batches_per_block {batches_per_block}")
    return -(-batch // batches_per_block)


def tail(batch: int, batches_per_block: int) -> int:
    """How many matrices the last block really holds (``batches_per_block`` when the
    batch divides evenly).

    Examples
    --------
    >>> tail(10, 4), tail(8, 4)
    (2, 4)
    """
    r = batch % batches_per_block
    return r if r else batches_per_block


def shared_bytes(op: str, n: int, kc: int, dtype: str, batches_per_block: int, pad: int = 0,
                 arr_b: str = "row_major") -> int:
    """Shared memory (bytes) of one block: ``batches_per_block`` matrices A (n x n, leading
    dimension n + pad), for the solving kernels as many right-hand-side chunks (n x kc,
    leading dimension kc + pad row-major or n + pad column-major), and four int32
    each (info and the check's); A is aligned to 16 bytes, each part rounded up to 16.

    Examples
    --------
    >>> shared_bytes("inverse", 32, 32, "float64", 1)
    16400
    """
    isz = _DTYPES[dtype][2]
    a = _round16(batches_per_block * n * (n + pad) * isz)
    one_b = n * (kc + pad) if arr_b == "row_major" else kc * (n + pad)
    b = _round16(batches_per_block * one_b * isz) if op != "potrf" else 0
    return a + b + _round16(16 * batches_per_block)   # 4 int32 per matrix: info and the check


def _round16(x: int) -> int:
    return -(-x // 16) * 16


def rhs_chunk(op: str, n: int, nrhs: int, dtype: str, batches_per_block: int,
              limit: int = SMEM_LIMIT, pad: int = 0, arr_b: str = "row_major") -> int:
    """Columns of the right-hand side solved per ``potrs`` call (the kernel loops over
    ``ceil(nrhs / kc)`` chunks): all of them when A and B fit in ``limit`` bytes of
    shared memory, else the largest power of two that fits. 0 for ``potrf`` (no right-hand side).

    Raises
    ------
    ValueError
        Not even one column fits next to A (n too large for this dtype): the fused
        method does not fall back by itself; ``method="auto"`` never picks it there.

    Examples
    --------
    >>> rhs_chunk("inverse", 32, 32, "float64", 1)
    32
    >>> rhs_chunk("inverse", 128, 128, "float64", 1)   # 128 KiB of A leaves room for 98 columns
    64
    """
    if op == "potrf":
        if shared_bytes(op, n, 0, dtype, batches_per_block, pad, arr_b) > limit:
            raise ValueError(_too_big(op, n, dtype, batches_per_block, limit))
        return 0
    kc = nrhs
    while kc >= 1 and shared_bytes(op, n, kc, dtype, batches_per_block, pad, arr_b) > limit:
        kc -= 1
    if kc < 1:
        raise ValueError(_too_big(op, n, dtype, batches_per_block, limit))
    if kc < nrhs:
        # chunks of a power-of-two width: with 95 columns per call (float64 n = 128) the
        # kernel ran at 17.8 ms per 100 matrices on the H200, 70x torch
        kc = 1 << (kc.bit_length() - 1)
    return kc


def _too_big(op, n, dtype, bpb, limit):
    return (f"fused {op}: n = {n} {dtype} with {bpb} matrices per block needs "
            f"{shared_bytes(op, n, 1 if op != 'potrf' else 0, dtype, bpb)} bytes of shared "
            f"memory, more than the {limit} a block can have; use another method "
            "(method='auto' falls back to torch)")


@functools.lru_cache(maxsize=4096)   # pure; asked on every method="auto" call
def fits(op: str, n: int, dtype: str, limit: int = SMEM_LIMIT) -> bool:
    """Whether the fused kernel can run ``op`` on n x n ``dtype`` matrices (one per block).

    Examples
    --------
    >>> fits("inverse", 128, "float64"), fits("inverse", 128, "complex128")
    (True, False)
    """
    try:
        rhs_chunk(op, n, max(n, 1), dtype, 1, limit - CUSOLVERDX_STATIC_SMEM)
    except ValueError:
        return False
    return True


@dataclass(frozen=True)
class FusedKey:
    """Everything one compiled kernel depends on (besides library versions).

    Attributes
    ----------
    op : str
        One of :data:`OPS`.
    n : int
        Matrix order.
    nrhs : int
        Right-hand-side columns (``n`` for the inverses, 0 for ``potrf``).
    kc : int
        Columns per ``potrs`` call (:func:`rhs_chunk`).
    dtype : str
        float32, float64, complex64, complex128.
    upper : bool
        Fill mode of A / the factor.
    arr_a, arr_b : str
        ``"row_major"`` / ``"col_major"``: memory order of A (and L) and of B / X.
    batches_per_block : int
    block : tuple of int
        Thread block (x, y, z).
    sm : tuple of int
        Compute capability (major, minor).
    conj : bool
        ``solve`` only, complex only: conjugate B on load and X on store (the row-major
        reading of a column-major complex factor, :func:`plan_call`).
    pad : int
        Extra elements per row / column in shared memory: leading dimensions ``n + pad``
        for A and ``kc + pad`` (row-major B) or ``n + pad`` (column-major B), against bank
        conflicts (a tuning knob; global memory is untouched).
    check : bool
        Compile the in-kernel check (the inverses; :func:`cholesky_inverse_checked`). A
        kernel without it carries none of its code: compiled in but switched off at run
        time, it made the unchecked kernels 19-36 % slower on the H200 (100000 x 16,
        1000 x 64), most likely through register pressure.
    """

    op: str
    n: int
    nrhs: int
    kc: int
    dtype: str
    upper: bool
    arr_a: str
    arr_b: str
    batches_per_block: int
    block: tuple
    sm: tuple
    conj: bool = False
    pad: int = 0
    check: bool = False

    def __post_init__(self):
        if self.op not in OPS:
            raise ValueError(f"op must be one of {OPS}, got {self.op!r}")
        if self.dtype not in _DTYPES:
            raise ValueError(f"unsupported dtype {self.dtype!r}")
        for a in (self.arr_a, self.arr_b):
            if a not in ("row_major", "col_major"):
                raise ValueError(f"arrangement must be row_major or col_major, got {a!r}")
        if self.n < 1 or self.batches_per_block < 1:
            raise ValueError("n and batches_per_block must be >= 1")
        if self.batches_per_block > math.prod(self.block):  # one thread writes each info
            raise ValueError(f"batches_per_block {self.batches_per_block} exceeds the "
                             f"{math.prod(self.block)} threads of a block")
        if self.op == "potrf" and (self.nrhs or self.kc):
            raise ValueError("potrf has no right-hand side")
        if self.op != "potrf" and not 1 <= self.kc <= self.nrhs:
            raise ValueError(f"need 1 <= kc <= nrhs, got kc={self.kc} nrhs={self.nrhs}")
        if self.conj and (self.op != "solve" or not _DTYPES[self.dtype][1]):
            raise ValueError("conj applies to complex solve kernels only")
        if not 0 <= self.pad <= 8:
            raise ValueError(f"pad must be 0..8, got {self.pad}")
        if self.check and self.op not in ("inverse", "potrf_inverse"):
            raise ValueError("the in-kernel check is for the inverses (inverse, potrf_inverse)")

    @property
    def threads(self) -> int:
        return math.prod(self.block)

    @property
    def chunks(self) -> int:
        return -(-self.nrhs // self.kc) if self.kc else 0

    @property
    def lda(self) -> int:
        return self.n + self.pad

    @property
    def ldb(self) -> int:
        return (self.kc if self.arr_b == "row_major" else self.n) + self.pad

    @property
    def shared_bytes(self) -> int:
        return shared_bytes(self.op, self.n, self.kc, self.dtype, self.batches_per_block,
                            self.pad, self.arr_b)

    @property
    def kernel_name(self) -> str:
        return "fused_" + self.op


_OP_CODE = {"potrf": 0, "inverse": 1, "potrf_inverse": 2, "solve": 3}

# The kernel. One block holds BPB matrices; thread t of NT copies elements t, t + NT, ...
# of the block's contiguous run of matrices (global -> shared in the same order, so the
# loads are coalesced and bank-conflict free), the cuSOLVERDx functions run on them, and
# the results go back the same way. Matrices past the end of the batch (the last block)
# are identity matrices and are not written back. Right-hand sides are processed KC
# columns at a time. Hand-written because cuSOLVERDx provides only the block-level
# potrf / potrs: the copies and the batching around them are the caller's part.
_KERNEL = r"""
#define N {n}
#define LDA {lda}
#define LDB {ldb}
#define NRHS {nrhs}
#define KC {kc}
#define NCHUNK {chunks}
#define BPB {bpb}
#define NT {threads}
#define OP {op_code}
#define UPPER {upper}
#define A_ROW {a_row}
#define B_ROW {b_row}
#define IS_COMPLEX {is_complex}
#define CONJ {conj}
#define CHECK {check}
// the checks' passes: threads per column of a matrix (the columns of a block's matrices
// split over NT threads; where there are fewer columns than threads, a column's rows)
#define SEGA ((NT / (BPB * N)) > 0 ? (NT / (BPB * N)) : 1)
#define SEGB ((NT / (BPB * KC)) > 0 ? (NT / (BPB * KC)) : 1)
typedef {real} R;
#if IS_COMPLEX
struct __align__(2 * sizeof(R)) V {{ R x, y; }};
__device__ __forceinline__ V vzero() {{ V v; v.x = 0; v.y = 0; return v; }}
__device__ __forceinline__ V vone() {{ V v; v.x = 1; v.y = 0; return v; }}
#else
typedef R V;
__device__ __forceinline__ V vzero() {{ return (R)0; }}
__device__ __forceinline__ V vone() {{ return (R)1; }}
#endif
{decls}

// the arguments as one struct passed by value: CuPy converts each separate Python argument on
// every launch, and one struct is one conversion (the field order is _ARG_FIELDS)
struct FusedArgs {{ const V* A; const V* B; V* X; int* info; long long batch;
                    int* rec; unsigned long long* counter; int* summary; }};
__device__ __forceinline__ bool finite_v(V v) {{
#if IS_COMPLEX
    return isfinite(v.x) && isfinite(v.y);
#else
    return isfinite(v);
#endif
}}
__device__ __forceinline__ bool nan_v(V v) {{
#if IS_COMPLEX
    return isnan(v.x) || isnan(v.y);
#else
    return isnan(v);
#endif
}}
__device__ __forceinline__ bool zero_v(V v) {{
#if IS_COMPLEX
    return v.x == (R)0 && v.y == (R)0;
#else
    return v == (R)0;
#endif
}}

extern "C" __global__ void __launch_bounds__(NT)
{name}(const FusedArgs args)
{{
    const V* __restrict__ A = args.A;
    const V* __restrict__ B = args.B;
    V* __restrict__ X = args.X;
    int* __restrict__ info = args.info;
    const long long batch = args.batch;
    // the check (args.rec != nullptr; the inverses only): per matrix of the batch, the record
    // of backends.cuda.inverse_status -- n - i for the first exact zero on the diagonal of the
    // triangle read, flags (1: that triangle has a non-finite entry, 2: the result has one) and
    // info (potrf's, or the first NaN pivot of A as Reference LAPACK reports it) -- and
    // one "anything to report" word for the whole launch in host-mapped memory (the last block
    // to finish stores it). The tests run only on the rare bad entries: shared atomics there.
    // CHECK 0: rec is a constant null pointer and every check block below compiles away
    int* __restrict__ rec = CHECK ? args.rec : nullptr;
    extern __shared__ __align__(16) unsigned char smem[];
    V* sA = reinterpret_cast<V*>(smem);
    const int SA_BYTES = ((BPB * N * LDA * (int)sizeof(V) + 15) / 16) * 16;
#if OP != 0
    V* sB = reinterpret_cast<V*>(smem + SA_BYTES);
    const int SB_ONE = B_ROW ? N * LDB : KC * LDB;      // one matrix's right-hand sides
    const int SB_BYTES = ((BPB * SB_ONE * (int)sizeof(V) + 15) / 16) * 16;
    int* sInfo = reinterpret_cast<int*>(smem + SA_BYTES + SB_BYTES);
#else
    int* sInfo = reinterpret_cast<int*>(smem + SA_BYTES);
#endif
    int* sZero = sInfo + BPB;     // per matrix: n - i of the first zero pivot of the input
    int* sFlag = sInfo + 2 * BPB; // per matrix: 1 non-finite input triangle, 2 non-finite X
    int* sNanD = sInfo + 3 * BPB; // per matrix: n - i of the first NaN on the diagonal
    const int tid = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    const long long m0 = (long long)blockIdx.x * BPB;
    const long long left = batch - m0;
    const int here = left < BPB ? (int)left : BPB;   // matrices of the batch in this block
    const V* Ab = A + m0 * (N * N);

    if (rec != nullptr) {{
        for (int i = tid; i < BPB; i += NT) {{ sZero[i] = 0; sFlag[i] = 0; sNanD[i] = 0; }}
        __syncthreads();
    }}
    for (int i = tid; i < BPB * N * N; i += NT) {{
        const int j = i / (N * N), e = i - j * (N * N);
        const int s = j * (N * LDA) + (e / N) * LDA + e % N;   // leading dimension LDA >= N
        sA[s] = (j < here) ? Ab[i] : ((e / N == e % N) ? vone() : vzero());
    }}
    __syncthreads();
    if (rec != nullptr) {{
        // the input's check, a pass over shared memory of its own: the memory-bound load loop
        // above stays as in the unchecked kernel (no branches or atomics between its loads).
        // Thread (matrix j, column c, segment seg) walks the strictly lower (upper) part of
        // column c, rows seg, seg + SEGA, ... (no division per entry), and segment 0 the
        // diagonal entry: exact zero -> sZero, NaN -> sNanD (n - i of the first one)
        for (int t = tid; t < here * N * SEGA; t += NT) {{
            const int seg = t % SEGA, jc = t / SEGA;
            const int j = jc / N, c = jc - j * N;
            const V* M = sA + j * (N * LDA);
            bool bad = false;
            for (int r = (UPPER ? 0 : c + 1) + seg; r < (UPPER ? c : N); r += SEGA)
                bad |= !finite_v(M[A_ROW ? r * LDA + c : c * LDA + r]);
            if (seg == 0) {{
                const V d = M[c * LDA + c];
                if (!finite_v(d)) {{
                    bad = true;
                    if (nan_v(d)) atomicMax(&sNanD[j], N - c);
                }} else if (zero_v(d)) {{
                    atomicMax(&sZero[j], N - c);
                }}
            }}
            if (bad) atomicOr(&sFlag[j], 1);
        }}
        __syncthreads();
    }}
#if OP == 0 || OP == 2
    {potrf}(sA, sInfo);
    __syncthreads();
    if (tid < here) info[m0 + tid] = sInfo[tid];
#else
    if (info != nullptr && tid < here) info[m0 + tid] = 0;   // potrs reports nothing
#endif
#if OP == 0
    // the factor, the other triangle zeroed (as torch.linalg.cholesky returns it)
    V* Xb = X + m0 * (N * N);
    for (int i = tid; i < here * N * N; i += NT) {{
        const int j = i / (N * N), e = i - j * (N * N);
        const int s = j * (N * LDA) + (e / N) * LDA + e % N;
        const int r = A_ROW ? e / N : e % N, c = A_ROW ? e % N : e / N;
        Xb[i] = (UPPER ? (r <= c) : (r >= c)) ? sA[s] : vzero();
    }}
#else
    const long long bstride = (long long)N * NRHS;
    for (int ch = 0; ch < NCHUNK; ++ch) {{
        const int c0 = ch * KC;
        for (int i = tid; i < BPB * N * KC; i += NT) {{
            const int j = i / (N * KC), e = i - j * (N * KC);
            const int r = B_ROW ? e / KC : e % N, cc = B_ROW ? e % KC : e / N;
            const int col = c0 + cc;
            const int s = j * SB_ONE + (B_ROW ? r * LDB + cc : cc * LDB + r);
            V v = vzero();
#if OP == 3
            if (j < here && col < NRHS)
                v = B[(m0 + j) * bstride + (B_ROW ? (long long)r * NRHS + col : (long long)col * N + r)];
#if CONJ
            v.y = -v.y;
#endif
#else
            if (r == col) v = vone();
#endif
            sB[s] = v;
        }}
        __syncthreads();
        {potrs}(sA, sB);
        __syncthreads();
        if (rec != nullptr) {{
            // the result's check, its own pass over shared memory (as the input's, above):
            // thread (matrix j, column cc, segment seg) walks rows seg, seg + SEGB, ...
            for (int t = tid; t < here * KC * SEGB; t += NT) {{
                const int seg = t % SEGB, jc = t / SEGB;
                const int j = jc / KC, cc = jc - j * KC;
                if (c0 + cc < NRHS) {{
                    const V* Bj = sB + j * SB_ONE;
                    bool bad = false;
                    for (int r = seg; r < N; r += SEGB)
                        bad |= !finite_v(Bj[B_ROW ? r * LDB + cc : cc * LDB + r]);
                    if (bad) atomicOr(&sFlag[j], 2);
                }}
            }}
        }}
        for (int i = tid; i < here * N * KC; i += NT) {{
            const int j = i / (N * KC), e = i - j * (N * KC);
            const int r = B_ROW ? e / KC : e % N, cc = B_ROW ? e % KC : e / N;
            const int col = c0 + cc;
            if (col < NRHS) {{
                V w = sB[j * SB_ONE + (B_ROW ? r * LDB + cc : cc * LDB + r)];
#if CONJ
                w.y = -w.y;
#endif
                X[(m0 + j) * bstride + (B_ROW ? (long long)r * NRHS + col : (long long)col * N + r)] = w;
            }}
        }}
        __syncthreads();
    }}
#if OP == 1 || OP == 2
    if (rec != nullptr) {{
        int bad = 0;
        if (tid < here) {{
#if OP == 2
            int inf = sInfo[tid];
            if (inf == 0 && sNanD[tid]) inf = N - sNanD[tid] + 1;
#else
            const int inf = 0;
#endif
            int* q = rec + 3 * (m0 + tid);
            q[0] = sZero[tid];
            q[1] = sFlag[tid];
            q[2] = inf;
            bad = (sZero[tid] | sFlag[tid] | inf) != 0;
        }}
        bad = __syncthreads_or(bad);
        if (tid == 0) {{
            unsigned long long* any = args.counter + 1;   // the launch's "anything" word
            if (bad) atomicOr(any, 1ULL);
            __threadfence();   // this block's record and word visible before its ticket
            if (atomicAdd(args.counter, 1ULL) == (unsigned long long)gridDim.x - 1ULL) {{
                *(volatile int*)args.summary = (int)atomicOr(any, 0ULL);
                *any = 0ULL;              // ready for the next launch (the caller synchronizes)
                *args.counter = 0ULL;
            }}
        }}
    }}
#endif
#endif
}}
"""


def kernel_source(key: FusedKey, symbols: dict) -> str:
    """CUDA C++ source of the kernel for ``key``; ``symbols`` maps ``"potrf"`` / ``"potrs"``
    to the C names of the cuSOLVERDx device functions (those the kernel calls).

    Examples
    --------
    >>> k = FusedKey("inverse", 8, 8, 8, "float64", False, "row_major", "row_major", 4,
    ...              (32, 1, 1), (9, 0))
    >>> src = kernel_source(k, {"potrs": "cusolverdx_execute_x"})
    >>> "#define BPB 4" in src and "cusolverdx_execute_x(sA, sB)" in src
    True
    """
    real, is_complex, _ = _DTYPES[key.dtype]
    need = {"potrf": ("potrf",), "inverse": ("potrs",), "potrf_inverse": ("potrf", "potrs"),
            "solve": ("potrs",)}[key.op]
    missing = [s for s in need if s not in symbols]
    if missing:
        raise ValueError(f"kernel {key.op} needs the symbols {missing}")
    decls = []
    if "potrf" in need:
        decls.append(f'extern "C" __device__ void {symbols["potrf"]}(V* a, int* info);')
    if "potrs" in need:
        decls.append(f'extern "C" __device__ void {symbols["potrs"]}(V* a, V* b);')
    return _KERNEL.format(
        n=key.n, lda=key.lda, ldb=key.ldb, nrhs=key.nrhs or 1, kc=key.kc or 1, chunks=key.chunks, bpb=key.batches_per_block,
        threads=key.threads, op_code=_OP_CODE[key.op], upper=int(key.upper),
        a_row=int(key.arr_a == "row_major"), b_row=int(key.arr_b == "row_major"),
        is_complex=int(is_complex), conj=int(key.conj), check=int(key.check), real=real,
        decls="\n".join(decls),
        name=key.kernel_name,
        potrf=symbols.get("potrf", "/*none*/"), potrs=symbols.get("potrs", "/*none*/"))


LAYOUTS = ("row_major", "native")
#: How column-major inputs are read by default (:func:`plan_call`).
LAYOUT = "row_major"


def plan_call(op: str, dtype: str, upper: bool, in_a: str, in_b: str | None = None,
              layout: str | None = None) -> dict:
    """How one call's buffers are handed to cuSOLVERDx: the kernel's fill mode and
    arrangements, whether B / X are conjugated, and the memory order of the result.

    Parameters
    ----------
    op : str
        One of :data:`OPS`.
    dtype : str
    upper : bool
        The caller's fill mode.
    in_a, in_b : str
        Memory order of A (or L) and of B (``solve``): ``"row_major"`` / ``"col_major"``.
    layout : {"row_major", "native"} or None
        None: :data:`LAYOUT`.

    Returns
    -------
    dict
        ``upper``, ``arr_a``, ``arr_b``, ``conj`` for :class:`FusedKey`, and ``out``: the
        memory order of the result tensor.

    Examples
    --------
    >>> plan_call("inverse", "float64", False, "col_major")      # L from linalg.cholesky
    {'upper': True, 'arr_a': 'row_major', 'arr_b': 'row_major', 'conj': False, 'out': 'col_major'}
    >>> plan_call("inverse", "float64", False, "col_major", layout="native")
    {'upper': False, 'arr_a': 'col_major', 'arr_b': 'col_major', 'conj': False, 'out': 'col_major'}
    >>> plan_call("solve", "complex64", True, "col_major", "row_major")["conj"]
    True
    """
    layout = LAYOUT if layout is None else layout
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {LAYOUTS}, got {layout!r}")
    for a in (in_a, in_b):
        if a not in (None, "row_major", "col_major"):
            raise ValueError(f"memory order must be row_major or col_major, got {a!r}")
    flip = in_a == "col_major" and layout == "row_major"
    arr_a = "row_major" if flip else in_a
    if op == "solve":
        if in_b is None:
            raise ValueError("solve needs B's memory order")
        return {"upper": bool(upper) != flip, "arr_a": arr_a, "arr_b": in_b,
                "conj": flip and _DTYPES[dtype][1], "out": in_b}
    # potrf: arr_b unused (kept equal to arr_a); the inverses write X as they read A
    return {"upper": bool(upper) != flip, "arr_a": arr_a, "arr_b": arr_a, "conj": False,
            "out": in_a}


def cache_key(key: FusedKey, versions: dict) -> str:
    """Hex digest naming the compiled kernel for ``key`` built with ``versions`` (library
    versions, e.g. nvmath-python, libmathdx, NVRTC, nvJitLink) from this module's kernel
    source.

    Examples
    --------
    >>> k = FusedKey("potrf", 4, 0, 0, "float32", True, "row_major", "row_major", 32,
    ...              (32, 1, 1), (9, 0))
    >>> cache_key(k, {"nvmath": "1.0.0"}) == cache_key(k, {"nvmath": "1.0.0"})
    True
    >>> cache_key(k, {"nvmath": "1.0.0"}) == cache_key(k, {"nvmath": "1.0.1"})
    False
    """
    blob = json.dumps({"key": asdict(key), "versions": dict(sorted(versions.items())),
                       "source": hashlib.sha256(_KERNEL.encode()).hexdigest()},
                      sort_keys=True, default=list)
    return hashlib.sha256(blob.encode()).hexdigest()[:32]


def default_cache_dir() -> Path:
    """``$CUSOLVER_TRACE_CACHE`` if set, else ``$XDG_CACHE_HOME/cusolver_trace/fused``
    (``~/.cache/cusolver_trace/fused``)."""
    env = os.environ.get("CUSOLVER_TRACE_CACHE")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "cusolver_trace" / "fused"


class DiskCache:
    """Compiled kernels on disk: ``<digest>.cubin`` and ``<digest>.json`` (the key, the
    versions and the launch facts), written atomically (temporary file + rename), so
    concurrent processes never read a partial file. A missing, unreadable or mismatched
    entry is a miss.

    Examples
    --------
    >>> import tempfile
    >>> c = DiskCache(tempfile.mkdtemp())
    >>> c.load("ab" * 16) is None
    True
    >>> c.store("ab" * 16, b"cubin", {"kernel": "k"})
    >>> c.load("ab" * 16)
    (b'cubin', {'kernel': 'k'})
    """

    def __init__(self, root=None):
        self.root = Path(root) if root is not None else default_cache_dir()

    def _paths(self, digest: str):
        if not (len(digest) == 32 and all(ch in "0123456789abcdef" for ch in digest)):
            raise ValueError(f"bad cache digest {digest!r}")
        return self.root / f"{digest}.cubin", self.root / f"{digest}.json"

    def load(self, digest: str):
        """``(cubin bytes, meta dict)`` or None."""
        blob, meta = self._paths(digest)
        try:
            info = json.loads(meta.read_text())
            data = blob.read_bytes()
        except (OSError, ValueError):
            return None
        if info.get("digest") != digest or info.get("size") != len(data):
            return None
        return data, info["meta"]

    def store(self, digest: str, data: bytes, meta: dict) -> None:
        """Write an entry; errors (read-only disk, no space) are ignored: the cache is an
        optimization only."""
        blob, info = self._paths(digest)
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            for path, payload in ((blob, bytes(data)),
                                  (info, json.dumps({"digest": digest, "size": len(data),
                                                     "meta": meta}).encode())):
                fd, tmp = tempfile.mkstemp(dir=self.root, prefix=".tmp-")
                with os.fdopen(fd, "wb") as f:
                    f.write(payload)
                os.replace(tmp, path)
        except OSError:
            pass


def missing_extra_message(exc: BaseException | None = None) -> str:
    """The one message for a missing extra (names the extra to install)."""
    why = f" ({type(exc).__name__}: {exc})" if exc is not None else ""
    return (f"method 'fused' needs cuSOLVERDx through nvmath-python's device API, numba-cuda, "
            f"libmathdx, NVRTC and nvJitLink{why}; install them with: pip install '{EXTRA}'")


# --------------------------------------------------------------------------- GPU
_lock = threading.Lock()
_MODULES: dict = {}   # (device index, FusedKey) -> (cupy Function, meta)
_CONFIG: dict = {}    # (op, n, dtype, upper, sm) -> (batches_per_block, block) chosen
_TOOLS = None


def _tools():
    """nvmath.device, mathdx, NVRTC and nvJitLink bindings, imported once; raises
    :class:`FusedUnavailableError` naming the extra when any is missing."""
    global _TOOLS, _TOOLS_ERROR
    if _TOOLS is not None:
        return _TOOLS
    if _TOOLS_ERROR is not None:   # a failed import is not retried on every call (~70 µs)
        raise FusedUnavailableError(_TOOLS_ERROR)
    try:
        import numpy as np

        if not hasattr(np, "row_stack"):  # numba-cuda <= 0.2x calls it; numpy 2.5 removed it
            np.row_stack = np.vstack
        import nvmath
        from cuda.bindings import nvjitlink, nvrtc
        from nvmath.bindings import mathdx
        from nvmath.device import Solver
        from nvmath.device.common_cuda import ComputeCapability
        from nvmath.device.cusolverdx import compile_solver_execute
        from nvmath.device.cusolverdx_backend import get_universal_fatbin  # noqa: F401
    except Exception as exc:  # ImportError, or a library that fails to load
        if isinstance(exc, (ImportError, OSError)):   # missing: remembered; anything else retried
            _TOOLS_ERROR = missing_extra_message(exc)
        raise FusedUnavailableError(missing_extra_message(exc)) from exc
    _TOOLS = {"np": np, "Solver": Solver, "CC": ComputeCapability, "mathdx": mathdx,
              "compile": compile_solver_execute, "nvrtc": nvrtc, "nvjitlink": nvjitlink,
              "nvmath_version": getattr(nvmath, "__version__", "?")}
    return _TOOLS


def available() -> str | None:
    """None when the fused method can run here, else the reason (one line). A yes is
    remembered for the process (``auto`` asks on every call)."""
    global _AVAILABLE
    if _AVAILABLE:
        return None
    try:
        _tools()
        import torch

        if not torch.cuda.is_available():
            return "no CUDA GPU is visible to torch"
    except FusedUnavailableError as exc:
        return str(exc)
    _AVAILABLE = True
    return None


_AVAILABLE = False


_TOOLS_ERROR = None   # why _tools() failed, once it has


def versions() -> dict:
    """Versions that a compiled kernel depends on (part of the disk-cache key)."""
    global _VERSIONS
    if _VERSIONS is None:
        _VERSIONS = _versions()
    return dict(_VERSIONS)


_VERSIONS = None


def _versions() -> dict:
    t = _tools()
    err, major, minor = t["nvrtc"].nvrtcVersion()
    return {"nvmath": t["nvmath_version"], "libmathdx": ".".join(map(str, t["mathdx"].get_version_ex())),
            "nvrtc": f"{major}.{minor}", "nvjitlink": ".".join(map(str, t["nvjitlink"].version()))}


def _solver(t, fn, key: FusedKey):
    real, is_complex, _ = _DTYPES[key.dtype]
    np = t["np"]
    size = (key.n, key.n, key.kc if fn == "potrs" else 1)
    arr = (key.arr_a, key.arr_b if fn == "potrs" else key.arr_a)
    lds = (key.lda, key.ldb) if fn == "potrs" else (key.lda,)
    return t["Solver"](function=fn, size=size, precision=np.float64 if real == "double" else np.float32,
                       execution="Block", sm=t["CC"](*key.sm), arrangement=arr, leading_dimensions=lds,
                       fill_mode="upper" if key.upper else "lower",
                       batches_per_block=key.batches_per_block,
                       data_type="complex" if is_complex else "real", block_dim=key.block)


def suggested(op: str, n: int, nrhs: int, dtype: str, upper: bool, sm: tuple) -> tuple:
    """cuSOLVERDx's suggested ``(batches_per_block, block)`` for the kernel's main call
    (potrs for the solving kernels, potrf for ``potrf``). Asking libmathdx takes ~0.3 s,
    so answers are kept in memory and in the disk cache."""
    args = (op, n, nrhs, dtype, bool(upper), tuple(sm))
    hit = _SUGGESTED.get(args)
    if hit is not None:
        return hit
    cache = DiskCache()
    digest = hashlib.sha256(json.dumps({"suggested": list(args), "versions": versions()},
                                       sort_keys=True, default=list).encode()).hexdigest()[:32]
    found = cache.load(digest)
    if found is not None:
        bpb, block = found[1]["suggested"]
        hit = _SUGGESTED[args] = (int(bpb), tuple(block))
        return hit
    hit = _SUGGESTED[args] = _ask_suggested(*args)
    cache.store(digest, b"", {"suggested": [hit[0], list(hit[1])]})
    return hit


_SUGGESTED: dict = {}


def _ask_suggested(op, n, nrhs, dtype, upper, sm):
    t = _tools()
    real, is_complex, _ = _DTYPES[dtype]
    np = t["np"]
    fn = "potrf" if op == "potrf" else "potrs"
    s = t["Solver"](function=fn, size=(n, n, max(nrhs, 1) if fn == "potrs" else 1),
                    precision=np.float64 if real == "double" else np.float32, execution="Block",
                    sm=t["CC"](*sm), fill_mode="upper" if upper else "lower",
                    batches_per_block="suggested",
                    data_type="complex" if is_complex else "real", block_dim="suggested")
    return int(s.batches_per_block), tuple(int(b) for b in s.block_dim)


def _check(result, what):
    err = result[0] if isinstance(result, tuple) else result
    if int(err) != 0:
        raise RuntimeError(f"{what} failed with status {err}")
    return result[1:] if isinstance(result, tuple) and len(result) > 1 else None


def compile_kernel(key: FusedKey) -> tuple[bytes, dict]:
    """Compile the kernel for ``key`` to a cubin: ``(cubin, meta)``. Needs no GPU (the
    architecture is ``key.sm``); takes 0.5 to 3 s.

    Raises
    ------
    FusedUnavailableError
        The extra is missing.
    RuntimeError
        libmathdx, NVRTC or nvJitLink reject the kernel (the log is in the message).
    """
    t = _tools()
    cc = f"{key.sm[0]}{key.sm[1]}"
    need = {"potrf": ("potrf",), "inverse": ("potrs",), "potrf_inverse": ("potrf", "potrs"),
            "solve": ("potrs",)}[key.op]
    symbols, ltoirs = {}, []
    for fn in need:
        code, sym = t["compile"](_solver(t, fn, key), ("lto", key.sm), "compiled_leading_dim")
        symbols[fn] = sym
        ltoirs.append((bytes(code.data), sym))
    src = kernel_source(key, symbols)
    nvrtc = t["nvrtc"]
    prog = _check(nvrtc.nvrtcCreateProgram(src.encode(), b"fused.cu", 0, [], []), "nvrtcCreateProgram")[0]
    try:
        opts = [f"-arch=compute_{cc}".encode(), b"-dlto", b"-rdc=true", b"-std=c++17",
                b"-default-device"]
        err = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)[0]
        if int(err) != 0:
            size = nvrtc.nvrtcGetProgramLogSize(prog)[1]
            log = b" " * size
            nvrtc.nvrtcGetProgramLog(prog, log)
            raise RuntimeError(f"NVRTC failed on the fused {key.op} kernel:\n{log.decode(errors='replace')}")
        size = _check(nvrtc.nvrtcGetLTOIRSize(prog), "nvrtcGetLTOIRSize")[0]
        kernel_ir = b" " * size
        _check(nvrtc.nvrtcGetLTOIR(prog, kernel_ir), "nvrtcGetLTOIR")
    finally:
        nvrtc.nvrtcDestroyProgram(prog)
    cubin = _link(t, cc, [(kernel_ir, "fused.ltoir")] + ltoirs)
    meta = {"kernel": key.kernel_name, "shared_bytes": key.shared_bytes, "block": list(key.block),
            "batches_per_block": key.batches_per_block, "symbols": symbols}
    return cubin, meta


def _universal_fatbin(t) -> bytes:
    mathdx = t["mathdx"]
    h = mathdx.cusolverdx_create_descriptor()
    try:
        size = mathdx.cusolverdx_get_universal_fatbin_size(h)
        buf = bytearray(size)
        mathdx.cusolverdx_get_universal_fatbin(h, size, buf)
    finally:
        mathdx.cusolverdx_destroy_descriptor(h)
    return bytes(buf)


def _link(t, cc: str, ltoirs) -> bytes:
    nvj = t["nvjitlink"]
    opts = [f"-arch=sm_{cc}", "-lto"]
    h = nvj.create(len(opts), opts)
    try:
        try:
            for data, name in ltoirs:
                nvj.add_data(h, nvj.InputType.LTOIR, data, len(data), name)
            fat = _universal_fatbin(t)
            nvj.add_data(h, nvj.InputType.FATBIN, fat, len(fat), "cusolverdx_universal.fatbin")
            nvj.complete(h)
        except Exception as exc:
            try:
                size = nvj.get_error_log_size(h)
                log = bytearray(size)
                nvj.get_error_log(h, log)
                msg = log.decode(errors="replace")
            except Exception:
                msg = ""
            raise RuntimeError(f"nvJitLink failed on the fused kernel: {exc}\n{msg}") from exc
        size = nvj.get_linked_cubin_size(h)
        out = bytearray(size)
        nvj.get_linked_cubin(h, out)
        return bytes(out)
    finally:
        nvj.destroy(h)


# --------------------------------------------------------------------------- loading, launching
def _device_facts(idx: int):
    """``(compute capability, shared memory per block opt-in)`` of CUDA device ``idx``."""
    facts = _DEVICE.get(idx)
    if facts is None:
        import torch

        props = torch.cuda.get_device_properties(idx)
        limit = getattr(props, "shared_memory_per_block_optin", 0) or SMEM_LIMIT
        facts = _DEVICE[idx] = ((props.major, props.minor), int(limit))
    return facts


_DEVICE: dict = {}


def make_key(op: str, n: int, nrhs: int, dtype: str, upper: bool, arr_a: str, arr_b: str,
             sm: tuple, limit: int = SMEM_LIMIT, batches_per_block: int | None = None,
             block: tuple | None = None, conj: bool = False, pad: int | None = None,
             check: bool = False) -> FusedKey:
    """The :class:`FusedKey` for one call: batches per block, block size and padding as
    given, else the tuned choice of :data:`TUNED` for ``(op, n, dtype)`` where there is one,
    else cuSOLVERDx's suggestion (padding 0); batches per block lowered until the block fits
    in ``limit`` bytes of shared memory (less :data:`CUSOLVERDX_STATIC_SMEM`)."""
    limit = limit - CUSOLVERDX_STATIC_SMEM
    t_bpb, t_block, t_pad = TUNED.get((op, n, dtype), (None, None, 0))
    pad = t_pad if pad is None else pad
    if batches_per_block is None or block is None:
        if batches_per_block is None and block is None and t_bpb is not None:
            s_bpb, s_block = t_bpb, t_block
        else:
            s_bpb, s_block = suggested(op, n, nrhs, dtype, upper, sm)
        batches_per_block = batches_per_block or s_bpb
        block = tuple(block) if block is not None else tuple(s_block)
    bpb = int(batches_per_block)
    while True:
        try:
            kc = rhs_chunk(op, n, nrhs, dtype, bpb, limit, pad, arr_b)
            if op == "potrf" or kc == nrhs or bpb == 1:
                break
        except ValueError:
            if bpb == 1:
                raise
        bpb = max(1, bpb // 2)
    block = tuple(int(b) for b in block) + (1,) * (3 - len(block))
    return FusedKey(op, n, nrhs if op != "potrf" else 0, kc, dtype, bool(upper), arr_a, arr_b,
                    bpb, block, tuple(sm), bool(conj), int(pad), bool(check))


#: Tuned ``(batches_per_block, block, pad)`` per ``(op, n, dtype)``: the fastest candidate of
#: ``devrun/fused/cases.py``'s TUNE list (CUDA-event medians, H200, torch 2.11, 2026-12-01;
#: batches 100000 x 4, 10000 x 8, 100000 x 16, 1000 x 32, 1000 x 64, 100 x 128, the inverse
#: from a column-major factor, A -> A^-1 from a row-major A), kept where it beat
#: cuSOLVERDx's suggestion by more than 3 %. ``(None, None, pad)``: the suggestion with that
#: padding. Shapes not listed (other n, the complex types, potrf, solve) use the suggestion.
#: Reproduce with ``bash devrun/fused/run.sh timing float64,float32``.
TUNED: dict = {
    ("inverse", 4, "float64"): (32, (32,), 1),       # 0.0321 ms vs 0.0355 suggested
    ("inverse", 8, "float64"): (4, (32,), 0),        # 0.0278 vs 0.0286
    ("inverse", 16, "float64"): (4, (64,), 0),       # 0.1615 vs 0.1996
    ("inverse", 32, "float64"): (4, (128,), 0),      # 0.0320 vs 0.0581
    ("inverse", 64, "float64"): (None, None, 1),     # 0.0750 vs 0.0852
    ("inverse", 4, "float32"): (32, (32,), 1),       # 0.0275 vs 0.0371
    ("inverse", 16, "float32"): (4, (64,), 0),       # 0.1240 vs 0.1437
    ("inverse", 32, "float32"): (4, (128,), 0),      # 0.0314 vs 0.0337
    ("inverse", 64, "float32"): (1, (256,), 0),      # 0.1096 vs 0.2463
    ("inverse", 128, "float32"): (1, (256,), 0),     # 0.0769 vs 0.2866
    ("potrf_inverse", 8, "float64"): (8, (64,), 1),  # 0.0258
    ("potrf_inverse", 16, "float64"): (4, (64,), 0),  # 0.2679
    ("potrf_inverse", 32, "float64"): (1, (128,), 1),  # 0.0321
    ("potrf_inverse", 64, "float64"): (None, None, 1),  # 0.1297 vs 0.2157
    ("potrf_inverse", 128, "float64"): (1, (256,), 0),  # 0.3081 vs 1.3160 (second run)
    ("potrf_inverse", 4, "float32"): (32, (32,), 1),  # 0.0270
    ("potrf_inverse", 8, "float32"): (8, (64,), 0),  # 0.0264
    ("potrf_inverse", 16, "float32"): (4, (64,), 0),  # 0.1802
    ("potrf_inverse", 64, "float32"): (1, (256,), 0),  # 0.2194 vs 0.3137
    ("potrf_inverse", 128, "float32"): (1, (256,), 0),  # 0.1361 vs 0.5981
}


def _load_function(idx: int, key: FusedKey):
    """The CuPy function for ``key`` on device ``idx``: from memory, the disk cache, or
    compiled now (then stored on disk)."""
    import cupy as cp

    digest = cache_key(key, versions())
    cache = DiskCache()
    hit = cache.load(digest)
    if hit is None:
        cubin, meta = compile_kernel(key)
        cache.store(digest, cubin, meta)
    else:
        cubin, meta = hit
    with cp.cuda.Device(idx):
        mod = cp.cuda.function.Module()
        mod.load(cubin)
        fn = mod.get_function(key.kernel_name)
        static = int(getattr(fn, "shared_size_bytes", 0) or 0)
        limit = _device_facts(idx)[1]
        if static + key.shared_bytes > limit:
            raise ValueError(f"fused {key.op} n = {key.n} {key.dtype}: {key.shared_bytes} bytes of "
                             f"shared memory + {static} used by cuSOLVERDx exceed the {limit} a "
                             "block can have on this GPU")
        if key.shared_bytes > 48 * 1024:
            # CuPy's Function has no setter for this (RawKernel has); the driver call it wraps:
            # CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8 in cuda.h
            attr = getattr(cp.cuda.driver, "CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES", 8)
            cp.cuda.driver.funcSetAttribute(fn.ptr, attr, int(key.shared_bytes))
    return fn, mod


def kernel(idx: int, op: str, n: int, nrhs: int, dtype: str, upper: bool, arr_a: str,
           arr_b: str, batches_per_block=None, block=None, conj: bool = False, pad=None,
           check: bool = False):
    """``(CuPy function, FusedKey, CuPy module)`` for one call on device ``idx``, compiled or
    loaded on first use and cached in memory (the hot path is one dict lookup); ``check``
    selects the kernel with the in-kernel check compiled in."""
    memo = (idx, op, n, nrhs, dtype, upper, arr_a, arr_b, batches_per_block,
            None if block is None else tuple(block), conj, pad, check)
    hit = _MODULES.get(memo)
    if hit is not None:
        return hit
    with _lock:
        hit = _MODULES.get(memo)
        if hit is None:
            sm, limit = _device_facts(idx)
            key = make_key(op, n, nrhs, dtype, upper, arr_a, arr_b, sm, limit,
                           batches_per_block, block, conj, pad, check)
            fn, mod = _load_function(idx, key)
            hit = _MODULES[memo] = (fn, key, mod)
    return hit


def _operand(x):
    """``(x, arrangement)``: ``x`` itself when its matrices lie row- or column-major in
    one contiguous buffer, else a contiguous copy (conjugate / negative views resolved)."""
    if x.requires_grad:
        x = x.detach()
    if x.is_conj() or x.is_neg():
        x = x.resolve_conj().resolve_neg()
    if x.is_contiguous():
        return x, "row_major"
    if x.mT.is_contiguous():
        return x, "col_major"
    return x.contiguous(), "row_major"


def _empty(batch_shape, r, c, arr, like):
    """The output, row- or column-major; ``Tensor.new_empty`` / ``new_empty_strided`` take
    ``like``'s dtype and device without parsing them again (about half the host time of
    ``torch.empty``), and the column-major layout needs no transposed view."""
    if arr == "row_major":
        return like.new_empty((*batch_shape, r, c))
    return like.new_empty_strided(*column_major_layout(batch_shape, r, c))


#: The kernel's argument struct (``FusedArgs`` in :data:`_KERNEL`), in field order.
_ARG_FIELDS = ("A", "B", "X", "info", "batch", "rec", "counter", "summary")
_ARGS = threading.local()   # per thread: the struct's buffer and cuLaunchKernel's params array


def _arg_buffer():
    """This thread's ``(values, params)``: 8 int64 holding the struct, and the address of
    ``kernelParams`` for ``cuLaunchKernel`` (:class:`._context.LaunchArgs`)."""
    buf = getattr(_ARGS, "buf", None)
    if buf is None:
        buf = _ARGS.buf = _context.LaunchArgs(len(_ARG_FIELDS))
    return buf.values, buf.params_ptr


class _Prepared:
    """Everything one kind of call needs at launch, decided once (:func:`plan_call`,
    :func:`kernel`) and kept in :data:`_CALLS`: the per-call work is then one dict lookup,
    the output allocation and the launch."""

    __slots__ = ("fn", "key", "mod", "out", "bpb", "block", "smem")

    def __init__(self, fn, key: FusedKey, mod, out: str):
        self.fn, self.key, self.mod, self.out = fn.ptr, key, mod, out
        self.bpb, self.block, self.smem = key.batches_per_block, key.block, key.shared_bytes


_CALLS: dict = {}   # (op, dtype, upper, arrangements, n, nrhs, device, tuning, check) -> _Prepared


def _prepare(op, dtype, upper, in_a, in_b, layout, n, nrhs, idx, batches_per_block, block,
             pad, check) -> _Prepared:
    plan = plan_call(op, dtype, upper, in_a, in_b, layout)
    fn, key, mod = kernel(idx, op, n, nrhs, dtype, plan["upper"], plan["arr_a"], plan["arr_b"],
                          batches_per_block, block, plan["conj"], pad, bool(check))
    return _Prepared(fn, key, mod, plan["out"])


def _run(op, x, b, upper, info_needed, batches_per_block, block, layout, pad=None, check=False):
    """Launch one fused kernel on torch's current stream: ``(out, info)``, or with ``check``
    (the inverses) ``(out, info, record)`` after the call's one synchronization, where
    ``record`` is None when nothing is to report, else the ``(batch, 3)`` host record of
    :func:`cusolver_trace.backends.cuda.inverse_status`."""
    if _TOOLS is None:
        _tools()   # first: a missing extra is named before anything else fails
    import torch

    dtype = dtype_info(x.dtype).name   # TypeError for a dtype no kernel takes
    x, in_a = _operand(x)
    shape = x.shape
    n = shape[-1]
    batch_shape = shape[:-2]
    batch = math.prod(batch_shape)
    idx = x.get_device()   # an int, without building a torch.device
    if idx < 0:
        raise ValueError(f"fused: needs CUDA tensors, got a tensor on {x.device}")
    in_b = None
    if b is not None:
        b, in_b = _operand(b)
    nrhs = b.shape[-1] if op == "solve" else (0 if op == "potrf" else n)
    memo = (op, dtype, upper, in_a, in_b, layout, n, nrhs, idx, batches_per_block,
            None if block is None else tuple(block), pad, check)
    prep = _CALLS.get(memo)
    if prep is None:
        prep = _CALLS[memo] = _prepare(op, dtype, upper, in_a, in_b, layout, n, nrhs, idx,
                                       batches_per_block, block, pad, check)
    out = _empty(batch_shape, n, nrhs if op == "solve" else n, prep.out, x)
    info = x.new_empty(batch, dtype=torch.int32) if info_needed else None
    if batch == 0:
        return (out, info, None) if check else (out, info)
    if _context.current_device() != idx:
        import cupy as cp

        with torch.cuda.device(idx), cp.cuda.Device(idx):
            return _launch(prep, idx, x, b, out, info, batch, check)
    return _launch(prep, idx, x, b, out, info, batch, check)


def _launch(prep: _Prepared, idx, x, b, out, info, batch, check):
    """One ``cuLaunchKernel`` (CuPy's binding of the driver call) on torch's current stream.
    Hand-written instead of calling CuPy's ``Function``: that wrapper converts every
    argument on each call, and this path's goal is a few microseconds of host time."""
    rec = counter = summary = 0
    if check:
        from . import cuda as _cuda_backend   # the check's state and its one synchronization

        state, acc, stream_ptr, summary = _cuda_backend.self_check_buffers(idx, batch)
        rec, counter = acc.data_ptr(), state.counter_ptr
    else:
        stream_ptr = _context.current_stream_ptr(idx)
    values, params = _arg_buffer()
    values[:] = (x.data_ptr(), 0 if b is None else b.data_ptr(), out.data_ptr(),
                 0 if info is None else info.data_ptr(), batch, rec, counter, summary)
    bx, by, bz = prep.block
    _driver().launchKernel(prep.fn, -(-batch // prep.bpb), 1, 1, bx, by, bz, prep.smem,
                           stream_ptr, params, 0)
    if not check:
        return out, info
    return out, info, _cuda_backend.finish_check(idx, state, acc, stream_ptr, batch)


def _driver():
    global _DRIVER
    if _DRIVER is None:
        from ..raw import _load

        _DRIVER = _load.cupy_driver()
    return _DRIVER


_DRIVER = None





# --------------------------------------------------------------------------- backend routines
def potrf(a, upper: bool, *, batches_per_block=None, block=None, layout=None,
        pad=None):
    """Cholesky factors of a batch of small matrices, one cuSOLVERDx ``potrf`` kernel.

    Parameters
    ----------
    a : torch CUDA tensor (..., n, n)
        Hermitian positive definite; only the ``upper`` / lower triangle is read.
        float32, float64, complex64, complex128.
    upper : bool
        A = Uᴴ·U instead of L·Lᴴ.
    batches_per_block, block : int, tuple of int, optional
        Override cuSOLVERDx's suggestion (tuning).
    layout : {"row_major", "native"}, optional
        How a column-major input is read (:func:`plan_call`; default :data:`LAYOUT`).
    pad : int, optional
        Shared-memory padding of the leading dimensions (:class:`FusedKey`; tuning).

    Returns
    -------
    L : tensor (..., n, n)
        The factor, the other triangle zeroed; same memory order as ``a``.
    info : int32 tensor (batch,)
        Per matrix, as ``cusolverDn<t>potrfBatched``: 0, or the order of the first
        leading minor that is not positive definite.

    Raises
    ------
    FusedUnavailableError
        The extra :data:`EXTRA` is missing.
    ValueError
        n too large for shared memory.

    Mirrors ``torch.linalg.cholesky_ex(a, upper)`` (``potrfBatched``'s info). No
    synchronization; launched on torch's current stream.

    Examples
    --------
    >>> L, info = potrf(A, False)   # doctest: +SKIP
    """
    return _run("potrf", a, None, upper, True, batches_per_block, block, layout, pad)


def potrs(c, b, upper: bool, *, batches_per_block=None, block=None, layout=None,
        pad=None):
    """Solve A·X = B from A's Cholesky factor for a batch of small systems, one kernel.

    Parameters
    ----------
    c : torch CUDA tensor (..., n, n)
        The factor (L, or U with ``upper``); only that triangle is read. float32, float64,
        complex64, complex128.
    b : torch CUDA tensor (..., n, nrhs), same batch shape and dtype
        Right-hand sides, any nrhs >= 1 (solved ``kc`` columns per cuSOLVERDx ``potrs``
        call, as many as shared memory holds).
    upper : bool
        A = Uᴴ·U instead of L·Lᴴ.
    batches_per_block, block : int, tuple of int, optional
        Override cuSOLVERDx's suggestion (tuning).
    layout : {"row_major", "native"}, optional
        How a column-major input is read (:func:`plan_call`; default :data:`LAYOUT`).
    pad : int, optional
        Shared-memory padding of the leading dimensions (:class:`FusedKey`; tuning).

    Returns
    -------
    X : tensor (..., n, nrhs)
        In ``b``'s memory order (row- or column-major).
    info : int32 tensor (batch,)
        All zeros: potrs reports nothing (as ``cusolverDn<t>potrs``).

    Raises
    ------
    FusedUnavailableError
        The extra :data:`EXTRA` is missing.
    ValueError
        n too large for shared memory.

    Mirrors ``torch.cholesky_solve(b, c, upper)``. No synchronization.

    Examples
    --------
    >>> X, _ = potrs(torch.linalg.cholesky(A), B, False)   # doctest: +SKIP
    """
    return _run("solve", c, b, upper, True, batches_per_block, block, layout, pad)


def cholesky_inverse(c, upper: bool, *, batches_per_block=None, block=None, layout=None,
        pad=None):
    """A⁻¹ from A's Cholesky factor for a batch of small matrices, one kernel: cuSOLVERDx
    ``potrs`` on an identity built in shared memory (never read from global memory).

    Parameters
    ----------
    c : torch CUDA tensor (..., n, n)
        The factor; only its lower (or ``upper``) triangle is read. float32, float64,
        complex64, complex128.
    upper : bool
        A = Uᴴ·U instead of L·Lᴴ.
    batches_per_block, block : int, tuple of int, optional
        Override cuSOLVERDx's suggestion (tuning).
    layout : {"row_major", "native"}, optional
        How a column-major input is read (:func:`plan_call`; default :data:`LAYOUT`).
    pad : int, optional
        Shared-memory padding of the leading dimensions (:class:`FusedKey`; tuning).

    Returns
    -------
    Ainv : tensor (..., n, n)
        In ``c``'s memory order; Hermitian up to rounding (as torch's CUDA path).
    info : None

    Raises
    ------
    FusedUnavailableError
        The extra :data:`EXTRA` is missing.
    ValueError
        n too large for shared memory: the largest n on an H200 (227 KiB per block) is
        240 (float32), 169 (float64, complex64), 119 (complex128).

    Mirrors ``torch.cholesky_inverse(c, upper)``. The row of
    :data:`cusolver_trace.routines.INVERSE_METHODS` named ``"fused"``.

    Examples
    --------
    >>> Ainv, _ = cholesky_inverse(torch.linalg.cholesky(A), False)   # doctest: +SKIP
    """
    x, _ = _run("inverse", c, None, upper, False, batches_per_block, block, layout, pad)
    return x, None


def cholesky_inverse_checked(c, upper: bool, **tuning):
    """:func:`cholesky_inverse` with the check computed inside the same kernel: the factor's
    triangle (non-finite entries, exact zeros on the diagonal) and the result (non-finite
    entries), reduced to one summary word in host-mapped memory; one synchronization.

    Returns
    -------
    Ainv : tensor (..., n, n)
    record : ndarray (batch, 3) int32 or None
        None when nothing is to report; else, per matrix, the record of
        :func:`cusolver_trace.backends.cuda.inverse_status` (info column 0).

    Examples
    --------
    >>> Ainv, record = cholesky_inverse_checked(torch.linalg.cholesky(A), False)  # doctest: +SKIP
    """
    x, _, record = _run("inverse", c, None, upper, False, tuning.get("batches_per_block"),
                        tuning.get("block"), tuning.get("layout"), tuning.get("pad"), True)
    return x, record


def potrf_inverse(a, upper: bool, *, batches_per_block=None, block=None, layout=None,
        pad=None):
    """A → A⁻¹ for a batch of small Hermitian positive definite matrices in one kernel:
    cuSOLVERDx ``potrf``, then ``potrs`` on the identity; the factor never leaves shared
    memory.

    Parameters
    ----------
    a : torch CUDA tensor (..., n, n)
        Only the lower (or ``upper``) triangle is read.
    upper : bool
        Factor the upper triangle.
    batches_per_block, block : int, tuple of int, optional
        Override cuSOLVERDx's suggestion (tuning).
    layout : {"row_major", "native"}, optional
        How a column-major input is read (:func:`plan_call`; default :data:`LAYOUT`).
    pad : int, optional
        Shared-memory padding of the leading dimensions (:class:`FusedKey`; tuning).

    Returns
    -------
    Ainv : tensor (..., n, n)
        In ``a``'s memory order; garbage where ``info != 0``.
    info : int32 tensor (batch,)
        As ``cusolverDn<t>potrfBatched``: 0, or the order of the first leading minor that
        is not positive definite.

    Raises
    ------
    FusedUnavailableError, ValueError
        As :func:`cholesky_inverse`.

    Mirrors ``torch.cholesky_inverse(torch.linalg.cholesky_ex(a, upper)[0], upper)``.

    Examples
    --------
    >>> Ainv, info = potrf_inverse(A, False)   # doctest: +SKIP
    """
    return _run("potrf_inverse", a, None, upper, True, batches_per_block, block, layout, pad)


def potrf_inverse_checked(a, upper: bool, **tuning):
    """:func:`potrf_inverse` with the check computed inside the same kernel (A's triangle,
    the result, potrf's info, a NaN pivot reported as Reference LAPACK's ``?potrf``
    does); one synchronization.

    Returns
    -------
    Ainv : tensor (..., n, n)
    info : int32 tensor (batch,)
        potrf's own info (as :func:`potrf_inverse`).
    record : ndarray (batch, 3) int32 or None
        None when nothing is to report; else per matrix: ``n - i`` of the first exact zero
        on A's diagonal, flags (1: A's triangle non-finite, 2: the result), and potrf's info
        with the first NaN pivot flagged.

    Examples
    --------
    >>> Ainv, info, record = potrf_inverse_checked(A, False)   # doctest: +SKIP
    """
    return _run("potrf_inverse", a, None, upper, True, tuning.get("batches_per_block"),
                tuning.get("block"), tuning.get("layout"), tuning.get("pad"), True)
