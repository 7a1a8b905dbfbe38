"""Array routines: one public entry point per operation, each with one implementation table.

Every routine takes torch tensors (CUDA → cuSOLVER / cuBLAS on the tensor's own device
and torch's current stream, no host copies; CPU → ``scipy.linalg.lapack``), CuPy arrays
(→ cuSOLVER, zero-copy via DLPack) or NumPy arrays (→ LAPACK) of shape ``(..., n, n)``,
dtype float32, float64, complex64 or complex128, and returns the same kind. Inputs are
never modified (each routine works on a column-major copy, the LAPACK / cuSOLVER
layout); ``requires_grad`` tensors are read through ``detach()`` and results do not
track gradients.

Each routine reads: validate its operands → resolve ``method`` through its
:class:`Table` (rows with a CUDA and a CPU column, the routine each mirrors, its flop
count; ``"auto"`` a rule over the rows) → run → check.

* Cholesky family (:mod:`.cholesky`, :mod:`.inverse`, :mod:`.spd`): :func:`potrf`,
  :func:`potrs`, :func:`potri`, :func:`trtri`, :func:`cholesky_inverse`,
  :func:`spd_inverse`.
* LU family (:mod:`.lu`): :func:`getrf`, :func:`getrs`, :func:`lu_solve`, :func:`solve`,
  :func:`inv`.
* Symmetric / Hermitian eigensolvers (:mod:`.eigh`): :func:`eigh`, :func:`eigvalsh`.

``info`` follows LAPACK / cuSOLVER: 0 = success, ``k > 0`` = the leading minor of
order ``k`` is not positive definite (potrf) or diagonal element ``k`` of the
factor is zero (potri, trtri) or U(k, k) is exactly zero (getrf), ``k < 0`` = argument
``-k`` was illegal.

The one check policy: with ``check=True`` (the default) a routine raises a
``numpy.linalg.LinAlgError`` — :class:`~cusolver_trace.errors.NotPositiveDefiniteError`,
:class:`~cusolver_trace.errors.SingularFactorError`,
:class:`~cusolver_trace.errors.SingularMatrixError`,
:class:`~cusolver_trace.errors.NonFiniteError` — for a failing ``info`` and for NaN / Inf
in a factor or a result, naming the routine, the order or index and the batch element.
Checks move O(batch) integers to the host with one synchronization per call, as torch's
do; ``check=False`` returns without inspecting anything or synchronizing.
"""
from ._table import AutoRule, Impl, Table, default_device, raise_for_info
from .cholesky import POTRF, POTRS, potrf, potrs, trtri
from .inverse import (CHOLESKY_INVERSE, INVERSE_METHODS, METHOD_NAMES, cholesky_inverse,
                      inverse_method, potri, resolve_method)
from .eigh import SYEV, eigh, eigvalsh
from .lu import GETRF, GETRS, INV, LU_SOLVE, SOLVE, getrf, getrs, inv, lu_method, lu_solve, solve
from .spd import (SPD_INVERSE_METHODS, SPD_INVERSE_TABLE, resolve_spd_method, spd_inverse,
                  spd_inverse_method)

__all__ = ["potrf", "potrs", "potri", "trtri", "cholesky_inverse", "inverse_method",
           "default_device", "resolve_method", "raise_for_info", "Impl", "Table", "AutoRule",
           "POTRF", "POTRS", "CHOLESKY_INVERSE", "INVERSE_METHODS", "METHOD_NAMES",
           "spd_inverse", "spd_inverse_method", "resolve_spd_method", "SPD_INVERSE_TABLE",
           "SPD_INVERSE_METHODS", "getrf", "getrs", "lu_solve", "solve", "inv", "lu_method",
           "GETRF", "GETRS", "LU_SOLVE", "SOLVE", "INV", "eigh", "eigvalsh", "SYEV"]
