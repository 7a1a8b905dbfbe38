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

# Imported eagerly (torch, numpy, scipy only — never CuPy or nvmath-python, which load on the
# first GPU call): a lazy module ``__getattr__`` would be shadowed by the submodules of the
# same name (``cusolver_trace.compare`` the module vs ``compare`` the function).
from .compare import Comparison, compare  # noqa: E402
from .replay import replay, torch_path  # noqa: E402
from .tracing import Trace, trace  # noqa: E402
from .versions import versions  # noqa: E402

__all__ = [
    "potrf", "potrs", "potri", "trtri", "cholesky_inverse", "INVERSE_METHODS",
    "compare", "Comparison", "replay", "torch_path", "versions", "trace", "Trace",
    "dtype_info", "SUPPORTED_DTYPES",
    "NotPositiveDefiniteError", "SingularFactorError", "IllegalArgumentError",
    "LibraryStatusError", "CuSolverStatusError", "CuBlasStatusError", "GPUUnavailableError",
]
