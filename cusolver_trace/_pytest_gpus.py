"""pytest plugin of the project: GPU skips, and GPUs spread over pytest-xdist workers.

Loaded for ``tests/`` and ``benchmarks/`` through ``-p cusolver_trace._pytest_gpus`` in
``pyproject.toml``'s ``addopts``.

* ``gpu`` tests skip, saying why, only where torch sees no GPU or where an optional extra they
  need is not installed (naming the extra: ``cuda13`` / ``cuda12`` for CuPy and nvmath-python,
  and whatever ``@pytest.mark.needs_extra("cuda13-fused")`` names). A GPU that is visible with
  the extra installed but failing to load is a *failure* of every such test, with the import
  error. ``gpu_torch_only`` tests need only ``torch.cuda``.

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


#: The optional extras of pyproject.toml that GPU tests need: the distributions each one
#: installs (``tests/test_pytest_plugin.py`` checks this table against pyproject.toml).
EXTRAS = {
    "cuda12": ("cupy-cuda12x", "nvmath-python"),
    "cuda13": ("cupy-cuda13x", "nvmath-python"),
    "cuda13-fused": ("cupy-cuda13x", "nvmath-python", "numba-cuda", "nvidia-libmathdx-cu13",
                     "nvidia-cuda-nvrtc", "nvidia-nvjitlink"),
}


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


def cuda_extra() -> str:
    """The extra that matches torch's CUDA major version (``cuda13`` or ``cuda12``)."""
    import torch

    return "cuda12" if str(torch.version.cuda or "").startswith("12") else "cuda13"


def missing_distributions(extra: str, *, installed=None) -> list[str]:
    """The distributions of ``extra`` (:data:`EXTRAS`) that are not installed here.

    Parameters
    ----------
    extra : str
    installed : callable, optional
        ``name -> bool`` (default: :func:`importlib.metadata.distribution` finds it).

    Examples
    --------
    >>> missing_distributions("cuda13", installed=lambda name: name == "nvmath-python")
    ['cupy-cuda13x']
    """
    if installed is None:
        from importlib import metadata

        def installed(name):
            try:
                metadata.distribution(name)
            except metadata.PackageNotFoundError:
                return False
            return True
    return [d for d in EXTRAS[extra] if not installed(d)]


def _probe_bindings() -> None:
    """Load what the ``cuda12`` / ``cuda13`` extras provide (raises when it cannot)."""
    from cusolver_trace.raw import _load

    _load.cupy_cusolver()
    _load.nvmath_cusolverDn()


def _probe_fused() -> None:
    """Load what the ``cuda13-fused`` extra provides (raises when it cannot)."""
    from cusolver_trace.backends import fused

    fused._tools()


PROBES = {"cuda12": _probe_bindings, "cuda13": _probe_bindings, "cuda13-fused": _probe_fused}


def verdict(cuda_reason: str | None, extra: str, missing, load_error: BaseException | None
            ) -> tuple[str, str | None]:
    """What a GPU test does here (pure): ``("run", None)``, ``("skip", why)`` or
    ``("fail", why)``.

    A GPU test skips only where no GPU is visible, or where an optional extra it needs is not
    installed (naming the extra). A visible GPU with the extra installed whose bindings fail to
    load is a failure, with the error: a broken install must not pass as a skip.

    Parameters
    ----------
    cuda_reason : str or None
        Why torch sees no GPU (None: it sees one).
    extra : str
        The extra the test needs.
    missing : sequence of str
        Its distributions that are not installed.
    load_error : BaseException or None
        What loading its bindings raised (None: they load).

    Examples
    --------
    >>> verdict("no CUDA GPU visible", "cuda13", ["cupy-cuda13x"], None)
    ('skip', 'GPU test skipped: no CUDA GPU visible')
    >>> verdict(None, "cuda13", ["cupy-cuda13x"], None)[1]
    "GPU test skipped: needs the optional extra 'cuda13' (not installed: cupy-cuda13x); pip install -e '.[cuda13]'"
    >>> verdict(None, "cuda13", [], OSError("libcusolver.so.12: cannot open shared object file"))[0]
    'fail'
    """
    if cuda_reason:
        return "skip", f"GPU test skipped: {cuda_reason}"
    if missing:
        return "skip", (f"GPU test skipped: needs the optional extra '{extra}' (not installed: "
                        f"{', '.join(missing)}); pip install -e '.[{extra}]'")
    if load_error is not None:
        return "fail", (f"a GPU is visible and the extra '{extra}' is installed, but its "
                        f"bindings fail to load: {type(load_error).__name__}: {load_error}")
    return "run", None


@functools.cache
def extra_verdict(extra: str) -> tuple[str, str | None]:
    """:func:`verdict` for ``extra`` on this machine (computed once per session)."""
    why = cuda_unavailable_reason()
    if why:
        return verdict(why, extra, (), None)
    missing = missing_distributions(extra)
    error = None
    if not missing:
        try:
            PROBES[extra]()
        except Exception as exc:  # reported as the failure of every test that needs it
            error = exc
    return verdict(None, extra, missing, error)


def gpu_unavailable_reason() -> str | None:
    """None when torch sees a CUDA GPU and CuPy + nvmath-python bind cuSOLVER; else why not
    (no GPU, the extra not installed, or its bindings failing to load)."""
    kind, why = extra_verdict(cuda_extra()) if not cuda_unavailable_reason() else (
        "skip", cuda_unavailable_reason())
    return None if kind == "run" else why


def require_extra(extra: str) -> None:
    """Inside a test: skip where ``extra`` is not installed (naming it), fail where it is
    installed and does not load, return where it loads."""
    kind, why = extra_verdict(extra)
    if kind == "skip":
        pytest.skip(why)
    if kind == "fail":
        pytest.fail(why, pytrace=False)


def _needs(item) -> list[str]:
    """The extras a ``gpu`` item needs: the CUDA one, plus any ``needs_extra(...)`` names."""
    if "gpu_torch_only" in item.keywords:
        return []
    extras = [cuda_extra()]
    for mark in item.iter_markers("needs_extra"):
        extras += [e for e in mark.args if e not in extras]
    return extras


def pytest_collection_modifyitems(config, items):
    """``gpu`` items need CUDA and the extra's bindings, ``gpu_torch_only`` ones only CUDA:
    skipped, with the reason, where the GPU or the extra is missing; an extra that is
    installed but does not load fails the item at set-up (:func:`pytest_runtest_setup`)."""
    for item in items:
        if "gpu" not in item.keywords:
            continue
        why = cuda_unavailable_reason()
        if why:
            item.add_marker(pytest.mark.skip(reason=f"GPU test skipped: {why}"))
            continue
        for extra in _needs(item):
            kind, why = extra_verdict(extra)
            if kind == "skip":
                item.add_marker(pytest.mark.skip(reason=why))
                break


def pytest_runtest_setup(item):
    """A ``gpu`` item whose extra is installed but fails to load fails, with the error."""
    if "gpu" not in item.keywords or cuda_unavailable_reason():
        return
    for extra in _needs(item):
        kind, why = extra_verdict(extra)
        if kind == "fail":
            pytest.fail(why, pytrace=False)


def _results_dir(config) -> Path:
    return Path(str(config.rootpath)) / ".benchmarks" / "gpu-results"


def pytest_configure(config):
    for line in ("gpu: needs an NVIDIA GPU with CuPy and nvmath-python (skipped with a reason elsewhere)",
                 "gpu_torch_only: a gpu test that needs torch.cuda but not CuPy / nvmath-python",
                 "needs_extra(name, ...): a gpu test that also needs these optional extras "
                 "(skipped where one is not installed, failed where one does not load)"):
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

    from ._console import environ

    Console(width=200, file=terminalreporter._tw._file, _environ=environ()).print(
        summary_table(rows, out))


def summary_table(rows: list[dict], out) -> "rich.table.Table":  # noqa: F821
    """The merged rows as one rich table, titled with what its figures are (devices, clocks)."""
    from rich.table import Table

    devices = sorted({str(r.get("device")) for r in rows})
    t = Table(title=f"cusolver-trace rows merged from {len({r.get('worker') for r in rows})} "
                    f"process(es) ({', '.join(devices)}): {out}\n"
                    "median_ms: CUDA events on a GPU, on the CPU the timing thread's CPU time (thread_time, "
                    "every library pinned to 1 thread) or perf_counter, timed interleaved with "
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
