"""The LU family: ``getrf``, ``getrs``, ``lu_solve``, ``solve`` and ``inv``, each with its
implementation table (:data:`GETRF`, :data:`GETRS`, :data:`LU_SOLVE`, :data:`SOLVE`,
:data:`INV`): torch's library entry points as rows (``legacy``: ``cusolverDn<t>getrf`` /
``getrs`` per matrix; ``batched``: cuBLAS ``getrfBatched`` / ``getrsBatched``; ``X``: the 64-bit
``cusolverDnXgetrf`` / ``Xgetrs``), torch's own call (``torch``), and the faster paths of
:mod:`cusolver_trace.backends.cuda_lu_fast` (``matinv_batched``, ``getri_batched``, ``getri``,
``getri_rec``, ``getri_X``). The CPU column runs LAPACK (:mod:`cusolver_trace.backends.cpu`)
for every row but ``torch``, which runs torch's CPU call.

Each routine reads: validate → resolve ``method`` through its table → run → check. The
check (``check=True``) is the one check policy of :mod:`cusolver_trace.routines`: getrf's
``info > 0`` raises :class:`~cusolver_trace.errors.SingularMatrixError` naming the column and
the batch element, NaN / Inf in the result :class:`~cusolver_trace.errors.NonFiniteError`;
one synchronization. ``check=False`` never synchronizes.

The flop counts of the rows (LAWN 41, :func:`cusolver_trace.checks.flops`) are those of the
work after getrf in :data:`SOLVE` and :data:`INV` (the LU ops add getrf as their
``plus_count``).

``auto`` in :data:`SOLVE` and :data:`INV` is a first rule set from the libraries' own
guidance, **not yet measured** (cuBLAS documents its batched LU routines for small matrices
whose launch overhead dominates, and ``matinvBatched`` for n <= 32; CuPy's batched
``linalg.inv`` runs getrfBatched + getriBatched; getri's algorithm does 4n³/3 flops after
getrf where torch's inverse does 2n³). Every other shape runs torch's own call. Assign new
mappings to ``SOLVE.auto`` / ``INV.auto`` to try other rules.
"""
from __future__ import annotations

import math

import numpy as np

from .._arrays import Array, ArrayLike, as_numpy, flag, operand, same_backend, wrap
from ..backends import cpu as _cpu
from ._lu_check import (batch_shape_of, check_lu, empty_pivots, pivots_operand, plain, rhs_fits,
                        square)
from ._table import AutoRule, Impl, Table, device_of, empty_result, raise_for_info
from .cholesky import broadcast

_MODULES: dict = {}


def _backend(name: str):
    """``cusolver_trace.backends.<name>``, imported on first use (it loads CuPy / nvmath)."""
    mod = _MODULES.get(name)
    if mod is None:
        import importlib

        mod = _MODULES[name] = importlib.import_module(f"..backends.{name}", __package__)
    return mod


def _lu():
    return _backend("cuda_lu")


def _fast():
    return _backend("cuda_lu_fast")


def _tensor(x: np.ndarray):
    """A private, writable, native-order torch copy of a NumPy array (torch refuses or warns
    on anything else)."""
    import torch

    return torch.from_numpy(np.array(x, dtype=x.dtype.newbyteorder("="), order="C", copy=True))


def _adjoint_np(x: np.ndarray) -> np.ndarray:
    return np.conj(np.swapaxes(x, -1, -2))


# --------------------------------------------------------------------------- getrf
def _getrf_cuda(api):
    return lambda a, pivot: _lu().getrf(a, pivot, api)


def _getrf_torch_cuda(a, pivot):
    import torch

    return torch.linalg.lu_factor_ex(a, pivot=pivot)


def _getrf_torch_cpu(a, pivot):
    import torch

    LU, piv, info = torch.linalg.lu_factor_ex(_tensor(a), pivot=pivot)
    return LU.numpy(), piv.numpy(), info.numpy()


# workspace (Impl.workspace, n² beyond the inputs, result included, float64, one matrix; rows
# with right-hand sides state the n × n part, the n × nrhs result adds nrhs/n). From the code
# (for the torch rows: the calls torch makes, as the backends mirror them), not measured, but
# inv's torch row: 3.00, measured for torch.linalg.inv on the H200 at n = 8192 (issue 27).
# getrf 1.0 (LU; cuSOLVER's workspace is the backend's grow-only scratch, kept between calls).
# getrs 0.0 (getrf's column-major LU is read in place); triangular 0.5 (the pivots unpacked
# through a float32 n × n P). solve 1.0 (LU). inv: legacy / X 3.0 (LU, an n × n identity
# expanded over the batch, the result); batched, matinv_batched, getri_batched 2.0 (a working
# copy and the result); getri, getri_rec, getri_X 3.0 (LU, U⁻¹'s copy, the permuted result).
GETRF = Table("getrf", {
    "legacy": Impl("legacy", "cusolverDn<t>getrf_bufferSize + cusolverDn<t>getrf per matrix "
                   "(torch's batch-1 path)", _getrf_cuda("legacy"), _cpu.getrf, "getrf",
                   "cusolverDn{T}getrf", "LAPACK {t}getrf", workspace=1.0),
    "batched": Impl("batched", "one cublas<t>getrfBatched for the whole batch (torch's path for "
                    "batches of n <= 16)", _getrf_cuda("batched"), _cpu.getrf, "getrf",
                    "cublas{T}getrfBatched", "LAPACK {t}getrf", workspace=1.0),
    "X": Impl("X", "cusolverDnXgetrf per matrix (64-bit API, int64 pivots converted to int32; "
              "no torch release calls it)", _getrf_cuda("X"), _cpu.getrf, "getrf",
              "cusolverDnXgetrf", "LAPACK {t}getrf", workspace=1.0),
    "torch": Impl("torch", "torch.linalg.lu_factor_ex itself", _getrf_torch_cuda, _getrf_torch_cpu,
                  "getrf", "torch.linalg.lu_factor_ex", "torch.linalg.lu_factor_ex",
                  workspace=1.0),
}, auto={
    "cpu: LAPACK getrf": AutoRule("legacy", device="cpu"),
    "batch 1: torch's cusolverDn<t>getrf": AutoRule("legacy", batch_max=1),
    "batches of n <= 16: torch's cublas<t>getrfBatched": AutoRule("batched", batch_min=2,
                                                                  n_max=16),
    "otherwise: torch's own choice (MAGMA or cuSOLVER by version)": AutoRule("torch"),
})
"""The methods of :func:`getrf`; ``auto`` is torch's own choice (its exact call where every
torch release makes the same one)."""


# --------------------------------------------------------------------------- getrs / lu_solve
def _getrs_cuda(api):
    return lambda lu, piv, b, adjoint, left: _lu().getrs(lu, piv, b, adjoint, api, left=left)


def _triangular_cuda(lu, piv, b, adjoint, left):
    return _lu().lu_solve_triangular(lu, piv, b, adjoint, left=left), None


def _getrs_cpu(lu, piv, b, adjoint, left):
    """LAPACK ``?getrs``; a solve from the right, X·op(A) = B, as op(A)ᴴ·Xᴴ = Bᴴ."""
    if left:
        return _cpu.getrs(lu, piv, b, adjoint)
    x, info = _cpu.getrs(lu, piv, _adjoint_np(b), not adjoint)
    return _adjoint_np(x), info


def _lu_solve_torch_cuda(lu, piv, b, adjoint, left):
    import torch

    return torch.linalg.lu_solve(lu, piv, b, left=left, adjoint=adjoint), None


def _lu_solve_torch_cpu(lu, piv, b, adjoint, left):
    import torch

    x = torch.linalg.lu_solve(_tensor(lu), _tensor(piv.astype(np.int32)), _tensor(b), left=left,
                              adjoint=adjoint)
    return x.resolve_conj().numpy(), None


GETRS = Table("getrs", {
    "legacy": Impl("legacy", "cusolverDn<t>getrs per matrix (torch's loop)", _getrs_cuda("legacy"),
                   _getrs_cpu, "getrs", "cusolverDn{T}getrs", "LAPACK {t}getrs", workspace=0.0),
    "batched": Impl("batched", "one cublas<t>getrsBatched, LU expanded to B's batch",
                    _getrs_cuda("batched"), _getrs_cpu, "getrs", "cublas{T}getrsBatched",
                    "LAPACK {t}getrs", workspace=0.0),
    "X": Impl("X", "cusolverDnXgetrs per matrix (64-bit API)", _getrs_cuda("X"), _getrs_cpu,
              "getrs", "cusolverDnXgetrs", "LAPACK {t}getrs", workspace=0.0),
    "triangular": Impl("triangular", "B's rows permuted by the pivots, then two cuBLAS triangular "
                       "solves (trsm loop or trsmBatched: torch's path for n > 128)",
                       _triangular_cuda, _getrs_cpu, "getrs", "cublas{T}trsm / trsmBatched",
                       "LAPACK {t}getrs", workspace=0.5),
    "torch": Impl("torch", "torch.linalg.lu_solve itself", _lu_solve_torch_cuda,
                  _lu_solve_torch_cpu, "getrs", "torch.linalg.lu_solve", "torch.linalg.lu_solve",
                  workspace=0.0),
}, auto={
    "cpu: LAPACK getrs": AutoRule("legacy", device="cpu"),
    "otherwise: torch's own choice (by n, nrhs and B's batch)": AutoRule("torch"),
})
"""The methods of :func:`getrs`; ``auto`` is torch's own ``linalg.lu_solve`` on CUDA (its
choice depends on the number of right-hand sides, which the rules do not see), LAPACK
``?getrs`` on the CPU."""

LU_SOLVE = Table("lu_solve", GETRS.rows, {}, auto_from=GETRS)
"""The methods of :func:`lu_solve`: :data:`GETRS`'s rows (a solve from the right runs as
op(A)ᴴ·Xᴴ = Bᴴ, as torch does), and its ``auto``."""


# --------------------------------------------------------------------------- solve
def _solve_cuda(api):
    """getrf, then getrs, each through ``api`` (``"legacy"`` / ``"X"``)."""
    def run(a, b, left):
        LU, piv, info = _lu().getrf(a, True, api)
        x, _ = _lu().getrs(LU, piv, b, False, api, left=left)
        return x, info
    return run


def _solve_batched(a, b, left):
    if left:
        return _fast().gesv_batched(a, b, False)
    y, info = _fast().gesv_batched(a, b.mH, True)
    return y.mH, info


def _solve_cpu(a, b, left):
    lu, piv, info = _cpu.getrf(a, True)
    x, _ = _getrs_cpu(lu, piv, b, False, left)
    return x, info


def _solve_torch_cuda(a, b, left):
    import torch

    return torch.linalg.solve_ex(a, b, left=left)


def _solve_torch_cpu(a, b, left):
    import torch

    x, info = torch.linalg.solve_ex(_tensor(a), _tensor(b), left=left)
    return x.resolve_conj().numpy(), info.numpy()


SOLVE = Table("solve", {
    "legacy": Impl("legacy", "cusolverDn<t>getrf, then cusolverDn<t>getrs, per matrix",
                   _solve_cuda("legacy"), _solve_cpu, "getrs",
                   "cusolverDn{T}getrf + cusolverDn{T}getrs", "LAPACK {t}getrf + {t}getrs",
                   workspace=1.0),
    "batched": Impl("batched", "one cublas<t>getrfBatched, then one cublas<t>getrsBatched with "
                    "every right-hand side (one prologue launch)", _solve_batched, _solve_cpu,
                    "getrs", "cublas{T}getrfBatched + cublas{T}getrsBatched",
                    "LAPACK {t}getrf + {t}getrs", workspace=1.0),
    "X": Impl("X", "cusolverDnXgetrf, then cusolverDnXgetrs, per matrix (64-bit API)",
              _solve_cuda("X"), _solve_cpu, "getrs", "cusolverDnXgetrf + cusolverDnXgetrs",
              "LAPACK {t}getrf + {t}getrs", workspace=1.0),
    "torch": Impl("torch", "torch.linalg.solve_ex itself", _solve_torch_cuda, _solve_torch_cpu,
                  "getrs", "torch.linalg.solve_ex", "torch.linalg.solve_ex", workspace=1.0),
}, auto={
    "cpu: LAPACK getrf + getrs": AutoRule("legacy", device="cpu"),
    "batches of 100+ float64 matrices, 96 <= n <= 128": AutoRule(
        "batched", device="cuda", batch_min=100, n_min=96, n_max=128, dtypes=("float64",)),
    "otherwise: torch's own choice": AutoRule("torch"),
})
"""The methods of :func:`solve` (flops: the solve after getrf). ``auto``: measured on an H200
(torch 2.11.0+cu130, float64, checks on, ``benchmarks/lu_table.py``, 2026-12-03): ``batched``
0.74 of torch's ``linalg.solve`` at 100 × 128, but 3.1 at 10000 × 8 and 1.8 at 1000 × 32 (the
check's synchronization is most of a call there); elsewhere torch's path."""


# --------------------------------------------------------------------------- inv
def _inv_getrs(api):
    """getrf, then getrs on the identity, each through ``api`` (torch's calls for ``legacy`` /
    ``batched``)."""
    def run(a):
        import torch

        if api == "batched":
            return _fast().gesv_batched(a, None, False)
        LU, piv, info = _lu().getrf(a, True, api)
        n = a.shape[-1]
        eye = torch.eye(n, dtype=a.dtype, device=a.device).expand(a.shape)
        x, _ = _lu().getrs(LU, piv, eye, False, api)
        return x, info
    return run


def _inv_cpu_getrs(a):
    lu, piv, info = _cpu.getrf(a, True)
    x, _ = _cpu.getrs_identity(lu, piv)
    return x, info


def _inv_cpu_getri(a):
    lu, piv, info = _cpu.getrf(a, True)
    x, _ = _cpu.getri(lu, piv)
    return x, info


def _fast_call(name, **kw):
    return lambda a: getattr(_fast(), name)(a, **kw)


def _inv_torch_cuda(a):
    import torch

    return torch.linalg.inv_ex(a)


def _inv_torch_cpu(a):
    import torch

    x, info = torch.linalg.inv_ex(_tensor(a))
    return x.numpy(), info.numpy()


def _getri_row(name, summary, getrf_api, trtri, solve, mirrors):
    return Impl(name, summary, _fast_call("getri", getrf_api=getrf_api, trtri=trtri, solve=solve),
                _inv_cpu_getri, "getri", mirrors, "LAPACK {t}getrf + {t}getri", workspace=3.0)


INV = Table("inv", {
    "legacy": Impl("legacy", "cusolverDn<t>getrf, then cusolverDn<t>getrs on the identity, per "
                   "matrix", _inv_getrs("legacy"), _inv_cpu_getrs, "inverse_getrs",
                   "cusolverDn{T}getrf + cusolverDn{T}getrs", "LAPACK {t}getrf + {t}getrs",
                   workspace=3.0),
    "batched": Impl("batched", "one cublas<t>getrfBatched, then one cublas<t>getrsBatched on the "
                    "identity (torch's calls for n <= 16; one prologue launch)",
                    _inv_getrs("batched"), _inv_cpu_getrs, "inverse_getrs",
                    "cublas{T}getrfBatched + cublas{T}getrsBatched", "LAPACK {t}getrf + {t}getrs",
                    workspace=2.0),
    "X": Impl("X", "cusolverDnXgetrf, then cusolverDnXgetrs on the identity, per matrix",
              _inv_getrs("X"), _inv_cpu_getrs, "inverse_getrs",
              "cusolverDnXgetrf + cusolverDnXgetrs", "LAPACK {t}getrf + {t}getrs", workspace=3.0),
    "matinv_batched": Impl("matinv_batched", "one cublas<t>matinvBatched for the whole batch "
                           "(n <= 32)", _fast_call("matinv_batched"), _inv_cpu_getri, "getri",
                           "cublas{T}matinvBatched", "LAPACK {t}getrf + {t}getri", workspace=2.0),
    "getri_batched": Impl("getri_batched", "one cublas<t>getrfBatched, then one "
                          "cublas<t>getriBatched out of place", _fast_call("getri_batched"),
                          _inv_cpu_getri, "getri", "cublas{T}getrfBatched + cublas{T}getriBatched",
                          "LAPACK {t}getrf + {t}getri", workspace=2.0),
    "getri": _getri_row("getri", "getri's algorithm: cusolverDn<t>getrf, U⁻¹ by "
                        "cusolverDnXtrtri, X·L = U⁻¹ by one right-side cublas<t>trsm, the "
                        "pivots' column interchanges", "legacy", "xtrtri", "trsm",
                        "cusolverDn{T}getrf + cusolverDnXtrtri + cublas{T}trsm"),
    "getri_rec": _getri_row("getri_rec", "getri, GEMM-rich: U⁻¹ by the recursive trtri plan "
                            "(trsm on diagonal blocks, trmm elsewhere), X·L = U⁻¹ by getri's "
                            "blocked loop (GEMM, trsm on diagonal blocks)", "legacy", "rec",
                            "blocked", "cusolverDn{T}getrf + recursive trtri + blocked "
                            "cublas{T}gemm / cublas{T}trsm"),
    "getri_X": _getri_row("getri_X", "getri with cusolverDnXgetrf (64-bit API) for the "
                          "factorization", "X", "xtrtri", "trsm",
                          "cusolverDnXgetrf + cusolverDnXtrtri + cublas{T}trsm"),
    "torch": Impl("torch", "torch.linalg.inv_ex itself", _inv_torch_cuda, _inv_torch_cpu,
                  "inverse_getrs", "torch.linalg.inv_ex", "torch.linalg.inv_ex", workspace=3.00),
}, auto={
    "cpu: LAPACK getrf + getrs on the identity (torch's CPU path)": AutoRule("legacy",
                                                                             device="cpu"),
    "batches of 100+ float64 matrices, 24 <= n <= 32: matinvBatched": AutoRule(
        "matinv_batched", device="cuda", batch_min=100, n_min=24, n_max=32,
        dtypes=("float64",)),
    "batches of 100+ float64 matrices, 96 <= n <= 128: getrfBatched + getriBatched": AutoRule(
        "getri_batched", device="cuda", batch_min=100, n_min=96, n_max=128,
        dtypes=("float64",)),
    "one float64 matrix of n >= 8192: getri, GEMM-rich": AutoRule(
        "getri_rec", device="cuda", batch_max=1, n_min=8192, dtypes=("float64",)),
    "otherwise: torch's own choice": AutoRule("torch"),
})
"""The methods of :func:`inv` (flops: the work after getrf). ``auto``: measured on an H200
(torch 2.11.0+cu130, float64, checks on, ``benchmarks/lu_table.py``, 2026-12-03), against
``torch.linalg.inv``: ``matinv_batched`` 0.69 at 1000 × 32 (2.2 at 10000 × 8), ``getri_batched``
0.88 at 100 × 128, ``getri_rec`` 0.91 at 8192 (1.04 at 4096; ``getri`` 1.33); elsewhere torch's
path. Rules only where a row was measured faster; unmeasured shapes run torch's path."""


# --------------------------------------------------------------------------- the routines
def getrf(A: ArrayLike, *, pivot: bool = True, check: bool = True,
          method: str = "auto") -> tuple[Array, Array, Array]:
    """LU factorization with partial pivoting, A = P·L·U, like LAPACK / cuSOLVER ``?getrf``.

    Parameters
    ----------
    A : array (..., n, n)
        float32, float64, complex64, complex128; torch (CUDA or CPU), CuPy or NumPy; never
        modified.
    pivot : bool
        Partial pivoting. ``False`` (CUDA only: LAPACK has no unpivoted getrf) factors
        A = L·U as ``torch.linalg.lu_factor(pivot=False)``: pivots ``1 … n``; after the cuSOLVER
        rows NaN in LU is replaced by 0, as torch does.
    check : bool
        Raise for an exact zero pivot or NaN / Inf in LU (for ``pivot=False`` also in A,
        which the NaN fix-up hides): one synchronization. ``False``: nothing is inspected.
    method : str
        A row of :data:`GETRF` or ``"auto"``: ``"legacy"`` (``cusolverDn<t>getrf`` per
        matrix), ``"batched"`` (one ``cublas<t>getrfBatched``), ``"X"``
        (``cusolverDnXgetrf`` per matrix), ``"torch"`` (``torch.linalg.lu_factor_ex``);
        ``"auto"``: ``legacy`` for one matrix and ``batched`` for batches of n <= 16 (torch's
        calls in every release), else ``torch``. CPU inputs: LAPACK ``?getrf`` (``torch``:
        torch's CPU call).

    Returns
    -------
    LU : array (..., n, n), same kind, dtype and device as A
        L (unit diagonal, not stored) below the diagonal, U on and above it; torch tensors
        column-major, as torch's.
    pivots : int32 array (..., n)
        1-based: row i was interchanged with row ``pivots[i]``.
    info : int32 array of the batch shape
        0, or k > 0 when U(k, k) is exactly zero (the factorization is completed).

    Raises
    ------
    SingularMatrixError
        (``numpy.linalg.LinAlgError``) ``check=True`` and U(k, k) = 0, naming k and the
        batch element.
    NonFiniteError
        (``LinAlgError``) ``check=True`` and LU holds NaN / Inf.
    ValueError
        A not square or fewer than 2 dimensions; unknown method; ``pivot=False`` on the CPU.
    TypeError
        Unsupported dtype or array type; ``pivot`` / ``check`` not a bool.
    GPUUnavailableError
        A CUDA input, but CuPy / nvmath-python are missing.

    Mirrors ``torch.linalg.lu_factor_ex`` (square A). Work: LAWN 41 ``getrf`` (2n³/3).

    Examples
    --------
    >>> import numpy as np, cusolver_trace as ct
    >>> LU, piv, info = ct.getrf(np.array([[1.0, 2.0], [3.0, 4.0]]))
    >>> LU
    array([[3.        , 4.        ],
           [0.33333333, 0.66666667]])
    >>> piv, int(info)
    (array([2, 2], dtype=int32), 0)
    """
    a, n = square(A, "A")
    pivot, check = flag(pivot, "pivot"), flag(check, "check")
    batch_shape = a.batch_shape
    used = GETRF.resolve(method, n, math.prod(batch_shape), a.dtype.name, device_of(a))
    if not pivot and not a.on_gpu:
        raise ValueError("pivot=False runs on CUDA only: LAPACK has no unpivoted getrf (torch's "
                         "CPU linalg.lu_factor refuses it too)")
    if n == 0 or math.prod(batch_shape) == 0:
        LU, info = empty_result(a, a.shape, batch_shape)
        return LU, empty_pivots(a, batch_shape + (n,)), info
    row = GETRF.rows[used]
    data = a.data if a.on_gpu else as_numpy(a)
    LU, piv, info = (row.cuda if a.on_gpu else row.cpu)(data, pivot)
    info = info.reshape(batch_shape)
    if check:
        check_lu(row.routine_name(a.dtype.name, a.on_gpu), info, LU, batch_shape,
               "the LU factors have non-finite entries (NaN / Inf in A)",
               also=None if pivot else data)
    return wrap(LU, a), wrap(piv, a), wrap(info, a)


def _lu_solve(table: Table, LU, pivots, B, left: bool, adjoint: bool, method: str):
    """getrs / lu_solve: validate → resolve → run (no check of its own: getrs reports illegal
    arguments only, which the libraries also return as a status)."""
    c, n = square(LU, "LU")
    b = operand(B, "B")
    same_backend(c, b, ("LU", "B"))
    nrhs = rhs_fits(b, n, left, "LU")
    piv = pivots_operand(pivots, c, n)
    batch_shape = batch_shape_of(c, b, names=("LU", "B"))
    used = table.resolve(method, n, math.prod(batch_shape), c.dtype.name, device_of(c))
    out_shape = tuple(batch_shape) + b.shape[-2:]
    if n == 0 or nrhs == 0 or 0 in batch_shape:
        return empty_result(b, out_shape, batch_shape)[0]
    row = table.rows[used]
    if c.on_gpu:
        x, info = row.cuda(c.data, piv, b.data, adjoint, left)
    else:
        x, info = row.cpu(as_numpy(c), piv, as_numpy(b), adjoint, left)
    if info is not None and not getattr(info, "is_cuda", False):  # host info: free to read
        raise_for_info(row.routine_name(c.dtype.name, c.on_gpu), info, ())
    return wrap(plain(x), b)


def getrs(LU: ArrayLike, pivots: ArrayLike, B: ArrayLike, *, adjoint: bool = False,
          method: str = "auto") -> Array:
    """Solve op(A)·X = B from A's LU factorization, like LAPACK / cuSOLVER ``?getrs``.

    Parameters
    ----------
    LU : array (..., n, n)
        :func:`getrf`'s factors (or ``torch.linalg.lu_factor``'s).
    pivots : integer array (..., n)
        getrf's 1-based pivots, LU's batch shape, on LU's device (int32 on the GPU; other
        integer types are converted). On the CPU each must lie in 1..n; on the GPU they are
        not read before the library reads them (an out-of-range pivot there reads out of
        bounds, as in cuSOLVER and torch).
    B : array (..., n, nrhs)
        LU's dtype and device; batch dimensions broadcast against LU's.
    adjoint : bool
        Solve Aᴴ·X = B (``trans`` = T for real, C for complex).
    method : str
        A row of :data:`GETRS` or ``"auto"``: ``"legacy"`` (``cusolverDn<t>getrs`` per
        matrix), ``"batched"`` (one ``cublas<t>getrsBatched``), ``"X"``
        (``cusolverDnXgetrs``), ``"triangular"`` (B's rows permuted, then two cuBLAS
        triangular solves), ``"torch"`` (``torch.linalg.lu_solve``); ``"auto"``: ``torch`` on
        CUDA, LAPACK ``?getrs`` on the CPU (every row but ``torch`` runs LAPACK there).

    Returns
    -------
    X : array (..., n, nrhs), same kind as B, the broadcast batch shape.

    Raises
    ------
    ValueError
        Shapes that do not fit or broadcast, operands on different devices, pivots out of
        range (CPU), unknown method.
    TypeError
        Unsupported or mismatched dtypes, pivots that are not integers.
    IllegalArgumentError
        LAPACK / cuBLAS reported an illegal argument.

    getrs reports illegal arguments only: a singular U gives inf / NaN silently, as in
    LAPACK and cuSOLVER (:func:`solve` checks). Nothing is synchronized on the GPU. Mirrors
    ``torch.linalg.lu_solve(LU, pivots, B, adjoint=adjoint)``. Work: LAWN 41 ``getrs``.

    Examples
    --------
    >>> import numpy as np, cusolver_trace as ct
    >>> A = np.array([[1.0, 2.0], [3.0, 4.0]])
    >>> LU, piv, _ = ct.getrf(A)
    >>> ct.getrs(LU, piv, np.array([[5.0], [11.0]]))
    array([[1.],
           [2.]])
    >>> ct.getrs(LU, piv, np.array([[7.0], [10.0]]), adjoint=True)
    array([[1.],
           [2.]])
    """
    return _lu_solve(GETRS, LU, pivots, B, True, flag(adjoint, "adjoint"), method)


def lu_solve(LU: ArrayLike, pivots: ArrayLike, B: ArrayLike, *, left: bool = True,
             adjoint: bool = False, method: str = "auto") -> Array:
    """Solve op(A)·X = B (``left``) or X·op(A) = B from A's LU factorization, as
    ``torch.linalg.lu_solve``.

    Parameters
    ----------
    LU, pivots
        As :func:`getrs`.
    B : array (..., n, nrhs) (``left``) or (..., nrhs, n)
        LU's dtype and device; batch dimensions broadcast against LU's.
    left : bool
        ``False``: solve X·op(A) = B, as op(A)ᴴ·Xᴴ = Bᴴ (torch's way).
    adjoint : bool
        op(A) = Aᴴ.
    method : str
        A row of :data:`LU_SOLVE` (:data:`GETRS`'s rows) or ``"auto"``, as :func:`getrs`.

    Returns
    -------
    X : array, B's shape with the broadcast batch shape, same kind as B.

    Raises
    ------
    ValueError, TypeError, IllegalArgumentError
        As :func:`getrs`.

    Examples
    --------
    >>> import numpy as np, cusolver_trace as ct
    >>> LU, piv, _ = ct.getrf(np.array([[1.0, 2.0], [3.0, 4.0]]))
    >>> ct.lu_solve(LU, piv, np.array([[7.0, 10.0]]), left=False)     # X·A = B
    array([[1., 2.]])
    """
    return _lu_solve(LU_SOLVE, LU, pivots, B, flag(left, "left"), flag(adjoint, "adjoint"),
                     method)


def solve(A: ArrayLike, B: ArrayLike, *, left: bool = True, check: bool = True,
          method: str = "auto") -> Array:
    """Solve A·X = B (``left``) or X·A = B for a general square A, as ``torch.linalg.solve``
    (LAPACK ``?gesv``: getrf, then getrs).

    Parameters
    ----------
    A : array (..., n, n)
        float32, float64, complex64, complex128; torch (CUDA or CPU), CuPy or NumPy; never
        modified.
    B : array (..., n, nrhs) (``left``) or (..., nrhs, n)
        A's dtype and device; batch dimensions broadcast against A's (A is factored once per
        matrix of the broadcast batch).
    left : bool
        ``False``: solve X·A = B, as Aᴴ·Xᴴ = Bᴴ.
    check : bool
        Raise for an exact zero pivot of getrf or NaN / Inf in X: one synchronization.
        ``False``: nothing is inspected (a singular A gives inf / NaN).
    method : str
        A row of :data:`SOLVE` or ``"auto"``: ``"legacy"`` (``cusolverDn<t>getrf`` and
        ``getrs`` per matrix), ``"batched"`` (one ``cublas<t>getrfBatched`` and one
        ``cublas<t>getrsBatched`` with every right-hand side), ``"X"`` (the 64-bit API),
        ``"torch"`` (``torch.linalg.solve_ex``); ``"auto"``: ``batched`` for batches of
        n <= 32 on CUDA (not yet measured), else ``torch``; LAPACK on the CPU.

    Returns
    -------
    X : array, B's shape with the broadcast batch shape, same kind as B.

    Raises
    ------
    SingularMatrixError
        (``LinAlgError``) ``check=True`` and U(k, k) = 0 for a matrix of the (broadcast)
        batch, naming k and the batch element.
    NonFiniteError
        (``LinAlgError``) ``check=True`` and X holds NaN / Inf.
    ValueError, TypeError
        Shapes that do not fit or broadcast, mismatched dtypes or devices, unknown method.

    Work: LAWN 41 ``getrf`` + ``getrs``.

    Examples
    --------
    >>> import numpy as np, cusolver_trace as ct
    >>> A = np.array([[1.0, 2.0], [3.0, 4.0]])
    >>> ct.solve(A, np.array([[5.0], [11.0]]))
    array([[1.],
           [2.]])
    >>> ct.solve(A, np.array([[7.0, 10.0]]), left=False)
    array([[1., 2.]])
    """
    a, n = square(A, "A")
    b = operand(B, "B")
    same_backend(a, b, ("A", "B"))
    left, check = flag(left, "left"), flag(check, "check")
    nrhs = rhs_fits(b, n, left, "A")
    batch_shape = batch_shape_of(a, b)
    used = SOLVE.resolve(method, n, math.prod(batch_shape), a.dtype.name, device_of(a))
    out_shape = tuple(batch_shape) + b.shape[-2:]
    if n == 0 or nrhs == 0 or 0 in batch_shape:
        return empty_result(b, out_shape, batch_shape)[0]
    row = SOLVE.rows[used]
    aa, bb = broadcast(a, batch_shape), broadcast(b, batch_shape)
    x, info = (row.cuda if a.on_gpu else row.cpu)(aa, bb, left)
    x = plain(x)
    if check:
        check_lu(row.routine_name(a.dtype.name, a.on_gpu), info.reshape(batch_shape), x,
               batch_shape, "the solution has non-finite entries (NaN / Inf in A or B, or "
               "overflow)", also=plain(aa))
    return wrap(x, b)


def inv(A: ArrayLike, *, check: bool = True, method: str = "auto") -> Array:
    """Inverse of a general square A, as ``torch.linalg.inv``.

    Parameters
    ----------
    A : array (..., n, n)
        float32, float64, complex64, complex128; torch (CUDA or CPU), CuPy or NumPy; never
        modified.
    check : bool
        Raise for an exact zero pivot of the factorization or NaN / Inf in A⁻¹: one
        synchronization. ``False``: nothing is inspected (a singular A gives inf / NaN or
        what the routine leaves).
    method : str
        A row of :data:`INV` or ``"auto"``:

        * ``"legacy"`` / ``"batched"`` / ``"X"`` — getrf, then getrs on the identity
          (``cusolverDn<t>getrf`` / ``getrs`` per matrix; one ``cublas<t>getrfBatched`` and
          one ``getrsBatched``, torch's calls for n <= 16; the 64-bit API);
        * ``"matinv_batched"`` (n <= 32) — one ``cublas<t>matinvBatched``;
        * ``"getri_batched"`` — ``cublas<t>getrfBatched``, then ``cublas<t>getriBatched``;
        * ``"getri"`` / ``"getri_rec"`` / ``"getri_X"`` — LAPACK ``?getri``'s algorithm for
          large matrices: getrf (``cusolverDn<t>getrf``; ``getri_X``:
          ``cusolverDnXgetrf``), U⁻¹ (``cusolverDnXtrtri``; ``getri_rec``: the recursive
          GEMM-rich trtri plan), X·L = U⁻¹ (one right-side ``cublas<t>trsm``; ``getri_rec``:
          getri's blocked loop, GEMM and small trsm), then the pivots' column interchanges:
          4n³/3 flops after getrf, against 2n³ for the solve on the identity;
        * ``"torch"`` — ``torch.linalg.inv_ex``;
        * ``"auto"`` — on CUDA (not yet measured): ``matinv_batched`` for batches of
          n <= 32, ``getri_batched`` for batches of n <= 128, ``getri`` for one matrix of
          n >= 4096, else ``torch``; on the CPU LAPACK getrf + getrs on the identity.

        CPU inputs run LAPACK ``?getrf`` with ``?getrs`` on the identity (the getrs rows) or
        ``?getri`` (the getri and matinv rows); ``"torch"`` torch's CPU call.

    Returns
    -------
    Ainv : array (..., n, n), same kind, dtype and device as A.

    Raises
    ------
    SingularMatrixError
        (``LinAlgError``) ``check=True`` and U(k, k) = 0, naming k and the batch element.
    NonFiniteError
        (``LinAlgError``) ``check=True`` and A⁻¹ holds NaN / Inf.
    ValueError
        A not square; unknown method; ``matinv_batched`` with n > 32.
    TypeError
        Unsupported dtype or array type; ``check`` not a bool.

    Work (LAWN 41, real): getrf 2n³/3, then 2n³ − n² (``inverse_getrs``) or 4n³/3 (``getri``).

    Examples
    --------
    >>> import numpy as np, cusolver_trace as ct
    >>> A = np.array([[4.0, 7.0], [2.0, 6.0]])
    >>> ct.inv(A)
    array([[ 0.6, -0.7],
           [-0.2,  0.4]])
    >>> np.allclose(ct.inv(A, method="getri"), [[0.6, -0.7], [-0.2, 0.4]])
    True
    """
    a, n = square(A, "A")
    check = flag(check, "check")
    batch_shape = a.batch_shape
    used = INV.resolve(method, n, math.prod(batch_shape), a.dtype.name, device_of(a))
    if used == "matinv_batched" and n > _fast().MATINV_MAX_N:   # on the CPU too: one domain
        raise ValueError(f"method 'matinv_batched' (cublas<t>matinvBatched) inverts matrices of "
                         f"order <= {_fast().MATINV_MAX_N}, got n = {n}")
    if n == 0 or math.prod(batch_shape) == 0:
        return empty_result(a, a.shape, batch_shape)[0]
    row = INV.rows[used]
    x, info = row.cuda(a.data) if a.on_gpu else row.cpu(as_numpy(a))
    if check:
        check_lu(row.routine_name(a.dtype.name, a.on_gpu), info.reshape(batch_shape), x,
               batch_shape, "the inverse has non-finite entries (NaN / Inf in A, or overflow)")
    return wrap(x, a)


def lu_method(routine: str, method: str, n: int, batch: int = 1, dtype="float64",
              device="cuda") -> str:
    """The row ``routine`` (``"getrf"``, ``"getrs"``, ``"lu_solve"``, ``"solve"``, ``"inv"``)
    runs for ``method`` on ``batch`` matrices of order ``n`` (``auto`` resolved).

    Raises
    ------
    ValueError, TypeError, LookupError
        As :meth:`Table.resolve`; an unknown routine.

    Examples
    --------
    >>> lu_method("inv", "auto", 32, 10000)
    'matinv_batched'
    >>> lu_method("solve", "auto", 512, 1, "float64", "cpu")
    'legacy'
    """
    tables = {"getrf": GETRF, "getrs": GETRS, "lu_solve": LU_SOLVE, "solve": SOLVE, "inv": INV}
    if routine not in tables:
        raise ValueError(f"routine must be one of {', '.join(tables)}, got {routine!r}")
    return tables[routine].resolve(method, n, batch, dtype, device)
