"""``torch.linalg.solve(A, B, left)``: a general A and B → X = A⁻¹·B (or B·A⁻¹).

torch factors A (``linalg.lu_factor``'s dispatch: :func:`cusolver_trace.ops._lu.factor_kind`)
and solves from the factorization (``linalg.lu_solve``'s:
:func:`cusolver_trace.ops._lu.solve_kind`), both on the GPU; the replay makes the same two
decisions and the same calls. ``linalg.solve_ex`` returns getrf's ``info`` (a singular A:
U[k, k] = 0 exactly). CPU: LAPACK ``?getrf`` + ``?getrs``. Checked with LAPACK's
``?get02``; LAWN 41 count getrf + getrs. The sweep methods beside torch and the replay are
the rows of :data:`cusolver_trace.routines.SOLVE` (but ``torch``) and ``auto``, each through
:func:`cusolver_trace.routines.solve` with its checks.
"""
from __future__ import annotations

from . import REPLAY, TORCH, TORCH_CUSOLVER, Op, register
from . import _lu as fam


def torch_call(inputs, opts):
    """``torch.linalg.solve_ex``: ``(X, info)`` without a synchronizing check."""
    import torch

    return torch.linalg.solve_ex(inputs.x, inputs.B, left=opts.left)


def _kinds(p):
    adjoint, k = fam.solve_point(p, False, bool(p.options["left"]))
    return fam.factor_kind(p), fam.solve_kind(p, adjoint, k)


def _replay(combo):
    fk, sk = combo

    def replay(inputs, opts):
        import torch

        M, adjoint = fam.factor_of(inputs.x, torch.__version__)
        LU, pivots, info = fam.cuda().getrf(M, True, fam.getrf_api(fk))
        return fam.solve_with(sk, LU, pivots, inputs.B, adjoint, opts.left), info
    return replay


def lapack_gesv(inputs, opts):
    """LAPACK ``?getrf`` + ``?getrs`` per matrix (torch's CPU path)."""
    import numpy as np

    from ..backends import cpu

    lu, piv, info = cpu.getrf(fam.host(inputs.x), True)
    b = fam.host(inputs.B)
    if opts.left:
        x, _ = cpu.getrs(lu, piv, b, False)
        return x, info
    x, _ = cpu.getrs(lu, piv, np.conj(np.swapaxes(b, -1, -2)), True)
    return np.conj(np.swapaxes(x, -1, -2)), info


def _routine(inputs, opts, method, check):
    """``routines.solve`` with ``method`` and ``check``."""
    from .. import routines

    return routines.solve(inputs.x, inputs.B, left=opts.left, check=check, method=method)


def _get02(inputs, X, opts):
    return fam.get02_sided(inputs.A, X, inputs.B, opts.left, False)


OP = register(Op(
    name="solve",
    summary="torch.linalg.solve: A, B -> X (getrf, then getrs / getrsBatched / permutation + "
            "trsm)",
    torch_name="torch.linalg.solve_ex",
    options=(fam.LEFT,),
    structure="general",
    make_inputs=fam.on_A("solve"),
    takes=("A", "B"),
    torch_call=torch_call,
    outputs=("X",),
    rhs_shape=lambda n, nrhs, opts: (n, nrhs) if opts.left else (nrhs, n),
    dispatch=fam.rows_by_kind("solve", _kinds, (fam.FACTOR, fam.SOLVE), _replay),
    cpu_calls=("LAPACK {t}getrf × batch", "LAPACK {t}getrs × batch"),
    cpu_replay=lapack_gesv,
    check_name="get02",
    check=_get02,
    reads=fam.reads,
    flop_count=lambda inputs, on_gpu: "getrs",
    plus_count="getrf",
    reports_info=True,
    fails_on_info=True,
    failure_text=fam.failure_text,
    nonfinite_note=fam.NONFINITE_NOTE,
    methods={m.name: m for m in (TORCH, TORCH_CUSOLVER, REPLAY,
                                 *fam.routine_methods("solve", _routine))},
    default_methods={"cuda": ("torch", "replay", "auto"), "cpu": ("torch", "replay", "auto")},
))
