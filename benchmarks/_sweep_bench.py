"""What the sweep-method benchmarks share (``test_bench_cholesky.py``, ``test_bench_lu.py``,
``test_bench_eigh.py``): the
cases as pytest parameters, one input alive at a time, and one benchmark through
:func:`cusolver_trace.sweep.measure_case` (torch interleaved, CUDA-event medians in
``extra_info``, the op's LAPACK ratio; a method whose result fails it fails). No timing
assertions."""
from __future__ import annotations

import functools

import pytest
import torch

from cusolver_trace import sweep

GPU = pytest.mark.gpu
EXTRA = ("resolved", "checked", "check", "ratio", "median_ms", "iqr_ms", "noisy", "clock",
         "device", "ratio_to_torch", "check_overhead", "check_cost_ms", "flop_count", "gflops",
         "pct_of_ceiling", "ceiling_gflops")


def params(cases):
    """``(op, dtype, n, batch, nrhs, methods, gpu)`` cases as one parameter per method."""
    for op, dtype, n, batch, nrhs, methods, gpu in cases:
        for m in methods:
            yield pytest.param(op, dtype, n, batch, nrhs, m, gpu,
                               id=f"{op}-{dtype}-n{n}-b{batch}-{m}", marks=[GPU] if gpu else [])


@functools.lru_cache(maxsize=1)  # parameters are ordered case by case: one input alive
def _case(op, dtype, n, batch, nrhs, device):
    return sweep.make_case(op, n, batch, dtype, device, seed=0, cond=1e3, nrhs=nrhs)


def bench(benchmark, gpu_results, op, dtype, n, batch, nrhs, method, gpu, *, extra=EXTRA,
          torch_median=False):
    """One benchmark: the method beside torch, its row's facts (``extra``) in ``extra_info``;
    ``torch_median`` adds torch's median ms from the same run."""
    device = "cuda:0" if gpu else "cpu"
    case = _case(op, dtype, n, batch, nrhs, device)
    rounds = 5 if gpu else 3
    rows = sweep.measure_case(case, ["torch", method], repeat=rounds, warmup=1, unchecked=True)
    row = next(r for r in rows if r["method"] == method and r["checked"] is not False)
    benchmark.group = f"{op} {dtype} n={n} batch={batch} ({device})"
    benchmark.extra_info.update({k: row.get(k) for k in extra})
    if torch_median:
        benchmark.extra_info["torch_median_ms"] = row["median_ms"] / row["ratio_to_torch"] \
            if row.get("ratio_to_torch") else None
    gpu_results.append({"group": benchmark.group, "name": method, "device": device,
                        **{k: row.get(k) for k in extra}})
    assert row["status"] == "ok", (f"{method}: {row['status']} {row['check']}={row['ratio']} "
                                   f"{row['error']}")
    fn = sweep.method_callable(case, method)
    sync = torch.cuda.synchronize if gpu else (lambda: None)

    def call():
        fn()
        sync()

    benchmark.pedantic(call, rounds=rounds, warmup_rounds=1, iterations=1)
