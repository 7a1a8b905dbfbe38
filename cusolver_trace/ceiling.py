"""Hardware ceilings measured in the same process: GEMM rate and copy bandwidth.

A GFLOP/s figure means little on its own; the field quotes it against what the
same device reaches on a plain matrix product in the same precision, measured
in the same run (vendor peak figures are not reached by any library call).
:func:`ceiling` measures, once per (device, dtype) per process:

* **GEMM**: ``torch.matmul`` of two n×n matrices (cuBLAS ``?gemm`` on CUDA —
  DGEMM, SGEMM with TF32 *off*, ZGEMM, CGEMM; MKL/OpenBLAS on the CPU), timed
  with :func:`cusolver_trace.timing.time_calls` (CUDA events on a GPU), counted
  with LAWN 41's gemm count: 2n³ real flops, 8n³ for complex
  (:func:`cusolver_trace.checks.flops` ``("gemm", n)``).
* **Copy bandwidth**: ``dst.copy_(src)`` of a large buffer, in GB/s counting the
  bytes read *and* written (2 × buffer size), as the field does.

On an NVIDIA H200 (torch 2.11, cuBLAS 13.1) these read about 57 TFLOP/s
(fp64), 51 TFLOP/s (fp32, TF32 off) and 4.27 TB/s (see
``gpu-ground-truth.md``); they are measured, never assumed.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

import torch

from ._dtypes import dtype_info
from .checks import ieee_fp32, flops
from .timing import time_calls

__all__ = ["Ceiling", "ceiling", "percent_of_ceiling", "clear_cache"]

# matrix order of the GEMM and bytes of the copy, per device type (complex: half the order)
_GEMM_N = {"cuda": 8192, "cpu": 1024}
_COPY_BYTES = {"cuda": 2**30, "cpu": 2**26}
_REPEAT = {"cuda": 10, "cpu": 3}

_CACHE: dict = {}


@dataclass(frozen=True)
class Ceiling:
    """A measured ceiling for one (device, dtype).

    Attributes
    ----------
    device : str            ``"cuda:0"``, ``"cpu"``
    dtype : str             float32, float64, complex64, complex128
    gemm_gflops : float     GFLOP/s of an n×n×n product (real flops; complex 8n³)
    gemm_n : int            the order n used
    gemm_ms, gemm_iqr_ms : float   median and IQR of one product, ms
    copy_gbs : float        device-to-device (CPU: memory-to-memory) copy, GB/s, read + write
    copy_bytes : int        size of the copied buffer
    copy_ms : float         median time of one copy, ms
    clock : str             ``"cuda-events"`` or ``"perf_counter"``
    how : str               what was measured, in words
    """

    device: str
    dtype: str
    gemm_gflops: float
    gemm_n: int
    gemm_ms: float
    gemm_iqr_ms: float
    copy_gbs: float
    copy_bytes: int
    copy_ms: float
    clock: str
    how: str

    def to_dict(self) -> dict:
        return asdict(self)


def _device_key(device) -> torch.device:
    dev = torch.device(device if device is not None else
                       ("cuda" if torch.cuda.is_available() else "cpu"))
    if dev.type == "cuda" and dev.index is None:
        dev = torch.device("cuda", torch.cuda.current_device())
    return dev


def ceiling(device=None, dtype="float64", *, n: int | None = None, repeat: int | None = None,
            refresh: bool = False) -> Ceiling:
    """Measure (or return the cached) GEMM and copy ceilings of ``device`` for ``dtype``.

    Parameters
    ----------
    device : torch.device or str, optional
        Default ``cuda:0``-current when torch sees a GPU, else ``cpu``.
    dtype : str or dtype
        float32, float64, complex64, complex128. float32/complex64 products run
        in IEEE fp32 (``torch.backends.cuda.matmul`` TF32 off during the
        measurement, the previous setting restored after).
    n : int, optional
        GEMM order; default 8192 on CUDA and 1024 on the CPU (half that for complex).
    repeat : int, optional
        Timed samples (default 10 on CUDA, 3 on the CPU) after one warm-up.
    refresh : bool
        Measure again even if cached. The cache key is (device, dtype); a
        call with an explicit ``n`` or ``repeat`` is measured and not cached.

    Returns
    -------
    Ceiling

    Raises
    ------
    TypeError   unsupported dtype.   RuntimeError   CUDA device not usable.
    """
    dt = dtype_info(dtype)
    dev = _device_key(device)
    key = (str(dev), dt.name)
    custom = n is not None or repeat is not None
    if not custom and not refresh and key in _CACHE:
        return _CACHE[key]
    kind = dev.type if dev.type in _GEMM_N else "cpu"
    n = n or (_GEMM_N[kind] // (2 if dt.is_complex else 1))
    repeat = repeat or _REPEAT[kind]
    gen = torch.Generator(device=dev).manual_seed(0)
    a, b = (torch.randn(n, n, dtype=dt.torch, device=dev, generator=gen) for _ in range(2))
    out = torch.empty_like(a)
    src = torch.empty(_COPY_BYTES[kind], dtype=torch.uint8, device=dev).fill_(1)
    dst = torch.empty_like(src)
    with ieee_fp32(a):
        t = time_calls({"gemm": lambda: torch.matmul(a, b, out=out),
                        "copy": lambda: dst.copy_(src)},
                       device=dev, warmup=1, repeat=repeat)
    g, c = t["gemm"], t["copy"]
    tf32 = ", TF32 off" if dev.type == "cuda" and dt.name in ("float32", "complex64") else ""
    result = Ceiling(
        device=str(dev), dtype=dt.name,
        gemm_gflops=g.gflops(flops("gemm", n, complex=dt.is_complex)), gemm_n=n,
        gemm_ms=g.median_ms, gemm_iqr_ms=g.iqr_ms,
        copy_gbs=2 * src.numel() / (c.median_ms * 1e-3) / 1e9, copy_bytes=src.numel(),
        copy_ms=c.median_ms, clock=g.clock,
        how=(f"torch.matmul {dt.name} {n}x{n}x{n}{tf32} ({'8' if dt.is_complex else '2'}n^3 flops), "
             f"median of {repeat}; copy_ of {src.numel() / 2**20:.0f} MiB counting read + write"))
    if not custom:
        _CACHE[key] = result
    return result


def clear_cache() -> None:
    """Forget the measured ceilings of this process."""
    _CACHE.clear()


def percent_of_ceiling(gflops, ceiling) -> float:
    """``100 · gflops / ceiling`` (%): ``ceiling`` a :class:`Ceiling` (its GEMM rate) or GFLOP/s.

    NaN when either is missing, NaN or the ceiling is not positive.
    """
    c = ceiling.gemm_gflops if isinstance(ceiling, Ceiling) else ceiling
    try:
        g, c = float(gflops), float(c)
    except (TypeError, ValueError):
        return float("nan")
    return 100.0 * g / c if c > 0 else float("nan")
