"""``torch.cholesky_solve(B, L, upper)``: the factor L of A and B → X = A⁻¹·B.

As ``cholesky_inverse`` with B for the identity, except that torch <= 2.11 with
``preferred_linalg_library("cusolver")`` uses one ``cusolverDn<t>potrsBatched`` when
nrhs == 1. CPU: LAPACK ``?potrs`` per matrix. Checked with LAPACK's ``?pot02``; LAWN 41
count ``potrs`` (2·nrhs·n²).
"""
from __future__ import annotations

from . import (ANY, FROM_2_12, REPLAY, TORCH, TORCH_CUSOLVER, UP_TO_2_11, DispatchRule, Method,
               Op, When, register)
from . import _cholesky as fam


def torch_call(inputs, opts):
    import torch

    return torch.cholesky_solve(inputs.B, inputs.x, upper=opts.upper), None


def potrs_X(inputs, opts):
    """``cusolverDnXpotrs`` per matrix."""
    return fam.cuda().potrs(inputs.x, inputs.B, opts.upper, "X")


def potrs_batched(inputs, opts):
    """One ``cusolverDn<t>potrsBatched`` (nrhs == 1)."""
    return fam.cuda().potrs(inputs.x, inputs.B, opts.upper, "batched")


def trsm_solve_loop(inputs, opts):
    """Two ``cublas<t>trsm`` per matrix."""
    return fam.cuda().trsm_solve(inputs.x, inputs.B, opts.upper, batched=False)


def trsm_solve_batched(inputs, opts):
    """Two ``cublas<t>trsmBatched``."""
    return fam.cuda().trsm_solve(inputs.x, inputs.B, opts.upper, batched=True)


def lapack_potrs(inputs, opts):
    """LAPACK ``?potrs`` per matrix (torch's CPU path)."""
    import numpy as np

    from ..backends import cpu

    x, b = fam.host(inputs.x), fam.host(inputs.B)
    return cpu.potrs(x, np.broadcast_to(b, x.shape[:-2] + b.shape[-2:]), opts.upper)


def _routine(api):
    def make(op, inputs, opts, check):
        from .. import routines

        return lambda: routines.potrs(inputs.x, inputs.B, opts.upper, method=api)
    return make


def _backend(replay):
    def make(op, inputs, opts, check):
        return lambda: replay(inputs, opts)[0]
    return make


def _pot02(inputs, X, opts):
    from .. import checks

    return checks.pot02(inputs.A, X, inputs.B, opts.upper)


OP = register(Op(
    name="cholesky_solve",
    summary="torch.cholesky_solve: L, B -> X (Xpotrs / MAGMA / cuBLAS trsm)",
    torch_name="torch.cholesky_solve",
    options=(fam.UPPER,),
    structure="hpd",
    make_inputs=fam.inputs_on_factor,
    takes=("A", "B", "factor"),
    torch_call=torch_call,
    outputs=("X",),
    dispatch=(
        DispatchRule(When(ANY, batch_max=1), "cusolver", fam.XPOTRS_CALLS, potrs_X, True,
                     "batch == 1"),
        DispatchRule(When(UP_TO_2_11, batch_min=2, nrhs_max=1, preferred=("cusolver",)),
                     "cusolver", ("cusolverDn{T}potrsBatched",), potrs_batched, True,
                     "batch > 1, preferred = cusolver, nrhs == 1"),
        DispatchRule(When(UP_TO_2_11, batch_min=2, preferred=("cusolver",)), "cusolver",
                     ("cusolverDnXpotrs × batch",), potrs_X, True,
                     "batch > 1, preferred = cusolver, nrhs > 1"),
        DispatchRule(When(UP_TO_2_11, batch_min=2), "magma", ("magma_{t}potrs_batched",), potrs_X,
                     False, "batch > 1, default preference: MAGMA (replay runs the cuSOLVER path "
                     "as reference)"),
        DispatchRule(When(FROM_2_12, batch_min=2, batch_max=8, n_min=64), "cublas",
                     fam.TRSM_CALLS, trsm_solve_loop, True,
                     "batch > 1, batch <= 8 and n >= 64: cuBLAS trsm loop"),
        DispatchRule(When(FROM_2_12, batch_min=2), "cublas", fam.TRSM_BATCHED_CALLS,
                     trsm_solve_batched, True, "batch > 1: cuBLAS trsmBatched"),
    ),
    cpu_calls=("LAPACK {t}potrs × batch",),
    cpu_replay=lapack_potrs,
    check_name="pot02",
    check=_pot02,
    reads=fam.reads,
    flop_count=lambda inputs, on_gpu: "potrs",
    failure_text=fam.failure_text,
    nonfinite_note=fam.NONFINITE_NOTE,
    methods={m.name: m for m in (
        TORCH, TORCH_CUSOLVER, REPLAY,
        Method("potrs", _routine("X"), checkable=False),
        Method("potrs_batched", _routine("batched"), gpu_only=True),
        Method("trsm", _backend(trsm_solve_loop), gpu_only=True),
        Method("trsm_batched", _backend(trsm_solve_batched), gpu_only=True),
    )},
    default_methods={"cuda": ("torch", "replay", "trsm_batched"),
                     "cpu": ("torch", "replay", "potrs")},
))
