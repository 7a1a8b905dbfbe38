"""Shared test setup: the ``gpu`` marker skips, with the reason, where no usable GPU is present."""
from __future__ import annotations

import functools

import pytest


@functools.cache
def gpu_unavailable_reason() -> str | None:
    """None when torch sees a CUDA GPU and CuPy + nvmath-python bind cuSOLVER; else why not."""
    try:
        import torch
    except ImportError as exc:  # pragma: no cover
        return f"torch not importable: {exc}"
    if not torch.cuda.is_available():
        return f"no CUDA GPU visible to torch {torch.__version__} (CPU-only machine)"
    try:
        from cusolver_trace.raw import _load

        _load.cupy_cusolver()
        _load.nvmath_cusolverDn()
    except Exception as exc:
        return str(exc)
    return None


def pytest_collection_modifyitems(config, items):
    reason = gpu_unavailable_reason()
    if reason is None:
        return
    skip = pytest.mark.skip(reason=f"GPU test skipped: {reason}")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
