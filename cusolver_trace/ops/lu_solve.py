"""``torch.linalg.lu_solve(LU, pivots, B, left, adjoint)``: A's LU factorization and B → X.

CUDA (``lu_solve_kernel``, torch 2.11 – 2.14): by n, the number of right-hand sides k and
B's batch b, a loop of ``cusolverDn<t>getrs``, one ``cublas<t>getrsBatched``, or the rows of
B permuted by the pivots and two cuBLAS triangular solves (a ``trsm`` loop for batch <= 8 and
n >= 64, else ``trsmBatched``); the cusolver preference: the loop for b <= 2 and n >= 64,
else getrsBatched; torch 2.11 runs MAGMA under the magma preference and for n <= 8 with
256 <= k <= 1024 (:func:`cusolver_trace.ops._lu.solve_kind`). A solve from the right
(``left=False``, X·op(A) = B) is solved as op(A)ᴴ·Xᴴ = Bᴴ. CPU: LAPACK ``?getrs`` per
matrix. Checked with LAPACK's ``?get02``; LAWN 41 count ``getrs``. The sweep methods beside
torch and the replay are the rows of :data:`cusolver_trace.routines.LU_SOLVE` (but ``torch``)
and ``auto``, each through :func:`cusolver_trace.routines.lu_solve` (which has no check).
"""
from __future__ import annotations

from . import REPLAY, TORCH, TORCH_CUSOLVER, Op, register
from . import _lu as fam


def torch_call(inputs, opts):
    import torch

    return torch.linalg.lu_solve(inputs.x, inputs.pivots, inputs.B, left=opts.left,
                                 adjoint=opts.adjoint), None


def _kinds(p):
    adjoint, k = fam.solve_point(p, bool(p.options["adjoint"]), bool(p.options["left"]))
    return (fam.solve_kind(p, adjoint, k),)


def _replay(combo):
    kind = combo[0]

    def replay(inputs, opts):
        X = fam.solve_with(kind, inputs.x, inputs.pivots, inputs.B, opts.adjoint, opts.left)
        return X, fam.zero_info(inputs)
    return replay


def lapack_getrs(inputs, opts):
    """LAPACK ``?getrs`` per matrix (torch's CPU path), a solve from the right as
    op(A)ᴴ·Xᴴ = Bᴴ."""
    import numpy as np

    from ..backends import cpu

    lu, piv, b = fam.host(inputs.x), fam.host(inputs.pivots), fam.host(inputs.B)
    if opts.left:
        return cpu.getrs(lu, piv, b, opts.adjoint)
    x, info = cpu.getrs(lu, piv, np.conj(np.swapaxes(b, -1, -2)), not opts.adjoint)
    return np.conj(np.swapaxes(x, -1, -2)), info


def _routine(inputs, opts, method, check):
    """``routines.lu_solve`` with ``method`` (it has no check of its own)."""
    from .. import routines

    return routines.lu_solve(inputs.x, inputs.pivots, inputs.B, left=opts.left,
                             adjoint=opts.adjoint, method=method)


def _get02(inputs, X, opts):
    return fam.get02_sided(inputs.A, X, inputs.B, opts.left, opts.adjoint)


OP = register(Op(
    name="lu_solve",
    summary="torch.linalg.lu_solve: LU, pivots, B -> X (cusolverDn<t>getrs / cublas "
            "getrsBatched / permutation + trsm)",
    torch_name="torch.linalg.lu_solve",
    options=(fam.LEFT, fam.ADJOINT),
    structure="general",
    make_inputs=fam.on_lu,
    takes=("A", "B", "factor", "pivots"),
    torch_call=torch_call,
    outputs=("X",),
    rhs_shape=lambda n, nrhs, opts: (n, nrhs) if opts.left else (nrhs, n),
    dispatch=fam.rows_by_kind("lu_solve", _kinds, (fam.SOLVE,), _replay),
    cpu_calls=("LAPACK {t}getrs × batch",),
    cpu_replay=lapack_getrs,
    check_name="get02",
    check=_get02,
    reads=lambda inputs, opts: (inputs.x, inputs.B),
    flop_count=lambda inputs, on_gpu: "getrs",
    failure_text=fam.failure_text,
    nonfinite_note=fam.NONFINITE_NOTE,
    methods={m.name: m for m in (TORCH, TORCH_CUSOLVER, REPLAY,
                                 *fam.routine_methods("lu_solve", _routine, checkable=False))},
    default_methods={"cuda": ("torch", "replay", "auto"), "cpu": ("torch", "replay", "auto")},
))
