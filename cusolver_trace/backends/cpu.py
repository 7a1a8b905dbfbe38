"""CPU backend: the same routines through ``scipy.linalg.lapack`` (Reference-LAPACK semantics).

Inputs are NumPy arrays ``(..., n, n)`` (already validated); each matrix is
handed to the LAPACK wrapper, which makes a Fortran-ordered working copy, so
inputs are never modified. Returns results plus an ``info`` array of the batch
shape (``int32``). This mirrors torch's CPU path: ``?potrf`` / ``?potrs`` /
``?potri`` (+ mirror of the computed triangle), ``?getrf`` / ``?getrs`` in a loop over the batch.
"""
from __future__ import annotations

import contextlib
import threading

import numpy as np
import scipy.linalg.lapack as _lapack

from .._dtypes import dtype_info


def routine_name(dtype, base: str) -> str:
    return f"LAPACK {dtype_info(dtype).prefix}{base}"


def _fn(dtype, base):
    return getattr(_lapack, dtype_info(dtype).prefix + base)


#: Up to this much work per call (n³, or n²·nrhs for potrs: the work of n = 256) LAPACK runs
#: with one BLAS thread (``threadpoolctl``). At small sizes a threaded OpenBLAS only
#: synchronizes its threads, and right after a threaded torch op its threads contend with
#: torch's still-spinning OpenMP pool: on a 2-core machine ``dlauum`` of a 16 x 16 factor took
#: 8.4 ms after a 256 x 256 torch matmul against 0.006 ms alone, which made
#: ``method="potri"`` (``auto`` on the CPU) about 1000x slower than torch there (2026-12-01).
#: Limiting costs about 0.03 ms per call, and only where a pool has threads.
SINGLE_THREAD_MAX_N = 256
_SINGLE_THREAD_MAX_WORK = SINGLE_THREAD_MAX_N ** 3


def _blas_threads(work: int):
    """A context that runs LAPACK on one BLAS thread for calls of at most
    ``_SINGLE_THREAD_MAX_WORK``. Only in the main thread: the thread count is process-wide
    (threadpoolctl restores what it found, so overlapping limits from two threads could leave
    it at 1, and changing it while another thread is inside OpenBLAS is not safe)."""
    if work > _SINGLE_THREAD_MAX_WORK or threading.current_thread() is not threading.main_thread():
        return contextlib.nullcontext()
    ctl = _controller()
    if ctl is None or not any(lib.num_threads > 1 for lib in ctl.lib_controllers):
        return contextlib.nullcontext()   # asked per call: a user's own limit may be in force
    return ctl.limit(limits=1, user_api="blas")


def _controller():
    """threadpoolctl's controller of this process's BLAS pools, made once (None where
    threadpoolctl is missing)."""
    if not _CTL:
        try:
            from threadpoolctl import ThreadpoolController

            ctl = ThreadpoolController().select(user_api="blas")
        except Exception:  # pragma: no cover - threadpoolctl is a dependency
            ctl = None
        _CTL.append(ctl)
    return _CTL[0]


_CTL: list = []


def _loop(batch_shape, body, work: int):
    """``body(index)`` for each matrix of the batch (its info), one call's ``work`` (flops'
    order) deciding the BLAS threads (:func:`_blas_threads`)."""
    info = np.zeros(batch_shape, dtype=np.int32)
    with _blas_threads(work):
        for idx in np.ndindex(*batch_shape):
            info[idx] = body(idx)
    return info


def hermitian_from_triangle(x: np.ndarray, upper: bool) -> np.ndarray:
    """Full Hermitian matrix from the ``upper`` / lower triangle of ``x`` (..., n, n)."""
    if upper:
        t = np.triu(x)
        return t + np.swapaxes(np.triu(x, 1), -1, -2).conj()
    t = np.tril(x)
    return t + np.swapaxes(np.tril(x, -1), -1, -2).conj()


def flag_nan_pivots(l: np.ndarray, info: np.ndarray) -> np.ndarray:
    """``info`` with the first NaN on the diagonal of the factor ``l`` reported where the
    LAPACK build said 0, as Reference LAPACK's ``?potrf`` does (``dpotrf2`` stops at a pivot
    that is <= 0 or NaN, and so at no other non-finite one: +Inf is a valid pivot there, and
    torch and cuSOLVER agree; OpenBLAS does not test for NaN). ``info`` has the batch shape.

    Examples
    --------
    >>> import numpy as np
    >>> flag_nan_pivots(np.diag([4.0, np.nan, 1.0]), np.zeros((), np.int32))
    array(2, dtype=int32)
    >>> flag_nan_pivots(np.diag([np.inf, 2.0, 2.0]), np.zeros((), np.int32))
    array(0, dtype=int32)
    """
    shape = info.shape
    bad = np.isnan(np.diagonal(l, axis1=-2, axis2=-1)).reshape(-1, l.shape[-1])
    first = (bad.argmax(axis=-1) + 1).astype(np.int32)
    flat = info.reshape(-1)
    return np.where((flat == 0) & bad.any(axis=-1), first, flat).astype(np.int32).reshape(shape)


def potrf(a: np.ndarray, upper: bool):
    """``?potrf`` per matrix; the other triangle of the factor is zero (LAPACK's ``clean``).

    ``info`` follows Reference LAPACK, whatever LAPACK scipy carries: a NaN pivot is a
    failure, an infinite one is not (:func:`flag_nan_pivots`)."""
    fn, out = _fn(a.dtype, "potrf"), np.empty_like(a)

    def body(i):
        out[i], info = fn(a[i], lower=not upper, clean=1)
        return info

    n = a.shape[-1]
    info = _loop(a.shape[:-2], body, n ** 3)
    return out, (flag_nan_pivots(out, info) if n else info)


def potrs(c: np.ndarray, b: np.ndarray, upper: bool):
    """``?potrs`` per matrix; ``c`` and ``b`` already broadcast to one batch shape."""
    fn, out = _fn(c.dtype, "potrs"), np.empty_like(b)

    def body(i):
        out[i], info = fn(c[i], b[i], lower=not upper)
        return info

    return out, _loop(c.shape[:-2], body, c.shape[-1] ** 2 * max(b.shape[-1], 1))


def potri(c: np.ndarray, upper: bool):
    """``?potri`` per matrix, then the full Hermitian inverse (mirror of the computed triangle)."""
    fn, out = _fn(c.dtype, "potri"), np.empty_like(c)

    def body(i):
        out[i], info = fn(c[i], lower=not upper)
        return info

    info = _loop(c.shape[:-2], body, c.shape[-1] ** 3)
    return hermitian_from_triangle(out, upper), info


def trtri(c: np.ndarray, upper: bool, unit_diagonal: bool = False):
    """``?trtri`` per matrix (inverse of the ``upper`` / lower triangle; the other is zeroed)."""
    fn, out = _fn(c.dtype, "trtri"), np.empty_like(c)

    def body(i):
        out[i], info = fn(c[i], lower=not upper, unitdiag=int(unit_diagonal))
        return info

    info = _loop(c.shape[:-2], body, c.shape[-1] ** 3)
    out = np.triu(out) if upper else np.tril(out)
    if unit_diagonal:  # LAPACK leaves the (unreferenced) diagonal as it was: the inverse's is 1
        np.einsum("...ii->...i", out)[...] = 1
    return out, info


def potrs_identity(c: np.ndarray, upper: bool):
    """Inverse by ``?potrs`` on the identity (the cuSOLVER path's algorithm, on the CPU)."""
    n = c.shape[-1]
    eye = np.broadcast_to(np.eye(n, dtype=c.dtype), c.shape)
    return potrs(c, eye, upper)


def inverse_status(L: np.ndarray, X: np.ndarray, upper: bool, info) -> np.ndarray:
    """The check record of :func:`cusolver_trace.backends.cuda.inverse_status`, with NumPy:
    int32 ``(batch, 3)``: ``n - i`` for the first exact zero ``L[i, i]`` (0: none); flags
    (1: non-finite entry in L's ``upper`` / lower triangle, 2: in X); the routine's info."""
    n = L.shape[-1]
    Lb, Xb = L.reshape(-1, n, n), X.reshape(-1, n, n)
    batch = Lb.shape[0]
    acc = np.zeros((batch, 3), dtype=np.int32)
    if batch == 0 or n == 0:
        return acc
    tri = np.triu(np.ones((n, n), bool)) if upper else np.tril(np.ones((n, n), bool))
    bad_l = (~np.isfinite(Lb) & tri).reshape(batch, -1).any(axis=-1)
    diag = np.diagonal(Lb, axis1=-2, axis2=-1)
    zero = (diag == 0) & np.isfinite(diag)
    first = zero.argmax(axis=-1)
    acc[:, 0] = np.where(zero.any(axis=-1), n - first, 0)
    acc[:, 1] = bad_l.astype(np.int32) | (2 * ~np.isfinite(Xb).reshape(batch, -1).all(axis=-1))
    acc[:, 2] = 0 if info is None else np.asarray(info).reshape(-1)
    return acc


def getrf(a: np.ndarray, pivot: bool = True):
    """``?getrf`` per matrix: LU factorization ``A = P L U`` with partial pivoting.

    Parameters
    ----------
    a : numpy.ndarray (..., m, n), float32 / float64 / complex64 / complex128
        Any strides; never written (the LAPACK wrapper works on a copy). Empty batches and
        m or n = 0 give empty results and info 0, without a LAPACK call.
    pivot : bool
        Must be True: LAPACK has no unpivoted getrf (torch's CPU ``lu_factor`` refuses
        ``pivot=False`` too).

    Returns
    -------
    lu : numpy.ndarray (..., m, n)
        L (unit diagonal, not stored) below the diagonal, U on and above it.
    piv : numpy.ndarray int32 (..., min(m, n))
        1-based pivots, LAPACK's convention (row i was interchanged with row ``piv[i]``).
    info : numpy.ndarray int32, the batch shape
        0, or k > 0 when U(k, k) is exactly zero (the factorization is completed).

    Raises
    ------
    ValueError
        ``pivot=False``.

    Examples
    --------
    >>> import numpy as np
    >>> lu, piv, info = getrf(np.array([[1.0, 2.0], [3.0, 4.0]]))
    >>> piv.tolist(), int(info)
    ([2, 2], 0)
    """
    if not pivot:
        raise ValueError("LAPACK's getrf always pivots: pivot=False has no CPU routine "
                         "(torch's CPU linalg.lu_factor raises for it too)")
    *bshape, m, n = a.shape
    k = min(m, n)
    fn, lu = _fn(a.dtype, "getrf"), np.empty(a.shape, dtype=a.dtype)
    piv = np.empty((*bshape, k), dtype=np.int32)
    if k == 0:   # LAPACK's wrapper calls an empty matrix an illegal argument
        return lu, piv, np.zeros(tuple(bshape), dtype=np.int32)

    def body(i):
        lu[i], p, info = fn(a[i], overwrite_a=0)
        piv[i] = p + 1   # scipy's wrapper gives 0-based pivots
        return info

    return lu, piv, _loop(tuple(bshape), body, m * n * k)


def getrs(lu: np.ndarray, piv: np.ndarray, b: np.ndarray, adjoint: bool = False):
    """``?getrs`` per matrix: solve ``op(A) X = B`` from ``A = P L U``.

    Parameters
    ----------
    lu : numpy.ndarray (..., n, n)
        :func:`getrf`'s factors.
    piv : numpy.ndarray int (..., n)
        1-based pivots, ``lu``'s batch shape; each in 1..n (checked: LAPACK would read out of
        bounds).
    b : numpy.ndarray (..., n, k), ``lu``'s dtype
        Its batch shape broadcasts with ``lu``'s (NumPy's rule, as torch's ``lu_solve``). Any
        strides; never written. n or k = 0: an empty x, info 0.
    adjoint : bool
        Solve with Aᴴ: ``trans`` = T (real) or C (complex); else N.

    Returns
    -------
    x : numpy.ndarray (..., n, k), the broadcast batch shape
    info : numpy.ndarray int32, the broadcast batch shape
        LAPACK's info (illegal arguments only).

    Raises
    ------
    ValueError
        A pivot outside 1..n.

    Examples
    --------
    >>> import numpy as np
    >>> A = np.array([[1.0, 2.0], [3.0, 4.0]])
    >>> lu, piv, _ = getrf(A)
    >>> x, info = getrs(lu, piv, np.array([[5.0], [6.0]]))
    >>> np.allclose(A @ x, [[5.0], [6.0]])
    True
    """
    n = lu.shape[-1]
    if piv.size and (piv.min() < 1 or piv.max() > n):
        raise ValueError(f"pivots must lie in 1..{n}, got values from {piv.min()} to {piv.max()}")
    k = b.shape[-1]
    bshape = np.broadcast_shapes(lu.shape[:-2], b.shape[:-2])
    lu_b = np.broadcast_to(lu, (*bshape, n, n))
    piv_b = np.broadcast_to(piv, (*bshape, n))
    b_b = np.broadcast_to(b, (*bshape, n, k))
    trans = (2 if np.iscomplexobj(lu) else 1) if adjoint else 0
    fn, x = _fn(lu.dtype, "getrs"), np.empty((*bshape, n, k), dtype=lu.dtype)
    if n == 0 or k == 0:   # nothing to solve (LAPACK's wrapper refuses empty operands)
        return x, np.zeros(tuple(bshape), dtype=np.int32)

    def body(i):
        x[i], info = fn(lu_b[i], piv_b[i] - 1, b_b[i], trans=trans)
        return info

    return x, _loop(tuple(bshape), body, n * n * max(k, 1))


def getri(lu: np.ndarray, piv: np.ndarray):
    """``?getri`` per matrix: A⁻¹ from ``A = P L U`` (U⁻¹, then X·L = U⁻¹, then the column
    interchanges of the pivots in reverse order).

    Parameters
    ----------
    lu : numpy.ndarray (..., n, n)
        :func:`getrf`'s factors; never written (the wrapper works on a copy).
    piv : numpy.ndarray int (..., n)
        1-based pivots, ``lu``'s batch shape.

    Returns
    -------
    x : numpy.ndarray (..., n, n)
        A⁻¹; where U(k, k) = 0 LAPACK stops, and what it leaves there is not an inverse.
    info : numpy.ndarray int32, the batch shape
        0, or k > 0 when U(k, k) is exactly zero.

    Examples
    --------
    >>> import numpy as np
    >>> lu, piv, _ = getrf(np.array([[4.0, 7.0], [2.0, 6.0]]))
    >>> x, info = getri(lu, piv)
    >>> np.allclose(x, [[0.6, -0.7], [-0.2, 0.4]]), int(info)
    (True, 0)
    """
    *bshape, n, _ = lu.shape
    fn, x = _fn(lu.dtype, "getri"), np.empty(lu.shape, dtype=lu.dtype)
    if n == 0:
        return x, np.zeros(tuple(bshape), dtype=np.int32)

    def body(i):
        x[i], info = fn(lu[i], piv[i] - 1, overwrite_lu=0)
        return info

    return x, _loop(tuple(bshape), body, n ** 3)


def getrs_identity(lu: np.ndarray, piv: np.ndarray):
    """A⁻¹ by ``?getrs`` on the identity per matrix (torch's CPU ``linalg.inv``)."""
    n = lu.shape[-1]
    return getrs(lu, piv, np.broadcast_to(np.eye(n, dtype=lu.dtype), lu.shape))


def syevd(a: np.ndarray, upper: bool = False, vectors: bool = True):
    """``?syevd`` / ``?heevd`` per matrix: eigenvalues (ascending) and, with ``vectors``,
    eigenvectors of the Hermitian matrix whose ``upper`` / lower triangle ``a`` holds (torch's
    CPU ``linalg.eigh`` / ``eigvalsh`` call the same LAPACK routine).

    Parameters
    ----------
    a : numpy.ndarray (..., n, n), float32 / float64 / complex64 / complex128
        Only the ``upper`` / lower triangle is read; never written.
    upper : bool
        The triangle read (``uplo``).
    vectors : bool
        ``jobz = 'V'`` (eigenvectors too) or ``'N'``.

    Returns
    -------
    w : numpy.ndarray (..., n), the real dtype of ``a``
    v : numpy.ndarray (..., n, n) or None
        Orthonormal eigenvectors as columns (None for ``vectors=False``).
    info : numpy.ndarray int32, the batch shape
        0, or k > 0: the algorithm failed to converge (LAPACK's ``info``).

    Examples
    --------
    >>> import numpy as np
    >>> w, v, info = syevd(np.array([[2.0, 1.0], [1.0, 2.0]]))
    >>> w.tolist(), int(info)
    ([1.0, 3.0], 0)
    """
    *bshape, n, _ = a.shape
    base = "heevd" if np.iscomplexobj(a) else "syevd"
    fn = _fn(a.dtype, base)
    w = np.empty((*bshape, n), dtype=dtype_info(a.dtype).real_name)
    v = np.empty(a.shape, dtype=a.dtype) if vectors else None
    if n == 0:   # LAPACK's wrapper calls an empty matrix an illegal argument
        return w, v, np.zeros(tuple(bshape), dtype=np.int32)

    def body(i):
        wi, vi, info = fn(a[i], compute_v=int(vectors), lower=int(not upper), overwrite_a=0)
        w[i] = wi
        if vectors:
            v[i] = vi
        return info

    return w, v, _loop(tuple(bshape), body, n ** 3)
