"""``torch.linalg.cholesky(A, upper)``: A → its Cholesky factor.

CUDA: ``cusolverDnXpotrf_bufferSize`` + ``cusolverDnXpotrf`` for batch 1,
``cusolverDn<t>potrfBatched`` for batch > 1, the other triangle zeroed after
(every torch version 2.3 – 2.14; observed in the API logs of torch 2.11 on an H200).
CPU: LAPACK ``?potrf`` per matrix. Checked with LAPACK's ``?pot01``; LAWN 41 count
``potrf``.
"""
from __future__ import annotations

from . import ANY, REPLAY, TORCH, DispatchRule, Method, Op, When, register
from . import _cholesky as fam


def torch_call(inputs, opts):
    """``torch.linalg.cholesky_ex``: the kernels of ``linalg.cholesky`` without its
    synchronizing error check; returns ``(L, info)``."""
    import torch

    return torch.linalg.cholesky_ex(inputs.x, upper=opts.upper)


def potrf_X(inputs, opts):
    """``cusolverDnXpotrf_bufferSize`` + ``cusolverDnXpotrf`` per matrix (torch, batch 1)."""
    return fam.cuda().potrf(inputs.x, opts.upper, "X")


def potrf_batched(inputs, opts):
    """One ``cusolverDn<t>potrfBatched`` (torch, batch > 1)."""
    return fam.cuda().potrf(inputs.x, opts.upper, "batched")


def lapack_potrf(inputs, opts):
    """LAPACK ``?potrf`` per matrix (torch's CPU path); a NaN pivot fails, as in torch's LAPACK."""
    from ..backends import cpu

    return cpu.potrf(fam.host(inputs.x), opts.upper)


def _torch_check(op, inputs, opts, check):
    """torch's own checked call, ``torch.linalg.cholesky`` (its info check: one
    synchronization, as the project's checks), and with ``check=False`` ``cholesky_ex``: the
    sweep's ``--unchecked`` twin then gives the cost of torch's own check on the same inputs,
    beside the project's."""
    import torch

    if check:
        return lambda: torch.linalg.cholesky(inputs.x, upper=opts.upper)
    return lambda: torch.linalg.cholesky_ex(inputs.x, upper=opts.upper)[0]


def _routine(api):
    def make(op, inputs, opts, check):
        from .. import routines

        return lambda: routines.potrf(inputs.x, opts.upper, check=check, method=api)[0]
    return make


def _pot01(inputs, L, opts):
    from .. import checks

    return checks.pot01(inputs.A, L, opts.upper)


OP = register(Op(
    name="cholesky",
    summary="torch.linalg.cholesky: A -> L (cusolverDnXpotrf / potrfBatched)",
    torch_name="torch.linalg.cholesky_ex",
    options=(fam.UPPER,),
    structure="hpd",
    make_inputs=fam.factor_given("cholesky"),
    torch_call=torch_call,
    outputs=("L",),
    dispatch=(
        DispatchRule(When(ANY, batch_max=1), "cusolver",
                     ("cusolverDnXpotrf_bufferSize", "cusolverDnXpotrf"), potrf_X, True,
                     "batch == 1"),
        DispatchRule(When(ANY, batch_min=2), "cusolver", ("cusolverDn{T}potrfBatched",),
                     potrf_batched, True, "batch > 1"),
    ),
    cpu_calls=("LAPACK {t}potrf × batch",),
    cpu_replay=lapack_potrf,
    check_name="pot01",
    check=_pot01,
    reads=fam.reads,
    flop_count=lambda inputs, on_gpu: "potrf",
    reports_info=True,
    fails_on_info=True,
    failure_text=fam.failure_text,
    near_failure=fam.near_failure,
    nonfinite_note=fam.NONFINITE_NOTE,
    methods={m.name: m for m in (
        TORCH, REPLAY,
        Method("torch_check", _torch_check, checkable=True),
        Method("potrf", _routine("auto"), checkable=True),
        Method("potrf_X", _routine("X"), gpu_only=True, checkable=True),
        Method("potrf_legacy", _routine("legacy"), gpu_only=True, checkable=True),
        Method("potrf_batched", _routine("batched"), gpu_only=True, checkable=True),
    )},
    default_methods={"cuda": ("torch", "replay", "potrf_legacy"), "cpu": ("torch", "replay")},
))
