"""Symmetric / Hermitian eigensolvers: :func:`eigh` (eigenvalues and eigenvectors) and
:func:`eigvalsh` (eigenvalues only), with one implementation table, :data:`SYEV`.

Rows: torch's library routines (``Xsyevd``: a loop of ``cusolverDnXsyevd``; ``XsyevBatched``:
``cusolverDnXsyevBatched``, in calls of at most 32,768 matrices so that any batch runs;
``syevj``: a loop of ``cusolverDn<t>syevj``), the routines torch does not call
(``syevjBatched``: Jacobi on the whole batch, n <= 32; ``syevd``: the legacy 32-bit
``cusolverDn<t>syevd``), the project's own kernel (``jacobi``: one CUDA thread per matrix,
cyclic Jacobi, n <= 8, :mod:`cusolver_trace.backends.jacobi_small`; GPU only) and torch's own
call (``torch``). The CPU column of ``Xsyevd``, ``XsyevBatched`` and ``syevd`` runs LAPACK
``?syevd`` / ``?heevd`` (:func:`cusolver_trace.backends.cpu.syevd`), the routine torch's CPU
path calls.

Each routine reads: validate → resolve ``method`` through :data:`SYEV` → run → check. The check
(``check=True``, the one check policy of :mod:`cusolver_trace.routines`): ``info > 0`` raises
:class:`~cusolver_trace.errors.NoConvergenceError` naming the batch element, NaN / Inf in the
eigenvalues (or vectors) :class:`~cusolver_trace.errors.NonFiniteError`; one synchronization.
``check=False`` never synchronizes.
"""
from __future__ import annotations

import math

import numpy as np

from .._arrays import Array, ArrayLike, as_numpy, flag, wrap
from .._dtypes import dtype_info
from ..backends import cpu as _cpu
from ..errors import NoConvergenceError, NonFiniteError
from ._lu_check import square
from ._table import AutoRule, Impl, Table, device_of, raise_for_info

_MOD: list = []


def _cuda():
    """:mod:`cusolver_trace.backends.cuda_eigh`, imported on first use (it loads the bindings)."""
    if not _MOD:
        from ..backends import cuda_eigh

        _MOD.append(cuda_eigh)
    return _MOD[0]


def _lib(api: str, **kw):
    def run(a, upper: bool, vectors: bool):
        W, V, info = _cuda().syevd(a, upper, vectors, api, **kw)
        return (W, V), info
    run.__name__ = f"cuda_{api}"
    return run


def _jacobi(a, upper: bool, vectors: bool):
    from ..backends.jacobi_small import syevj_small

    W, V, info = syevj_small(a, upper, vectors)
    return (W, V), info


_JACOBI_MAX_N = 8   # backends.jacobi_small.JACOBI_MAX_N, without importing the backend


def _lapack(a: np.ndarray, upper: bool, vectors: bool):
    w, v, info = _cpu.syevd(a, upper, vectors)
    return (w, v), info


def _torch_cuda(a, upper: bool, vectors: bool):
    import torch

    uplo = "U" if upper else "L"
    if vectors:
        w, v = torch.linalg.eigh(a, UPLO=uplo)
    else:
        w, v = torch.linalg.eigvalsh(a, UPLO=uplo), None
    return (w, v), torch.zeros(math.prod(a.shape[:-2]), dtype=torch.int32, device=a.device)


def _torch_cpu(a: np.ndarray, upper: bool, vectors: bool):
    import torch

    (w, v), info = _torch_cuda(torch.from_numpy(a), upper, vectors)
    return (w.numpy(), None if v is None else v.numpy()), info.numpy()


_XSYEV_CHUNK = 32768   # backends.cuda_eigh.XSYEV_BATCHED_MAX, without importing the backend

# workspace (Impl.workspace, n² beyond A, float64), from the code, not measured: 1.0 for
# every row, the eigenvectors' column-major buffer (eigvalsh: the same buffer as scratch; the
# jacobi kernel without vectors: none) plus the n eigenvalues; cuSOLVER's workspace (syevd's
# is O(n²)) is not counted: its size is the library's, held in the backend's grow-only
# scratch between calls (torch's own call allocates it per call).
SYEV = Table("eigh", {
    "Xsyevd": Impl("Xsyevd", "cusolverDnXsyevd per matrix (divide and conquer; torch 2.11's "
                   "loop)", _lib("Xsyevd"), _lapack, "syevd", "cusolverDnXsyevd",
                   "LAPACK {t}syevd", workspace=1.0),
    "XsyevBatched": Impl("XsyevBatched", "cusolverDnXsyevBatched on the batch, at most 32,768 "
                         "matrices per call (torch 2.12+ makes one call, which fails from "
                         "65,536 on)", _lib("XsyevBatched", chunk=_XSYEV_CHUNK), _lapack,
                         "syevd", "cusolverDnXsyevBatched", "LAPACK {t}syevd", workspace=1.0),
    "syevjBatched": Impl("syevjBatched", "cusolverDn<t>syevjBatched / heevjBatched (Jacobi, "
                         "n <= 32, sorted, tolerance eps, 100 sweeps)", _lib("syevjBatched"),
                         None, "syevd", "cusolverDn{T}syevjBatched", workspace=1.0),
    "syevj": Impl("syevj", "cusolverDn<t>syevj / heevj per matrix (Jacobi; torch 2.11's float32 "
                  "loop for 32 <= n <= 512)", _lib("syevj"), None, "syevd",
                  "cusolverDn{T}syevj", workspace=1.0),
    "syevd": Impl("syevd", "cusolverDn<t>syevd / heevd per matrix (legacy 32-bit API)",
                  _lib("syevd"), _lapack, "syevd", "cusolverDn{T}syevd",
                  "LAPACK {t}syevd", workspace=1.0),
    "jacobi": Impl("jacobi", "one CUDA thread per matrix, cyclic Jacobi (n <= 8)", _jacobi,
                   None, "syevd", "cyclic Jacobi (cusolver-trace kernel)", workspace=1.0),
    "torch": Impl("torch", "torch.linalg.eigh / eigvalsh itself", _torch_cuda, _torch_cpu,
                  "syevd", "torch.linalg.eigh", "torch.linalg.eigh", workspace=1.0),
}, auto={
    "cpu: LAPACK syevd / heevd (torch's CPU path)": AutoRule("Xsyevd", device="cpu"),
    "n <= 8: the Jacobi kernel, one thread per matrix": AutoRule("jacobi", device="cuda",
                                                                 n_max=8),
    "batches of 2+ matrices, 9 <= n <= 32: syevjBatched": AutoRule(
        "syevjBatched", device="cuda", batch_min=2, n_min=9, n_max=32),
    "batches of 2+ matrices: cusolverDnXsyevBatched, any batch size": AutoRule(
        "XsyevBatched", device="cuda", batch_min=2),
    "otherwise: torch's own choice": AutoRule("torch"),
})
"""The methods of :func:`eigh` and :func:`eigvalsh` (flops: ``syevd``, or ``syevd_values``
without vectors). ``auto`` on the GPU: n <= 8 runs the Jacobi kernel (one thread per matrix,
any batch); batches of 9 <= n <= 32 ``syevjBatched`` (0.85 ms at 1000 × 32 against
``XsyevBatched``'s 1.09 and torch's 0.98); other batches of two or more matrices run
``XsyevBatched`` in calls of at most 32,768 matrices (the routine torch 2.12+ calls for every shape, which also runs the batches
torch cannot); one matrix runs torch's own call. Measured on an H200 (torch 2.11.0+cu130,
float64, checks on, ``benchmarks/eigh_table.py``, 2026-12-03; docs/performance.md)."""


#: Rows whose kernel reports non-finite input in ``info`` (n + 1, with NaN results), so that
#: their check reads ``info`` alone (one reduction and one synchronization).
_INFO_SAYS_ALL = frozenset({"jacobi"})


def _uplo(UPLO) -> bool:
    """``upper`` from torch's ``UPLO`` ("L" / "U", either case)."""
    if not isinstance(UPLO, str) or UPLO.upper() not in ("L", "U"):
        raise ValueError(f"UPLO must be 'L' or 'U', got {UPLO!r}")
    return UPLO.upper() == "U"


def routine_name(row: Impl, dtype, on_gpu: bool) -> str:
    """The routine a row runs, as its C / LAPACK name (``heev`` for complex dtypes)."""
    import re

    name = row.routine_name(dtype, on_gpu)
    return re.sub(r"\b(cusolverDn[CZ]|LAPACK [cz])syev", r"\1heev", name)


def _check(routine: str, info, w, v, batch_shape) -> None:
    """``info`` first (:class:`NoConvergenceError`), then NaN / Inf in the eigenvalues (and
    vectors). On a device one scalar comes to the host (one synchronization) when nothing is
    wrong; only a failing batch goes back for its details."""
    batch = math.prod(batch_shape)
    if isinstance(w, np.ndarray):
        bad = ~np.isfinite(w).reshape(batch, -1).all(axis=1)
        if v is not None:
            bad |= ~np.isfinite(v).reshape(batch, -1).all(axis=1)
        flat_info = np.asarray(info).reshape(-1)
    else:
        import torch

        # |x| summed per matrix: NaN / Inf propagate (an overflow to Inf of a finite sum is
        # harmless: eigenvalues are at most ‖A‖₂ and eigenvectors have unit columns)
        finite = torch.isfinite(w.reshape(batch, -1).abs().sum(-1))
        if v is not None:
            finite &= torch.isfinite(v.reshape(batch, -1).abs().sum(-1))
        fine = info.reshape(-1).eq(0) & finite
        if bool(fine.all()):       # the one synchronization when all is well
            return
        flat_info = info.reshape(-1).cpu().numpy().astype(np.int64)
        bad = (~finite).cpu().numpy()
    raise_for_info(routine, flat_info.reshape(batch_shape), batch_shape, NoConvergenceError)
    hit = np.flatnonzero(bad)
    if hit.size:
        i = int(hit[0])
        raise NonFiniteError(routine, "the eigenvalues or eigenvectors have non-finite entries "
                             "(NaN / Inf in the triangle read, or an overflow)",
                             i if batch_shape else None, tuple(batch_shape))


def _syev(A, UPLO, check, method, vectors: bool):
    a, n = square(A, "A")
    upper = _uplo(UPLO)
    check = flag(check, "check")
    batch_shape = a.batch_shape
    batch = math.prod(batch_shape)
    used = SYEV.resolve(method, n, batch, a.dtype.name, device_of(a))
    if used == "syevjBatched" and n > 32:   # on the CPU too: one domain
        raise ValueError(f"method 'syevjBatched' (cusolverDn<t>syevjBatched) takes matrices of "
                         f"order <= 32, got n = {n}")
    if used == "jacobi" and n > _JACOBI_MAX_N:
        raise ValueError(f"method 'jacobi' (one CUDA thread per matrix, cyclic Jacobi) takes "
                         f"matrices of order <= {_JACOBI_MAX_N}, got n = {n}")
    real = dtype_info(a.dtype.real_name)
    if n == 0 or batch == 0:
        if a.kind == "numpy":
            return np.zeros((*batch_shape, n), real.numpy), (np.zeros(a.shape, a.dtype.numpy)
                                                             if vectors else None)
        import torch

        dev = a.data.device
        w = torch.zeros((*batch_shape, n), dtype=real.torch, device=dev)
        v = torch.zeros(a.shape, dtype=a.dtype.torch, device=dev) if vectors else None
        return wrap(w, a), (wrap(v, a) if vectors else None)
    row = SYEV.rows[used]
    (w, v), info = (row.cuda(a.data, upper, vectors) if a.on_gpu
                    else row.cpu(as_numpy(a), upper, vectors))
    if check and used in _INFO_SAYS_ALL and a.on_gpu:
        if bool(info.any()):   # the kernel's info also flags non-finite input (NaN results)
            name = routine_name(row, a.dtype.name, True)
            nan = (~w.isfinite().reshape(batch, -1).all(-1)).nonzero()
            if len(nan):
                i = int(nan[0])
                raise NonFiniteError(name, "the eigenvalues or eigenvectors have non-finite "
                                     "entries (NaN / Inf in the triangle read, or an overflow)",
                                     i if batch_shape else None, tuple(batch_shape))
            raise_for_info(name, info.reshape(batch_shape), batch_shape, NoConvergenceError)
    elif check:
        _check(routine_name(row, a.dtype.name, a.on_gpu), info, w, v, batch_shape)
    return wrap(w, a), (wrap(v, a) if vectors else None)


def eigh(A: ArrayLike, *, UPLO: str = "L", check: bool = True,
         method: str = "auto") -> tuple[Array, Array]:
    """Eigenvalues and eigenvectors of Hermitian (real symmetric) matrices, like LAPACK /
    cuSOLVER ``?syevd`` / ``?heevd`` and ``torch.linalg.eigh``.

    Parameters
    ----------
    A : array (..., n, n)
        float32, float64, complex64, complex128; torch (CUDA or CPU), CuPy or NumPy; never
        written. Only the ``UPLO`` triangle is read (the diagonal's imaginary part is ignored).
    UPLO : {"L", "U"}
        The triangle read (either case), as in torch.
    check : bool
        Raise for a failed convergence or non-finite results (one synchronization).
    method : str
        ``"auto"`` or a row of :data:`cusolver_trace.routines.SYEV`: ``"Xsyevd"``,
        ``"XsyevBatched"``, ``"syevjBatched"`` (GPU, n <= 32), ``"syevj"`` (GPU), ``"syevd"``,
        ``"jacobi"`` (GPU, n <= 8), ``"torch"``.

    Returns
    -------
    w : array (..., n), the real dtype of A
        Eigenvalues, ascending.
    V : array (..., n, n), A's dtype
        Orthonormal eigenvectors as columns: A·V = V·diag(w). Signs / phases are the
        library's (they differ between routines).

    Raises
    ------
    NoConvergenceError
        (``LinAlgError``) ``check=True`` and ``info > 0``, naming the batch element.
    NonFiniteError
        (``LinAlgError``) ``check=True`` and NaN / Inf in the result.
    ValueError
        A not square; UPLO not L / U; unknown method; ``syevjBatched`` with n > 32, ``jacobi``
        with n > 8; a GPU-only method on the CPU.
    TypeError
        Unsupported dtype or array type; ``check`` not a bool.
    ~cusolver_trace.errors.CuSolverStatusError
        A library status.
    torch.linalg.LinAlgError, RuntimeError
        ``method="torch"`` raises what torch raises (a failed convergence; on the GPU a batch
        of 65,536 or more, which torch cannot run).

    Work (``checks.flops('syevd')``): 14n³/3 real flops with eigenvectors, 4n³/3 without.

    Examples
    --------
    >>> import numpy as np, cusolver_trace as ct
    >>> w, V = ct.eigh(np.array([[2.0, 1.0], [1.0, 2.0]]))
    >>> w
    array([1., 3.])
    >>> bool(np.allclose(np.abs(V), np.sqrt(0.5)))
    True
    """
    w, v = _syev(A, UPLO, check, method, True)
    return w, v


def eigvalsh(A: ArrayLike, *, UPLO: str = "L", check: bool = True,
             method: str = "auto") -> Array:
    """Eigenvalues of Hermitian (real symmetric) matrices, like ``?syevd`` with ``jobz = 'N'``
    and ``torch.linalg.eigvalsh``.

    Parameters, methods and errors are those of :func:`eigh`.

    Returns
    -------
    w : array (..., n), the real dtype of A
        Eigenvalues, ascending.

    Examples
    --------
    >>> import numpy as np, cusolver_trace as ct
    >>> ct.eigvalsh(np.array([[2.0, 1.0], [1.0, 2.0]]), UPLO="U")
    array([1., 3.])
    """
    return _syev(A, UPLO, check, method, False)[0]
