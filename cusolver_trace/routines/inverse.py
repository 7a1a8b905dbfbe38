"""``cholesky_inverse`` and ``potri``: A⁻¹ from A's Cholesky factor, with one implementation
table (:data:`CHOLESKY_INVERSE`: torch's paths, cuSOLVER's potri, the recursive GEMM-rich
plans of :mod:`cusolver_trace.plans`, the fused kernel, torch itself) and ``auto`` as a rule
over its rows, measured on an H200."""
from __future__ import annotations

import math

import numpy as np

from .._arrays import Array, ArrayLike, as_numpy, flag, wrap
from ..backends import cpu as _cpu
from ..backends._waiting import run as run_waiting
from ..errors import NonFiniteError, SingularFactorError
from ._table import AutoRule, Impl, Table, cuda, device_of, empty_result, fused, raise_for_info
from .cholesky import factor_operand

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

        from ..plans import Call, lauum_plan, run_plan_reference, trtri_plan

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


def _cu(name, *args, **kw):
    def run(c, upper):
        return getattr(cuda(), name)(c, upper, *args, **kw)
    return run


def _cu_plans(name, *args, **kw):
    """A method of the CUDA plan executor (:mod:`cusolver_trace.backends.cuda_plans`)."""
    def run(c, upper):
        from ..backends import cuda_plans

        return getattr(cuda_plans, name)(c, upper, *args, **kw)
    return run


def _reference_inverse_plan(c, upper):
    """CPU implementation of ``gemm_lauum``: the same two-buffer plan
    (:func:`cusolver_trace.plans.inverse_plan`), run with torch ops in its sequential order
    (for checking the plan, not speed)."""
    import torch

    from ..plans import inverse_plan, run_inverse_reference

    x = torch.from_numpy(np.array(c, dtype=c.dtype.newbyteorder("="), order="C", copy=True))
    plan = inverse_plan(c.shape[-1], upper, dtype=c.dtype)
    return run_inverse_reference(plan, x).numpy(), None


# workspace (Impl.workspace: peak device memory beyond the factor, result included, in n²,
# float64). Measured on the H200 at n = 8192 (torch 2.11.0+cu130, through the public entry
# point; benchmarks/large_n_table.py, 2026-12-03, also at 4096 and 16384): torch 2.00, potrs
# 2.00, potri 1.00 (the copy that becomes the result, mirrored in place), gemm_lauum 2.00 (the
# copy that becomes the result and the triangular inverse; float64 puts the trtri's
# out-of-place products in the copy's unused triangle, the other dtypes multiply in place),
# rec_trtri_lauum 1.03 (1.14 at 4096, 1.01 at 16384: the trsm blocks' identity and masks are
# of a fixed size). From the code, not measured: trtri_lauum 1.0 (+ Xtrtri's and lauum's
# workspaces); gemm_lauum_emu 2.0; trsm, trsm_batched 2.0 (factor copy + identity right-hand
# side); fused 1.0 (the result only).
INVERSE_METHODS: dict[str, Impl] = {m.name: m for m in (
    Impl("potrs", "cusolverDnXpotrs on the identity (torch's CUDA path for batch 1)",
                  _cu("potrs_identity", "X"), _cpu.potrs_identity, "inverse_potrs",
                  "cusolverDnXpotrs", "LAPACK {t}potrs", workspace=2.00),
    Impl("potri", "cusolverDn<t>potri + mirror of the triangle (torch's CPU path)",
                  _cu("potri"), _cpu.potri, "potri", "cusolverDn{T}potri", "LAPACK {t}potri",
                  workspace=1.00),
    Impl("trsm", "two cublas<t>trsm on the identity per matrix (torch >= 2.12, batch <= 8)",
                  _cu("trsm_identity_inverse", batched=False), None, "inverse_potrs",
                  "cublas{T}trsm", workspace=2.0),
    Impl("trsm_batched", "two cublas<t>trsmBatched on the identity, whole batch at once",
                  _cu("trsm_identity_inverse", batched=True), None, "inverse_potrs",
                  "cublas{T}trsmBatched", workspace=2.0),
    Impl("trtri_lauum", "cusolverDnXtrtri, then a recursive blocked lauum "
                  "(syrk/herk, trmm, gemm; cusolverDn<t>lauum on diagonal blocks)",
                  _cu_plans("trtri_lauum", recursive=False), _reference_plans(False), "potri",
                  "cusolverDnXtrtri", "trtri_lauum plan (torch reference executor)",
                  workspace=1.0),
    Impl("rec_trtri_lauum", "recursive trtri (cublas<t>trmm; trsm on diagonal blocks), "
                  "then the recursive blocked lauum",
                  _cu_plans("trtri_lauum", recursive=True), _reference_plans(True), "potri",
                  "recursive trtri (cublas{T}trmm, cublas{T}trsm on diagonal blocks)",
                  "rec_trtri_lauum plan (torch reference executor)", workspace=1.03),
    Impl("fused", "one cuSOLVERDx kernel for the whole batch: potrs on an identity "
                  "built in shared memory (small n; the cuda13-fused extra)",
                  lambda c, upper: fused().cholesky_inverse(c, upper), None, "inverse_potrs",
                  "cuSOLVERDx potrs (fused kernel)",
                  cuda_checked=lambda c, upper: fused().cholesky_inverse_checked(c, upper),
                  workspace=1.0,
                  ready=lambda c, upper, check: fused().ready("inverse", c, upper, check)),
    Impl("gemm_lauum", "recursive trtri into an identity buffer (cublas<t>trsm "
                  "blocks, trmm/gemm), then the lauum as one gemm per block row, on several streams",
                  _cu_plans("gemm_lauum"), _reference_inverse_plan, "potri",
                  "gemm_lauum plan (cublas{T}trsm, cublas{T}trmm, cublas{T}gemm)",
                  "gemm_lauum plan (torch reference executor)", workspace=2.0),
    Impl("gemm_lauum_emu", "gemm_lauum with cuBLAS FP64 fixed-point emulation "
                  "(CUBLAS_FP64_EMULATED_FIXEDPOINT_MATH, EAGER; opt-in, GPU only)",
                  _cu_plans("gemm_lauum", emulate=True), None, "potri",
                  "gemm_lauum plan, FP64 emulation (cublas{T}trsm, cublas{T}trmm, cublas{T}gemm)",
                  workspace=2.0),
    Impl("torch", "torch.cholesky_inverse itself (what auto falls back to)",
                  _torch_cuda, _torch_cpu, "inverse_potrs", "torch.cholesky_inverse",
                  "torch.cholesky_inverse", "potri", workspace=2.00),
)}
"""The rows of :data:`CHOLESKY_INVERSE` (the methods of :func:`cholesky_inverse`): name →
:class:`Impl`."""


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
#: torch, and so does a call whose fused kernel is not built yet (its build runs in the
#: background: Impl.ready). Update these rows from `cusolver-trace sweep`. To try other rules,
#: assign a new mapping to ``cusolver_trace.routines.CHOLESKY_INVERSE.auto``.
_AUTO = {
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
}




def _fused_can_run(method: str, n: int, dtype: str) -> bool:
    """Whether ``auto`` may pick ``method`` here: a ``fused`` rule is passed over where the
    fused method cannot run (its extra ``cuda13-fused`` missing, or n too large for shared
    memory), so that ``auto`` falls through to the next rule instead of failing."""
    if method != "fused":
        return True
    f = fused()
    return f.available() is None and f.fits("inverse", n, dtype)


CHOLESKY_INVERSE = Table("cholesky_inverse", INVERSE_METHODS, _AUTO, can_run=_fused_can_run,
                         token=lambda: fused().available)
"""The implementation table of :func:`cholesky_inverse`: its rows (:data:`INVERSE_METHODS`)
and ``auto``'s rules (``CHOLESKY_INVERSE.auto``). Each row states its CUDA workspace
(:attr:`Impl.workspace`, n² beyond the factor: from 1.0 for fused, potri and the trtri_lauum
methods to 2.0 for potrs, trsm and gemm_lauum, float64), measured on the H200 where the comment above the rows says so."""

METHOD_NAMES = CHOLESKY_INVERSE.names
"""Every ``method=`` value :func:`cholesky_inverse` accepts."""


def resolve_method(method: str, n: int, batch: int = 1, dtype="float64", device="cuda") -> str:
    """The method :func:`cholesky_inverse` runs for ``method`` on ``batch`` matrices of order
    ``n`` (:meth:`Table.resolve` of :data:`CHOLESKY_INVERSE`), from the shape alone: where
    ``auto`` picks ``fused``, a call runs the next rule's method until its kernel is built
    (:func:`inverse_method` says what a call runs now).

    Raises
    ------
    ValueError, TypeError, LookupError
        As :meth:`Table.resolve`.

    Examples
    --------
    >>> resolve_method("auto", 16384, 1, "float64", "cuda")
    'gemm_lauum'
    >>> resolve_method("auto", 512, 1, "float64", "cpu")
    'potri'
    """
    return CHOLESKY_INVERSE.resolve(method, n, batch, dtype, device)


def inverse_method(L: ArrayLike, method: str = "auto", *, upper: bool = False,
                   check: bool = True) -> str:
    """The method :func:`cholesky_inverse` runs now for ``L`` and ``method`` (``auto``
    resolved).

    Parameters
    ----------
    L : array (..., n, n)
        The factor (only its shape, dtype, device and memory order are used).
    method : str
        One of :data:`METHOD_NAMES`.
    upper, check : bool
        As the call's (the fused kernel differs with them).

    ``auto``'s answer is for a call now: where its rule picks ``fused`` and the kernel the
    call needs is not built yet (neither loaded nor in the disk cache), the call runs the next
    rule's method (``torch``) while the kernel is built in the background, and this says so;
    asking starts that build, as a call does.

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
    c, n, batch = factor_operand(L)
    upper, check = flag(upper, "upper"), flag(check, "check")
    used = CHOLESKY_INVERSE.resolve(method, n, batch, c.dtype.name, device_of(c),
                                    call=(c.data, upper, check) if c.on_gpu else None)
    run_waiting()   # a kernel this asked for: its build queued now (no wait follows a query)
    return used


def potri(L: ArrayLike, upper: bool = False, *, check: bool = True) -> Array:
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


def raise_for_status(routine: str, acc, n: int, batch_shape, upper: bool) -> None:
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


def cholesky_inverse(L: ArrayLike, upper: bool = False, *, method: str = "potrs",
                     check: bool = True) -> Array:
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
        * ``"potri"`` — ``?potri`` + mirror, torch's CPU path; exactly Hermitian. As
          LAPACK, it takes a complex factor's diagonal as real (a factor from potrf has a
          real one); every other method reads it as given, so for a factor whose diagonal
          is not real only ``potri`` (and torch's CPU path) differ from inv(L·Lᴴ).
        * ``"trsm"`` / ``"trsm_batched"`` (GPU only) — two cuBLAS ``trsm`` /
          ``trsmBatched`` solves on the identity (torch >= 2.12 for batch > 1).
        * ``"trtri_lauum"`` / ``"rec_trtri_lauum"`` — ``trtri`` then ``lauum`` as
          recursive blocked plans (:mod:`cusolver_trace.plans`) whose flops run in
          GEMM-class cuBLAS kernels: the potri amount of work (2n³/3) instead of
          potrs's 2n³. On the CPU the same plans run with torch ops (for checking).
        * ``"gemm_lauum"`` — trtri into an identity buffer, then the lauum as one GEMM
          per block row, independent parts on several streams (four in float64, two in
          the other dtypes; :func:`plans.inverse_plan`);
          ``"gemm_lauum_emu"`` the same with cuBLAS's FP64 emulation (GPU only, opt-in).
          On the CPU ``gemm_lauum`` runs its plan with torch ops (for checking).
        * ``"fused"`` (GPU only, extra ``cuda13-fused``) — one cuSOLVERDx kernel for the
          whole batch of small matrices (n up to what shared memory holds).
        * ``"torch"`` — ``torch.cholesky_inverse`` itself.
        * ``"auto"`` — by shape from ``CHOLESKY_INVERSE.auto``; :func:`inverse_method`
          says which method that is. It never waits for a fused kernel to compile: until
          the call's kernel is built (in the background; :func:`cusolver_trace.warmup`
          builds ahead) the next rule's method runs.
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
    c, n, batch = factor_operand(L)
    upper, check = flag(upper, "upper"), flag(check, "check")
    used = CHOLESKY_INVERSE.resolve(method, n, batch, c.dtype.name, device_of(c),
                                    call=(c.data, upper, check) if c.on_gpu else None)
    batch_shape = c.batch_shape
    if n == 0 or batch == 0:
        return empty_result(c, c.shape, batch_shape)[0]
    m = INVERSE_METHODS[used]
    acc = None
    if c.on_gpu:
        if check and m.cuda_checked is not None:  # the check inside the method's own kernel
            x, acc = m.cuda_checked(c.data, upper)
        else:
            x, info = m.cuda(c.data, upper)
            if check:  # None when nothing is to report: one launch, one sync, nothing copied
                acc = cuda().inverse_check(c.data, x, upper, info)
    else:
        factor = as_numpy(c)
        x, info = m.cpu(factor, upper)
        if check:
            acc = _cpu.inverse_status(factor, x, upper, info)
    if acc is not None:
        raise_for_status(m.routine_name(c.dtype.name, c.on_gpu), acc, n, batch_shape, upper)
    return wrap(x, c)


