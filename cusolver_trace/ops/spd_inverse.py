"""A → A⁻¹ through a Cholesky factorization, as ``torch.cholesky_inverse(torch.linalg.cholesky(A))``.

Not one torch op, so it has no dispatch table of its own and no replay (``compare``
refuses it). One path: every sweep method runs the public entry point
:func:`cusolver_trace.routines.spd_inverse` with its ``method`` (``potrf_trsm_batched``:
one ``potrfBatched`` and two ``trsmBatched`` on one buffer; a ``cholesky_inverse`` method
name: potrf, then that method; ``auto``), with the checks as asked, side by side with
torch's two calls. Checked with ``?pot03``; LAWN 41 count potrf + the inverse's.
"""
from __future__ import annotations

from .. import checks, routines
from . import TORCH, Method, Op, register


def torch_call(inputs, upper):
    import torch

    L, _ = torch.linalg.cholesky_ex(inputs.x, upper=upper)
    return torch.cholesky_inverse(L, upper=upper), None


def _method(name: str) -> Method:
    """The sweep method running ``routines.spd_inverse(A, upper, method=name, check=...)``."""
    def make(op, inputs, upper, check):
        return lambda: routines.spd_inverse(inputs.x, upper, method=name, check=check)

    def resolve(inputs):
        return routines.spd_inverse_method(inputs.x, name)

    def flops(inputs, on_gpu):
        used = resolve(inputs)
        if used == "potrf_trsm_batched":
            return "inverse_potrs"
        if used == "torch":
            return "inverse_potrs" if on_gpu else "potri"
        if used == "potrf_gemm_lauum":
            return "potri"
        return routines.INVERSE_METHODS[used].flops_name(on_gpu)

    gpu_only = name == "potrf_trsm_batched" or (
        name in routines.INVERSE_METHODS and name != "torch"
        and routines.INVERSE_METHODS[name].gpu_only)
    return Method(name, make, gpu_only=gpu_only, checkable=True, flop_count=flops,
                  resolve=resolve)


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
        *(_method(name) for name in routines.SPD_INVERSE_METHODS if name != "torch"),
    )},
    default_methods={"cuda": ("torch", "potrf_trsm_batched", "rec_trtri_lauum", "gemm_lauum"),
                     "cpu": ("torch", "potri")},
))
