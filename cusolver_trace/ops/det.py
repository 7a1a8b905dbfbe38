"""``torch.linalg.det(A)``: a general A → det(A).

torch (``_linalg_det_out``) factors A with ``linalg.lu_factor_ex`` (its dispatch:
:func:`cusolver_trace.ops._lu.factor_kind`; Aᴴ for a contiguous real A, since
det(Aᵀ) = det(A)) and multiplies det(P), from the pivots, by the product of U's diagonal,
with ATen reductions; ``info`` is not looked at (a singular A gives 0). The replay makes the
same library calls and the same reductions. CPU: LAPACK ``?getrf`` and the same product.
Judged by :func:`cusolver_trace.checks.det_ratio` (the backward error in units of
eps·‖A‖₂ that the computed det implies; < 30 passes); LAWN 41 count getrf.
"""
from __future__ import annotations

from . import REPLAY, TORCH, TORCH_CUSOLVER, Op, register
from . import _lu as fam


def torch_call(inputs, opts):
    import torch

    return torch.linalg.det(inputs.x), None


def factored(A):
    """What torch factors for ``det`` / ``slogdet``: Aᴴ (a view, the same memory as the
    F-contiguous copy of Aᵀ) for a contiguous real A, else A."""
    return A.mH if A.is_contiguous() and not A.is_complex() else A


def det_P(pivots):
    """det(P) as ATen's ``lu_det_P``: ±1 as int64, from the pivots' interchanges."""
    import torch

    k = pivots.shape[-1]
    return ((torch.arange(1, k + 1, dtype=pivots.dtype, device=pivots.device) != pivots)
            .sum(-1, dtype=torch.int64).fmod_(2).mul_(-2).add_(1))


def from_lu(LU, pivots):
    """det = det(P)·Πᵢ uᵢᵢ, as ``_linalg_det_out`` computes it."""
    import torch

    return torch.mul(det_P(pivots), LU.diagonal(0, -2, -1).prod(-1))


def through_lu(reduce, cpu_name: str):
    """The replays of an op that factors like ``det`` (:func:`factored`, torch's dispatch) and
    reduces the LU factorization with ``reduce(LU, pivots)``: ``(replay_for(combo), the CPU
    replay)``; info is not looked at, as torch does not."""
    def replay_for(combo):
        api = fam.getrf_api(combo[0])

        def replay(inputs, opts):
            LU, pivots, _ = fam.cuda().getrf(factored(inputs.x), True, api)
            return reduce(LU, pivots), fam.zero_info(inputs)
        return replay

    def lapack(inputs, opts):
        """LAPACK ``?getrf`` per matrix and the same reduction (torch's CPU path)."""
        import torch

        from ..backends import cpu

        lu, piv, _ = cpu.getrf(fam.host(factored(inputs.x)), True)
        return reduce(torch.from_numpy(lu), torch.from_numpy(piv)), fam.zero_info(inputs)
    lapack.__name__ = cpu_name
    return replay_for, lapack


_replay, lapack_det = through_lu(from_lu, "lapack_det")


def _det_ratio(inputs, det, opts):
    from .. import checks

    return checks.det_ratio(inputs.A, det)


def _empty(inputs, opts):
    import torch

    A = inputs.x
    return (torch.ones(A.shape[:-2], dtype=A.dtype, device=A.device),
            torch.zeros(inputs.batch, dtype=torch.int32, device=A.device))


OP = register(Op(
    name="det",
    summary="torch.linalg.det: A -> det(A) (getrf, then det(P)·Π diag(U))",
    torch_name="torch.linalg.det",
    options=(),
    structure="general",
    make_inputs=fam.on_A("det"),
    torch_call=torch_call,
    outputs=("det",),
    empty_result=_empty,
    dispatch=fam.rows_by_kind("det", lambda p: (fam.factor_kind(p),), (fam.FACTOR,), _replay),
    cpu_calls=("LAPACK {t}getrf × batch", "det(P)·Π diag(U)"),
    cpu_replay=lapack_det,
    check_name="det",
    check=_det_ratio,
    reads=fam.reads,
    flop_count=lambda inputs, on_gpu: "getrf",
    failure_text=fam.failure_text,
    methods={m.name: m for m in (TORCH, TORCH_CUSOLVER, REPLAY)},
    default_methods={"cuda": ("torch", "replay"), "cpu": ("torch", "replay")},
))
