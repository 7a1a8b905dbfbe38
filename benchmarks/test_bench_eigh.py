"""The symmetric eigensolvers (issue 28): torch against the rows of ``cusolver_trace.eigh`` /
``eigvalsh`` (checks on), as pytest-benchmark groups, one group per op x dtype x batch x n,
through the ops' sweep methods (:func:`cusolver_trace.sweep.measure_case`: torch interleaved,
CUDA-event medians in ``extra_info``, LAPACK's eigen ratios; a method whose result fails them
fails). No timing assertions. The peers' table (JAX, CuPy, single synced calls) is
``benchmarks/eigh_table.py``.

    pytest benchmarks/test_bench_eigh.py              # CPU cases; gpu cases skip without a GPU
    pytest benchmarks/test_bench_eigh.py -m gpu
"""
from __future__ import annotations

import pytest
from _sweep_bench import bench, params
_SMALL = ("torch", "XsyevBatched", "syevjBatched", "jacobi", "auto")

# (op, dtype, n, batch, nrhs, methods, gpu)
CASES = [
    ("eigh", "float64", 64, 8, 1, ("torch", "Xsyevd", "XsyevBatched", "auto"), False),
    ("eigvalsh", "float64", 64, 8, 1, ("torch", "Xsyevd", "auto"), False),
    ("eigh", "float64", 3, 100000, 1, ("XsyevBatched", "syevjBatched", "jacobi", "auto"), True),
    ("eigh", "float64", 3, 32768, 1, _SMALL, True),
    ("eigh", "float64", 8, 10000, 1, _SMALL, True),
    ("eigvalsh", "float64", 8, 10000, 1, _SMALL, True),
    ("eigh", "float64", 32, 1000, 1, ("torch", "XsyevBatched", "syevjBatched", "auto"), True),
    ("eigh", "float64", 128, 100, 1, ("torch", "XsyevBatched", "auto"), True),
    ("eigh", "float64", 512, 8, 1, ("torch", "XsyevBatched", "auto"), True),
    ("eigh", "float64", 1024, 1, 1, ("torch", "Xsyevd", "syevd", "auto"), True),
]


@pytest.mark.parametrize("op,dtype,n,batch,nrhs,method,gpu", list(params(CASES)))
def test_bench_eigh(benchmark, gpu_results, op, dtype, n, batch, nrhs, method, gpu):
    bench(benchmark, gpu_results, op, dtype, n, batch, nrhs, method, gpu)
