"""Raw cuSOLVER dense symmetric / Hermitian eigensolver calls, 1:1 with the C API.

The same conventions as :mod:`cusolver_trace.raw.cusolver`: each function takes exactly the
C routine's arguments, in order, device pointers as Python ints; the type-generic legacy
routines take the LAPACK type letter ``t`` first (``"s"``/``"d"`` call ``<T>syev*``,
``"c"``/``"z"`` call ``<T>heev*``, as the C API names them), and the names ``Dsyevd``,
``Zheevj``, ``DsyevjBatched`` ... are bound to them. Nothing here allocates, copies,
synchronizes or reads ``info``.

All of them go through ``nvmath.bindings.cusolverDn`` (CuPy binds only a few of them), which
leaves the handle's stream as it is set.

``jobz`` is a ``cusolverEigMode_t``: :data:`EIG_MODE_NOVECTOR` (eigenvalues only) or
:data:`EIG_MODE_VECTOR`; ``uplo`` a ``cublasFillMode_t`` (:data:`cusolver_trace.raw.cusolver.LOWER`
/ ``UPPER``): the triangle of the column-major A that is read.
"""
from __future__ import annotations

import functools

from . import _load
from ._status import solver as _solver

#: cusolverEigMode_t
EIG_MODE_NOVECTOR, EIG_MODE_VECTOR = 0, 1


def _name(t: str, base: str) -> str:
    """``cusolverDn<T>syev…`` for s / d, ``cusolverDn<T>heev…`` for c / z."""
    kind = "he" if t in "cz" else "sy"
    return f"cusolverDn{t.upper()}{kind}{base}"


def _fn(t: str, base: str, suffix: str = ""):
    """The nvmath binding of ``cusolverDn<T>{sy|he}<base><suffix>``."""
    kind = "he" if t in "cz" else "sy"
    return getattr(_load.nvmath_cusolverDn(), f"{t}{kind}{base}{suffix}")


# -- 64-bit generic API ----------------------------------------------------------------

def Xsyevd_bufferSize(handle, params, jobz, uplo, n, dataTypeA, A, lda, dataTypeW, W,
                      computeType) -> tuple[int, int]:
    """``cusolverDnXsyevd_bufferSize`` -> (workspaceInBytesOnDevice, workspaceInBytesOnHost)."""
    dn = _load.nvmath_cusolverDn()
    return tuple(_solver("cusolverDnXsyevd_bufferSize", dn.xsyevd_buffer_size, handle, params,
                         jobz, uplo, n, dataTypeA, A, lda, dataTypeW, W, computeType))


def Xsyevd(handle, params, jobz, uplo, n, dataTypeA, A, lda, dataTypeW, W, computeType,
           bufferOnDevice, workspaceInBytesOnDevice, bufferOnHost, workspaceInBytesOnHost,
           info) -> None:
    """``cusolverDnXsyevd`` (64-bit API, divide and conquer): eigenvalues W (ascending) of the
    ``uplo`` triangle of A; with ``jobz`` VECTOR A is overwritten by the eigenvectors. The
    routine torch 2.11 loops over for ``linalg.eigh`` (params NULL)."""
    dn = _load.nvmath_cusolverDn()
    _solver("cusolverDnXsyevd", dn.xsyevd, handle, params, jobz, uplo, n, dataTypeA, A, lda,
            dataTypeW, W, computeType, bufferOnDevice, workspaceInBytesOnDevice, bufferOnHost,
            workspaceInBytesOnHost, info)


def XsyevBatched_bufferSize(handle, params, jobz, uplo, n, dataTypeA, A, lda, dataTypeW, W,
                            computeType, batchSize) -> tuple[int, int]:
    """``cusolverDnXsyevBatched_bufferSize`` -> (workspaceInBytesOnDevice, workspaceInBytesOnHost)."""
    dn = _load.nvmath_cusolverDn()
    return tuple(_solver("cusolverDnXsyevBatched_bufferSize", dn.xsyev_batched_buffer_size,
                         handle, params, jobz, uplo, n, dataTypeA, A, lda, dataTypeW, W,
                         computeType, batchSize))


def XsyevBatched(handle, params, jobz, uplo, n, dataTypeA, A, lda, dataTypeW, W, computeType,
                 bufferOnDevice, workspaceInBytesOnDevice, bufferOnHost, workspaceInBytesOnHost,
                 info, batchSize) -> None:
    """``cusolverDnXsyevBatched``: ``batchSize`` matrices stored one after another (stride
    lda·n), eigenvalues into W (stride n), ``info`` one int per matrix. torch 2.11 calls it for
    batch > 1 with n <= 32, torch 2.12+ for every shape."""
    dn = _load.nvmath_cusolverDn()
    _solver("cusolverDnXsyevBatched", dn.xsyev_batched, handle, params, jobz, uplo, n, dataTypeA,
            A, lda, dataTypeW, W, computeType, bufferOnDevice, workspaceInBytesOnDevice,
            bufferOnHost, workspaceInBytesOnHost, info, batchSize)


# -- legacy 32-bit API -------------------------------------------------------------------

def syevd_bufferSize(t, handle, jobz, uplo, n, A, lda, W) -> int:
    """``cusolverDn<t>syevd_bufferSize`` / ``<t>heevd_bufferSize`` -> lwork (elements)."""
    return _solver(_name(t, "evd_bufferSize"), _fn(t, "evd", "_buffer_size"), handle, jobz, uplo,
                   n, A, lda, W)


def syevd(t, handle, jobz, uplo, n, A, lda, W, work, lwork, devInfo) -> None:
    """``cusolverDn<t>syevd`` / ``<t>heevd`` (32-bit API, divide and conquer)."""
    _solver(_name(t, "evd"), _fn(t, "evd"), handle, jobz, uplo, n, A, lda, W, work, lwork,
            devInfo)


def syevj_bufferSize(t, handle, jobz, uplo, n, A, lda, W, params) -> int:
    """``cusolverDn<t>syevj_bufferSize`` / ``<t>heevj_bufferSize`` -> lwork (elements);
    ``params`` a ``syevjInfo_t``."""
    return _solver(_name(t, "evj_bufferSize"), _fn(t, "evj", "_buffer_size"), handle, jobz, uplo,
                   n, A, lda, W, params)


def syevj(t, handle, jobz, uplo, n, A, lda, W, work, lwork, info, params) -> None:
    """``cusolverDn<t>syevj`` / ``<t>heevj`` (Jacobi): the routine torch 2.11 loops over for
    float32 ``linalg.eigh`` with 32 <= n <= 512, with a default ``syevjInfo_t``."""
    _solver(_name(t, "evj"), _fn(t, "evj"), handle, jobz, uplo, n, A, lda, W, work, lwork, info,
            params)


def syevjBatched_bufferSize(t, handle, jobz, uplo, n, A, lda, W, params, batchSize) -> int:
    """``cusolverDn<t>syevjBatched_bufferSize`` / ``<t>heevjBatched_bufferSize`` -> lwork."""
    return _solver(_name(t, "evjBatched_bufferSize"), _fn(t, "evj", "_batched_buffer_size"),
                   handle, jobz, uplo, n, A, lda, W, params, batchSize)


def syevjBatched(t, handle, jobz, uplo, n, A, lda, W, work, lwork, info, params,
                 batchSize) -> None:
    """``cusolverDn<t>syevjBatched`` / ``<t>heevjBatched``: Jacobi on ``batchSize`` matrices of
    order n <= 32, one after another; ``info`` one int per matrix (no torch release on CUDA
    >= 11.7.1 calls it)."""
    _solver(_name(t, "evjBatched"), _fn(t, "evj", "_batched"), handle, jobz, uplo, n, A, lda, W,
            work, lwork, info, params, batchSize)


# -- syevjInfo ---------------------------------------------------------------------------

def createSyevjInfo() -> int:
    """``cusolverDnCreateSyevjInfo`` -> info (tolerance machine eps, 100 sweeps, sorted)."""
    return _solver("cusolverDnCreateSyevjInfo", _load.nvmath_cusolverDn().create_syevj_info)


def destroySyevjInfo(info: int) -> None:
    """``cusolverDnDestroySyevjInfo``."""
    _solver("cusolverDnDestroySyevjInfo", _load.nvmath_cusolverDn().destroy_syevj_info, info)


def XsyevjSetTolerance(info: int, tolerance: float) -> None:
    """``cusolverDnXsyevjSetTolerance``."""
    _solver("cusolverDnXsyevjSetTolerance", _load.nvmath_cusolverDn().xsyevj_set_tolerance, info,
            float(tolerance))


def XsyevjSetMaxSweeps(info: int, max_sweeps: int) -> None:
    """``cusolverDnXsyevjSetMaxSweeps``."""
    _solver("cusolverDnXsyevjSetMaxSweeps", _load.nvmath_cusolverDn().xsyevj_set_max_sweeps, info,
            int(max_sweeps))


def XsyevjSetSortEig(info: int, sort_eig: int) -> None:
    """``cusolverDnXsyevjSetSortEig`` (sorting applies to the batched routine only)."""
    _solver("cusolverDnXsyevjSetSortEig", _load.nvmath_cusolverDn().xsyevj_set_sort_eig, info,
            int(sort_eig))


def XsyevjGetSweeps(handle: int, info: int) -> int:
    """``cusolverDnXsyevjGetSweeps`` (non-batched syevj only)."""
    return _solver("cusolverDnXsyevjGetSweeps", _load.nvmath_cusolverDn().xsyevj_get_sweeps,
                   handle, info)


def XsyevjGetResidual(handle: int, info: int) -> float:
    """``cusolverDnXsyevjGetResidual`` (non-batched syevj only)."""
    return _solver("cusolverDnXsyevjGetResidual", _load.nvmath_cusolverDn().xsyevj_get_residual,
                   handle, info)


# -- the C names, one per type: Dsyevd, Zheevd, Ssyevj_bufferSize, ZheevjBatched, ... ----------

def _bind_typed_names():
    g = globals()
    for base in ("syevd_bufferSize", "syevd", "syevj_bufferSize", "syevj",
                 "syevjBatched_bufferSize", "syevjBatched"):
        for t in "sdcz":
            f = functools.partial(g[base], t)
            cname = _name(t, base[2:])   # "syevd" -> "evd": cusolverDnDsyevd, cusolverDnZheevd
            f.__doc__ = f"``{cname}`` — see :func:`{base}`."
            g[cname[len("cusolverDn"):]] = f


_bind_typed_names()
