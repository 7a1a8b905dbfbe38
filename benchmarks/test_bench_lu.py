"""The LU family (issue 24): torch against the rows of the public LU routines
(``cusolver_trace.inv`` / ``solve`` / ``getrf`` / ``lu_solve``, checks on where they have
them), as pytest-benchmark groups, one group per op x dtype x batch x n, through the ops'
sweep methods (:func:`cusolver_trace.sweep.measure_case`: torch interleaved, CUDA-event
medians in ``extra_info``, the LAPACK ratio get01 / get02 / get03; a method whose result
fails it fails). No timing assertions. The peers' table (JAX, CuPy, single synced calls) is
``benchmarks/lu_table.py``.

    pytest benchmarks/test_bench_lu.py              # CPU cases; gpu cases skip without a GPU
    pytest benchmarks/test_bench_lu.py -m gpu
"""
from __future__ import annotations

import pytest
from _sweep_bench import bench, params
_BATCHED_INV = ("torch", "batched", "getri_batched", "auto")
_BIG_INV = ("torch", "getri", "getri_rec", "getri_X", "auto")

# (op, dtype, n, batch, nrhs, methods, gpu)
CASES = [
    ("inv", "float64", 64, 8, 1, ("torch", "legacy", "getri", "auto"), False),
    ("solve", "float64", 64, 8, 1, ("torch", "legacy", "auto"), False),
    ("lu_factor", "float64", 128, 1, 1, ("torch", "legacy", "auto"), False),
    ("lu_solve", "float64", 128, 1, 4, ("torch", "legacy", "auto"), False),
    ("inv", "float64", 8, 10000, 1, (*_BATCHED_INV, "matinv_batched"), True),
    ("inv", "float64", 32, 1000, 1, (*_BATCHED_INV, "matinv_batched"), True),
    ("inv", "float64", 128, 100, 1, _BATCHED_INV, True),
    ("inv", "float64", 512, 8, 1, (*_BATCHED_INV, "getri"), True),
    ("inv", "float64", 4096, 1, 1, _BIG_INV, True),
    ("inv", "float64", 8192, 1, 1, _BIG_INV, True),
    ("solve", "float64", 8, 10000, 1, ("torch", "batched", "auto"), True),
    ("solve", "float64", 32, 1000, 1, ("torch", "batched", "auto"), True),
    ("solve", "float64", 128, 100, 1, ("torch", "batched", "auto"), True),
    ("solve", "float64", 4096, 1, 1, ("torch", "legacy", "X", "auto"), True),
    ("lu_factor", "float64", 4096, 1, 1, ("torch", "legacy", "X"), True),
    ("lu_factor", "float64", 8192, 1, 1, ("torch", "legacy", "X"), True),
]


@pytest.mark.parametrize("op,dtype,n,batch,nrhs,method,gpu", list(params(CASES)))
def test_bench_lu(benchmark, gpu_results, op, dtype, n, batch, nrhs, method, gpu):
    bench(benchmark, gpu_results, op, dtype, n, batch, nrhs, method, gpu)
