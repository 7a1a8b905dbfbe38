"""Layer 2: array-level Cholesky routines on GPU (cuSOLVER) and CPU (LAPACK).

Every routine takes torch tensors (CUDA → cuSOLVER on the tensor's own device
and torch's current stream, no host copies; CPU → ``scipy.linalg.lapack``),
CuPy arrays (→ cuSOLVER, zero-copy via DLPack) or NumPy arrays (→ LAPACK) of
shape ``(..., n, n)``, dtype float32, float64, complex64 or complex128, and
returns the same kind. Inputs are never modified: each routine works on a
column-major copy (LAPACK/cuSOLVER layout).

``info`` follows LAPACK/cuSOLVER: 0 = success, ``k > 0`` = the leading minor
of order ``k`` is not positive definite (potrf) or diagonal element ``k`` of
the factor is zero (potri, trtri), ``k < 0`` = argument ``-k`` was illegal.
With ``check=True`` (default) a failure raises
:class:`~cusolver_trace.errors.NotPositiveDefiniteError` /
:class:`~cusolver_trace.errors.SingularFactorError` (both
``numpy.linalg.LinAlgError``) naming the order and batch element; this reads
``info`` on the host and so synchronizes, as torch does. ``check=False``
returns ``info`` instead and does not synchronize.
"""
from __future__ import annotations

import numpy as np

from . import _lapack_impl as _cpu
from ._arrays import Operand, as_numpy, operand, require_square, same_backend, wrap
from .errors import IllegalArgumentError, NotPositiveDefiniteError, SingularFactorError

__all__ = ["potrf", "potrs", "potri", "trtri", "cholesky_inverse", "INVERSE_METHODS"]

#: ``cholesky_inverse`` methods: ``"potrs"`` (torch's CUDA path: potrs on the
#: identity), ``"potri"`` (LAPACK/cuSOLVER potri + mirror: torch's CPU path),
#: ``"trsm"`` (two cuBLAS triangular solves on the identity; torch >= 2.12 for
#: batch > 1) and ``"trsm_batched"`` (the same through ``trsmBatched``).
INVERSE_METHODS = ("potrs", "potri", "trsm", "trsm_batched")


def _cuda():
    from . import _cuda_impl

    return _cuda_impl


def _routine(dt, base: str, on_gpu: bool, api: str = "legacy") -> str:
    if not on_gpu:
        return _cpu.routine_name(dt.name, base)
    if api == "X":
        return f"cusolverDnX{base}"
    return f"cusolverDn{dt.prefix.upper()}{base}" + ("Batched" if api == "batched" else "")


def _gpu_api(api: str, batch: int) -> str:
    if api == "auto":  # torch's choice for linalg.cholesky
        return "X" if batch == 1 else "batched"
    return api


def _info_host(info) -> np.ndarray:
    return info.cpu().numpy() if hasattr(info, "cpu") else np.asarray(info)


def raise_for_info(routine: str, info, batch_shape, positive=NotPositiveDefiniteError) -> None:
    """The one place ``info`` is checked: raise for the first failing batch element.

    ``info < 0`` → :class:`IllegalArgumentError`; ``info > 0`` → ``positive``
    (:class:`NotPositiveDefiniteError` or :class:`SingularFactorError`). Batch
    elements are numbered in C order over the batch dimensions, as in torch's
    messages; an unbatched ``(n, n)`` input gets no batch number.
    """
    flat = _info_host(info).reshape(-1)
    bad = np.flatnonzero(flat)
    if bad.size == 0:
        return
    i = int(bad[0])
    where = i if len(batch_shape) else None
    if flat[i] < 0:
        raise IllegalArgumentError(routine, int(flat[i]), where)
    raise positive(routine, int(flat[i]), where, tuple(batch_shape))


def _empty_result(like: Operand, shape, info_shape):
    """Empty results for n = 0 or batch = 0 (cuSOLVER itself rejects n = 0)."""
    if like.kind == "numpy":
        return np.zeros(shape, like.dtype.numpy), np.zeros(info_shape, np.int32)
    import torch

    dev = like.data.device
    out = torch.zeros(shape, dtype=like.dtype.torch, device=dev)
    return wrap(out, like), wrap(torch.zeros(info_shape, dtype=torch.int32, device=dev), like)


def _flag_nonfinite_pivots(l, info):
    """cuSOLVER's potrf (and OpenBLAS's) can return info = 0 on NaN input; report the
    first non-finite diagonal entry of the factor as Reference LAPACK's ``?potrf`` does
    (it stops at a NaN pivot). ``info`` has the batch shape; no host synchronization."""
    shape = info.shape
    if isinstance(l, np.ndarray):
        bad = ~np.isfinite(np.diagonal(l, axis1=-2, axis2=-1)).reshape(-1, l.shape[-1])
        first = (bad.argmax(axis=-1) + 1).astype(np.int32)
        flat = info.reshape(-1)
        return np.where((flat == 0) & bad.any(axis=-1), first, flat).reshape(shape)
    import torch

    bad = ~torch.isfinite(l.diagonal(dim1=-2, dim2=-1)).reshape(-1, l.shape[-1])
    first = bad.to(torch.int32).argmax(dim=-1).to(torch.int32) + 1
    flat = info.reshape(-1)
    return torch.where((flat == 0) & bad.any(dim=-1), first, flat).reshape(shape)


def potrf(A, upper: bool = False, *, check: bool = True, api: str = "auto"):
    """Cholesky factorization A = L·Lᴴ (or Uᴴ·U), like LAPACK/cuSOLVER ``?potrf``.

    Parameters
    ----------
    A : array (..., n, n)
        Hermitian positive definite; only the lower (``upper=False``) or upper
        triangle is read. float32, float64, complex64, complex128.
    upper : bool
        Factor the upper triangle (``uplo = CUBLAS_FILL_MODE_UPPER``).
    check : bool
        Raise on ``info != 0`` (synchronizes); ``False`` returns info.
    api : {"auto", "X", "legacy", "batched"}
        GPU entry point: ``"auto"`` = torch's choice (``cusolverDnXpotrf`` for
        batch 1, ``cusolverDn<t>potrfBatched`` for batch > 1), ``"X"`` = 64-bit
        API per matrix, ``"legacy"`` = ``cusolverDn<t>potrf`` per matrix. CPU
        inputs always use LAPACK ``?potrf``.

    Returns
    -------
    L : array (..., n, n), same kind, dtype and device as A
        The factor; the other triangle is zero. Torch tensors come back with
        column-major strides, like ``torch.linalg.cholesky``.
    info : int32 array of the batch shape ``(...)``
        0, or the order of the first leading minor that is not positive
        definite (non-finite pivots count as failures, as in LAPACK).

    Raises
    ------
    NotPositiveDefiniteError  (``numpy.linalg.LinAlgError``) with ``check=True``
    ValueError  A is not square, fewer than 2 dimensions, unknown ``api``
    TypeError   unsupported dtype or array type

    Mirrors ``torch.linalg.cholesky`` / ``torch.linalg.cholesky_ex`` (torch
    2.3 – 2.14 CUDA and CPU paths).
    """
    a = operand(A, "A")
    n = require_square(a, "A")
    batch_shape = a.batch_shape
    batch = int(np.prod(batch_shape, dtype=np.int64))
    if api not in ("auto", "X", "legacy", "batched"):
        raise ValueError(f"api must be 'auto', 'X', 'legacy' or 'batched', got {api!r}")
    if n == 0 or batch == 0:
        return _empty_result(a, a.shape, batch_shape)
    if a.on_gpu:
        gapi = _gpu_api(api, batch)
        l, info = _cuda().potrf(a.data, upper, gapi)
        routine = _routine(a.dtype, "potrf", True, gapi)
    else:
        l, info = _cpu.potrf(as_numpy(a), upper)
        routine = _routine(a.dtype, "potrf", False)
    info = _flag_nonfinite_pivots(l, info.reshape(batch_shape))
    if check:
        raise_for_info(routine, info, batch_shape)
    return wrap(l, a), wrap(info, a)


def _solve_operands(L, B):
    c, b = operand(L, "L"), operand(B, "B")
    n = require_square(c, "L")
    same_backend(c, b)
    if b.shape[-2] != n:
        raise ValueError(f"B must have n = {n} rows to match L {c.shape}, got shape {b.shape}")
    try:
        batch_shape = tuple(np.broadcast_shapes(c.batch_shape, b.batch_shape))
    except ValueError:
        raise ValueError(f"batch shapes of L {c.shape} and B {b.shape} do not broadcast") from None
    return c, b, n, batch_shape


def _broadcast(op: Operand, batch_shape):
    shape = tuple(batch_shape) + op.shape[-2:]
    if op.on_gpu:
        return op.data.expand(shape)
    return np.broadcast_to(as_numpy(op), shape)


def potrs(L, B, upper: bool = False, *, api: str = "X"):
    """Solve A·X = B given the Cholesky factor of A, like ``?potrs``.

    Parameters
    ----------
    L : array (..., n, n)
        Factor from :func:`potrf`; only its lower (or ``upper``) triangle is read.
    B : array (..., n, k)
        Right-hand sides; batch dimensions broadcast against L's.
    api : {"X", "legacy", "batched"}
        GPU entry point: ``cusolverDnXpotrs`` per matrix (torch's path),
        ``cusolverDn<t>potrs`` per matrix, or one ``cusolverDn<t>potrsBatched``
        (``k == 1`` only).

    Returns
    -------
    X : array (..., n, k), same kind as B.

    Raises
    ------
    ValueError  shapes do not match / broadcast, L and B on different devices
    TypeError   unsupported or mismatched dtypes

    potrs reports illegal arguments only: a singular factor yields inf/nan
    silently, as in cuSOLVER and LAPACK. Mirrors ``torch.cholesky_solve(B, L)``.
    """
    c, b, n, batch_shape = _solve_operands(L, B)
    if api not in ("X", "legacy", "batched"):
        raise ValueError(f"api must be 'X', 'legacy' or 'batched', got {api!r}")
    out_shape = tuple(batch_shape) + b.shape[-2:]
    if n == 0 or b.shape[-1] == 0 or 0 in batch_shape:
        return _empty_result(b, out_shape, batch_shape)[0]
    cc, bb = _broadcast(c, batch_shape), _broadcast(b, batch_shape)
    if c.on_gpu:
        x, info = _cuda().potrs(cc, bb, upper, api)
    else:
        x, info = _cpu.potrs(cc, bb, upper)
    raise_for_info(_routine(c.dtype, "potrs", c.on_gpu, api), info, batch_shape)
    return wrap(x, b)


def _factor_operand(L):
    c = operand(L, "L")
    n = require_square(c, "L")
    return c, n, int(np.prod(c.batch_shape, dtype=np.int64))


def potri(L, upper: bool = False, *, check: bool = True):
    """Inverse of A = L·Lᴴ from its Cholesky factor, like ``?potri``, as a full Hermitian matrix.

    ``?potri`` writes one triangle of A⁻¹; the other is filled by mirroring
    (exactly Hermitian, like torch's CPU ``cholesky_inverse``).

    Parameters
    ----------
    L : array (..., n, n)   factor; only the lower (or ``upper``) triangle is read.

    Returns
    -------
    Ainv : array (..., n, n), same kind as L.

    Raises
    ------
    SingularFactorError  (``LinAlgError``) a diagonal element of L is zero (``check=True``).

    GPU: ``cusolverDn<t>potri`` (nvmath binding); CPU: LAPACK ``?potri``.
    """
    return cholesky_inverse(L, upper, method="potri", check=check)


def trtri(T, upper: bool = False, *, unit_diagonal: bool = False, check: bool = True):
    """Inverse of a triangular matrix, like ``?trtri`` (GPU: ``cusolverDnXtrtri``).

    Parameters
    ----------
    T : array (..., n, n); only the lower (or ``upper``) triangle is read.
    unit_diagonal : bool   assume a unit diagonal (``diag = CUBLAS_DIAG_UNIT``).

    Returns
    -------
    Tinv : array (..., n, n), triangular (the other triangle zero).

    Raises
    ------
    SingularFactorError  a diagonal element is exactly zero (``check=True``).
    """
    c, n, batch = _factor_operand(T)
    if n == 0 or batch == 0:
        return _empty_result(c, c.shape, c.batch_shape)[0]
    if c.on_gpu:
        x, info = _cuda().trtri(c.data, upper, unit_diagonal)
        routine = "cusolverDnXtrtri"
    else:
        x, info = _cpu.trtri(as_numpy(c), upper, unit_diagonal)
        routine = _routine(c.dtype, "trtri", False)
    if check:
        raise_for_info(routine, info.reshape(c.batch_shape), c.batch_shape, SingularFactorError)
    return wrap(x, c)


def _host_bool(x) -> np.ndarray:
    return x if isinstance(x, np.ndarray) else x.cpu().numpy()


def _check_inverse(routine, x, factor, batch_shape):
    """Solve-based inverses report nothing: flag a zero pivot of the factor
    (as :class:`SingularFactorError`, like potri) or non-finite output ourselves."""
    if isinstance(factor, np.ndarray):
        diag, finite = np.diagonal(factor, axis1=-2, axis2=-1), np.isfinite(x)
    else:
        import torch

        diag, finite = factor.diagonal(dim1=-2, dim2=-1), torch.isfinite(x)
    n = factor.shape[-1]
    zero = _host_bool(diag == 0).reshape(-1, n)
    info = np.where(zero.any(axis=-1), zero.argmax(axis=-1) + 1, 0)
    raise_for_info(routine, info, batch_shape, SingularFactorError)
    bad = np.flatnonzero(~_host_bool(finite).reshape(zero.shape[0], -1).all(axis=-1))
    if bad.size:
        where = f" (Batch element {bad[0]}):" if len(batch_shape) else ""
        raise np.linalg.LinAlgError(
            f"{routine}:{where} the inverse has non-finite entries although the factor's "
            "diagonal has no zero (non-finite factor entries or overflow)")


def cholesky_inverse(L, upper: bool = False, *, method: str = "potrs", check: bool = True):
    """Inverse of A = L·Lᴴ (or Uᴴ·U) from its Cholesky factor.

    Parameters
    ----------
    L : array (..., n, n)
        Factor; only the lower (or ``upper``) triangle is read.
    method : {"potrs", "potri", "trsm", "trsm_batched"}
        ``"potrs"``: potrs with an identity right-hand side — torch's CUDA path
        (``cusolverDnXpotrs``, nrhs = n; on the CPU LAPACK ``?potrs``); the
        result is not exactly Hermitian. ``"potri"``: ``?potri`` + mirror —
        torch's CPU path; exactly Hermitian. ``"trsm"`` / ``"trsm_batched"``
        (GPU only): two cuBLAS ``trsm`` / ``trsmBatched`` solves on the identity
        — torch >= 2.12 for batch > 1.
    check : bool
        Raise :class:`SingularFactorError` when a diagonal element of the factor
        is zero (potri's ``info``; for the solve-based methods, which report
        nothing, it is detected from the factor's diagonal and non-finite output).
        With ``check=False`` nothing is inspected and a singular factor gives
        whatever the routine leaves: inf/nan for the solve-based methods, a
        partial (e.g. zero) result for potri — check the factor's diagonal first.

    Returns
    -------
    Ainv : array (..., n, n), same kind, dtype and device as L.

    Mirrors ``torch.cholesky_inverse`` (CUDA and CPU paths, torch 2.3 – 2.14).
    """
    if method not in INVERSE_METHODS:
        raise ValueError(f"method must be one of {INVERSE_METHODS}, got {method!r}")
    c, n, batch = _factor_operand(L)
    batch_shape = c.batch_shape
    if n == 0 or batch == 0:
        return _empty_result(c, c.shape, batch_shape)[0]
    if c.on_gpu:
        cu = _cuda()
        if method == "potrs":
            x, info = cu.potrs_identity(c.data, upper)
            routine = "cusolverDnXpotrs"
        elif method == "potri":
            x, info = cu.potri(c.data, upper)
            routine = _routine(c.dtype, "potri", True)
        else:
            x, info = cu.trsm_identity_inverse(c.data, upper, method == "trsm_batched")
            routine = f"cublas{c.dtype.prefix.upper()}trsm" + ("Batched" if method == "trsm_batched" else "")
        factor = c.data
    else:
        if method.startswith("trsm"):
            raise ValueError(f"method {method!r} runs cuBLAS and needs a CUDA input")
        factor = as_numpy(c)
        fn = _cpu.potri if method == "potri" else _cpu.potrs_identity
        x, info = fn(factor, upper)
        routine = _routine(c.dtype, method, False)
    if check:
        raise_for_info(routine, info.reshape(batch_shape), batch_shape, SingularFactorError)
        _check_inverse(routine, x, factor, batch_shape)
    return wrap(x, c)
