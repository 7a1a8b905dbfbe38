"""A → A⁻¹ through a Cholesky factorization, as ``torch.cholesky_inverse(torch.linalg.cholesky(A))``.

Not one torch op, so it has no dispatch table of its own and no replay (``compare``
refuses it). One path: every sweep method runs the public entry point
:func:`cusolver_trace.routines.spd_inverse` with its ``method`` (``potrf_trsm_batched``:
one ``potrfBatched`` and two ``trsmBatched`` on one buffer; a ``cholesky_inverse`` method
name: potrf, then that method; ``auto``), with the checks as asked, side by side with
torch's two calls. Checked with ``?pot03``; LAWN 41 count potrf + the inverse's.
"""
from __future__ import annotations

from . import TORCH, Method, Op, register
from . import _cholesky as fam


def torch_call(inputs, opts):
    import torch

    L, _ = torch.linalg.cholesky_ex(inputs.x, upper=opts.upper)
    return torch.cholesky_inverse(L, upper=opts.upper), None


def _method(name: str) -> Method:
    """The sweep method running ``routines.spd_inverse(A, upper, method=name, check=...)``."""
    from .. import routines

    def make(op, inputs, opts, check):
        return lambda: routines.spd_inverse(inputs.x, opts.upper, method=name, check=check)

    def resolve(inputs):
        return routines.spd_inverse_method(inputs.x, name)

    def flops(inputs, on_gpu):
        return routines.SPD_INVERSE_TABLE.row(resolve(inputs)).flops_name(on_gpu)

    def workspace(inputs):
        return routines.SPD_INVERSE_TABLE.row(resolve(inputs)).workspace

    return Method(name, make, gpu_only=name != "auto" and routines.SPD_INVERSE_TABLE.row(name).gpu_only,
                  checkable=True, flop_count=flops, resolve=resolve, workspace=workspace)


def _pot03(inputs, X, opts):
    from .. import checks

    return checks.pot03(inputs.A, X, opts.upper)


def _methods():
    from .. import routines

    return {m.name: m for m in (
        TORCH, *(_method(name) for name in routines.SPD_INVERSE_METHODS if name != "torch"))}


OP = register(Op(
    name="spd_inverse",
    summary="A -> A⁻¹ through potrf (torch: cholesky_inverse(cholesky(A))); sweep only",
    torch_name="torch.cholesky_inverse(torch.linalg.cholesky_ex(A))",
    options=(fam.UPPER,),
    structure="hpd",
    make_inputs=fam.factor_given("spd_inverse"),
    torch_call=torch_call,
    outputs=("Ainv",),
    dispatch=(),
    cpu_calls=(),
    cpu_replay=None,
    check_name="pot03",
    check=_pot03,
    reads=fam.reads,
    flop_count=lambda inputs, on_gpu: "inverse_potrs" if on_gpu else "potri",
    failure_text=fam.failure_text,
    yardstick="potri",
    plus_count="potrf",
    hermitian_result=True,
    methods=_methods,
    default_methods={"cuda": ("torch", "potrf_trsm_batched", "rec_trtri_lauum", "gemm_lauum"),
                     "cpu": ("torch", "potri")},
))
