"""cusolver-trace: call cuSOLVER directly, replay torch's Cholesky family, compare.

Layers (each imports only the ones above it):

1. ``cusolver_trace.raw``      raw cuSOLVER / cuBLAS bindings, 1:1 with the C API
2. ``cusolver_trace.routines`` array-level potrf / potrs / potri / cholesky_inverse
                               (torch CUDA via cuSOLVER; CPU via scipy LAPACK)
3. ``cusolver_trace.replay``   replays of the exact calls torch makes, per version
4. tools: ``checks`` (LAPACK ratios), ``matrices``, ``timing``, ``compare``, ``trace``
5. ``cusolver_trace.cli``      the ``cusolver-trace`` command

``import cusolver_trace`` never imports CuPy or nvmath-python; they load on the
first GPU call.
"""
from ._dtypes import SUPPORTED_DTYPES, dtype_info
from .errors import (
    CuBlasStatusError,
    CuSolverStatusError,
    GPUUnavailableError,
    IllegalArgumentError,
    LibraryStatusError,
    NotPositiveDefiniteError,
    SingularFactorError,
)

__version__ = "0.1.0"

from .routines import INVERSE_METHODS, cholesky_inverse, potrf, potri, potrs, trtri

_LAZY = {
    "compare": ("compare", "compare"),
    "Comparison": ("compare", "Comparison"),
    "replay": ("replay", "replay"),
    "torch_path": ("replay", "torch_path"),
    "versions": ("versions", "versions"),
    "trace": ("tracing", "trace"),
    "Trace": ("tracing", "Trace"),
}


def __getattr__(name):  # lazy: keeps ``import cusolver_trace`` light
    if name in _LAZY:
        import importlib

        mod, attr = _LAZY[name]
        return getattr(importlib.import_module(f".{mod}", __name__), attr)
    raise AttributeError(f"module 'cusolver_trace' has no attribute {name!r}")


__all__ = [
    "potrf", "potrs", "potri", "trtri", "cholesky_inverse", "INVERSE_METHODS",
    "compare", "Comparison", "replay", "torch_path", "versions", "trace", "Trace",
    "dtype_info", "SUPPORTED_DTYPES",
    "NotPositiveDefiniteError", "SingularFactorError", "IllegalArgumentError",
    "LibraryStatusError", "CuSolverStatusError", "CuBlasStatusError", "GPUUnavailableError",
]
