"""``torch.cholesky_inverse(L, upper)``: the factor L of A → A⁻¹.

CUDA, batch 1: identity right-hand side + ``cusolverDnXpotrs`` (nrhs = n), which calls
``cublas<t>trsm_v2_64`` twice (observed, torch 2.11 on an H200). Batch > 1: MAGMA
``potrs_batched`` (torch <= 2.11, default preference), a loop of ``cusolverDnXpotrs``
(torch <= 2.11, ``preferred_linalg_library("cusolver")``), two cuBLAS ``trsm`` solves
on the identity (torch >= 2.12: a loop when batch <= 8 and n >= 64, else
``trsmBatched``). CPU: LAPACK ``?potri`` + mirror. Checked with LAPACK's ``?pot03``;
LAWN 41 count ``inverse_potrs`` (2n³) on CUDA, ``potri`` (2n³/3) on the CPU, and
``potri`` quoted for every method as the least work that yields A⁻¹. The sweep's
methods are every method of :func:`cusolver_trace.routines.cholesky_inverse`.
"""
from __future__ import annotations

from . import (ANY, FROM_2_12, REPLAY, TORCH, TORCH_CUSOLVER, UP_TO_2_11, DispatchRule, Op,
               When, register)
from . import _cholesky as fam


def torch_call(inputs, opts):
    import torch

    return torch.cholesky_inverse(inputs.x, upper=opts.upper), None


def potrs_identity_X(inputs, opts):
    """Identity right-hand side + ``cusolverDnXpotrs`` (nrhs = n) per matrix."""
    return fam.cuda().potrs_identity(inputs.x, opts.upper, "X")


def trsm_identity_loop(inputs, opts):
    """Two ``cublas<t>trsm`` on the identity per matrix (torch >= 2.12, batch <= 8, n >= 64)."""
    return fam.cuda().trsm_identity_inverse(inputs.x, opts.upper, batched=False)


def trsm_identity_batched(inputs, opts):
    """Two ``cublas<t>trsmBatched`` on the identity (torch >= 2.12)."""
    return fam.cuda().trsm_identity_inverse(inputs.x, opts.upper, batched=True)


def lapack_potri(inputs, opts):
    """LAPACK ``?potri`` + mirror of the computed triangle (torch's CPU path)."""
    from ..backends import cpu

    return cpu.potri(fam.host(inputs.x), opts.upper)


def _pot03(inputs, X, opts):
    from .. import checks

    return checks.pot03(inputs.A, X, opts.upper)


def _methods():
    from .. import routines

    return {m.name: m for m in (
        TORCH, TORCH_CUSOLVER, REPLAY,
        *(fam.inverse_method(name) for name in routines.METHOD_NAMES if name != "torch"))}


def _loop_trsm(batch_max=8, n_min=64):
    return When(FROM_2_12, batch_min=2, batch_max=batch_max, n_min=n_min)


OP = register(Op(
    name="cholesky_inverse",
    summary="torch.cholesky_inverse: L -> A⁻¹ (Xpotrs on the identity / MAGMA / cuBLAS trsm)",
    torch_name="torch.cholesky_inverse",
    options=(fam.UPPER,),
    structure="hpd",
    make_inputs=fam.inputs_on_factor,
    takes=("A", "factor"),
    torch_call=torch_call,
    outputs=("Ainv",),
    dispatch=(
        DispatchRule(When(ANY, batch_max=1), "cusolver", fam.XPOTRS_CALLS, potrs_identity_X,
                     True, "batch == 1: identity RHS, nrhs = n"),
        DispatchRule(When(UP_TO_2_11, batch_min=2, preferred=("cusolver",)), "cusolver",
                     ("cusolverDnXpotrs × batch",), potrs_identity_X, True,
                     "batch > 1, preferred_linalg_library = cusolver: loop of Xpotrs"),
        DispatchRule(When(UP_TO_2_11, batch_min=2), "magma", ("magma_{t}potrs_batched",),
                     potrs_identity_X, False,
                     "batch > 1, default preference: MAGMA (replay runs the cuSOLVER path as "
                     "reference)"),
        DispatchRule(_loop_trsm(), "cublas", fam.TRSM_CALLS, trsm_identity_loop, True,
                     "batch > 1, batch <= 8 and n >= 64: cuBLAS trsm loop"),
        DispatchRule(When(FROM_2_12, batch_min=2), "cublas", fam.TRSM_BATCHED_CALLS,
                     trsm_identity_batched, True, "batch > 1: cuBLAS trsmBatched"),
    ),
    cpu_calls=("LAPACK {t}potri", "mirror triangle"),
    cpu_replay=lapack_potri,
    check_name="pot03",
    check=_pot03,
    reads=fam.reads,
    flop_count=lambda inputs, on_gpu: "inverse_potrs" if on_gpu else "potri",
    failure_text=fam.failure_text,
    nonfinite_note=fam.NONFINITE_NOTE,
    yardstick="potri",
    hermitian_result=True,
    methods=_methods,
    default_methods={"cuda": ("torch", "potri", "trsm_batched", "trtri_lauum", "rec_trtri_lauum",
                              "gemm_lauum", "auto"),
                     "cpu": ("torch", "potrs", "potri")},
))
