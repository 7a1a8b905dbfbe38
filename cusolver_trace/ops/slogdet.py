"""``torch.linalg.slogdet(A)``: a general A → (sign, log|det A|).

As ``linalg.det`` (:mod:`cusolver_trace.ops.det`: the same factorization of Aᴴ for a
contiguous real A), then ``_linalg_slogdet_out``'s reductions: sign = Π sgn(uᵢᵢ)·det(P),
logabsdet = Σ log|uᵢᵢ| (a singular A: sign 0, logabsdet −inf). Judged by
:func:`cusolver_trace.checks.slogdet_ratio`; LAWN 41 count getrf.
"""
from __future__ import annotations

from . import REPLAY, TORCH, TORCH_CUSOLVER, Op, register
from . import _lu as fam
from .det import det_P, through_lu


def torch_call(inputs, opts):
    import torch

    sign, logabsdet = torch.linalg.slogdet(inputs.x)
    return (logabsdet, sign), None


def from_lu(LU, pivots):
    """(logabsdet, sign) as ``_linalg_slogdet_out`` computes them (logabsdet first: the
    part whose differences a comparison reports)."""
    import torch

    d = LU.diagonal(0, -2, -1)
    return d.abs().log_().sum(-1), torch.mul(d.sgn().prod(-1), det_P(pivots))


_replay, lapack_slogdet = through_lu(from_lu, "lapack_slogdet")


def _ratio(inputs, result, opts):
    from .. import checks

    logabsdet, sign = result
    return checks.slogdet_ratio(inputs.A, sign, logabsdet)


def _empty(inputs, opts):
    import torch

    A = inputs.x
    real = A.real.dtype if A.is_complex() else A.dtype
    return ((torch.zeros(A.shape[:-2], dtype=real, device=A.device),
             torch.ones(A.shape[:-2], dtype=A.dtype, device=A.device)),
            torch.zeros(inputs.batch, dtype=torch.int32, device=A.device))


OP = register(Op(
    name="slogdet",
    summary="torch.linalg.slogdet: A -> sign, log|det A| (getrf, then Π sgn(uᵢᵢ)·det(P), "
            "Σ log|uᵢᵢ|)",
    torch_name="torch.linalg.slogdet",
    options=(),
    structure="general",
    make_inputs=fam.on_A("slogdet"),
    torch_call=torch_call,
    outputs=("logabsdet", "sign"),
    empty_result=_empty,
    dispatch=fam.rows_by_kind("slogdet", lambda p: (fam.factor_kind(p),), (fam.FACTOR,),
                              _replay),
    cpu_calls=("LAPACK {t}getrf × batch", "Π sgn(uᵢᵢ)·det(P), Σ log|uᵢᵢ|"),
    cpu_replay=lapack_slogdet,
    check_name="slogdet",
    check=_ratio,
    reads=fam.reads,
    flop_count=lambda inputs, on_gpu: "getrf",
    failure_text=fam.failure_text,
    methods={m.name: m for m in (TORCH, TORCH_CUSOLVER, REPLAY)},
    default_methods={"cuda": ("torch", "replay"), "cpu": ("torch", "replay")},
))
