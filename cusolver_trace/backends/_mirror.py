"""Two kernels on column-major matrices, by 32 × 32 tiles of one triangle: make matrices
Hermitian in place from one triangle (what the inverse methods that write one triangle use
for the other: potri, the trtri_lauum and gemm_lauum plans), and copy one triangle of a
matrix into another buffer (gemm_lauum's working copy of the factor). Launched through CuPy
on its current stream."""
from __future__ import annotations

import torch

from .._dtypes import dtype_info
from ..raw import _load

_MIRROR_SRC = r"""
// One block per 32 x 32 tile of the source triangle, 32 x 8 threads, each moving 4 elements
// through shared memory (the usual tiled transpose: coalesced reads down the source tile's
// columns, coalesced writes down the destination's).
template<typename R, int NC>
__device__ void mirror_impl(R* X, long long n, long long bs, int upper)
{
    __shared__ R re[32][33];
    __shared__ R im[NC == 2 ? 32 : 1][33];
    const int ti = blockIdx.y, tj = blockIdx.x;          // source tile: rows ti, columns tj
    if (upper ? (ti > tj) : (ti < tj)) return;
    R* M = X + (long long)blockIdx.z * bs * NC;
    const int x = threadIdx.x;
    const long long si = (long long)ti * 32 + x, di = (long long)tj * 32 + x;
#pragma unroll
    for (int y = threadIdx.y; y < 32; y += 8) {          // column-major: x runs down a column
        const long long sj = (long long)tj * 32 + y;
        if (si < n && sj < n) {
            re[y][x] = M[(si + sj * n) * NC];
            if (NC == 2) im[y][x] = M[(si + sj * n) * NC + 1];
        }
    }
    __syncthreads();
#pragma unroll
    for (int y = threadIdx.y; y < 32; y += 8) {
        const long long dj = (long long)ti * 32 + y;     // the source of (di, dj) is (dj, di)
        if (di < n && dj < n) {
            const bool src = upper ? (dj < di) : (dj > di);
            if (src) {
                M[(di + dj * n) * NC] = re[x][y];
                if (NC == 2) M[(di + dj * n) * NC + 1] = -im[x][y];
            } else if (NC == 2 && di == dj) {
                M[(di + dj * n) * NC + 1] = (R)0;
            }
        }
    }
}
#define MIRROR(NAME, R, NC) extern "C" __global__ void NAME(R* X, long long n, long long bs, \
    int upper) { mirror_impl<R, NC>(X, n, bs, upper); }
MIRROR(mirror_s, float, 1)
MIRROR(mirror_d, double, 1)
MIRROR(mirror_c, float, 2)
MIRROR(mirror_z, double, 2)

// D <- the tiles of S's upper / lower triangle (diagonal tiles whole), both column-major with
// leading dimension n; the other tiles of D are not touched. A warp moves 32 consecutive
// elements of a column.
template<typename R, int NC>
__device__ void copy_tri_impl(R* D, const R* S, long long n, int upper)
{
    const int ti = blockIdx.y, tj = blockIdx.x;
    if (upper ? (ti > tj) : (ti < tj)) return;
    const long long i = (long long)ti * 32 + threadIdx.x;
    if (i >= n) return;
#pragma unroll
    for (int y = threadIdx.y; y < 32; y += 8) {
        const long long j = (long long)tj * 32 + y;
        if (j < n) {
            D[(i + j * n) * NC] = S[(i + j * n) * NC];
            if (NC == 2) D[(i + j * n) * NC + 1] = S[(i + j * n) * NC + 1];
        }
    }
}
#define COPY_TRI(NAME, R, NC) extern "C" __global__ void NAME(R* D, const R* S, long long n, \
    int upper) { copy_tri_impl<R, NC>(D, S, n, upper); }
COPY_TRI(copy_tri_s, float, 1)
COPY_TRI(copy_tri_d, double, 1)
COPY_TRI(copy_tri_c, float, 2)
COPY_TRI(copy_tri_z, double, 2)
"""
_MIRROR_FN: dict = {}


def mirror_triangle(w: torch.Tensor, upper: bool, dt=None) -> None:
    """Make each column-major matrix of ``w`` (contiguous ``(batch, n, n)``) Hermitian in
    place from its ``upper`` / lower triangle: the other triangle gets the conjugate
    transpose, the diagonal's imaginary part is zeroed. One launch on torch's current
    stream (32 × 32 tiles through shared memory, 32 × 8 threads, coalesced reads and
    writes); call inside :func:`~._context.on_device`."""
    import numpy as np_

    dt = dt or dtype_info(w.dtype)
    batch, n = w.shape[0], w.shape[-1]
    if batch == 0 or n == 0:
        return
    fn = _function(w, "mirror", dt.prefix)
    nt = -(-n // 32)
    for b0 in range(0, batch, 65535):
        nb = min(65535, batch - b0)
        fn((nt, nt, nb), (32, 8),
           (w[b0].data_ptr(), np_.int64(n), np_.int64(w.stride(0)), np_.int32(bool(upper))))


def copy_triangle(dst: torch.Tensor, src: torch.Tensor, upper: bool, dt=None) -> None:
    """``dst`` ← the ``upper`` / lower triangle of ``src`` by 32 × 32 tiles (the diagonal
    tiles whole), both one column-major n × n matrix: ``dst`` a contiguous ``(n, n)`` tensor
    holding it (``dst.mT`` is the matrix), ``src`` one whose ``.mT`` is contiguous; the other
    tiles of ``dst`` are left as they were. About half the bytes of a whole copy. One launch
    on torch's current stream; call inside :func:`~._context.on_device`."""
    import numpy as np_

    dt = dt or dtype_info(src.dtype)
    n = src.shape[-1]
    if n == 0:
        return
    nt = -(-n // 32)
    _function(src, "copy_tri", dt.prefix)((nt, nt, 1), (32, 8),
                                          (dst.data_ptr(), src.data_ptr(), np_.int64(n),
                                           np_.int32(bool(upper))))


def _function(t: torch.Tensor, name: str, prefix: str):
    """The CuPy function ``{name}_{prefix}`` of :data:`_MIRROR_SRC` on ``t``'s device
    (compiled once per device)."""
    idx = t.device.index if t.device.index is not None else torch.cuda.current_device()
    fn = _MIRROR_FN.get((idx, name, prefix))
    if fn is None:
        cp = _load.cupy()
        with cp.cuda.Device(idx):
            mod = _MIRROR_MOD.get(idx)
            if mod is None:
                mod = _MIRROR_MOD[idx] = cp.RawModule(code=_MIRROR_SRC)
            fn = _MIRROR_FN[idx, name, prefix] = mod.get_function(f"{name}_{prefix}")
    return fn


_MIRROR_MOD: dict = {}   # device index -> the RawModule of _MIRROR_SRC
