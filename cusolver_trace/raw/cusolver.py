"""Raw cuSOLVER dense (cusolverDn) calls, 1:1 with the C API.

Each function takes exactly the C routine's arguments, in the same order, with
device pointers as Python ints; the type-generic legacy routines take the
LAPACK type letter ``t`` (``"s"``, ``"d"``, ``"c"``, ``"z"``) first, and the
names ``Spotrf``, ``Dpotrf``, ... ``Zpotrs`` are bound to it (module-level
aliases, one per C function ``cusolverDn<T>potrf`` ...). Nothing here
allocates, copies, synchronizes or checks ``devInfo``: that is the job of
:mod:`cusolver_trace.routines`.

Where CuPy binds a routine (``cupy.cuda.cusolver``: potrf, potrs,
potrfBatched, potrsBatched, getrf, getrs, handle and stream functions) it is called
through CuPy; CuPy sets the handle's stream to CuPy's *current* stream on each call,
so callers make torch's stream CuPy's current stream first (see
:mod:`cusolver_trace._gpu`). Routines CuPy does not bind (potri, the 64-bit
``X`` API (``Xpotrf``, ``Xgetrf``, ...), ``Xtrtri``, lauum, ``cusolverDnParams``,
``cusolverGetVersion``) go through ``nvmath.bindings.cusolverDn``, which leaves the stream as set.

A non-success ``cusolverStatus_t`` raises
:class:`~cusolver_trace.errors.CuSolverStatusError` naming the routine.
"""
from __future__ import annotations

from ..errors import CuSolverStatusError
from . import _load, _status
from ._status import solver as _solver

# cublasFillMode_t / cublasDiagType_t / cublasOperation_t (getrs' trans) / libraryPropertyType
LOWER, UPPER = 0, 1
NON_UNIT, UNIT = 0, 1
OP_N, OP_T, OP_C = 0, 1, 2
MAJOR_VERSION, MINOR_VERSION, PATCH_LEVEL = 0, 1, 2


def _name(t: str, base: str) -> str:
    return f"cusolverDn{t.upper()}{base}"


# -- handle, stream, params, version -------------------------------------------------

def create() -> int:
    """``cusolverDnCreate`` -> handle."""
    cs = _load.cupy_cusolver()
    return _solver("cusolverDnCreate", cs.create)


def destroy(handle: int) -> None:
    """``cusolverDnDestroy``."""
    cs = _load.cupy_cusolver()
    _solver("cusolverDnDestroy", cs.destroy, handle)


def setStream(handle: int, streamId: int) -> None:
    """``cusolverDnSetStream``."""
    cs = _load.cupy_cusolver()
    _solver("cusolverDnSetStream", cs.setStream, handle, streamId)


def getStream(handle: int) -> int:
    """``cusolverDnGetStream`` -> stream pointer."""
    cs = _load.cupy_cusolver()
    return _solver("cusolverDnGetStream", cs.getStream, handle)


def createParams() -> int:
    """``cusolverDnCreateParams`` -> params (default algorithm, as torch uses)."""
    dn = _load.nvmath_cusolverDn()
    return _solver("cusolverDnCreateParams", dn.create_params)


def destroyParams(params: int) -> None:
    """``cusolverDnDestroyParams``."""
    dn = _load.nvmath_cusolverDn()
    _solver("cusolverDnDestroyParams", dn.destroy_params, params)


def getVersion() -> int:
    """``cusolverGetVersion`` of the loaded libcusolver (e.g. 12004 for 12.0.4)."""
    return _solver("cusolverGetVersion", _load.nvmath_cusolver().get_version)


def getProperty(type: int) -> int:
    """``cusolverGetProperty(MAJOR_VERSION | MINOR_VERSION | PATCH_LEVEL)``."""
    return _solver("cusolverGetProperty", _load.nvmath_cusolver().get_property, type)


# -- legacy 32-bit API, through CuPy --------------------------------------------------

def potrf_bufferSize(t, handle, uplo, n, A, lda) -> int:
    """``cusolverDn<t>potrf_bufferSize`` -> Lwork (in elements)."""
    fn = getattr(_load.cupy_cusolver(), f"{t}potrf_bufferSize")
    return _solver(_name(t, "potrf_bufferSize"), fn, handle, uplo, n, A, lda)


def potrf(t, handle, uplo, n, A, lda, Workspace, Lwork, devInfo) -> None:
    """``cusolverDn<t>potrf``: Cholesky factor of the ``uplo`` triangle of column-major A, in place."""
    fn = getattr(_load.cupy_cusolver(), f"{t}potrf")
    _solver(_name(t, "potrf"), fn, handle, uplo, n, A, lda, Workspace, Lwork, devInfo)


def potrs(t, handle, uplo, n, nrhs, A, lda, B, ldb, devInfo) -> None:
    """``cusolverDn<t>potrs``: solve A X = B with A's Cholesky factor; B overwritten by X."""
    fn = getattr(_load.cupy_cusolver(), f"{t}potrs")
    _solver(_name(t, "potrs"), fn, handle, uplo, n, nrhs, A, lda, B, ldb, devInfo)


def potrfBatched(t, handle, uplo, n, Aarray, lda, infoArray, batchSize) -> None:
    """``cusolverDn<t>potrfBatched``; ``Aarray`` is a device array of device pointers."""
    fn = getattr(_load.cupy_cusolver(), f"{t}potrfBatched")
    _solver(_name(t, "potrfBatched"), fn, handle, uplo, n, Aarray, lda, infoArray, batchSize)


def potrsBatched(t, handle, uplo, n, nrhs, Aarray, lda, Barray, ldb, info, batchSize) -> None:
    """``cusolverDn<t>potrsBatched`` (cuSOLVER accepts ``nrhs == 1`` only)."""
    fn = getattr(_load.cupy_cusolver(), f"{t}potrsBatched")
    _solver(_name(t, "potrsBatched"), fn, handle, uplo, n, nrhs, Aarray, lda, Barray, ldb, info,
            batchSize)


def getrf_bufferSize(t, handle, m, n, A, lda) -> int:
    """``cusolverDn<t>getrf_bufferSize`` -> Lwork (in elements)."""
    fn = getattr(_load.cupy_cusolver(), f"{t}getrf_bufferSize")
    return _solver(_name(t, "getrf_bufferSize"), fn, handle, m, n, A, lda)


def getrf(t, handle, m, n, A, lda, Workspace, devIpiv, devInfo) -> None:
    """``cusolverDn<t>getrf``: LU factorization P A = L U of the column-major m x n A, in
    place; ``devIpiv`` (int32, min(m, n), 1-based) may be 0 (NULL): no pivoting."""
    fn = getattr(_load.cupy_cusolver(), f"{t}getrf")
    _solver(_name(t, "getrf"), fn, handle, m, n, A, lda, Workspace, devIpiv, devInfo)


def getrs(t, handle, trans, n, nrhs, A, lda, devIpiv, B, ldb, devInfo) -> None:
    """``cusolverDn<t>getrs``: solve op(A) X = B with getrf's LU and pivots (int32);
    ``trans`` a ``cublasOperation_t`` (:data:`OP_N`, :data:`OP_T`, :data:`OP_C`); B
    overwritten by X. ``devInfo`` reports illegal arguments only."""
    fn = getattr(_load.cupy_cusolver(), f"{t}getrs")
    _solver(_name(t, "getrs"), fn, handle, trans, n, nrhs, A, lda, devIpiv, B, ldb, devInfo)


# -- legacy 32-bit API that CuPy does not bind, through nvmath ------------------------

def potri_bufferSize(t, handle, uplo, n, A, lda) -> int:
    """``cusolverDn<t>potri_bufferSize`` -> Lwork (in elements)."""
    fn = getattr(_load.nvmath_cusolverDn(), f"{t}potri_buffer_size")
    return _solver(_name(t, "potri_bufferSize"), fn, handle, uplo, n, A, lda)


def potri(t, handle, uplo, n, A, lda, work, lwork, devInfo) -> None:
    """``cusolverDn<t>potri``: inverse from the Cholesky factor, written to the ``uplo`` triangle only."""
    fn = getattr(_load.nvmath_cusolverDn(), f"{t}potri")
    _solver(_name(t, "potri"), fn, handle, uplo, n, A, lda, work, lwork, devInfo)


def lauum_bufferSize(t, handle, uplo, n, A, lda) -> int:
    """``cusolverDn<t>lauum_bufferSize`` -> Lwork (in elements)."""
    fn = getattr(_load.nvmath_cusolverDn(), f"{t}lauum_buffer_size")
    return _solver(_name(t, "lauum_bufferSize"), fn, handle, uplo, n, A, lda)


def lauum(t, handle, uplo, n, A, lda, work, lwork, devInfo) -> None:
    """``cusolverDn<t>lauum``: U Uᴴ or Lᴴ L of a triangular matrix, in place."""
    fn = getattr(_load.nvmath_cusolverDn(), f"{t}lauum")
    _solver(_name(t, "lauum"), fn, handle, uplo, n, A, lda, work, lwork, devInfo)


# -- 64-bit generic API, through nvmath ------------------------------------------------

# The three routines of torch's batch-1 paths (linalg.cholesky: Xpotrf_bufferSize + Xpotrf;
# cholesky_solve / cholesky_inverse: Xpotrs) run on every replay call, and at n = 64 the
# Python around them is part of what compare measures against torch's C++ (issue 14). So they
# call the binding directly (the binding module kept in a global after the first call) and
# translate its status exception themselves, instead of going through _solver: one frame and
# one argument tuple fewer per call, the same exceptions.
_DN = None


def _dn():
    global _DN
    if _DN is None:
        _DN = _load.nvmath_cusolverDn()
    return _DN


def Xpotrf_bufferSize(handle, params, uplo, n, dataTypeA, A, lda, computeType) -> tuple[int, int]:
    """``cusolverDnXpotrf_bufferSize`` -> (workspaceInBytesOnDevice, workspaceInBytesOnHost)."""
    try:
        return tuple((_DN or _dn()).xpotrf_buffer_size(handle, params, uplo, n, dataTypeA, A, lda,
                                                       computeType))
    except Exception as exc:
        _status.reraise(CuSolverStatusError, "cusolverDnXpotrf_bufferSize", exc)


def Xpotrf(handle, params, uplo, n, dataTypeA, A, lda, computeType, bufferOnDevice,
           workspaceInBytesOnDevice, bufferOnHost, workspaceInBytesOnHost, info) -> None:
    """``cusolverDnXpotrf`` (64-bit API): the routine torch's batch-1 ``linalg.cholesky`` calls."""
    try:
        (_DN or _dn()).xpotrf(handle, params, uplo, n, dataTypeA, A, lda, computeType,
                              bufferOnDevice, workspaceInBytesOnDevice, bufferOnHost,
                              workspaceInBytesOnHost, info)
    except Exception as exc:
        _status.reraise(CuSolverStatusError, "cusolverDnXpotrf", exc)


def Xpotrs(handle, params, uplo, n, nrhs, dataTypeA, A, lda, dataTypeB, B, ldb, info) -> None:
    """``cusolverDnXpotrs`` (64-bit API): the routine torch's ``cholesky_inverse`` / ``cholesky_solve`` call."""
    try:
        (_DN or _dn()).xpotrs(handle, params, uplo, n, nrhs, dataTypeA, A, lda, dataTypeB, B, ldb,
                              info)
    except Exception as exc:
        _status.reraise(CuSolverStatusError, "cusolverDnXpotrs", exc)


def Xgetrf_bufferSize(handle, params, m, n, dataTypeA, A, lda, computeType) -> tuple[int, int]:
    """``cusolverDnXgetrf_bufferSize`` -> (workspaceInBytesOnDevice, workspaceInBytesOnHost)."""
    dn = _load.nvmath_cusolverDn()
    return tuple(_solver("cusolverDnXgetrf_bufferSize", dn.xgetrf_buffer_size, handle, params, m,
                         n, dataTypeA, A, lda, computeType))


def Xgetrf(handle, params, m, n, dataTypeA, A, lda, ipiv, computeType, bufferOnDevice,
           workspaceInBytesOnDevice, bufferOnHost, workspaceInBytesOnHost, info) -> None:
    """``cusolverDnXgetrf`` (64-bit API): LU factorization in place; ``ipiv`` is int64
    (min(m, n), 1-based), or 0 (NULL): no pivoting."""
    dn = _load.nvmath_cusolverDn()
    _solver("cusolverDnXgetrf", dn.xgetrf, handle, params, m, n, dataTypeA, A, lda, ipiv,
            computeType, bufferOnDevice, workspaceInBytesOnDevice, bufferOnHost,
            workspaceInBytesOnHost, info)


def Xgetrs(handle, params, trans, n, nrhs, dataTypeA, A, lda, ipiv, dataTypeB, B, ldb,
           info) -> None:
    """``cusolverDnXgetrs`` (64-bit API): solve op(A) X = B from Xgetrf's LU and int64 pivots."""
    dn = _load.nvmath_cusolverDn()
    _solver("cusolverDnXgetrs", dn.xgetrs, handle, params, trans, n, nrhs, dataTypeA, A, lda,
            ipiv, dataTypeB, B, ldb, info)


def Xtrtri_bufferSize(handle, uplo, diag, n, dataTypeA, A, lda) -> tuple[int, int]:
    """``cusolverDnXtrtri_bufferSize`` -> (workspaceInBytesOnDevice, workspaceInBytesOnHost)."""
    dn = _load.nvmath_cusolverDn()
    return tuple(_solver("cusolverDnXtrtri_bufferSize", dn.xtrtri_buffer_size, handle, uplo, diag, n,
                         dataTypeA, A, lda))


def Xtrtri(handle, uplo, diag, n, dataTypeA, A, lda, bufferOnDevice, workspaceInBytesOnDevice,
           bufferOnHost, workspaceInBytesOnHost, devInfo) -> None:
    """``cusolverDnXtrtri``: inverse of a triangular matrix, in place."""
    dn = _load.nvmath_cusolverDn()
    _solver("cusolverDnXtrtri", dn.xtrtri, handle, uplo, diag, n, dataTypeA, A, lda, bufferOnDevice,
            workspaceInBytesOnDevice, bufferOnHost, workspaceInBytesOnHost, devInfo)


# -- the C names, one per type: Spotrf, Dpotrf, ..., Zpotri_bufferSize, ..., Zgetrs ----------------

def _bind_typed_names():
    import functools

    g = globals()
    for base in ("potrf_bufferSize", "potrf", "potrs", "potrfBatched", "potrsBatched",
                 "potri_bufferSize", "potri", "lauum_bufferSize", "lauum",
                 "getrf_bufferSize", "getrf", "getrs"):
        for t in "sdcz":
            f = functools.partial(g[base], t)
            f.__doc__ = f"``{_name(t, base)}`` — see :func:`{base}`."
            g[f"{t.upper()}{base}"] = f


_bind_typed_names()
