"""One kernel: make column-major matrices Hermitian in place from one triangle (what the
inverse methods that write one triangle use for the other: potri, the trtri_lauum and
gemm_lauum plans). Launched through CuPy on its current stream."""
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
    idx = w.device.index if w.device.index is not None else torch.cuda.current_device()
    cp = _load.cupy()
    fn = _MIRROR_FN.get((idx, dt.prefix))
    if fn is None:
        with cp.cuda.Device(idx):
            fn = _MIRROR_FN[idx, dt.prefix] = cp.RawModule(code=_MIRROR_SRC).get_function(
                f"mirror_{dt.prefix}")
    nt = -(-n // 32)
    for b0 in range(0, batch, 65535):
        nb = min(65535, batch - b0)
        fn((nt, nt, nb), (32, 8),
           (w[b0].data_ptr(), np_.int64(n), np_.int64(w.stride(0)), np_.int32(bool(upper))))
