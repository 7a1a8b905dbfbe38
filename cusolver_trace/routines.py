"""Array routines: ``potrf``, ``potrs``, ``potri``, ``trtri``, ``cholesky_inverse`` and ``spd_inverse``.

One public entry point per operation. Every routine takes torch tensors (CUDA →
cuSOLVER / cuBLAS on the tensor's own device and torch's current stream, no host
copies; CPU → ``scipy.linalg.lapack``), CuPy arrays (→ cuSOLVER, zero-copy via
DLPack) or NumPy arrays (→ LAPACK) of shape ``(..., n, n)``, dtype float32,
float64, complex64 or complex128, and returns the same kind. Inputs are never
modified (each routine works on a column-major copy, the LAPACK / cuSOLVER
layout); ``requires_grad`` tensors are read through ``detach()`` and results do not
track gradients.

``info`` follows LAPACK / cuSOLVER: 0 = success, ``k > 0`` = the leading minor of
order ``k`` is not positive definite (potrf) or diagonal element ``k`` of the
factor is zero (potri, trtri), ``k < 0`` = argument ``-k`` was illegal. With
``check=True`` (default) a failure raises
:class:`~cusolver_trace.errors.NotPositiveDefiniteError` /
:class:`~cusolver_trace.errors.SingularFactorError` /
:class:`~cusolver_trace.errors.NonFiniteError` (all ``numpy.linalg.LinAlgError``)
naming the order and batch element. Checks move O(batch) integers to the host
with one synchronization per call, as torch's do; ``check=False`` returns
without synchronizing.

The inverse from the factor has several methods, all in one table,
:data:`INVERSE_METHODS` (name → CUDA and CPU implementation, GPU-only or not,
flop count, routine); ``method="auto"`` picks one by shape from
:data:`AUTO_TABLE`, resolved once per call by :func:`inverse_method`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from types import MappingProxyType
from typing import Callable, Mapping

import numpy as np

from .backends import cpu as _cpu
from ._arrays import Operand, as_numpy, flag, operand, require_square, same_backend, wrap
from ._dtypes import dtype_info
from .errors import (IllegalArgumentError, NonFiniteError, NotPositiveDefiniteError,
                     SingularFactorError)

__all__ = ["potrf", "potrs", "potri", "trtri", "cholesky_inverse", "inverse_method", "default_device",
           "resolve_method", "raise_for_info", "INVERSE_METHODS", "InverseMethod",
           "AUTO_TABLE", "AutoRule", "METHOD_NAMES", "spd_inverse", "spd_inverse_method",
           "resolve_spd_method", "SPD_INVERSE_METHODS"]


def _cuda():
    from .backends import cuda

    return cuda


def _fused():
    if not _FUSED:   # imported once (an import statement per call costs ~1 µs)
        from .backends import fused

        _FUSED.append(fused)
    return _FUSED[0]


_FUSED: list = []


def default_device() -> tuple[str, str | None]:
    """The one rule for where work runs when no device is named: ``("cuda:0", None)`` when
    torch sees a GPU and the CUDA backend can run, else ``("cpu", why)`` — ``why`` is None
    when there is simply no GPU, else the reason the CUDA backend cannot run (CuPy /
    nvmath-python missing).

    Examples
    --------
    >>> device, why = default_device()
    >>> device in ("cuda:0", "cpu")
    True
    """
    import torch

    if not torch.cuda.is_available():
        return "cpu", None
    why = _cuda().available()
    return ("cpu", why) if why is not None else ("cuda:0", None)


def _routine(dt, base: str, on_gpu: bool, api: str = "legacy") -> str:
    if not on_gpu:
        return _cpu.routine_name(dt.name, base)
    if api == "X":
        return f"cusolverDnX{base}"
    if api == "fused":
        return f"cuSOLVERDx {base} (fused kernel)"
    return f"cusolverDn{dt.prefix.upper()}{base}" + ("Batched" if api == "batched" else "")


def _gpu_api(api: str, batch: int) -> str:
    if api == "auto":  # torch's choice for linalg.cholesky
        return "X" if batch == 1 else "batched"
    return api


def _fused_needs_gpu(api: str, on_gpu: bool) -> None:
    """``api="fused"`` is a GPU-only method (cuSOLVERDx), as ``method="fused"`` is: on a CPU
    input it raises, where the cuSOLVER API names fall back to LAPACK."""
    if api == "fused" and not on_gpu:
        raise ValueError("api 'fused' runs cuSOLVERDx kernels on the GPU and needs a CUDA input")


def _info_host(info) -> np.ndarray:
    return info.cpu().numpy() if hasattr(info, "cpu") else np.asarray(info)


def raise_for_info(routine: str, info, batch_shape, positive=NotPositiveDefiniteError) -> None:
    """The one place ``info`` is checked: raise for the first failing batch element.

    Parameters
    ----------
    routine : str
        The routine to name in the message (``"cusolverDnXpotrf"``).
    info : array or tensor of the batch shape, int
        LAPACK / cuSOLVER ``info`` per matrix (copied to the host: one synchronization).
    batch_shape : tuple of int
        Batch elements are numbered in C order over these dimensions, as in torch's
        messages; an unbatched ``(n, n)`` input (``()``) gets no batch number.
    positive : exception class
        Raised for ``info > 0``: :class:`NotPositiveDefiniteError` (potrf) or
        :class:`SingularFactorError` (potri, trtri).

    Raises
    ------
    IllegalArgumentError
        ``info < 0``.
    NotPositiveDefiniteError, SingularFactorError
        ``info > 0`` (the class given as ``positive``).

    Examples
    --------
    >>> import numpy as np
    >>> raise_for_info("LAPACK dpotrf", np.zeros(3, np.int32), (3,))   # nothing to raise
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


def _flag_nan_pivots(l, info):
    """cuSOLVER's potrf (and OpenBLAS's) can return info = 0 on NaN input; report the
    first NaN on the diagonal of the factor as Reference LAPACK's ``?potrf`` does (it stops
    at a NaN pivot; +Inf is a valid pivot there). ``info`` has the batch shape; no host
    synchronization. A CUDA ``info`` may be updated in place
    (:func:`backends.cuda.flag_nan_pivots`)."""
    if isinstance(l, np.ndarray):
        return _cpu.flag_nan_pivots(l, info)
    return _cuda().flag_nan_pivots(l, info)  # one kernel, in place where it can be


def potrf(A, upper: bool = False, *, check: bool = True, api: str = "auto"):
    """Cholesky factorization A = L·Lᴴ (or Uᴴ·U), like LAPACK / cuSOLVER ``?potrf``.

    Parameters
    ----------
    A : array (..., n, n)
        Hermitian positive definite; only the lower (``upper=False``) or upper
        triangle is read. float32, float64, complex64, complex128; torch (CUDA or
        CPU), CuPy or NumPy.
    upper : bool
        Factor the upper triangle (``uplo = CUBLAS_FILL_MODE_UPPER``).
    check : bool
        Raise on ``info != 0`` (one synchronization); ``False`` returns info.
    api : {"auto", "X", "legacy", "batched", "fused"}
        GPU entry point: ``"auto"`` = torch's choice (``cusolverDnXpotrf`` for
        batch 1, ``cusolverDn<t>potrfBatched`` for batch > 1), ``"X"`` = 64-bit
        API per matrix, ``"legacy"`` = ``cusolverDn<t>potrf`` per matrix,
        ``"fused"`` = one cuSOLVERDx kernel for the whole batch (small n; needs the
        ``cuda13-fused`` extra, see :mod:`cusolver_trace.backends.fused`). CPU
        inputs use LAPACK ``?potrf`` whatever the cuSOLVER API named; ``"fused"``,
        which is no cuSOLVER API but a GPU-only method, raises there.

    Returns
    -------
    L : array (..., n, n), same kind, dtype and device as A
        The factor; the other triangle is zero. Torch tensors come back with
        column-major strides, like ``torch.linalg.cholesky``.
    info : int32 array of the batch shape ``(...)``
        0, or the order of the first leading minor that is not positive
        definite (NaN pivots count as failures, as in Reference LAPACK).

    Raises
    ------
    NotPositiveDefiniteError
        (``numpy.linalg.LinAlgError``) with ``check=True``, naming the minor and
        the batch element.
    ValueError
        A is not square, has fewer than 2 dimensions, or ``api`` is unknown.
    TypeError
        Unsupported dtype or array type; ``upper`` / ``check`` not a bool.
    GPUUnavailableError
        A CUDA input, but CuPy / nvmath-python are missing.

    Mirrors ``torch.linalg.cholesky`` / ``torch.linalg.cholesky_ex`` (torch
    2.3 – 2.14 CUDA and CPU paths).

    Examples
    --------
    >>> import numpy as np, cusolver_trace as ct
    >>> L, info = ct.potrf(np.array([[4.0, 2.0], [2.0, 3.0]]))
    >>> L
    array([[2.        , 0.        ],
           [1.        , 1.41421356]])
    >>> int(info)
    0
    """
    a = operand(A, "A")
    upper, check = flag(upper, "upper"), flag(check, "check")
    n = require_square(a, "A")
    batch_shape = a.batch_shape
    batch = math.prod(batch_shape)
    if api not in ("auto", "X", "legacy", "batched", "fused"):
        raise ValueError(f"api must be 'auto', 'X', 'legacy', 'batched' or 'fused', got {api!r}")
    _fused_needs_gpu(api, a.on_gpu)
    if n == 0 or batch == 0:
        return _empty_result(a, a.shape, batch_shape)
    if a.on_gpu:
        gapi = _gpu_api(api, batch)
        if gapi == "fused":
            l, info = _fused().potrf(a.data, upper)
        else:
            l, info = _cuda().potrf(a.data, upper, gapi)
        routine = _routine(a.dtype, "potrf", True, gapi)
        info = _flag_nan_pivots(l, info.reshape(batch_shape))
    else:  # the CPU backend's potrf flags NaN pivots itself
        l, info = _cpu.potrf(as_numpy(a), upper)
        routine = _routine(a.dtype, "potrf", False)
        info = info.reshape(batch_shape)
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
    B : array (..., n, nrhs)
        Right-hand sides; batch dimensions broadcast against L's.
    upper : bool
        L holds U with A = Uᴴ·U.
    api : {"X", "legacy", "batched", "fused"}
        GPU entry point: ``cusolverDnXpotrs`` per matrix (torch's path),
        ``cusolverDn<t>potrs`` per matrix, one ``cusolverDn<t>potrsBatched``
        (``nrhs == 1`` only), or one cuSOLVERDx kernel for the whole batch
        (``"fused"``, small n, any nrhs; the ``cuda13-fused`` extra). CPU inputs use
        LAPACK ``?potrs`` whatever the cuSOLVER API named; ``"fused"`` (GPU only)
        raises there.

    Returns
    -------
    X : array (..., n, nrhs), same kind, dtype and device as B.

    Raises
    ------
    ValueError
        Shapes do not match / broadcast, L and B on different devices, unknown api,
        ``api="fused"`` on CPU inputs.
    TypeError
        Unsupported or mismatched dtypes.

    potrs reports illegal arguments only: a singular factor yields inf / nan
    silently, as in cuSOLVER and LAPACK. Mirrors ``torch.cholesky_solve(B, L)``.

    Examples
    --------
    >>> import numpy as np, cusolver_trace as ct
    >>> L, _ = ct.potrf(np.array([[4.0, 2.0], [2.0, 3.0]]))
    >>> ct.potrs(L, np.array([[6.0], [5.0]]))
    array([[1.],
           [1.]])
    """
    c, b, n, batch_shape = _solve_operands(L, B)
    upper = flag(upper, "upper")
    if api not in ("X", "legacy", "batched", "fused"):
        raise ValueError(f"api must be 'X', 'legacy', 'batched' or 'fused', got {api!r}")
    _fused_needs_gpu(api, c.on_gpu)
    out_shape = tuple(batch_shape) + b.shape[-2:]
    if n == 0 or b.shape[-1] == 0 or 0 in batch_shape:
        return _empty_result(b, out_shape, batch_shape)[0]
    cc, bb = _broadcast(c, batch_shape), _broadcast(b, batch_shape)
    if c.on_gpu and api == "fused":
        x, info = _fused().potrs(cc, bb, upper)
    elif c.on_gpu:
        x, info = _cuda().potrs(cc, bb, upper, api)
    else:
        x, info = _cpu.potrs(cc, bb, upper)
    raise_for_info(_routine(c.dtype, "potrs", c.on_gpu, api), info, batch_shape)
    return wrap(x, b)


def _factor_operand(L, name="L"):
    c = operand(L, name)
    n = require_square(c, name)
    return c, n, math.prod(c.batch_shape)


def potri(L, upper: bool = False, *, check: bool = True):
    """Inverse of A = L·Lᴴ from its Cholesky factor, like ``?potri``, as a full Hermitian matrix.

    ``?potri`` writes one triangle of A⁻¹; the other is filled by mirroring
    (exactly Hermitian, like torch's CPU ``cholesky_inverse``). The same as
    ``cholesky_inverse(L, upper, method="potri", check=check)``.

    Parameters
    ----------
    L : array (..., n, n)
        The factor; only the lower (or ``upper``) triangle is read.
    upper : bool
        L holds U with A = Uᴴ·U.
    check : bool
        See :func:`cholesky_inverse`.

    Returns
    -------
    Ainv : array (..., n, n), same kind, dtype and device as L.

    Raises
    ------
    SingularFactorError
        (``LinAlgError``) a diagonal element of L is zero (``check=True``).
    NonFiniteError
        (``LinAlgError``) L's triangle holds NaN / Inf (``check=True``).

    GPU: ``cusolverDn<t>potri`` (nvmath binding); CPU: LAPACK ``?potri``.

    Examples
    --------
    >>> import numpy as np, cusolver_trace as ct
    >>> ct.potri(np.array([[2.0, 0.0], [1.0, 1.0]]))
    array([[ 0.5, -0.5],
           [-0.5,  1. ]])
    """
    return cholesky_inverse(L, upper, method="potri", check=check)


def trtri(T, upper: bool = False, *, unit_diagonal: bool = False, check: bool = True):
    """Inverse of a triangular matrix, like ``?trtri`` (GPU: ``cusolverDnXtrtri``).

    Parameters
    ----------
    T : array (..., n, n)
        Only the lower (or ``upper``) triangle is read; with ``unit_diagonal`` the
        diagonal is not read either and taken as ones.
    upper : bool
        Invert the upper triangle.
    unit_diagonal : bool
        Assume a unit diagonal (``diag = CUBLAS_DIAG_UNIT``); the result's diagonal is 1.
    check : bool
        Raise when a diagonal element is exactly zero (one synchronization).

    Returns
    -------
    Tinv : array (..., n, n), same kind as T; triangular (the other triangle zero).

    Raises
    ------
    SingularFactorError
        A diagonal element is exactly zero (``check=True``).

    Examples
    --------
    >>> import numpy as np, cusolver_trace as ct
    >>> ct.trtri(np.array([[4.0, 0.0], [2.0, 3.0]]), unit_diagonal=True)
    array([[ 1.,  0.],
           [-2.,  1.]])
    """
    c, n, batch = _factor_operand(T, "T")
    upper, check = flag(upper, "upper"), flag(check, "check")
    unit_diagonal = flag(unit_diagonal, "unit_diagonal")
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


# --------------------------------------------------------------------------- the method table
def _torch_cuda(c, upper):
    import torch

    return torch.cholesky_inverse(c, upper=upper), None


def _torch_cpu(c, upper):
    """torch's CPU cholesky_inverse (LAPACK potri). It raises for a zero pivot; that becomes
    ``info`` (and a NaN result), so the one check path reports it like every other method."""
    import re

    import torch

    # a private, writable, native-order copy: torch refuses or warns on anything else
    c = np.array(c, dtype=c.dtype.newbyteorder("="), order="C", copy=True)
    try:
        return torch.cholesky_inverse(torch.from_numpy(c), upper=upper).numpy(), None
    except torch.linalg.LinAlgError as exc:
        info = np.zeros(math.prod(c.shape[:-2]), np.int32)
        k = re.search(r"diagonal element (\d+)", str(exc))
        b = re.search(r"Batch element (\d+)", str(exc))
        info[int(b.group(1)) if b else 0] = int(k.group(1)) if k else 1
        return np.full(c.shape, np.nan, dtype=c.dtype), info


def _reference_plans(recursive: bool):
    """CPU implementation of the trtri_lauum methods: the same plans, run with torch ops
    (:func:`cusolver_trace.plans.run_plan_reference`; for checking the plans, not speed)."""
    def run(c, upper):
        import torch

        from .plans import Call, lauum_plan, run_plan_reference, trtri_plan

        n = c.shape[-1]
        uplo = "U" if upper else "L"
        # column-major working copy: each (n, n) block of w is one matrix, stored column by column
        w = torch.from_numpy(np.ascontiguousarray(np.swapaxes(c, -1, -2)).reshape(-1, n, n).copy())
        inv = trtri_plan(n, upper) if recursive else [Call("trtri", uplo, n, n, (0, 0))]
        mul = lauum_plan(n, upper, dtype=c.dtype)
        flat = w.reshape(-1)
        for b in range(w.shape[0]):
            run_plan_reference(inv, flat, n, b * n * n)
            run_plan_reference(mul, flat, n, b * n * n)
        x = np.swapaxes(w.numpy(), -1, -2).reshape(c.shape)
        return _cpu.hermitian_from_triangle(x, upper), None
    return run


@dataclass(frozen=True)
class InverseMethod:
    """One way of computing A⁻¹ from A's Cholesky factor (a row of :data:`INVERSE_METHODS`).

    Attributes
    ----------
    name : str
    summary : str
        What runs, in the field's terms.
    cuda : callable or None
        ``(L: CUDA tensor (..., n, n), upper) -> (Ainv, info or None)``, no checks, no sync.
    cpu : callable or None
        ``(L: ndarray (..., n, n), upper) -> (Ainv, info or None)``; None: GPU-only.
    flop_count : str
        The LAWN 41 count of the algorithm's work (:func:`cusolver_trace.checks.flops`).
    cpu_flop_count : str
        The same for the CPU implementation.
    routine : str
        The routine named in errors (``{T}`` = type letter); ``cpu_routine`` on the CPU.
    cuda_checked : callable or None
        ``(L, upper) -> (Ainv, record or None)``: the CUDA implementation with the check
        computed in its own kernel (the record of ``backends.cuda.inverse_status``, None
        when nothing is to report; one synchronization). None: the check runs as its own
        kernel after ``cuda``.
    """

    name: str
    summary: str
    cuda: Callable | None
    cpu: Callable | None
    flop_count: str
    routine: str
    cpu_routine: str = ""
    cpu_flop_count: str = ""
    cuda_checked: Callable | None = None

    @property
    def gpu_only(self) -> bool:
        """True when the method has no CPU implementation."""
        return self.cpu is None

    def routine_name(self, dtype, on_gpu: bool) -> str:
        """The routine to name in errors for ``dtype`` on the GPU or the CPU."""
        p = dtype_info(dtype).prefix
        return (self.routine if on_gpu else self.cpu_routine or self.routine).format(
            T=p.upper(), t=p)

    def flops_name(self, on_gpu: bool) -> str:
        """The flop count of the implementation that runs on the GPU or the CPU."""
        return self.flop_count if on_gpu else self.cpu_flop_count or self.flop_count


def _cu(name, *args, **kw):
    def run(c, upper):
        return getattr(_cuda(), name)(c, upper, *args, **kw)
    return run


def _cu_plans(name, *args, **kw):
    """A method of the CUDA plan executor (:mod:`cusolver_trace.backends.cuda_plans`)."""
    def run(c, upper):
        from .backends import cuda_plans

        return getattr(cuda_plans, name)(c, upper, *args, **kw)
    return run


def _reference_inverse_plan(c, upper):
    """CPU implementation of ``gemm_lauum``: the same two-buffer plan
    (:func:`cusolver_trace.plans.inverse_plan`), run with torch ops in its sequential order
    (for checking the plan, not speed)."""
    import torch

    from .plans import inverse_plan, run_inverse_reference

    x = torch.from_numpy(np.array(c, dtype=c.dtype.newbyteorder("="), order="C", copy=True))
    plan = inverse_plan(c.shape[-1], upper, dtype=c.dtype)
    return run_inverse_reference(plan, x).numpy(), None


INVERSE_METHODS: dict[str, InverseMethod] = {m.name: m for m in (
    InverseMethod("potrs", "cusolverDnXpotrs on the identity (torch's CUDA path for batch 1)",
                  _cu("potrs_identity", "X"), _cpu.potrs_identity, "inverse_potrs",
                  "cusolverDnXpotrs", "LAPACK {t}potrs"),
    InverseMethod("potri", "cusolverDn<t>potri + mirror of the triangle (torch's CPU path)",
                  _cu("potri"), _cpu.potri, "potri", "cusolverDn{T}potri", "LAPACK {t}potri"),
    InverseMethod("trsm", "two cublas<t>trsm on the identity per matrix (torch >= 2.12, batch <= 8)",
                  _cu("trsm_identity_inverse", batched=False), None, "inverse_potrs",
                  "cublas{T}trsm"),
    InverseMethod("trsm_batched", "two cublas<t>trsmBatched on the identity, whole batch at once",
                  _cu("trsm_identity_inverse", batched=True), None, "inverse_potrs",
                  "cublas{T}trsmBatched"),
    InverseMethod("trtri_lauum", "cusolverDnXtrtri, then a recursive blocked lauum "
                  "(syrk/herk, trmm, gemm; cusolverDn<t>lauum on diagonal blocks)",
                  _cu_plans("trtri_lauum", recursive=False), _reference_plans(False), "potri",
                  "cusolverDnXtrtri", "trtri_lauum plan (torch reference executor)"),
    InverseMethod("rec_trtri_lauum", "recursive trtri (cublas<t>trmm; trsm on diagonal blocks), "
                  "then the recursive blocked lauum",
                  _cu_plans("trtri_lauum", recursive=True), _reference_plans(True), "potri",
                  "recursive trtri (cublas{T}trmm, cublas{T}trsm on diagonal blocks)",
                  "rec_trtri_lauum plan (torch reference executor)"),
    InverseMethod("fused", "one cuSOLVERDx kernel for the whole batch: potrs on an identity "
                  "built in shared memory (small n; the cuda13-fused extra)",
                  lambda c, upper: _fused().cholesky_inverse(c, upper), None, "inverse_potrs",
                  "cuSOLVERDx potrs (fused kernel)",
                  cuda_checked=lambda c, upper: _fused().cholesky_inverse_checked(c, upper)),
    InverseMethod("gemm_lauum", "recursive trtri into an identity buffer (cublas<t>trsm "
                  "blocks, trmm/gemm), then the lauum as one gemm per block row, on 2 streams",
                  _cu_plans("gemm_lauum"), _reference_inverse_plan, "potri",
                  "gemm_lauum plan (cublas{T}trsm, cublas{T}trmm, cublas{T}gemm)",
                  "gemm_lauum plan (torch reference executor)"),
    InverseMethod("gemm_lauum_emu", "gemm_lauum with cuBLAS FP64 fixed-point emulation "
                  "(CUBLAS_FP64_EMULATED_FIXEDPOINT_MATH, EAGER; opt-in, GPU only)",
                  _cu_plans("gemm_lauum", emulate=True), None, "potri",
                  "gemm_lauum plan, FP64 emulation (cublas{T}trsm, cublas{T}trmm, cublas{T}gemm)"),
    InverseMethod("torch", "torch.cholesky_inverse itself (what auto falls back to)",
                  _torch_cuda, _torch_cpu, "inverse_potrs", "torch.cholesky_inverse",
                  "torch.cholesky_inverse", "potri"),
)}
"""The one method table of :func:`cholesky_inverse`: name → :class:`InverseMethod`."""

METHOD_NAMES = (*INVERSE_METHODS, "auto")
"""Every ``method=`` value :func:`cholesky_inverse` accepts."""


@dataclass(frozen=True)
class AutoRule:
    """One row of :data:`AUTO_TABLE`: the conditions (all must hold; bounds inclusive,
    None = any) and the method they pick.

    Raises
    ------
    ValueError
        A method that is not a key of :data:`INVERSE_METHODS`, a device other than
        ``"cuda"`` / ``"cpu"`` / None, a bound that is not an int >= 0.
    TypeError
        ``dtypes`` not a tuple (or list) of supported dtypes (names, torch or NumPy dtypes;
        kept as names).

    Examples
    --------
    >>> AutoRule("potri", device="cpu").matches(8, 1, "float64", "cpu")
    True
    >>> AutoRule("fused", dtypes=("float32",)).dtypes
    ('float32',)
    """

    method: str
    device: str | None = None
    batch_min: int = 0
    batch_max: int | None = None
    n_min: int = 0
    n_max: int | None = None
    dtypes: tuple | None = None

    def __post_init__(self):
        if self.method not in INVERSE_METHODS:
            raise ValueError(f"AutoRule: method must be one of {', '.join(INVERSE_METHODS)}, "
                             f"got {self.method!r}")
        if self.device not in (None, "cuda", "cpu"):
            raise ValueError(f"AutoRule: device must be 'cuda', 'cpu' or None, got {self.device!r}")
        for what in ("batch_min", "batch_max", "n_min", "n_max"):
            v = getattr(self, what)
            if v is None and what.endswith("_max"):
                continue
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise ValueError(f"AutoRule: {what} must be an int >= 0, got {v!r}")
        if self.dtypes is not None:
            if not isinstance(self.dtypes, (tuple, list)):
                raise TypeError(f"AutoRule: dtypes must be a tuple of dtype names, got "
                                f"{self.dtypes!r}")
            object.__setattr__(self, "dtypes", tuple(dtype_info(d).name for d in self.dtypes))

    def matches(self, n: int, batch: int, dtype: str, device: str) -> bool:
        """Whether the rule holds for ``batch`` matrices of order ``n``."""
        return ((self.device is None or self.device == device)
                and self.batch_min <= batch and (self.batch_max is None or batch <= self.batch_max)
                and self.n_min <= n and (self.n_max is None or n <= self.n_max)
                and (self.dtypes is None or dtype in self.dtypes))


#: Which method ``"auto"`` picks: rules tried in order, the first whose conditions all hold
#: wins. Source: CUDA-event medians on an NVIDIA H200, torch 2.11.0+cu130, cuSOLVER 12.0.4 /
#: cuBLAS 13.1 (`cusolver-trace sweep`); time relative to torch.cholesky_inverse (< 1 =
#: faster), rec_trtri_lauum: float64 1.03 / 0.85 / 0.70 / 0.49 (n = 4096 / 6144 / 8192 /
#: 16384); float32 0.84 / 0.66 / 0.58 (6144 / 8192 / 12288); complex64 0.77 / 0.61 (4096 /
#: 6144); complex128 0.60 (6144). trsm_batched at n = 512: 0.46–0.86 (batch 8 – 1000); at
#: n <= 128 torch's MAGMA path beats the Python-driven raw path (host-bound). gemm_lauum
#: (issue 14, checks on, torch interleaved, devrun/plans): float64 0.60 / 0.49 / 0.39 (n =
#: 4096 / 8192 / 16384; rec_trtri_lauum 1.03 / 0.71 / 0.50 in the same run); float32 0.48
#: (8192); complex64 0.49, complex128 0.46 (6144). fused (issue 13; auto -> fused, checked,
#: the README's sweep commands, benchmarks/results/h200-2026-12-01-c): float64 100000 x 4 /
#: 10000 x 8 / 100000 x 16 / 1000 x 32 / 1000 x 64 / 100 x 128: 0.06 / 0.28 / 0.18 / 0.55 /
#: 0.53 / 0.69 of torch's time; float32 0.05 / 0.28 / 0.17 / 0.15 / 0.28 / 0.18 (batches of
#: 100 and more, n <= 128, real types: the only ones measured). Shapes not measured fall through to
#: torch. Update these rows from `cusolver-trace sweep`. Read-only; to try other rules,
#: assign a new mapping to ``cusolver_trace.routines.AUTO_TABLE``.
AUTO_TABLE: Mapping[str, AutoRule] = MappingProxyType({
    "cpu: LAPACK potri (torch's CPU path)": AutoRule("potri", device="cpu"),
    "batches of 512 x 512": AutoRule("trsm_batched", device="cuda", batch_min=2, n_min=512,
                                     n_max=512),
    "one large float64 matrix": AutoRule("gemm_lauum", device="cuda", batch_max=1, n_min=4096,
                                         dtypes=("float64",)),
    "one large complex matrix, 6144 and up": AutoRule("gemm_lauum", device="cuda", batch_max=1,
                                                      n_min=6144,
                                                      dtypes=("complex64", "complex128")),
    "one large complex matrix": AutoRule("rec_trtri_lauum", device="cuda", batch_max=1,
                                         n_min=4096, dtypes=("complex64", "complex128")),
    "one large float32 matrix, 8192 and up": AutoRule("gemm_lauum", device="cuda", batch_max=1,
                                                      n_min=8192, dtypes=("float32",)),
    "one large matrix": AutoRule("rec_trtri_lauum", device="cuda", batch_max=1, n_min=6144),
    "batches of 100+ small real matrices (cuda13-fused extra)": AutoRule(
        "fused", device="cuda", batch_min=100, n_max=128, dtypes=("float32", "float64")),
    "otherwise: torch's own choice": AutoRule("torch"),
})


def _auto_can_run(method: str, n: int, dtype: str) -> bool:
    """Whether ``auto`` may pick ``method`` here: a ``fused`` rule is passed over where the
    fused method cannot run (its extra ``cuda13-fused`` missing, or n too large for shared
    memory), so that ``auto`` falls through to the next rule instead of failing."""
    if method != "fused":
        return True
    fused = _fused()
    return fused.available() is None and fused.fits("inverse", n, dtype)


def _auto(n: int, batch: int, name: str, dev: str) -> str:
    """The rule :data:`AUTO_TABLE` picks, remembered per shape (walking the rules costs
    about 6 µs of a call's host time): a memo entry holds while the table's rules (compared
    as a tuple, element by element: the same rule objects short-circuit) and the fused
    method's ``available`` are those it was made with, so a replaced or edited table is seen."""
    fused_available = _fused().available
    key = (n, batch, name, dev)
    try:
        rules = tuple(AUTO_TABLE.values())   # a replaced table, or one edited in place, is seen
    except AttributeError:
        raise TypeError(f"AUTO_TABLE must be a mapping of names to AutoRule, got "
                        f"{type(AUTO_TABLE).__name__}") from None
    hit = _AUTO_MEMO.get(key)
    if hit is not None and hit[1] == rules and hit[2] is fused_available:
        return hit[0]
    bad = [r for r in rules if not isinstance(r, AutoRule)]
    if bad:
        raise TypeError(f"AUTO_TABLE's values must be AutoRule, got {bad[0]!r}")
    for rule in rules:
        if rule.matches(n, batch, name, dev) and _auto_can_run(rule.method, n, name):
            break
    else:
        raise LookupError(f"AUTO_TABLE has no rule for n={n} batch={batch} {name} on {dev}")
    if len(_AUTO_MEMO) >= 4096:   # many distinct shapes: start over rather than grow
        _AUTO_MEMO.clear()
    _AUTO_MEMO[key] = (rule.method, rules, fused_available)
    return rule.method


_AUTO_MEMO: dict = {}


def resolve_method(method: str, n: int, batch: int = 1, dtype="float64", device="cuda") -> str:
    """The method that runs for ``method`` on ``batch`` matrices of order ``n``.

    Parameters
    ----------
    method : str
        One of :data:`METHOD_NAMES`; ``"auto"`` is resolved by the first matching rule
        of :data:`AUTO_TABLE`, any other name is returned as it is.
    n, batch : int
        Matrix order and number of matrices.
    dtype : str or dtype
        float32, float64, complex64, complex128.
    device : str
        ``"cuda"`` / ``"cpu"`` (or a device string such as ``"cuda:1"``).

    Returns
    -------
    str
        A key of :data:`INVERSE_METHODS`.

    Raises
    ------
    ValueError
        Unknown method, a GPU-only method on the CPU, n or batch not an int >= 0, a device
        other than cuda / cpu.
    TypeError
        An unsupported dtype.
    LookupError
        :data:`AUTO_TABLE` has no rule for the shape.

    Examples
    --------
    >>> resolve_method("auto", 16384, 1, "float64", "cuda")
    'gemm_lauum'
    >>> resolve_method("auto", 512, 1, "float64", "cpu")
    'potri'
    """
    dev = str(device).split(":")[0]
    if method not in METHOD_NAMES:
        raise ValueError(f"method must be one of {', '.join(METHOD_NAMES)}, got {method!r}")
    for what, v in (("n", n), ("batch", batch)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0:
            raise ValueError(f"{what} must be an int >= 0, got {v!r}")
    if dev not in ("cuda", "cpu"):
        raise ValueError(f"device must be 'cuda' or 'cpu' (or 'cuda:<index>'), got {device!r}")
    name = dtype_info(dtype).name   # TypeError for a dtype no method takes
    if method == "auto":
        method = _auto(n, batch, name, dev)
    if dev != "cuda" and INVERSE_METHODS[method].gpu_only:
        raise ValueError(f"method {method!r} runs on the GPU "
                         f"({INVERSE_METHODS[method].routine_name(dtype, True)}) "
                         "and needs a CUDA input")
    return method


def inverse_method(L, method: str = "auto") -> str:
    """The method :func:`cholesky_inverse` runs for ``L`` and ``method`` (``auto`` resolved).

    Parameters
    ----------
    L : array (..., n, n)
        The factor (only its shape, dtype and device are used).
    method : str
        One of :data:`METHOD_NAMES`.

    Returns
    -------
    str
        A key of :data:`INVERSE_METHODS`; reports and benchmarks name it.

    Raises
    ------
    ValueError, TypeError, LookupError
        As :func:`resolve_method`, and for a non-square or unsupported L.

    Examples
    --------
    >>> import numpy as np
    >>> inverse_method(np.eye(3), "auto")
    'potri'
    """
    c, n, batch = _factor_operand(L)
    return resolve_method(method, n, batch, c.dtype.name, "cuda" if c.on_gpu else "cpu")


def _raise_for_status(routine: str, acc, n: int, batch_shape, upper: bool) -> None:
    """Decode the per-matrix check record of ``backends.*.inverse_status`` (on the host)
    and raise for the first failing batch element."""
    acc = np.asarray(acc).reshape(-1, 3)
    if not acc.any():  # the common case: nothing to decode
        return
    zero = np.where(acc[:, 0] > 0, n - acc[:, 0] + 1, 0)
    info = acc[:, 2]
    code = np.where(info != 0, info, zero)
    raise_for_info(routine, code.reshape(batch_shape), batch_shape, SingularFactorError)
    bad = np.flatnonzero(acc[:, 1])
    if bad.size:
        i = int(bad[0])
        where = i if batch_shape else None
        what = ("the factor's " + ("upper" if upper else "lower") + " triangle has non-finite "
                "entries") if acc[i, 1] & 1 else (
            "the inverse has non-finite entries although the factor is finite with no zero on "
            "its diagonal (overflow)")
        raise NonFiniteError(routine, what, where, tuple(batch_shape))


def cholesky_inverse(L, upper: bool = False, *, method: str = "potrs", check: bool = True):
    """Inverse of A = L·Lᴴ (or Uᴴ·U) from its Cholesky factor.

    Parameters
    ----------
    L : array (..., n, n)
        The factor (e.g. from :func:`potrf` or ``torch.linalg.cholesky``); only its
        lower (or ``upper``) triangle is read. float32, float64, complex64,
        complex128; torch (CUDA or CPU), CuPy or NumPy.
    upper : bool
        L holds U with A = Uᴴ·U (``uplo = upper``).
    method : str
        A key of :data:`INVERSE_METHODS` or ``"auto"``:

        * ``"potrs"`` (default) — ``cusolverDnXpotrs`` on the identity, torch's
          CUDA path (LAPACK ``?potrs`` on the CPU); not exactly Hermitian.
        * ``"potri"`` — ``?potri`` + mirror, torch's CPU path; exactly Hermitian.
        * ``"trsm"`` / ``"trsm_batched"`` (GPU only) — two cuBLAS ``trsm`` /
          ``trsmBatched`` solves on the identity (torch >= 2.12 for batch > 1).
        * ``"trtri_lauum"`` / ``"rec_trtri_lauum"`` — ``trtri`` then ``lauum`` as
          recursive blocked plans (:mod:`cusolver_trace.plans`) whose flops run in
          GEMM-class cuBLAS kernels: the potri amount of work (2n³/3) instead of
          potrs's 2n³. On the CPU the same plans run with torch ops (for checking).
        * ``"gemm_lauum"`` — trtri into an identity buffer, then the lauum as one GEMM
          per block row, independent parts on two streams (:func:`plans.inverse_plan`);
          ``"gemm_lauum_emu"`` the same with cuBLAS's FP64 emulation (GPU only, opt-in).
          On the CPU ``gemm_lauum`` runs its plan with torch ops (for checking).
        * ``"fused"`` (GPU only, extra ``cuda13-fused``) — one cuSOLVERDx kernel for the
          whole batch of small matrices (n up to what shared memory holds).
        * ``"torch"`` — ``torch.cholesky_inverse`` itself.
        * ``"auto"`` — by shape from :data:`AUTO_TABLE`; :func:`inverse_method`
          says which method that is.
    check : bool
        Raise when the factor has an exact zero on its diagonal, when its triangle
        holds NaN / Inf, or when the result has non-finite entries (one kernel and
        one synchronization; 3 int32 per matrix reach the host only when something is to
        report). ``False``:
        nothing is inspected or synchronized, and a bad factor gives whatever the
        routine leaves (inf / nan for the solve-based methods, a partial result for
        potri).

    Returns
    -------
    Ainv : array (..., n, n), same kind, dtype and device as L.

    Raises
    ------
    SingularFactorError
        (``LinAlgError``) a diagonal element of the factor is zero (``check=True``).
    NonFiniteError
        (``LinAlgError``) non-finite factor or result (``check=True``).
    ValueError
        Unknown method, a GPU-only method on a CPU input, non-square L.
    TypeError
        Unsupported dtype or array type.
    GPUUnavailableError
        A CUDA input, but CuPy / nvmath-python are missing.

    Mirrors ``torch.cholesky_inverse`` (CUDA and CPU paths, torch 2.3 – 2.14).
    Work (LAWN 41 real flops, complex ×4): potrs / trsm 2n³; potri and the
    trtri_lauum methods 2n³/3.

    Examples
    --------
    >>> import numpy as np, cusolver_trace as ct
    >>> L = np.array([[2.0, 0.0], [1.0, 1.0]])          # A = L·Lᵀ = [[4, 2], [2, 2]]
    >>> ct.cholesky_inverse(L)
    array([[ 0.5, -0.5],
           [-0.5,  1. ]])
    >>> ct.cholesky_inverse(L, method="rec_trtri_lauum")
    array([[ 0.5, -0.5],
           [-0.5,  1. ]])
    """
    c, n, batch = _factor_operand(L)
    upper, check = flag(upper, "upper"), flag(check, "check")
    used = resolve_method(method, n, batch, c.dtype.name, "cuda" if c.on_gpu else "cpu")
    batch_shape = c.batch_shape
    if n == 0 or batch == 0:
        return _empty_result(c, c.shape, batch_shape)[0]
    m = INVERSE_METHODS[used]
    acc = None
    if c.on_gpu:
        if check and m.cuda_checked is not None:  # the check inside the method's own kernel
            x, acc = m.cuda_checked(c.data, upper)
        else:
            x, info = m.cuda(c.data, upper)
            if check:  # None when nothing is to report: one launch, one sync, nothing copied
                acc = _cuda().inverse_check(c.data, x, upper, info)
    else:
        factor = as_numpy(c)
        x, info = m.cpu(factor, upper)
        if check:
            acc = _cpu.inverse_status(factor, x, upper, info)
    if acc is not None:
        _raise_for_status(m.routine_name(c.dtype.name, c.on_gpu), acc, n, batch_shape, upper)
    return wrap(x, c)


# --------------------------------------------------------------------------- A → A⁻¹
SPD_INVERSE_METHODS = ("potrf_trsm_batched", "potrf_gemm_lauum", "torch",
                       *(m for m in INVERSE_METHODS if m != "torch"), "auto")
"""Every ``method=`` value :func:`spd_inverse` accepts: ``"potrf_trsm_batched"`` (fused, GPU
only), ``"potrf_gemm_lauum"`` (one plan: blocked potrf and gemm_lauum scheduled together),
``"torch"`` (torch's two calls), a :data:`INVERSE_METHODS` key (potrf, then that
``cholesky_inverse`` method) or ``"auto"``."""


def resolve_spd_method(method: str, n: int, batch: int = 1, dtype="float64",
                       device="cuda") -> str:
    """What :func:`spd_inverse` runs for ``method``: ``"potrf_trsm_batched"``, ``"torch"``,
    or the :data:`INVERSE_METHODS` key run after potrf (``"auto"``: potrf, then the
    ``cholesky_inverse`` method :data:`AUTO_TABLE` picks for the factor; not yet measured
    end to end, so no rule of its own).

    Examples
    --------
    >>> resolve_spd_method("auto", 16384, 1, "float64", "cuda")
    'gemm_lauum'
    >>> resolve_spd_method("potrf_trsm_batched", 8, 100)
    'potrf_trsm_batched'
    """
    dev = str(device).split(":")[0]
    if method not in SPD_INVERSE_METHODS:
        raise ValueError(f"method must be one of {', '.join(SPD_INVERSE_METHODS)}, got {method!r}")
    if method == "potrf_trsm_batched":
        if dev != "cuda":
            raise ValueError("method 'potrf_trsm_batched' runs cuSOLVER / cuBLAS and needs a "
                             "CUDA input")
        return method
    if method in ("torch", "potrf_gemm_lauum"):
        return method
    return resolve_method(method, n, batch, dtype, dev)


def spd_inverse_method(A, method: str = "auto") -> str:
    """The method :func:`spd_inverse` runs for ``A`` and ``method`` (``auto`` resolved).

    Parameters
    ----------
    A : array (..., n, n)
        Only its shape, dtype and device are used.
    method : str
        One of :data:`SPD_INVERSE_METHODS`.

    Returns
    -------
    str
        ``"potrf_trsm_batched"``, ``"torch"`` or the :data:`INVERSE_METHODS` key run after potrf.

    Examples
    --------
    >>> import numpy as np
    >>> spd_inverse_method(np.eye(3))
    'potri'
    """
    a = operand(A, "A")
    n = require_square(a, "A")
    batch = math.prod(a.batch_shape)
    return resolve_spd_method(method, n, batch, a.dtype.name, "cuda" if a.on_gpu else "cpu")


def _spd_torch(A, upper):
    import torch

    L, info = torch.linalg.cholesky_ex(A, upper=upper)
    if A.is_cuda:
        return L, info.to(torch.int32), torch.cholesky_inverse(L, upper=upper)
    x, _ = _torch_cpu(L.numpy(), upper)
    return L, info.to(torch.int32), torch.from_numpy(x)


def spd_inverse(A, upper: bool = False, *, method: str = "auto", check: bool = True):
    """Inverse of a Hermitian positive definite A through its Cholesky factorization.

    The same as ``torch.cholesky_inverse(torch.linalg.cholesky(A, upper=upper),
    upper=upper)``, as one operation with one check.

    Parameters
    ----------
    A : array (..., n, n)
        Hermitian positive definite; only the lower (``upper=False``) or upper triangle
        is read. float32, float64, complex64, complex128; torch (CUDA or CPU), CuPy or
        NumPy.
    upper : bool
        Factor the upper triangle (A = Uᴴ·U) instead of the lower (A = L·Lᴴ).
    method : str
        One of :data:`SPD_INVERSE_METHODS`:

        * ``"auto"`` (default) — :func:`potrf` (torch's cuSOLVER choice), then the
          :func:`cholesky_inverse` method that ``"auto"`` picks for the factor;
        * a :data:`INVERSE_METHODS` key (``"potri"``, ``"rec_trtri_lauum"``,
          ``"gemm_lauum"``, …) — :func:`potrf`, then that method; except ``"fused"`` (GPU
          only, small n): one cuSOLVERDx kernel, potrf then potrs on the identity, the factor
          never leaving shared memory (:mod:`cusolver_trace.backends.fused`);
        * ``"potrf_trsm_batched"`` (GPU only) — one ``cusolverDn<t>potrfBatched`` and two
          ``cublas<t>trsmBatched`` on the identity, one working buffer (small batched
          matrices);
        * ``"potrf_gemm_lauum"`` — one plan (:func:`cusolver_trace.plans.spd_inverse_plan`):
          a recursive blocked potrf in place, then ``gemm_lauum``'s calls on the same
          buffer, scheduled together so that the inverse's first blocks overlap the
          factorization's trailing updates (on the CPU: the same plan with torch ops);
        * ``"torch"`` — ``torch.linalg.cholesky_ex`` and ``torch.cholesky_inverse``.
    check : bool
        Raise when the factorization fails, when the factor has an exact zero on its
        diagonal or non-finite entries, or when the result has non-finite entries: one
        check kernel and one synchronization for the whole operation (potrf's ``info``
        travels with the inverse's record). ``False``: nothing is inspected or
        synchronized; where A is not positive definite the result is garbage.

    Returns
    -------
    Ainv : array (..., n, n), same kind, dtype and device as A
        Hermitian (the solve-based methods: up to rounding).

    Raises
    ------
    NotPositiveDefiniteError
        (``numpy.linalg.LinAlgError``) a leading minor is not positive definite, or a
        pivot is not finite (``check=True``), naming the minor and the batch element as
        :func:`potrf` does.
    SingularFactorError, NonFiniteError
        (``LinAlgError``) as :func:`cholesky_inverse` (``check=True``; e.g. an overflowing
        inverse).
    ValueError
        Unknown method, a GPU-only method on a CPU input, A not square.
    TypeError
        Unsupported dtype or array type; ``upper`` / ``check`` not a bool.
    GPUUnavailableError
        A CUDA input, but CuPy / nvmath-python are missing.

    Work (LAWN 41 real flops, complex ×4): potrf n³/3, plus the inverse's (2n³/3 for
    potri and the trtri_lauum / gemm_lauum methods, 2n³ for the solve-based ones).

    Examples
    --------
    >>> import numpy as np, cusolver_trace as ct
    >>> ct.spd_inverse(np.array([[4.0, 2.0], [2.0, 2.0]]))
    array([[ 0.5, -0.5],
           [-0.5,  1. ]])
    >>> ct.spd_inverse(np.array([[4.0, 2.0], [2.0, 2.0]]), method="gemm_lauum")
    array([[ 0.5, -0.5],
           [-0.5,  1. ]])
    """
    a = operand(A, "A")
    upper, check = flag(upper, "upper"), flag(check, "check")
    n = require_square(a, "A")
    batch_shape = a.batch_shape
    batch = math.prod(batch_shape)
    used = resolve_spd_method(method, n, batch, a.dtype.name, "cuda" if a.on_gpu else "cpu")
    if n == 0 or batch == 0:
        return _empty_result(a, a.shape, batch_shape)[0]
    dt = a.dtype
    if used == "torch":
        import torch

        data = a.data if a.on_gpu else torch.from_numpy(
            np.array(as_numpy(a), dtype=dt.numpy, order="C", copy=True))
        l, info, x = _spd_torch(data, upper)
        proutine, iroutine = "torch.linalg.cholesky_ex", "torch.cholesky_inverse"
        if not a.on_gpu:
            l, info, x = l.numpy(), info.numpy(), x.numpy()
    elif used == "potrf_gemm_lauum":
        proutine = (f"potrf_gemm_lauum plan (cusolverDn{dt.prefix.upper()}potrf blocks)"
                    if a.on_gpu else "potrf_gemm_lauum plan (torch reference executor)")
        iroutine = "potrf_gemm_lauum plan"
        if a.on_gpu:
            from .backends import cuda_plans

            x, info = cuda_plans.potrf_gemm_lauum(a.data, upper)
            l = a.data  # the factor is overwritten; its pivots are checked in the backend
        else:
            import torch

            from .plans import run_inverse_reference, spd_inverse_plan

            l = as_numpy(a)
            infos: list = []
            x = run_inverse_reference(
                spd_inverse_plan(n, upper, dtype=dt.name),
                torch.from_numpy(np.array(l, dtype=dt.numpy, order="C", copy=True)), infos).numpy()
            info = np.asarray(infos, dtype=np.int32)
    elif a.on_gpu:
        if used == "fused":
            proutine = _routine(dt, "potrf", True, "fused")
            iroutine = INVERSE_METHODS["fused"].routine_name(dt.name, True)
            if check:  # the check in the same kernel (A's triangle, the result, potrf's info)
                x, _, acc = _fused().potrf_inverse_checked(a.data, upper)
                if acc is not None:
                    _raise_for_spd_record(proutine, iroutine, acc, n, batch_shape, upper)
                return wrap(x, a)
            x, info = _fused().potrf_inverse(a.data, upper)
            l = a.data  # the factor stays in shared memory: the check reads A's triangle
        elif used == "potrf_trsm_batched":
            from .backends import cuda_plans

            x, l, info = cuda_plans.potrf_trsm_batched_factor(a.data, upper)
            proutine = _routine(dt, "potrf", True, "batched")
            iroutine = f"cublas{dt.prefix.upper()}trsmBatched"
        else:
            gapi = _gpu_api("auto", batch)
            l, info = _cuda().potrf(a.data, upper, gapi)
            m = INVERSE_METHODS[used]
            x, _ = m.cuda(l, upper)
            proutine, iroutine = _routine(dt, "potrf", True, gapi), m.routine_name(dt.name, True)
    else:
        l, info = _cpu.potrf(as_numpy(a), upper)
        m = INVERSE_METHODS[used]
        x, _ = m.cpu(l, upper)
        proutine, iroutine = _routine(dt, "potrf", False), m.routine_name(dt.name, False)
    if check:
        info = info.reshape(batch_shape)
        if used != "potrf_gemm_lauum":  # that plan's backend has done it (l is A there)
            info = _flag_nan_pivots(l, info)
        if a.on_gpu:  # potrf's info rides in the record's info column: one launch, one sync
            acc = _cuda().inverse_check(l, x, upper, info.reshape(-1))
        else:
            acc = _cpu.inverse_status(l, x, upper, info)
        if acc is not None:
            _raise_for_spd_record(proutine, iroutine, acc, n, batch_shape, upper)
    return wrap(x, a)


def _raise_for_spd_record(proutine: str, iroutine: str, acc, n: int, batch_shape,
                          upper: bool) -> None:
    """Raise for the check record of an A → A⁻¹ call: potrf's info column first (the
    factorization failed), then the inverse's record."""
    acc = np.asarray(acc).reshape(-1, 3)
    raise_for_info(proutine, acc[:, 2].reshape(batch_shape), batch_shape)
    _raise_for_status(iroutine, acc, n, batch_shape, upper)
