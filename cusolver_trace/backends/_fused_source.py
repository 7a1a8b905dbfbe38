"""The fused kernels' CUDA C++ source and their compilation cache: pure Python, tested
without a GPU.

:data:`_KERNEL` is the kernel (global ↔ shared copies, the cuSOLVERDx calls, info, the
optional in-kernel check); :func:`kernel_source` fills it in for one :class:`FusedKey`;
:func:`cache_key` names the compiled kernel (the key, the library versions and the source);
:class:`DiskCache` keeps compiled kernels on disk (:func:`default_cache_dir`). Every public
name is imported from :mod:`cusolver_trace.backends.fused`.
"""
from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import asdict
from pathlib import Path

from ._fused_layout import _DTYPES, FusedKey

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
