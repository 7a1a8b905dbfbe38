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

from .. import checks, routines
from ..backends import cpu as _cpu
from . import (ANY, FROM_2_12, REPLAY, TORCH, TORCH_CUSOLVER, UP_TO_2_11, DispatchRule, Op, When,
               register)
from ._common import TRSM_BATCHED_CALLS, TRSM_CALLS, XPOTRS_CALLS, cuda, inverse_method


def torch_call(inputs, upper):
    import torch

    return torch.cholesky_inverse(inputs.x, upper=upper), None


def potrs_identity_X(inputs, upper):
    """Identity right-hand side + ``cusolverDnXpotrs`` (nrhs = n) per matrix."""
    return cuda().potrs_identity(inputs.x, upper, "X")


def trsm_identity_loop(inputs, upper):
    """Two ``cublas<t>trsm`` on the identity per matrix (torch >= 2.12, batch <= 8, n >= 64)."""
    return cuda().trsm_identity_inverse(inputs.x, upper, batched=False)


def trsm_identity_batched(inputs, upper):
    """Two ``cublas<t>trsmBatched`` on the identity (torch >= 2.12)."""
    return cuda().trsm_identity_inverse(inputs.x, upper, batched=True)


def lapack_potri(inputs, upper):
    """LAPACK ``?potri`` + mirror of the computed triangle (torch's CPU path)."""
    return _cpu.potri(inputs.x.detach().resolve_conj().resolve_neg().numpy(), upper)


def _loop_trsm(batch_max=8, n_min=64):
    return When(FROM_2_12, batch_min=2, batch_max=batch_max, n_min=n_min)


OP = register(Op(
    name="cholesky_inverse",
    summary="torch.cholesky_inverse: L -> A⁻¹ (Xpotrs on the identity / MAGMA / cuBLAS trsm)",
    torch_name="torch.cholesky_inverse",
    torch_call=torch_call,
    matrix="factor",
    has_rhs=False,
    dispatch=(
        DispatchRule(When(ANY, batch_max=1), "cusolver", XPOTRS_CALLS, potrs_identity_X, True,
                     "batch == 1: identity RHS, nrhs = n"),
        DispatchRule(When(UP_TO_2_11, batch_min=2, preferred=("cusolver",)), "cusolver",
                     ("cusolverDnXpotrs × batch",), potrs_identity_X, True,
                     "batch > 1, preferred_linalg_library = cusolver: loop of Xpotrs"),
        DispatchRule(When(UP_TO_2_11, batch_min=2), "magma", ("magma_{t}potrs_batched",),
                     potrs_identity_X, False,
                     "batch > 1, default preference: MAGMA (replay runs the cuSOLVER path as "
                     "reference)"),
        DispatchRule(_loop_trsm(), "cublas", TRSM_CALLS, trsm_identity_loop, True,
                     "batch > 1, batch <= 8 and n >= 64: cuBLAS trsm loop"),
        DispatchRule(When(FROM_2_12, batch_min=2), "cublas", TRSM_BATCHED_CALLS, trsm_identity_batched,
                     True, "batch > 1: cuBLAS trsmBatched"),
    ),
    cpu_calls=("LAPACK {t}potri", "mirror triangle"),
    cpu_replay=lapack_potri,
    check_name="pot03",
    check=lambda inputs, X, upper: checks.pot03(inputs.A, X, upper),
    flop_count=lambda inputs, on_gpu: "inverse_potrs" if on_gpu else "potri",
    yardstick="potri",
    hermitian_result=True,
    methods={m.name: m for m in (
        TORCH, TORCH_CUSOLVER, REPLAY,
        *(inverse_method(name) for name in routines.METHOD_NAMES if name != "torch"),
    )},
    default_methods={"cuda": ("torch", "potri", "trsm_batched", "trtri_lauum", "rec_trtri_lauum",
                              "gemm_lauum", "auto"),
                     "cpu": ("torch", "potrs", "potri")},
))
