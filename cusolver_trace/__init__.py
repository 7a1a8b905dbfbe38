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
