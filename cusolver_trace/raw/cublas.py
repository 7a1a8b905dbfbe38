"""Raw cuBLAS calls, 1:1 with the C API (type letter ``t`` first, as in :mod:`.cusolver`).

``trsm``, ``trsmBatched``, ``gemm``, ``getrfBatched``, ``getrsBatched`` and ``getriBatched`` go
through ``cupy.cuda.cublas`` (which
sets the handle's stream to CuPy's current stream on each call); the 64-bit
``trsm_64`` / ``gemm_64``, ``syrk``/``herk``, ``trmm`` and ``matinvBatched`` (which CuPy does not
bind) go through ``nvmath.bindings.cublas``. ``alpha`` / ``beta`` are *pointers* (host
pointers in the default ``CUBLAS_POINTER_MODE_HOST``), exactly as in C; use
:func:`scalar` to make one. Non-success ``cublasStatus_t`` raises
:class:`~cusolver_trace.errors.CuBlasStatusError`.
"""
from __future__ import annotations

import numpy as np

from .._dtypes import dtype_info
from . import _load
from ._status import blas as _blas

# cublasSideMode_t, cublasFillMode_t, cublasOperation_t, cublasDiagType_t
LEFT, RIGHT = 0, 1
LOWER, UPPER = 0, 1
OP_N, OP_T, OP_C = 0, 1, 2
NON_UNIT, UNIT = 0, 1


def _name(t, base, suffix="_v2"):
    return f"cublas{t.upper()}{base}{suffix}"


def scalar(t: str, value) -> np.ndarray:
    """A host scalar of type ``t`` for ``alpha`` / ``beta``; pass ``x.ctypes.data``, keep ``x`` alive."""
    return np.array([value], dtype=dtype_info(t).numpy)


def create() -> int:
    """``cublasCreate_v2`` -> handle."""
    return _blas("cublasCreate_v2", _load.cupy_cublas().create)


def destroy(handle: int) -> None:
    """``cublasDestroy_v2``."""
    _blas("cublasDestroy_v2", _load.cupy_cublas().destroy, handle)


def setStream(handle: int, streamId: int) -> None:
    """``cublasSetStream_v2``."""
    _blas("cublasSetStream_v2", _load.cupy_cublas().setStream, handle, streamId)


def getVersion(handle: int) -> int:
    """``cublasGetVersion_v2`` (e.g. 130100 for 13.1.0)."""
    return _blas("cublasGetVersion_v2", _load.cupy_cublas().getVersion, handle)


def trsm(t, handle, side, uplo, trans, diag, m, n, alpha, A, lda, B, ldb) -> None:
    """``cublas<t>trsm_v2``: B := alpha · op(A)⁻¹ · B (side LEFT) or B · op(A)⁻¹ (RIGHT), in place."""
    fn = getattr(_load.cupy_cublas(), f"{t}trsm")
    _blas(_name(t, "trsm"), fn, handle, side, uplo, trans, diag, m, n, alpha, A, lda, B, ldb)


def trsm_64(t, handle, side, uplo, trans, diag, m, n, alpha, A, lda, B, ldb) -> None:
    """``cublas<t>trsm_v2_64`` (64-bit sizes; what cuSOLVER's Xpotrs calls internally)."""
    fn = getattr(_load.nvmath_cublas(), f"{t}trsm_64")
    _blas(_name(t, "trsm", "_v2_64"), fn, handle, side, uplo, trans, diag, m, n, alpha, A, lda, B,
          ldb)


def trsmBatched(t, handle, side, uplo, trans, diag, m, n, alpha, Aarray, lda, Barray, ldb,
                batchCount) -> None:
    """``cublas<t>trsmBatched``; ``Aarray`` / ``Barray`` are device arrays of device pointers."""
    fn = getattr(_load.cupy_cublas(), f"{t}trsmBatched")
    _blas(_name(t, "trsmBatched", ""), fn, handle, side, uplo, trans, diag, m, n, alpha, Aarray,
          lda, Barray, ldb, batchCount)


def gemm(t, handle, transa, transb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc) -> None:
    """``cublas<t>gemm_v2``: C := alpha · op(A) · op(B) + beta · C."""
    fn = getattr(_load.cupy_cublas(), f"{t}gemm")
    _blas(_name(t, "gemm"), fn, handle, transa, transb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc)


def syrk(t, handle, uplo, trans, n, k, alpha, A, lda, beta, C, ldc) -> None:
    """``cublas<t>syrk_v2`` (real) / ``cublas<t>herk_v2`` (complex: real alpha, beta).

    C := alpha · op(A) · op(A)ᴴ + beta · C on the ``uplo`` triangle of C.
    """
    herm = dtype_info(t).is_complex
    base = "herk" if herm else "syrk"
    fn = getattr(_load.nvmath_cublas(), f"{t}{base}")
    _blas(_name(t, base), fn, handle, uplo, trans, n, k, alpha, A, lda, beta, C, ldc)


def trmm(t, handle, side, uplo, trans, diag, m, n, alpha, A, lda, B, ldb, C, ldc) -> None:
    """``cublas<t>trmm_v2``: C := alpha · op(A) · B (LEFT) or B · op(A) (RIGHT), out of place."""
    fn = getattr(_load.nvmath_cublas(), f"{t}trmm")
    _blas(_name(t, "trmm"), fn, handle, side, uplo, trans, diag, m, n, alpha, A, lda, B, ldb, C, ldc)


def getrfBatched(t, handle, n, Aarray, lda, PivotArray, infoArray, batchSize) -> None:
    """``cublas<t>getrfBatched``: LU of each n x n column-major matrix of the device array of
    device pointers ``Aarray``, in place; ``PivotArray`` (int32, ``n`` per matrix, one after
    another, 1-based) may be 0 (NULL): no pivoting; ``infoArray`` one device int32 per matrix."""
    fn = getattr(_load.cupy_cublas(), f"{t}getrfBatched")
    _blas(_name(t, "getrfBatched", ""), fn, handle, n, Aarray, lda, PivotArray, infoArray,
          batchSize)


def getrsBatched(t, handle, trans, n, nrhs, Aarray, lda, devIpiv, Barray, ldb, info,
                 batchSize) -> None:
    """``cublas<t>getrsBatched``: solve op(A_i) X_i = B_i with getrfBatched's factors;
    ``devIpiv`` the int32 pivots (``n`` per matrix, one after another); ``info`` a *host*
    pointer to one int (illegal arguments only); B overwritten by X."""
    fn = getattr(_load.cupy_cublas(), f"{t}getrsBatched")
    _blas(_name(t, "getrsBatched", ""), fn, handle, trans, n, nrhs, Aarray, lda, devIpiv, Barray,
          ldb, info, batchSize)


def getriBatched(t, handle, n, Aarray, lda, PivotArray, Carray, ldc, infoArray,
                 batchSize) -> None:
    """``cublas<t>getriBatched``: C_i = A_i⁻¹ from getrfBatched's LU factors and pivots, out of
    place (``Carray``'s matrices must not overlap ``Aarray``'s); ``PivotArray`` as getrfBatched
    wrote it (0 = NULL: the factors were made without pivoting); ``infoArray`` one device int32
    per matrix (k > 0: U(k, k) is exactly zero, the inversion failed). Through CuPy
    (``cupy_backends/cuda/libs/cublas.pyx``: ``<t>getriBatched(handle, n, Aarray, lda,
    PivotArray, Carray, ldc, infoArray, batchSize)``)."""
    fn = getattr(_load.cupy_cublas(), f"{t}getriBatched")
    _blas(_name(t, "getriBatched", ""), fn, handle, n, Aarray, lda, PivotArray, Carray, ldc,
          infoArray, batchSize)


def matinvBatched(t, handle, n, A, lda, Ainv, lda_inv, info, batchSize) -> None:
    """``cublas<t>matinvBatched``: Ainv_i = A_i⁻¹ for n <= 32 (cuBLAS returns
    ``CUBLAS_STATUS_INVALID_VALUE`` for larger n), getrfBatched + getriBatched in one call, out
    of place; ``A`` / ``Ainv`` device arrays of device pointers; ``info`` one device int32 per
    matrix, as getrfBatched's (k > 0: U(k, k) is exactly zero). Through nvmath-python
    (``nvmath/bindings/cublas.pyx``: ``<t>matinv_batched(handle, n, a, lda, ainv, lda_inv, info,
    batch_size)``); CuPy 14 does not bind it."""
    fn = getattr(_load.nvmath_cublas(), f"{t}matinv_batched")
    _blas(_name(t, "matinvBatched", ""), fn, handle, n, A, lda, Ainv, lda_inv, info, batchSize)


def _bind_typed_names():
    import functools

    g = globals()
    for base in ("trsm", "trsm_64", "trsmBatched", "gemm", "syrk", "trmm", "getrfBatched",
                 "getrsBatched", "getriBatched", "matinvBatched"):
        for t in "sdcz":
            f = functools.partial(g[base], t)
            f.__doc__ = f"``{_name(t, base, '')}`` — see :func:`{base}`."
            g[f"{t.upper()}{base}"] = f


_bind_typed_names()
