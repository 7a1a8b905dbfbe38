"""Shared test setup: the ``gpu`` marker skips, with the reason, where no usable GPU is present."""
from __future__ import annotations

import functools

import pytest


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
    """``gpu`` tests need CUDA and the raw bindings; ``gpu_torch_only`` ones need only CUDA."""
    for item in items:
        if "gpu" not in item.keywords:
            continue
        reason = cuda_unavailable_reason() if "gpu_torch_only" in item.keywords else gpu_unavailable_reason()
        if reason:
            item.add_marker(pytest.mark.skip(reason=f"GPU test skipped: {reason}"))
