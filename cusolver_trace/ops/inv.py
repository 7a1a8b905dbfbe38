"""``torch.linalg.inv(A)``: a general A → A⁻¹.

torch solves A·X = I (``linalg.solve_ex`` with B the identity, so k = n): getrf
(:func:`cusolver_trace.ops._lu.factor_kind`), then ``cublas<t>getrsBatched`` for n <= 16
(batch 1 too) or the permutation and two cuBLAS triangular solves for n > 16, under the
default preference (:func:`cusolver_trace.ops._lu.solve_kind`). ``linalg.inv_ex`` returns
getrf's ``info``. CPU: LAPACK ``?getrf`` + ``?getrs`` on the identity. Checked with LAPACK's
``?get03``; LAWN 41 count getrf + getrs with nrhs = n, and ``getri`` quoted as the least
work that yields A⁻¹ from the factorization. The sweep methods beside torch and the replay
are the rows of :data:`cusolver_trace.routines.INV` (but ``torch``) and ``auto``, each through
:func:`cusolver_trace.routines.inv` with its checks.
"""
from __future__ import annotations

from . import REPLAY, TORCH, TORCH_CUSOLVER, Op, register
from . import _lu as fam


def torch_call(inputs, opts):
    """``torch.linalg.inv_ex``: ``(Ainv, info)`` without a synchronizing check."""
    import torch

    return torch.linalg.inv_ex(inputs.x)


def _kinds(p):
    return fam.factor_kind(p), fam.solve_kind(p, False, p.n)


def _identity(A):
    import torch

    n = A.shape[-1]
    return torch.eye(n, dtype=A.dtype, device=A.device).expand(A.shape)


def _replay(combo):
    fk, sk = combo

    def replay(inputs, opts):
        import torch

        M, adjoint = fam.factor_of(inputs.x, torch.__version__)
        LU, pivots, info = fam.cuda().getrf(M, True, fam.getrf_api(fk))
        return fam.solve_with(sk, LU, pivots, _identity(inputs.x), adjoint), info
    return replay


def lapack_getrs_identity(inputs, opts):
    """LAPACK ``?getrf`` + ``?getrs`` on the identity per matrix (torch's CPU path)."""
    import numpy as np

    from ..backends import cpu

    a = fam.host(inputs.x)
    lu, piv, info = cpu.getrf(a, True)
    eye = np.broadcast_to(np.eye(a.shape[-1], dtype=a.dtype), a.shape)
    x, _ = cpu.getrs(lu, piv, eye, False)
    return x, info


def _routine(inputs, opts, method, check):
    """``routines.inv`` with ``method`` and ``check``."""
    from .. import routines

    return routines.inv(inputs.x, check=check, method=method)


def _get03(inputs, X, opts):
    from .. import checks

    return checks.get03(inputs.A, X)


OP = register(Op(
    name="inv",
    summary="torch.linalg.inv: A -> A⁻¹ (getrf, then getrsBatched / permutation + trsm on "
            "the identity)",
    torch_name="torch.linalg.inv_ex",
    options=(),
    structure="general",
    make_inputs=fam.on_A("inv"),
    torch_call=torch_call,
    outputs=("Ainv",),
    dispatch=fam.rows_by_kind("inv", _kinds, (fam.FACTOR, fam.SOLVE), _replay),
    cpu_calls=("LAPACK {t}getrf × batch", "LAPACK {t}getrs (identity, nrhs = n) × batch"),
    cpu_replay=lapack_getrs_identity,
    check_name="get03",
    check=_get03,
    reads=fam.reads,
    flop_count=lambda inputs, on_gpu: "inverse_getrs",
    plus_count="getrf",
    yardstick="getri",
    reports_info=True,
    fails_on_info=True,
    failure_text=fam.failure_text,
    nonfinite_note=fam.NONFINITE_NOTE,
    methods={m.name: m for m in (TORCH, TORCH_CUSOLVER, REPLAY,
                                 *fam.routine_methods("inv", _routine))},
    default_methods={"cuda": ("torch", "replay", "auto"), "cpu": ("torch", "replay", "auto")},
))
