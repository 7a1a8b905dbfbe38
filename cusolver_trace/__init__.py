"""cusolver-trace: call cuSOLVER directly, replay torch's linear-algebra ops, compare.

Layers (each imports only the ones below it in this list):

1. ``cusolver_trace.raw``       raw cuSOLVER / cuBLAS bindings, 1:1 with the C API
2. ``cusolver_trace.backends``  ``cuda`` (cuSOLVER / cuBLAS on torch's stream and allocator;
                                the only importer of ``raw``) and ``cpu`` (scipy LAPACK)
3. ``cusolver_trace.routines``  one public entry point per operation (potrf, potrs, potri,
                                trtri, cholesky_inverse, spd_inverse), each with one
                                implementation table (plans: ``plans``)
4. ``cusolver_trace.ops``       the op registry: one module per torch op (options, inputs,
                                dispatch rules per version, replay, judgement, flop count,
                                methods)
5. tools: ``checks`` (LAPACK ratios), ``matrices``, ``timing``, ``replay``, ``compare``,
   ``sweep``, ``workflow``, ``tracing``
6. ``cusolver_trace.cli``       the ``cusolver-trace`` command, one module per subcommand

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
    NonFiniteError,
    NotPositiveDefiniteError,
    SingularFactorError,
    SingularMatrixError,
)

__version__ = "0.1.0"

from .routines import (INVERSE_METHODS, SPD_INVERSE_METHODS, cholesky_inverse, inverse_method,
                       potrf, potri, potrs, spd_inverse, spd_inverse_method, trtri)
from .routines import getrf, getrs, inv, lu_solve, solve

# Imported eagerly (torch, numpy, scipy only — never CuPy or nvmath-python, which load on the
# first GPU call): a lazy module ``__getattr__`` would be shadowed by the submodules of the
# same name (``cusolver_trace.compare`` the module vs ``compare`` the function).
from .compare import Comparison, compare, with_gpu_busy  # noqa: E402
from .replay import replay, torch_path  # noqa: E402
from .tracing import Trace, trace  # noqa: E402
from .versions import versions  # noqa: E402

__all__ = [
    "potrf", "potrs", "potri", "trtri", "cholesky_inverse", "inverse_method", "INVERSE_METHODS",
    "spd_inverse", "spd_inverse_method", "SPD_INVERSE_METHODS",
    "getrf", "getrs", "lu_solve", "solve", "inv",
    "compare", "with_gpu_busy", "Comparison", "replay", "torch_path", "versions", "trace", "Trace",
    "dtype_info", "SUPPORTED_DTYPES",
    "NotPositiveDefiniteError", "SingularFactorError", "SingularMatrixError", "NonFiniteError",
    "IllegalArgumentError",
    "LibraryStatusError", "CuSolverStatusError", "CuBlasStatusError", "GPUUnavailableError",
]
