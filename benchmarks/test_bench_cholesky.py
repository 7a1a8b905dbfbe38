"""torch vs raw cuSOLVER/cuBLAS paths and faster inverse methods, as pytest-benchmark groups.

Each group is one input (op, dtype, n, batch); its members are torch and each
method on the same tensors, so the group table and ``--benchmark-compare``
read as ratios. pytest-benchmark's host clock is meaningful because each
benchmarked call ends with ``torch.cuda.synchronize()``; the numbers to quote
are in ``extra_info``: the CUDA-event median / IQR (ms) of the method and of
torch timed interleaved in one :func:`cusolver_trace.timing.time_calls` run,
their ratio, the LAPACK check ratio, and GFLOP/s with the LAWN 41 count named
(and on the potri count for inverses) with % of the GEMM ceiling measured in
the same process. Methods run through the public entry points with their
default checks on; ``check_overhead`` is their time over a ``check=False`` twin
timed in the same run. A method whose result fails its check (ratio >= 30)
fails its benchmark. There are no timing assertions.

Without a GPU, the CPU (LAPACK) cases run with small n (well under a minute on
two cores); the gpu-marked cases cover the issue's targets on an H200:
float64 inverse at n = 8192 and 16384, batches 10000×8, 1000×32 and 8×512
(torch default, torch with ``preferred_linalg_library("cusolver")``, trsm
paths), the fused A → A⁻¹ batched path, and torch vs its replay at n = 64 … 4096.

    pytest benchmarks/                      # all (gpu cases skip without a GPU)
    pytest benchmarks/ -m gpu --benchmark-json=bench.json
    pytest benchmarks/ --benchmark-compare  # against the last saved run (--benchmark-autosave)
    pytest benchmarks/ -m gpu -n 2          # pytest-xdist: one worker per GPU (CUDA_VISIBLE_DEVICES),
                                            # rows merged into .benchmarks/gpu-results.json
"""
from __future__ import annotations

import pytest
from _sweep_bench import bench, params

_INV_BIG = ("torch", "potrs", "potri", "trtri_lauum", "rec_trtri_lauum", "auto")
_INV_BATCH = ("torch", "torch_cusolver", "trsm_batched", "auto")

# (op, dtype, n, batch, methods, gpu)
CASES = [
    # CPU: LAPACK (scipy) vs torch's CPU path, small n
    ("cholesky", "float64", 128, 1, ("torch", "replay", "potrf"), False),
    ("cholesky", "float64", 512, 1, ("torch", "replay", "potrf"), False),
    ("cholesky", "float64", 64, 8, ("torch", "replay", "potrf"), False),
    ("cholesky_inverse", "float64", 128, 1, ("torch", "potrs", "potri"), False),
    ("cholesky_inverse", "float64", 512, 1, ("torch", "potrs", "potri"), False),
    ("cholesky_inverse", "float64", 64, 8, ("torch", "potrs", "potri"), False),
    ("cholesky_inverse", "complex128", 128, 1, ("torch", "potrs", "potri"), False),
    ("cholesky_solve", "float64", 512, 1, ("torch", "replay", "potrs"), False),
    ("cholesky_solve", "float64", 64, 8, ("torch", "replay", "potrs"), False),
    # GPU: the targets
    ("cholesky_inverse", "float64", 4096, 1, (*_INV_BIG, "trsm_batched"), True),
    ("cholesky_inverse", "float64", 8192, 1, (*_INV_BIG, "trsm_batched"), True),
    ("cholesky_inverse", "float64", 16384, 1, _INV_BIG, True),
    ("cholesky_inverse", "float64", 8, 10000, _INV_BATCH, True),
    ("cholesky_inverse", "float64", 32, 1000, _INV_BATCH, True),
    ("cholesky_inverse", "float64", 512, 8, (*_INV_BATCH, "trsm"), True),
    ("spd_inverse", "float64", 8, 10000, ("torch", "potrf_trsm_batched"), True),
    ("spd_inverse", "float64", 32, 1000, ("torch", "potrf_trsm_batched"), True),
    # GPU: torch vs the replay of its own library calls (issue 14: <= 1.10 at n = 64, <= 1.03
    # from 256 on; n <= 512 is timed in runs of 10 calls, as the sweep does)
    ("cholesky", "float64", 64, 1, ("torch", "replay"), True),
    ("cholesky", "float64", 256, 1, ("torch", "replay"), True),
    ("cholesky_inverse", "float64", 64, 1, ("torch", "replay"), True),
    ("cholesky_inverse", "float64", 256, 1, ("torch", "replay"), True),
    ("cholesky_solve", "float64", 64, 1, ("torch", "replay"), True),
    ("cholesky_solve", "float64", 256, 1, ("torch", "replay"), True),
    ("cholesky", "float64", 1024, 1, ("torch", "replay"), True),
    ("cholesky", "float64", 4096, 1, ("torch", "replay"), True),
    ("cholesky_inverse", "float64", 1024, 1, ("torch", "replay"), True),
    ("cholesky_inverse", "float64", 4096, 1, ("torch", "replay"), True),
    ("cholesky_solve", "float64", 4096, 1, ("torch", "replay"), True),
]

_EXTRA = ("resolved", "checked", "check", "ratio", "median_ms", "iqr_ms", "noisy", "clock",
          "device", "ratio_to_torch", "check_overhead", "check_cost_ms",
          "flop_count", "gflops", "pct_of_ceiling", "gflops_potri", "pct_of_ceiling_potri",
          "ceiling_gflops")


# the public entry point with its checks on, torch interleaved, and (where the method has
# checks) its check=False twin in the same run: check_overhead = checked / unchecked
@pytest.mark.parametrize("op,dtype,n,batch,nrhs,method,gpu",
                         list(params((op, dtype, n, batch, 1, methods, gpu)
                                     for op, dtype, n, batch, methods, gpu in CASES)))
def test_bench(benchmark, gpu_results, op, dtype, n, batch, nrhs, method, gpu):
    bench(benchmark, gpu_results, op, dtype, n, batch, nrhs, method, gpu, extra=_EXTRA,
          torch_median=True)
