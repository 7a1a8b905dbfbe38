"""``spd_inverse``: A → A⁻¹ for a Hermitian positive definite A through its Cholesky
factorization, as one operation with one check, with its implementation table
(:data:`SPD_INVERSE_TABLE`)."""
from __future__ import annotations

import math

import numpy as np

from .._arrays import Array, ArrayLike, as_numpy, flag, operand, require_square, wrap
from ..backends import cpu as _cpu
from ..backends._waiting import run as run_waiting
from ._table import Impl, Table, cuda, device_of, empty_result, fused, raise_for_info
from .cholesky import POTRF, flag_nan_pivots
from .inverse import CHOLESKY_INVERSE, INVERSE_METHODS, raise_for_status


# Every column returns ``(Ainv, l, info)``: the inverse, what the check reads as the factor
# (the factor, or A where the factor is not kept) and potrf's info.
def _torch_cuda(a, upper):
    import torch

    L, info = torch.linalg.cholesky_ex(a, upper=upper)
    return torch.cholesky_inverse(L, upper=upper), L, info.to(torch.int32)


def _torch_cpu(a, upper):
    import torch

    from .inverse import _torch_cpu as inverse_on_cpu

    A = torch.from_numpy(np.array(a, dtype=a.dtype.newbyteorder("="), order="C", copy=True))
    L, info = torch.linalg.cholesky_ex(A, upper=upper)
    x, _ = inverse_on_cpu(L.numpy(), upper)
    return x, L.numpy(), info.to(torch.int32).numpy()


def _then(name: str):
    """potrf (torch's choice), then the ``cholesky_inverse`` row ``name``."""
    def on_cuda(a, upper):
        batch = math.prod(a.shape[:-2])
        l, info = POTRF.rows[POTRF.resolve("auto", a.shape[-1], batch)].cuda(a, upper)
        if name == "gemm_lauum":   # factor into the output: the plan works in l's storage
            from ..backends import cuda_plans

            info = flag_nan_pivots(l, info.reshape(a.shape[:-2])).reshape(-1)  # l is consumed
            x, _ = cuda_plans.gemm_lauum(l, upper, overwrite=True)
            return x, a, info   # as potrf_gemm_lauum: the check reads A's triangle
        x, _ = INVERSE_METHODS[name].cuda(l, upper)
        return x, l, info

    def on_cpu(a, upper):
        l, info = _cpu.potrf(a, upper)
        x, _ = INVERSE_METHODS[name].cpu(l, upper)
        return x, l, info
    m = INVERSE_METHODS[name]
    return on_cuda, (on_cpu if m.cpu is not None else None)


def _trsm_batched(a, upper):
    from ..backends import cuda_plans

    return cuda_plans.potrf_trsm_batched_factor(a, upper)


def _plan_cuda(a, upper):
    from ..backends import cuda_plans

    x, info = cuda_plans.potrf_gemm_lauum(a, upper)
    return x, a, info   # the factor is overwritten; its pivots are checked in the backend


def _plan_cpu(a, upper):
    import torch

    from ..plans import run_inverse_reference, spd_inverse_plan

    infos: list = []
    x = run_inverse_reference(
        spd_inverse_plan(a.shape[-1], upper, dtype=a.dtype.name),
        torch.from_numpy(np.array(a, dtype=a.dtype.newbyteorder("="), order="C", copy=True)),
        infos).numpy()
    return x, a, np.asarray(infos, dtype=np.int32)


def _fused_cuda(a, upper):
    x, info = fused().potrf_inverse(a, upper)
    return x, a, info   # the factor stays in shared memory: the check reads A's triangle


# workspace (Impl.workspace, n² beyond A, result included, float64): measured on the H200
# at n = 8192 (benchmarks/large_n_table.py, 2026-12-03, also at 4096 and 16384): torch 3.00
# (torch's cholesky_inverse(cholesky(A))), gemm_lauum (auto there) 2.00 (potrf's column-major
# factor becomes the result: the plan works in it, + the triangular inverse),
# potrf_gemm_lauum 2.00 (A's copy, factored and inverted in place, + the triangular inverse).
# From the code, not measured: every other "potrf, then a cholesky_inverse row" is 1 (the
# factor) + that row's workspace; potrf_trsm_batched 3.0 at batch 1 (copy + identity + its
# expanded copy; 2.0 per matrix over a large batch); fused 1.0 (the result only).
def _rows():
    rows = {
        "potrf_trsm_batched": Impl(
            "potrf_trsm_batched", "one cusolverDn<t>potrfBatched and two cublas<t>trsmBatched "
            "on the identity, one working buffer (small batched matrices)", _trsm_batched, None,
            "inverse_potrs", "cublas{T}trsmBatched", workspace=3.0),
        "potrf_gemm_lauum": Impl(
            "potrf_gemm_lauum", "one plan: a recursive blocked potrf in place, then "
            "gemm_lauum's calls on the same buffer, scheduled together (the CPU: the same plan "
            "with torch ops)", _plan_cuda, _plan_cpu, "potri", "potrf_gemm_lauum plan",
            workspace=2.0),
        "torch": Impl("torch", "torch.linalg.cholesky_ex, then torch.cholesky_inverse",
                      _torch_cuda, _torch_cpu, "inverse_potrs", "torch.cholesky_inverse",
                      "torch.cholesky_inverse", "potri", workspace=3.00),
    }
    for name, m in INVERSE_METHODS.items():
        if name == "torch":
            continue
        if name == "fused":
            rows[name] = Impl(
                name, "one cuSOLVERDx kernel: potrf, then potrs on the identity, the factor "
                "never leaving shared memory (small n; the cuda13-fused extra)", _fused_cuda,
                None, m.flops, m.mirrors, cuda_checked=lambda a, upper:
                fused().potrf_inverse_checked(a, upper), workspace=1.0,
                ready=lambda a, upper, check: fused().ready("potrf_inverse", a, upper, check))
            continue
        on_cuda, on_cpu = _then(name)
        rows[name] = Impl(name, f"potrf, then cholesky_inverse's {name!r}: {m.summary}",
                          on_cuda, on_cpu, m.flops, m.mirrors, m.cpu_mirrors, m.cpu_flops,
                          workspace=2.0 if name == "gemm_lauum" else  # in the factor's storage
                          None if m.workspace is None else round(1 + m.workspace, 2))
    return rows


SPD_INVERSE_TABLE = Table("spd_inverse", _rows(), {}, auto_from=CHOLESKY_INVERSE)
"""The implementation table of :func:`spd_inverse`. Its ``auto`` is ``cholesky_inverse``'s
(:data:`~cusolver_trace.routines.CHOLESKY_INVERSE`): potrf, then the row those rules pick
for the factor (not yet measured end to end, so no rules of its own)."""
SPD_INVERSE_METHODS = SPD_INVERSE_TABLE.names
"""Every ``method=`` value :func:`spd_inverse` accepts."""

# the potrf routine named when the factorization fails, per row (default: torch's potrf)
_POTRF_NAMES = {"torch": "torch.linalg.cholesky_ex", "potrf_trsm_batched": "batched",
                "fused": "fused", "potrf_gemm_lauum": None}


def resolve_spd_method(method: str, n: int, batch: int = 1, dtype="float64",
                       device="cuda") -> str:
    """What :func:`spd_inverse` runs for ``method`` (:meth:`Table.resolve` of
    :data:`SPD_INVERSE_TABLE`; ``"auto"``: potrf, then the ``cholesky_inverse`` row its
    rules pick for the factor), from the shape alone (:func:`spd_inverse_method` says what a
    call runs now, while a fused kernel is being built).

    Examples
    --------
    >>> resolve_spd_method("auto", 16384, 1, "float64", "cuda")
    'gemm_lauum'
    >>> resolve_spd_method("potrf_trsm_batched", 8, 100)
    'potrf_trsm_batched'
    """
    return SPD_INVERSE_TABLE.resolve(method, n, batch, dtype, device)


def spd_inverse_method(A: ArrayLike, method: str = "auto", *, upper: bool = False,
                       check: bool = True) -> str:
    """The method :func:`spd_inverse` runs now for ``A`` and ``method`` (``auto`` resolved).

    Parameters
    ----------
    A : array (..., n, n)
        Only its shape, dtype, device and memory order are used.
    method : str
        One of :data:`SPD_INVERSE_METHODS`.
    upper, check : bool
        As the call's (the fused kernel differs with them).

    As :func:`inverse_method`: while the fused kernel ``auto`` would run is being built (in
    the background; asking starts it), the answer is the next rule's method (``torch``).

    Returns
    -------
    str
        A row of :data:`SPD_INVERSE_TABLE`.

    Examples
    --------
    >>> import numpy as np
    >>> spd_inverse_method(np.eye(3))
    'potri'
    """
    a = operand(A, "A")
    n = require_square(a, "A")
    upper, check = flag(upper, "upper"), flag(check, "check")
    used = SPD_INVERSE_TABLE.resolve(method, n, math.prod(a.batch_shape), a.dtype.name,
                                     device_of(a), call=(a.data, upper, check) if a.on_gpu
                                     else None)
    run_waiting()   # a kernel this asked for: its build queued now (no wait follows a query)
    return used


def _potrf_routine(used: str, dt, on_gpu: bool, batch: int) -> str:
    """The potrf routine to name when the factorization fails."""
    what = _POTRF_NAMES.get(used, "auto")
    if what is None:
        return (f"potrf_gemm_lauum plan (cusolverDn{dt.prefix.upper()}potrf blocks)" if on_gpu
                else "potrf_gemm_lauum plan (torch reference executor)")
    if not what.startswith(("auto", "batched", "fused")):
        return what
    api = POTRF.resolve("auto", 2, batch) if what == "auto" else what
    return POTRF.rows[api].routine_name(dt.name, on_gpu)


def spd_inverse(A: ArrayLike, upper: bool = False, *, method: str = "auto",
                check: bool = True) -> Array:
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
        A row of :data:`SPD_INVERSE_TABLE` or ``"auto"``:

        * ``"auto"`` (default) — :func:`potrf` (torch's cuSOLVER choice), then the
          :func:`cholesky_inverse` method that its ``"auto"`` picks for the factor; where
          that is ``fused``, the one-kernel ``"fused"`` row below once its kernel is built
          (``"torch"`` until then, while it builds in the background);
        * a ``cholesky_inverse`` row (``"potri"``, ``"rec_trtri_lauum"``,
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
    used = SPD_INVERSE_TABLE.resolve(method, n, batch, a.dtype.name, device_of(a),
                                     call=(a.data, upper, check) if a.on_gpu else None)
    if n == 0 or batch == 0:
        return empty_result(a, a.shape, batch_shape)[0]
    row = SPD_INVERSE_TABLE.rows[used]
    proutine = _potrf_routine(used, a.dtype, a.on_gpu, batch)
    iroutine = row.routine_name(a.dtype.name, a.on_gpu)
    if a.on_gpu and check and row.cuda_checked is not None:
        # the check in the same kernel (A's triangle, the result, potrf's info)
        x, _, acc = row.cuda_checked(a.data, upper)
        if acc is not None:
            _raise_for_spd_record(proutine, iroutine, acc, n, batch_shape, upper)
        return wrap(x, a)
    src = a.data if a.on_gpu else as_numpy(a)
    x, l, info = row.cuda(src, upper) if a.on_gpu else row.cpu(src, upper)
    if check:
        info = info.reshape(batch_shape)
        if l is not src:  # a row that returns A as l overwrote its factor and flagged its pivots
            info = flag_nan_pivots(l, info)
        if a.on_gpu:  # potrf's info rides in the record's info column: one launch, one sync
            acc = cuda().inverse_check(l, x, upper, info.reshape(-1))
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
    raise_for_status(iroutine, acc, n, batch_shape, upper)
