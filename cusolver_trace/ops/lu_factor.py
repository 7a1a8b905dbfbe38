"""``torch.linalg.lu_factor(A, pivot)``: a general A → its LU factorization (LU, pivots).

CUDA (torch 2.11 – 2.14, square A): ``cusolverDn<t>getrf_bufferSize`` + ``cusolverDn<t>getrf``
per matrix for batch 1, ``cublas<t>getrfBatched`` for small batches of small matrices
(``n <= 16 or (n <= 128 and batch <= 16)``; from torch 2.13 the cuSOLVER loop instead when
n² passes a threshold of batch and dtype), MAGMA otherwise and under the magma preference
(:func:`cusolver_trace.ops._lu.factor_kind`). ``pivot=False``: ipiv NULL, and after
cuSOLVER torch replaces NaN by 0 in LU; pivots are ``1 … n`` (CUDA only: torch's CPU LU
always pivots). CPU: LAPACK ``?getrf`` per matrix. Checked with LAPACK's ``?get01``;
LAWN 41 count ``getrf``. The sweep methods beside torch and the replay are the rows of
:data:`cusolver_trace.routines.GETRF` (but ``torch``) and ``auto``, each through
:func:`cusolver_trace.routines.getrf` with its checks.
"""
from __future__ import annotations

from . import REPLAY, TORCH, TORCH_CUSOLVER, Op, register
from . import _lu as fam


def torch_call(inputs, opts):
    """``torch.linalg.lu_factor_ex``: ``((LU, pivots), info)`` without a synchronizing check."""
    import torch

    LU, pivots, info = torch.linalg.lu_factor_ex(inputs.x, pivot=opts.pivot)
    return (LU, pivots), info


def _replay(combo):
    api = {"loop": "legacy", "batched": "batched", "magma": "legacy"}[combo[0]]

    def replay(inputs, opts):
        LU, pivots, info = fam.cuda().getrf(inputs.x, opts.pivot, api)
        return (LU, pivots), info
    return replay


def lapack_getrf(inputs, opts):
    """LAPACK ``?getrf`` per matrix (torch's CPU path)."""
    from ..backends import cpu

    lu, piv, info = cpu.getrf(fam.host(inputs.x), opts.pivot)
    return (lu, piv), info


def _inputs(A, given, opts):
    inp = fam.on_A("lu_factor")(A, given, opts)
    if not opts.pivot and not inp.on_cuda:
        raise ValueError("pivot=False runs on CUDA only: torch's CPU LU always pivots (LAPACK "
                         "has no unpivoted getrf)")
    return inp


def _get01(inputs, result, opts):
    from .. import checks

    LU, pivots = result
    return checks.get01(inputs.A, LU, pivots)


def _empty(inputs, opts):
    import torch

    A = inputs.x
    k = min(A.shape[-2:])
    return ((torch.zeros(A.shape, dtype=A.dtype, device=A.device),
             torch.zeros(*A.shape[:-2], k, dtype=torch.int32, device=A.device)),
            torch.zeros(inputs.batch, dtype=torch.int32, device=A.device))


def _kinds(p):
    return (fam.factor_kind(p),)


def _routine(inputs, opts, method, check):
    """``routines.getrf`` with ``method``: ``(LU, pivots)``."""
    from .. import routines

    LU, pivots, _ = routines.getrf(inputs.x, pivot=opts.pivot, check=check, method=method)
    return LU, pivots


OP = register(Op(
    name="lu_factor",
    summary="torch.linalg.lu_factor: A -> LU, pivots (cusolverDn<t>getrf / cublas getrfBatched "
            "/ MAGMA)",
    torch_name="torch.linalg.lu_factor_ex",
    options=(fam.PIVOT,),
    structure="general",
    make_inputs=_inputs,
    torch_call=torch_call,
    outputs=("LU", "pivots"),
    empty_result=_empty,
    dispatch=fam.rows_by_kind("lu_factor", _kinds, (fam.FACTOR,), _replay),
    cpu_calls=("LAPACK {t}getrf × batch",),
    cpu_replay=lapack_getrf,
    check_name="get01",
    check=_get01,
    reads=fam.reads,
    flop_count=lambda inputs, on_gpu: "getrf",
    reports_info=True,
    fails_on_info=True,
    failure_text=fam.failure_text,
    near_failure=fam.near_failure,
    nonfinite_note=fam.NONFINITE_NOTE,
    methods={m.name: m for m in (TORCH, TORCH_CUSOLVER, REPLAY,
                                 *fam.routine_methods("getrf", _routine))},
    default_methods={"cuda": ("torch", "replay", "auto"), "cpu": ("torch", "replay", "auto")},
))
