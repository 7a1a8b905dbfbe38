"""What the LU family's op modules share: their options (``pivot``; ``left``, ``adjoint``),
their inputs (a general A, or its LU factorization made as torch makes it), what they read
(whole matrices), the words for a singular matrix and the rounding-level rule for it, and
torch's dispatch of ``linalg.lu_factor`` and ``linalg.lu_solve`` per version and backend
preference (``../shared/reference/torch-dispatch-lu-eigh.md`` §1-§5, checked against the
API logs of torch 2.11 on an H200 in ``tests/data``).

Only the LU family's modules import this one.
"""
from __future__ import annotations

import math

from ._model import (UP_TO_2_11, UP_TO_2_12, DispatchRule, Inputs, Method, When,  # noqa: F401
                     bool_option, host, lazy_backend, on_A)  # host, on_A: fam.host, fam.on_A

PIVOT = bool_option("pivot", True, "--pivot", ("true", "yes"), ("false", "no"),
                    {True: "piv", False: "nopiv"},
                    "partial pivoting: true (or yes), false (or no), or a list such as true,false "
                    "(default true)")
LEFT = bool_option("left", True, "--side", ("l", "left"), ("r", "right"),
                   {True: "left", False: "right"},
                   "solve A·X = B (left, or l) or X·A = B (right, or r), or a list (default left)")
ADJOINT = bool_option("adjoint", False, "--adjoint", ("true", "yes"), ("false", "no"),
                      {False: "N", True: "H"},
                      "solve with Aᴴ (true, or yes) or A (false, or no), or a list (default false)")

NONFINITE_NOTE = ("getrf completes with an exact zero pivot (info = k > 0) and getrs / trsm "
                  "then divide by it silently")


def failure_text(k: int) -> str:
    """What ``info = k`` of an LU factorization means."""
    return f"U[{k}, {k}] is exactly zero (the pivot of column {k}): the matrix is singular"


def reads(inputs: Inputs, opts) -> tuple:
    """What an LU-family op reads: the whole matrix argument (A, or the LU factor with its
    unit lower and upper triangles), and B."""
    return tuple(t for t in (inputs.x, inputs.B) if t is not None)


def on_lu(A, given: dict, opts) -> Inputs:
    """Inputs of an op on A's LU factorization: ``torch.linalg.lu_factor_ex(A)``, or the
    ``factor`` and ``pivots`` handed over (both, or neither; A then defaults to P·L·U, for
    the ratios). A singular A (an exact zero pivot) is noted, naming the column and the
    batch element; the factorization is still complete, and is handed to both sides.

    Raises
    ------
    ValueError
        Neither A nor a factor; one of factor / pivots without the other; shapes that do not
        fit; pivots that are not int32.
    """
    import torch

    factor, pivots = given.get("factor"), given.get("pivots")
    if (factor is None) != (pivots is None):
        raise ValueError("factor= and pivots= go together (an LU factorization is both)")
    if factor is not None:
        if factor.ndim < 2 or factor.shape[-1] != factor.shape[-2]:
            raise ValueError(f"factor must have shape (..., n, n), got {tuple(factor.shape)}")
        if pivots.dtype != torch.int32 or tuple(pivots.shape) != tuple(factor.shape[:-1]):
            raise ValueError(f"pivots must be int32 of shape {tuple(factor.shape[:-1])}, got "
                             f"{pivots.dtype} {tuple(pivots.shape)}")
        if A is None:
            P, L, U = torch.lu_unpack(factor, pivots)
            A = P @ L @ U
        if tuple(factor.shape) != tuple(A.shape):
            raise ValueError(f"factor {tuple(factor.shape)} and A {tuple(A.shape)} differ in shape")
        return Inputs(A, factor, None, pivots)
    if A is None:
        raise ValueError("need A (or factor= and pivots= for an op on the LU factorization)")
    LU, piv, info = torch.linalg.lu_factor_ex(A)
    inp = Inputs(A, LU, None, piv)
    note = singular_note(info, A.ndim > 2)
    if note:
        inp.factor_failed = True
        inp.notes.append(f"torch.linalg.lu_factor of A: {note}; the factorization is handed "
                         "to both sides, so the results divide by zero and the ratios do not "
                         "apply")
    return inp


def singular_note(info, batched: bool) -> str | None:
    """The first exact zero pivot in ``info``, in words (None: none)."""
    flat = [int(v) for v in info.reshape(-1).cpu()]
    first = next(((i, k) for i, k in enumerate(flat) if k), None)
    if first is None:
        return None
    i, k = first
    return (f"batch element {i}: " if batched else "") + failure_text(k)


def near_failure(inputs: Inputs, result, member: int, k: int) -> bool:
    """Whether the LU factor of batch member ``member`` has its pivot k at the rounding level,
    ``|U[k-1, k-1]| <= 30·n·eps·max|A_ij|`` (getrf's backward error: two libraries may then
    disagree about an exact zero there)."""
    from .._dtypes import dtype_info

    n = inputs.n
    if k < 1 or k > n:
        return False
    LU = result[0] if isinstance(result, tuple) else result
    tol = 30 * n * dtype_info(inputs.x.dtype).lapack_eps
    pivot = float(abs(LU.reshape(-1, n, n)[member, k - 1, k - 1]))
    scale = float(inputs.A.reshape(-1, n, n)[member].abs().max())
    return pivot <= tol * scale


cuda = lazy_backend("cuda_lu")


# --------------------------------------------------------------------------- lu_factor's dispatch
def cusolver_threshold(p) -> bool:
    """torch >= 2.13's choice between looped cuSOLVER getrf and cuBLAS getrfBatched for
    batch > 1 (``get_lu_factor_solver_backend``): cuSOLVER iff n² > T(batch, dtype), with
    batch == 2: T = 16800 (float32, complex64) or 4400 (float64, complex128); batch > 2:
    T = 18600·b (float32, complex64), 16600·b·⌊√b⌋ (float64), 5200·b·⌊√b⌋ (complex128).

    Examples
    --------
    >>> from types import SimpleNamespace as P
    >>> cusolver_threshold(P(batch=2, n=67, dtype="float64")), cusolver_threshold(
    ...     P(batch=2, n=66, dtype="float64"))
    (True, False)
    """
    b, single = p.batch, p.dtype in ("float32", "complex64")
    if b == 2:
        t = 16800 if single else 4400
    elif single:
        t = 18600 * b
    elif p.dtype == "float64":
        t = 16600 * b * math.isqrt(b)
    else:
        t = 5200 * b * math.isqrt(b)
    return p.n * p.n > t


def factor_kind(p) -> str:
    """What torch's ``linalg.lu_factor`` runs for a square input (cuda/BLA.cpp
    ``lu_factor``): ``"loop"`` (``cusolverDn<t>getrf`` per matrix), ``"batched"``
    (``cublas<t>getrfBatched``) or ``"magma"``.

    * preferred = magma: MAGMA (``getrf_gpu`` for batch 1, ``getrf_batched`` else);
    * batch == 1: the loop, always;
    * default preference: MAGMA unless ``n <= 16 or (n <= 128 and batch <= 16)``;
    * then torch <= 2.12: the loop for n >= 512 (reachable with preferred = cusolver only),
      else getrfBatched; torch >= 2.13: the loop iff :func:`cusolver_threshold`.
    """
    if p.preferred == "magma":
        return "magma"
    if p.batch == 1:
        return "loop"
    if p.preferred != "cusolver" and not (p.n <= 16 or (p.n <= 128 and p.batch <= 16)):
        return "magma"
    if tuple(p.version) <= UP_TO_2_12[1]:
        return "loop" if p.n >= 512 else "batched"
    return "loop" if cusolver_threshold(p) else "batched"


FACTOR_CALLS = {"loop": ("cusolverDn{T}getrf_bufferSize", "cusolverDn{T}getrf"),
                "batched": ("cublas{T}getrfBatched",),
                "magma": ("magma_{t}getrf_batched / getrf_gpu",)}
FACTOR_RULES = {"loop": "cusolverDn<t>getrf per matrix",
                "batched": "cublas<t>getrfBatched",
                "magma": "MAGMA getrf (replay: cusolverDn<t>getrf per matrix as reference)"}


# --------------------------------------------------------------------------- lu_solve's dispatch
def solve_kind(p, adjoint: bool, k: int) -> str:
    """What torch's ``lu_solve_kernel`` (cuda/BLA.cpp) runs for a solve with ``k`` right-hand
    sides (``adjoint``: trans T / C): ``"loop"`` (``cusolverDn<t>getrs`` per matrix),
    ``"batched"`` (``cublas<t>getrsBatched``), ``"triangular"`` (permutation + two cuBLAS
    triangular solves) or ``"magma"``.

    * preferred = cusolver: the loop for b <= 2 and n >= 64, else getrsBatched;
    * preferred = magma, torch <= 2.11: MAGMA; from 2.12 the default ladder;
    * n == k (an inverse): getrsBatched for n <= 16, else triangular;
    * n <= 8: getrsBatched (torch <= 2.11: MAGMA for 256 <= k <= 1024 without adjoint);
    * 8 < n <= 64: the loop when b <= 2 and (k <= 64 or adjoint or n <= 32); else
      getrsBatched for k <= 8, else triangular;
    * 64 < n <= 128: the loop when b <= 2 and k <= 2; getrsBatched for k <= 2, else
      triangular;
    * n > 128: triangular.

    ``b`` is B's batch (``p.rhs_batch``).
    """
    n, b = p.n, p.rhs_batch or p.batch
    if p.preferred == "cusolver":
        return "loop" if b <= 2 and n >= 64 else "batched"
    if p.preferred == "magma" and tuple(p.version) <= UP_TO_2_11[1]:
        return "magma"
    if n == k:
        return "batched" if n <= 16 else "triangular"
    if n <= 8:
        if tuple(p.version) <= UP_TO_2_11[1] and 256 <= k <= 1024 and not adjoint:
            return "magma"
        return "batched"
    if n <= 64:
        if b <= 2 and (k <= 64 or adjoint or n <= 32):
            return "loop"
        return "batched" if k <= 8 else "triangular"
    if n <= 128:
        if b <= 2 and k <= 2:
            return "loop"
        return "batched" if k <= 2 else "triangular"
    return "triangular"


SOLVE_CALLS = {"loop": ("cusolverDn{T}getrs",),
               "batched": ("cublas{T}getrsBatched",),
               "triangular": ("permute rows", "cublas{T}trsm / trsmBatched (L, unit)",
                              "cublas{T}trsm / trsmBatched (U)"),
               "magma": ("magma_{t}getrs_batched / getrs_gpu",)}
SOLVE_RULES = {"loop": "cusolverDn<t>getrs per matrix",
               "batched": "cublas<t>getrsBatched",
               "triangular": "permutation + two cuBLAS triangular solves (a trsm loop when "
                             "batch <= 8 and n >= 64, else trsmBatched)",
               "magma": "MAGMA getrs (replay: cublas<t>getrsBatched as reference)"}


# --------------------------------------------------------------------------- rows from kinds
FACTOR = (FACTOR_CALLS, FACTOR_RULES)
SOLVE = (SOLVE_CALLS, SOLVE_RULES)
_LIBRARY = {"loop": "cusolver", "batched": "cublas", "triangular": "cublas", "magma": "magma"}


def rows_by_kind(name: str, kinds, axes, replay_for) -> tuple:
    """Dispatch rows, one per combination of the kinds torch can run.

    Parameters
    ----------
    name : str
        The op's name (the replays' names start with it).
    kinds : callable
        ``(point) -> tuple of str``: the kinds torch runs for one call, one per axis, in
        order (:func:`factor_kind`, :func:`solve_kind`).
    axes : tuple
        :data:`FACTOR` and / or :data:`SOLVE`: each axis's calls and rule per kind.
    replay_for : callable
        ``(combination: tuple of str) -> replay``; each replay gets a ``__name__`` of its own
        (``solve_loop_triangular``), which the op's path names.

    A row is exact (``bitwise``) unless torch runs MAGMA in it.
    """
    import itertools

    out = []
    for combo in itertools.product(*(tuple(calls) for calls, _ in axes)):
        calls = tuple(c for (table, _), k in zip(axes, combo) for c in table[k])
        rule = "; then ".join(rules[k] for (_, rules), k in zip(axes, combo))
        magma = "magma" in combo
        replay = replay_for(combo)
        replay.__name__ = f"{name}_{'_'.join(combo)}"
        out.append(DispatchRule(When(test=lambda p, c=combo: tuple(kinds(p)) == c,
                                     text=" / ".join(combo)),
                                "magma" if magma else _LIBRARY[combo[-1]], calls, replay,
                                not magma, rule))
    return tuple(out)


# --------------------------------------------------------------------------- the replays' pieces
def getrf_api(kind: str) -> str:
    """The backend entry point that replays a factorization kind (MAGMA: cuSOLVER's getrf per
    matrix, as reference)."""
    return {"loop": "legacy", "batched": "batched", "magma": "legacy"}[kind]


def solve_with(kind: str, LU, pivots, B, adjoint: bool, left: bool = True):
    """X from the LU factorization by the solve kind torch runs (MAGMA: cuBLAS getrsBatched,
    as reference), with torch's ``linalg_lu_solve_out`` around it (for a solve from the right,
    X·op(A) = B, op(A)ᴴ·Xᴴ = Bᴴ: the backend's ``left``)."""
    if kind == "triangular":
        return cuda().lu_solve_triangular(LU, pivots, B, adjoint, left=left)
    X, _ = cuda().getrs(LU, pivots, B, adjoint, "legacy" if kind == "loop" else "batched",
                        left=left)
    return X


def solve_point(p, adjoint: bool, left: bool):
    """``(adjoint, k)`` of the solve torch's kernel runs: flipped for a solve from the
    right; ``k`` the number of right-hand sides (``p.nrhs``)."""
    return adjoint != (not left), p.nrhs if p.nrhs is not None else p.n


def get02_sided(A, X, B, left: bool, adjoint: bool):
    """LAPACK's ``?get02`` of op(A)·X = B, or of X·op(A) = B as op(A)ᴴ·Xᴴ = Bᴴ."""
    from .. import checks

    if left:
        return checks.get02(A, X, B, adjoint)
    return checks.get02(A, X.mH, B.mH, not adjoint)


def zero_info(inputs):
    """One zero ``info`` per matrix (getrs / trsm report illegal arguments only)."""
    import torch

    return torch.zeros(inputs.batch, dtype=torch.int32, device=inputs.x.device)


def factor_of(A, version) -> tuple:
    """What torch's ``_linalg_solve_ex`` / ``linalg_inv_ex`` factor: A itself, column-major.
    Its source factors Aᵀ for a contiguous real A (``use_A_T``) and solves with the adjoint,
    but the API log of torch 2.11 on the H200 shows ``getrs`` / ``trsm`` with ``trans = N``
    for a contiguous float64 A (tests/data/…/lu-eigh, ``linalg.solve`` n = 33, 64): what
    runs is followed. Returns ``(matrix to factor, adjoint of the solve)``."""
    return A, False


# --------------------------------------------------------------------------- sweep methods
def routine_methods(routine: str, call, *, checkable: bool = True) -> tuple:
    """The sweep methods running the public array routine ``routine`` (``"getrf"``,
    ``"lu_solve"``, ``"solve"``, ``"inv"``: :mod:`cusolver_trace.routines.lu`) through each
    row of its implementation table but ``torch`` (the op's own ``torch`` method is that
    call), and ``auto``.

    Parameters
    ----------
    routine : str
        The routine, and the name of its table in :func:`cusolver_trace.routines.lu_method`.
    call : callable
        ``(inputs, opts, method, check) -> result`` in the op's result form (what its check
        reads), through the routine with ``method=`` and, for ``checkable`` routines,
        ``check=``.
    checkable : bool
        The routine takes ``check`` (getrs / lu_solve do not).
    """
    from .. import routines

    table = {"getrf": routines.GETRF, "lu_solve": routines.LU_SOLVE, "solve": routines.SOLVE,
             "inv": routines.INV}[routine]

    def method(name: str) -> Method:
        def make(op, inputs, opts, check):
            return lambda: call(inputs, opts, name, check)

        def resolve(inputs):
            x = inputs.x
            return routines.lu_method(routine, name, inputs.n, inputs.batch, x.dtype,
                                      x.device.type)

        def flops(inputs, on_gpu):
            return table.row(resolve(inputs)).flops_name(on_gpu)

        def workspace(inputs):
            return table.row(resolve(inputs)).workspace

        return Method(name, make, gpu_only=name != "auto" and table.row(name).gpu_only,
                      checkable=checkable, flop_count=flops, resolve=resolve,
                      workspace=workspace)

    return tuple(method(name) for name in table.names if name != "torch")
