"""Exceptions raised by cusolver-trace.

LAPACK-style numerical failures are :class:`numpy.linalg.LinAlgError`
subclasses (as in SciPy); bad arguments are ``ValueError`` / ``TypeError``;
non-success status codes of the libraries are :class:`LibraryStatusError`.
"""
from __future__ import annotations

import numpy as np

__all__ = [
    "NotPositiveDefiniteError",
    "SingularFactorError",
    "SingularMatrixError",
    "NonFiniteError",
    "NoConvergenceError",
    "IllegalArgumentError",
    "LibraryStatusError",
    "CuSolverStatusError",
    "CuBlasStatusError",
    "GPUUnavailableError",
    "CompileWarning",
]


def _batch_part(batch_index, batch_shape) -> str:
    if batch_index is None:
        return ""
    where = f"(Batch element {batch_index})"
    if batch_shape is not None and len(batch_shape) > 1:
        idx = np.unravel_index(batch_index, batch_shape)
        where = f"(Batch element {batch_index}, index {tuple(int(i) for i in idx)})"
    return f" {where}:"


class NotPositiveDefiniteError(np.linalg.LinAlgError):
    """The leading minor of order ``order`` is not positive definite.

    Raised by potrf-based routines when LAPACK/cuSOLVER return ``info > 0``.
    The message follows torch's ``linalg.cholesky`` wording.

    Attributes
    ----------
    routine : str      the routine or function that failed (``"cusolverDnXpotrf"``)
    order : int        the ``info`` value: order of the failing leading minor (1-based)
    batch_index : int or None  flat index of the failing matrix in the batch

    Examples
    --------
    >>> e = NotPositiveDefiniteError("cusolverDnXpotrfBatched", 3, batch_index=5, batch_shape=(2, 4))
    >>> print(e)
    cusolverDnXpotrfBatched: (Batch element 5, index (1, 1)): The factorization could not be completed because the input is not positive-definite (the leading minor of order 3 is not positive-definite).
    >>> isinstance(e, np.linalg.LinAlgError), e.order
    (True, 3)
    """

    def __init__(self, routine: str, order: int, batch_index=None, batch_shape=None):
        self.routine = routine
        self.order = int(order)
        self.batch_index = None if batch_index is None else int(batch_index)
        super().__init__(
            f"{routine}:{_batch_part(batch_index, batch_shape)} The factorization could "
            f"not be completed because the input is not positive-definite (the leading "
            f"minor of order {self.order} is not positive-definite)."
        )


class SingularFactorError(np.linalg.LinAlgError):
    """A triangular factor has an exact zero on its diagonal (potri/trtri ``info > 0``).

    Attributes: ``routine``, ``index`` (1-based diagonal position), ``batch_index``.
    """

    def __init__(self, routine: str, index: int, batch_index=None, batch_shape=None):
        self.routine = routine
        self.index = int(index)
        self.batch_index = None if batch_index is None else int(batch_index)
        super().__init__(
            f"{routine}:{_batch_part(batch_index, batch_shape)} The diagonal element "
            f"{self.index} is zero, the inversion could not be completed because the "
            f"input matrix is singular."
        )


class SingularMatrixError(np.linalg.LinAlgError):
    """An LU factorization found an exact zero pivot: ``U[k, k] = 0`` (getrf ``info = k > 0``).

    LAPACK completes the factorization, but U is singular: a solve or an inverse from it
    would divide by zero. The message follows torch's ``linalg.solve`` / ``linalg.inv``
    wording.

    Attributes: ``routine``, ``index`` (k, the 1-based column of the zero pivot),
    ``batch_index``.
    """

    def __init__(self, routine: str, index: int, batch_index=None, batch_shape=None):
        self.routine = routine
        self.index = int(index)
        self.batch_index = None if batch_index is None else int(batch_index)
        super().__init__(
            f"{routine}:{_batch_part(batch_index, batch_shape)} U[{self.index}, {self.index}] "
            f"is exactly zero (the pivot of column {self.index}): the input matrix is singular."
        )


class NonFiniteError(np.linalg.LinAlgError):
    """A factor or a result holds NaN or Inf where the routine reports nothing.

    cuSOLVER's potrs and potri (and LAPACK's) say nothing about non-finite data;
    the checked routines of cusolver-trace find it on the device and raise this.

    Attributes: ``routine``, ``what`` (which operand is non-finite), ``batch_index``.
    """

    def __init__(self, routine: str, what: str, batch_index=None, batch_shape=None):
        self.routine = routine
        self.what = what
        self.batch_index = None if batch_index is None else int(batch_index)
        super().__init__(f"{routine}:{_batch_part(batch_index, batch_shape)} {what}")


class NoConvergenceError(np.linalg.LinAlgError):
    """An eigensolver did not converge (syevd / heevd / syevj ``info = k > 0``).

    For the divide-and-conquer routines, ``k`` counts the eigenvalues that did not converge
    (LAPACK ``?syevd``: ``k`` off-diagonal elements of an intermediate tridiagonal form did
    not converge to zero); for Jacobi (``syevj``), ``k = n + 1`` means the tolerance was not
    reached within the maximum number of sweeps. The message follows torch's
    ``linalg.eigh`` wording.

    Attributes: ``routine``, ``code`` (the ``info`` value), ``batch_index``.

    Examples
    --------
    >>> print(NoConvergenceError("cusolverDnXsyevd", 3))
    cusolverDnXsyevd: The algorithm failed to converge because the input matrix is ill-conditioned or has too many repeated eigenvalues (error code: 3).
    """

    def __init__(self, routine: str, code: int, batch_index=None, batch_shape=None):
        self.routine = routine
        self.code = int(code)
        self.batch_index = None if batch_index is None else int(batch_index)
        super().__init__(
            f"{routine}:{_batch_part(batch_index, batch_shape)} The algorithm failed to "
            f"converge because the input matrix is ill-conditioned or has too many repeated "
            f"eigenvalues (error code: {self.code})."
        )


class IllegalArgumentError(ValueError):
    """``info < 0`` from a LAPACK/cuSOLVER routine: argument ``-info`` had an illegal value.

    This indicates a bug in the caller of the routine (here: in cusolver-trace),
    not bad data.
    """

    def __init__(self, routine: str, info: int, batch_index=None):
        self.routine = routine
        self.info = int(info)
        self.batch_index = batch_index
        super().__init__(
            f"{routine}: parameter {-self.info} had an illegal value (info = {self.info})"
            + ("" if batch_index is None else f" in batch element {batch_index}")
        )


class LibraryStatusError(RuntimeError):
    """A cuSOLVER or cuBLAS call returned a non-success status."""

    library = "library"
    _NAMES: dict = {}

    def __init__(self, routine: str, status: int, detail: str = ""):
        self.routine = routine
        self.status = int(status)
        self.status_name = self._NAMES.get(self.status, f"UNKNOWN_STATUS_{self.status}")
        msg = f"{routine} returned {self.status_name} ({self.status})"
        if detail:
            msg += f": {detail}"
        super().__init__(msg)


class CuSolverStatusError(LibraryStatusError):
    """Non-success ``cusolverStatus_t``."""

    library = "cuSOLVER"
    _NAMES = {
        0: "CUSOLVER_STATUS_SUCCESS",
        1: "CUSOLVER_STATUS_NOT_INITIALIZED",
        2: "CUSOLVER_STATUS_ALLOC_FAILED",
        3: "CUSOLVER_STATUS_INVALID_VALUE",
        4: "CUSOLVER_STATUS_ARCH_MISMATCH",
        5: "CUSOLVER_STATUS_MAPPING_ERROR",
        6: "CUSOLVER_STATUS_EXECUTION_FAILED",
        7: "CUSOLVER_STATUS_INTERNAL_ERROR",
        8: "CUSOLVER_STATUS_MATRIX_TYPE_NOT_SUPPORTED",
        9: "CUSOLVER_STATUS_NOT_SUPPORTED",
        10: "CUSOLVER_STATUS_ZERO_PIVOT",
        11: "CUSOLVER_STATUS_INVALID_LICENSE",
        12: "CUSOLVER_STATUS_IRS_PARAMS_NOT_INITIALIZED",
        13: "CUSOLVER_STATUS_IRS_PARAMS_INVALID",
        15: "CUSOLVER_STATUS_IRS_INTERNAL_ERROR",
        16: "CUSOLVER_STATUS_IRS_NOT_SUPPORTED",
        20: "CUSOLVER_STATUS_IRS_OUT_OF_RANGE",
        33: "CUSOLVER_STATUS_INVALID_WORKSPACE",
    }


class CuBlasStatusError(LibraryStatusError):
    """Non-success ``cublasStatus_t``."""

    library = "cuBLAS"
    _NAMES = {
        0: "CUBLAS_STATUS_SUCCESS",
        1: "CUBLAS_STATUS_NOT_INITIALIZED",
        3: "CUBLAS_STATUS_ALLOC_FAILED",
        7: "CUBLAS_STATUS_INVALID_VALUE",
        8: "CUBLAS_STATUS_ARCH_MISMATCH",
        11: "CUBLAS_STATUS_MAPPING_ERROR",
        13: "CUBLAS_STATUS_EXECUTION_FAILED",
        14: "CUBLAS_STATUS_INTERNAL_ERROR",
        15: "CUBLAS_STATUS_NOT_SUPPORTED",
        16: "CUBLAS_STATUS_LICENSE_ERROR",
    }


class GPUUnavailableError(RuntimeError):
    """The CUDA backend cannot run here (no GPU, or CuPy / nvmath-python missing)."""


class CompileWarning(UserWarning):
    """A call waits while a fused (cuSOLVERDx) kernel is compiled for it.

    Emitted once per kernel by an explicit ``method="fused"`` (or ``api="fused"``) call whose
    kernel is neither loaded nor in the disk cache: compiling through libmathdx, NVRTC and
    nvJitLink takes about 10-30 s. ``method="auto"`` never waits: it runs torch's path while
    the kernel is built in the background. :func:`cusolver_trace.warmup` (``cusolver-trace
    warmup``) compiles kernels ahead of time. Silence it with
    ``warnings.filterwarnings("ignore", category=CompileWarning)``.

    Examples
    --------
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as seen:
    ...     warnings.simplefilter("always")
    ...     warnings.warn("compiling", CompileWarning)
    >>> seen[0].category.__name__, issubclass(CompileWarning, UserWarning)
    ('CompileWarning', True)
    """


class InputFileError(ValueError):
    """A matrix file cannot be read or does not hold what the command needs.

    Raised by :func:`cusolver_trace.matrices.from_file` (and ``--matrix file:PATH``)
    for a file that is unreadable (a directory, permission denied, not gzip data,
    truncated), malformed (a bad Matrix Market header, size line, entry count or
    number; an ``.npy`` that NumPy cannot load) or of the wrong kind (not a square
    matrix or a batch of them, an unsupported dtype, or a dtype other than the one
    requested). The message is one line that starts with the file's path. A
    ``ValueError``, so callers that catch bad input as ``ValueError`` keep working.
    """


__all__.append("InputFileError")
