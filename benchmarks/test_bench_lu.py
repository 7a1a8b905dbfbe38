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

import functools

import pytest
import torch

from cusolver_trace import sweep

GPU = pytest.mark.gpu
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

_EXTRA = ("resolved", "checked", "check", "ratio", "median_ms", "iqr_ms", "noisy", "clock",
          "device", "ratio_to_torch", "check_overhead", "check_cost_ms", "flop_count", "gflops",
          "pct_of_ceiling", "ceiling_gflops")


def _params():
    for op, dtype, n, batch, nrhs, methods, gpu in CASES:
        for m in methods:
            yield pytest.param(op, dtype, n, batch, nrhs, m, gpu,
                               id=f"{op}-{dtype}-n{n}-b{batch}-{m}", marks=[GPU] if gpu else [])


@functools.lru_cache(maxsize=1)  # parameters are ordered case by case: one input alive
def _case(op, dtype, n, batch, nrhs, device):
    return sweep.make_case(op, n, batch, dtype, device, seed=0, cond=1e3, nrhs=nrhs)


@pytest.mark.parametrize("op,dtype,n,batch,nrhs,method,gpu", list(_params()))
def test_bench_lu(benchmark, gpu_results, op, dtype, n, batch, nrhs, method, gpu):
    device = "cuda:0" if gpu else "cpu"
    case = _case(op, dtype, n, batch, nrhs, device)
    rounds = 5 if gpu else 3
    rows = sweep.measure_case(case, ["torch", method], repeat=rounds, warmup=1, unchecked=True)
    row = next(r for r in rows if r["method"] == method and r["checked"] is not False)
    benchmark.group = f"{op} {dtype} n={n} batch={batch} ({device})"
    benchmark.extra_info.update({k: row.get(k) for k in _EXTRA})
    gpu_results.append({"group": benchmark.group, "name": method, "device": device,
                        **{k: row.get(k) for k in _EXTRA}})
    assert row["status"] == "ok", (f"{method}: {row['status']} {row['check']}={row['ratio']} "
                                   f"{row['error']}")
    fn = sweep.method_callable(case, method)
    sync = torch.cuda.synchronize if gpu else (lambda: None)

    def call():
        fn()
        sync()

    benchmark.pedantic(call, rounds=rounds, warmup_rounds=1, iterations=1)
