"""Lazy loading of the GPU bindings (CuPy, nvmath-python).

Nothing here runs at ``import cusolver_trace``; the first GPU call loads the
bindings and, when that fails, raises :class:`GPUUnavailableError` saying what
is missing and how to install it.
"""
from __future__ import annotations

import functools

from ..errors import GPUUnavailableError

_INSTALL = (
    "install the GPU extra matching your CUDA major version: "
    "pip install 'cusolver-trace[cuda13]' (or '[cuda12]')"
)


def _fail(what: str, exc: BaseException) -> GPUUnavailableError:
    return GPUUnavailableError(f"{what} is not usable here ({type(exc).__name__}: {exc}); {_INSTALL}")


@functools.cache
def torch_cuda():
    """Import torch first (so torch's libcusolver/libcublas are the ones every binding reuses)."""
    import torch

    if not torch.cuda.is_available():
        raise GPUUnavailableError(
            f"no CUDA GPU is visible to torch {torch.__version__} "
            f"(torch.version.cuda = {torch.version.cuda}); CPU tensors and NumPy arrays "
            "run through LAPACK instead"
        )
    return torch


@functools.cache
def cupy_cusolver():
    """``cupy.cuda.cusolver`` (legacy 32-bit API: potrf, potrs, potrfBatched, potrsBatched)."""
    torch_cuda()
    try:
        from cupy.cuda import cusolver  # not cupy_backends directly: keeps CuPy's preload
    except Exception as exc:  # ImportError, or CUDA library load errors
        raise _fail("CuPy's cuSOLVER binding (cupy.cuda.cusolver)", exc) from exc
    return cusolver


@functools.cache
def cupy_cublas():
    """``cupy.cuda.cublas`` (trsm, trsmBatched)."""
    torch_cuda()
    try:
        from cupy.cuda import cublas
    except Exception as exc:
        raise _fail("CuPy's cuBLAS binding (cupy.cuda.cublas)", exc) from exc
    return cublas


@functools.cache
def cupy():
    torch_cuda()
    try:
        import cupy as cp
    except Exception as exc:
        raise _fail("CuPy", exc) from exc
    return cp


@functools.cache
def cupy_driver():
    """``cupy.cuda.driver``: its ``launchKernel`` is the one ``cuLaunchKernel`` of the
    backends' own kernels (the copy prologue, the fused kernels, the check kernel)."""
    return cupy().cuda.driver


@functools.cache
def nvmath_cusolverDn():
    """``nvmath.bindings.cusolverDn`` (potri, the 64-bit X API, Xtrtri)."""
    torch_cuda()
    try:
        from nvmath.bindings import cusolverDn
    except Exception as exc:
        raise _fail("nvmath-python's cuSOLVER binding (nvmath.bindings.cusolverDn)", exc) from exc
    return cusolverDn


@functools.cache
def nvmath_cusolver():
    """``nvmath.bindings.cusolver`` (cusolverGetVersion, cusolverGetProperty)."""
    torch_cuda()
    try:
        from nvmath.bindings import cusolver
    except Exception as exc:
        raise _fail("nvmath-python's cuSOLVER binding (nvmath.bindings.cusolver)", exc) from exc
    return cusolver


@functools.cache
def nvmath_cublas():
    """``nvmath.bindings.cublas`` (trsm_64, gemm, syrk/herk, trmm)."""
    torch_cuda()
    try:
        from nvmath.bindings import cublas
    except Exception as exc:
        raise _fail("nvmath-python's cuBLAS binding (nvmath.bindings.cublas)", exc) from exc
    return cublas
