"""Issue 13's cases: the fused (cuSOLVERDx) inverse from the factor against torch, as
pytest-benchmark groups (one group per dtype x batch x n; torch, torch with
``preferred_linalg_library("cusolver")`` where its per-matrix loop takes less than a second,
``fused`` and ``auto`` through the public entry point with their checks on, and a
``check=False`` twin). The figures to quote are the CUDA-event medians in ``extra_info``
(as in ``test_bench_cholesky.py``); a method whose result fails ``?pot03`` fails. The
fuller table (host µs per call, ``torch.linalg.inv_ex``, % of the copy ceiling, the tuning
candidates) comes from ``devrun``-style timing: see the README's performance section.

    pytest benchmarks/test_bench_fused.py -m gpu

Skipped without a GPU or without the ``cuda13-fused`` extra.
"""
from __future__ import annotations

import functools

import pytest
import torch

from cusolver_trace import sweep

pytestmark = pytest.mark.gpu

CASES = [(100000, 4), (10000, 8), (100000, 16), (1000, 32), (1000, 64), (100, 128)]
_EXTRA = ("resolved", "checked", "check", "ratio", "median_ms", "iqr_ms", "noisy", "device",
          "ratio_to_torch", "check_overhead", "check_cost_ms", "flop_count", "gflops")


def _methods(batch):
    # torch 2.11's cusolver preference loops Xpotrs over the batch: ~10 µs x batch per call
    return ("fused", "auto") + (("torch_cusolver",) if batch <= 10000 else ())


def _params():
    for dtype in ("float64", "float32"):
        for batch, n in CASES:
            for m in _methods(batch):
                yield pytest.param(dtype, n, batch, m, id=f"{dtype}-b{batch}-n{n}-{m}")


@functools.lru_cache(maxsize=1)
def _case(dtype, n, batch):
    return sweep.make_case("cholesky_inverse", n, batch, dtype, "cuda:0", seed=0, cond=1e3)


@pytest.fixture(scope="module", autouse=True)
def _fused_available():
    """Skipped where the cuda13-fused extra is not installed (naming it); failed where it is
    installed and does not load."""
    from cusolver_trace._pytest_gpus import require_extra

    require_extra("cuda13-fused")


@pytest.mark.parametrize("dtype,n,batch,method", list(_params()))
def test_bench_fused(benchmark, gpu_results, dtype, n, batch, method):
    case = _case(dtype, n, batch)
    rows = sweep.measure_case(case, ["torch", method], repeat=10, warmup=2, unchecked=True)
    row = next(r for r in rows if r["method"] == method and r["checked"] is not False)
    benchmark.group = f"cholesky_inverse {dtype} n={n} batch={batch} (fused)"
    benchmark.extra_info.update({k: row.get(k) for k in _EXTRA})
    gpu_results.append({"group": benchmark.group, "name": method, "device": "cuda:0",
                        **{k: row.get(k) for k in _EXTRA}})
    assert row["status"] == "ok", f"{method}: {row['status']} {row['check']}={row['ratio']} {row['error']}"
    fn = sweep.method_callable(case, method)

    def call():
        fn()
        torch.cuda.synchronize()

    benchmark.pedantic(call, rounds=5, warmup_rounds=1, iterations=1)
