"""pytest plugin of the project: GPU skips, and GPUs spread over pytest-xdist workers.

Loaded for ``tests/`` and ``benchmarks/`` through ``-p cusolver_trace._pytest_gpus`` in
``pyproject.toml``'s ``addopts``.

* ``gpu`` tests skip, saying why, where torch sees no GPU or CuPy / nvmath-python do not
  load; ``gpu_torch_only`` tests need only ``torch.cuda``.

Several GPUs::

    pytest benchmarks/ -n 2 -p xdist      # one worker per GPU

* Each xdist worker ``gwK`` is pinned to one GPU by setting ``CUDA_VISIBLE_DEVICES`` in
  ``pytest_configure`` — before anything initializes CUDA in that process — to the
  K-th visible GPU modulo the number of GPUs (counted with ``nvidia-smi -L``, which
  does not initialize CUDA here, or taken from an existing ``CUDA_VISIBLE_DEVICES``).
* Tests hand their measured rows to the ``gpu_results`` fixture (a list to append
  dicts to); every process appends them to ``<rootdir>/.benchmarks/gpu-results/<worker>.jsonl``
  and, at the end of the session, the controller (or a run without xdist) merges all
  rows into ``.benchmarks/gpu-results.json`` and prints one table.

pytest-benchmark switches its own host-clock timing off under xdist; the GPU figures in
the merged report are CUDA-event medians measured inside each test, so they stay valid.
"""
from __future__ import annotations

import functools
import json
import os
from pathlib import Path

import pytest

_WORKER = os.environ.get("PYTEST_XDIST_WORKER")


def _gpu_ids() -> list[str]:
    from cusolver_trace.workflow import physical_gpu_ids

    return physical_gpu_ids()


def pin_worker_gpu(worker: str | None = _WORKER) -> str | None:
    """Set ``CUDA_VISIBLE_DEVICES`` for xdist worker ``gwK``; returns the GPU id chosen."""
    if not worker or not worker.startswith("gw"):
        return None
    ids = _gpu_ids()
    if not ids:
        return None
    gpu = ids[int(worker[2:]) % len(ids)]
    os.environ["CUDA_VISIBLE_DEVICES"] = gpu
    return gpu


@functools.cache
def cuda_unavailable_reason() -> str | None:
    """None when torch sees a CUDA GPU; else why not."""
    try:
        import torch
    except ImportError as exc:  # pragma: no cover
        return f"torch not importable: {exc}"
    if not torch.cuda.is_available():
        return f"no CUDA GPU visible to torch {torch.__version__} (CPU-only machine)"
    return None


@functools.cache
def gpu_unavailable_reason() -> str | None:
    """None when torch sees a CUDA GPU and CuPy + nvmath-python bind cuSOLVER; else why not."""
    if cuda_unavailable_reason():
        return cuda_unavailable_reason()
    try:
        from cusolver_trace.raw import _load

        _load.cupy_cusolver()
        _load.nvmath_cusolverDn()
    except Exception as exc:
        return str(exc)
    return None


def pytest_collection_modifyitems(config, items):
    """``gpu`` items need CUDA and the raw bindings, ``gpu_torch_only`` ones only CUDA:
    skipped, with the reason, where that is missing."""
    for item in items:
        if "gpu" not in item.keywords:
            continue
        reason = cuda_unavailable_reason() if "gpu_torch_only" in item.keywords else gpu_unavailable_reason()
        if reason:
            item.add_marker(pytest.mark.skip(reason=f"GPU test skipped: {reason}"))


def _results_dir(config) -> Path:
    return Path(str(config.rootpath)) / ".benchmarks" / "gpu-results"


def pytest_configure(config):
    for line in ("gpu: needs an NVIDIA GPU with CuPy and nvmath-python (skipped with a reason elsewhere)",
                 "gpu_torch_only: a gpu test that needs torch.cuda but not CuPy / nvmath-python"):
        config.addinivalue_line("markers", line)
    gpu = pin_worker_gpu()
    config._gpu_pinned = gpu
    if _WORKER is None:  # controller or plain run: start a fresh result set
        d = _results_dir(config)
        if d.exists():
            for f in d.glob("*.jsonl"):
                f.unlink()


@pytest.fixture(scope="session")
def gpu_results(request):
    """A list to append result rows (dicts) to; written per process at session end."""
    rows: list[dict] = []
    yield rows
    if not rows:
        return
    d = _results_dir(request.config)
    d.mkdir(parents=True, exist_ok=True)
    tag = _WORKER or "main"
    pinned = getattr(request.config, "_gpu_pinned", None)
    with open(d / f"{tag}.jsonl", "a") as fh:
        for row in rows:
            row.setdefault("worker", tag)
            row.setdefault("physical_gpu", pinned if pinned is not None else os.environ.get("CUDA_VISIBLE_DEVICES"))
            fh.write(json.dumps(row, default=str) + "\n")


def merge(results_dir: Path) -> list[dict]:
    """All rows written by every worker, in (group, name) order."""
    rows = []
    for f in sorted(results_dir.glob("*.jsonl")):
        rows += [json.loads(line) for line in f.read_text().splitlines() if line.strip()]
    return sorted(rows, key=lambda r: (str(r.get("group")), str(r.get("name"))))


def pytest_sessionfinish(session, exitstatus):
    if _WORKER is not None:
        return
    d = _results_dir(session.config)
    if not d.exists():
        return
    rows = merge(d)
    if not rows:
        return
    out = d.parent / "gpu-results.json"
    out.write_text(json.dumps(rows, indent=2, default=str))
    session.config._gpu_results_report = (out, rows)


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    report = getattr(config, "_gpu_results_report", None)
    if not report:
        return
    out, rows = report
    from rich.console import Console

    Console(width=200, file=terminalreporter._tw._file).print(summary_table(rows, out))


def summary_table(rows: list[dict], out) -> "rich.table.Table":  # noqa: F821
    """The merged rows as one rich table, titled with what its figures are (devices, clocks)."""
    from rich.table import Table

    devices = sorted({str(r.get("device")) for r in rows})
    t = Table(title=f"cusolver-trace rows merged from {len({r.get('worker') for r in rows})} "
                    f"process(es) ({', '.join(devices)}): {out}\n"
                    "median_ms: CUDA events on a GPU, perf_counter on the CPU, timed interleaved with "
                    "torch; pytest-benchmark's table above times the same call with its own host "
                    "clock and few rounds (its mean includes outliers)")
    keys = [k for k in ("group", "name", "device", "physical_gpu", "median_ms", "iqr_ms", "noisy",
                        "gflops", "pct_of_ceiling", "ratio_to_torch", "check_overhead", "check")
            if any(k in r for r in rows)]
    for k in keys:
        t.add_column(k)
    for r in rows:
        cells = [_cell(r.get(k)) for k in keys]
        if "pct_of_ceiling" in keys and (r.get("pct_of_ceiling") or 0) > 100:
            # above the GEMM rate measured in the same process: on the CPU that rate comes from
            # torch's BLAS while the method may run another (scipy's OpenBLAS); say so
            cells[keys.index("pct_of_ceiling")] += " (above the measured GEMM rate)"
        t.add_row(*cells)
    return t


def _cell(v):
    if isinstance(v, float):
        return f"{v:.4g}"
    return "" if v is None else str(v)
