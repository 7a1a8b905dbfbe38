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

import functools

import pytest
import torch

from cusolver_trace import sweep

GPU = pytest.mark.gpu
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
def test_bench_eigh(benchmark, gpu_results, op, dtype, n, batch, nrhs, method, gpu):
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
