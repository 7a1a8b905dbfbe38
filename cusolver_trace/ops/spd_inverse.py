"""A → A⁻¹ through a Cholesky factorization, as ``torch.cholesky_inverse(torch.linalg.cholesky(A))``.

Not one torch op, so it has no dispatch table of its own and no replay (``compare``
refuses it); the sweep times torch's two calls against the fused
``potrf_trsm_batched`` (one ``potrfBatched``, two ``trsmBatched`` on one buffer) and
against :func:`cusolver_trace.routines.potrf` followed by each method of
:func:`cusolver_trace.routines.cholesky_inverse`. Checked with ``?pot03``; LAWN 41
count potrf + the inverse's.
"""
from __future__ import annotations

from .. import checks, routines
from . import TORCH, Method, Op, register
from ._common import cuda, inverse_method


def torch_call(inputs, upper):
    import torch

    L, _ = torch.linalg.cholesky_ex(inputs.x, upper=upper)
    return torch.cholesky_inverse(L, upper=upper), None


def _fused(op, inputs, upper, check):
    return lambda: cuda().potrf_trsm_batched(inputs.x, upper)[0]


OP = register(Op(
    name="spd_inverse",
    summary="A -> A⁻¹ through potrf (torch: cholesky_inverse(cholesky(A))); sweep only",
    torch_name="torch.cholesky_inverse(torch.linalg.cholesky_ex(A))",
    torch_call=torch_call,
    matrix="A",
    has_rhs=False,
    dispatch=(),
    cpu_calls=(),
    cpu_replay=None,
    check_name="pot03",
    check=lambda inputs, X, upper: checks.pot03(inputs.A, X, upper),
    flop_count=lambda inputs, on_gpu: "inverse_potrs" if on_gpu else "potri",
    yardstick="potri",
    plus_count="potrf",
    hermitian_result=True,
    methods={m.name: m for m in (
        TORCH,
        Method("potrf_trsm_batched", _fused, gpu_only=True, flop_count=lambda i, g: "inverse_potrs"),
        *(inverse_method(name, factor_first=True) for name in routines.METHOD_NAMES if name != "torch"),
    )},
    default_methods={"cuda": ("torch", "potrf_trsm_batched", "rec_trtri_lauum"),
                     "cpu": ("torch", "potri")},
))
