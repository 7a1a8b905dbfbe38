"""``torch.linalg.eigvalsh(A, UPLO)``: a Hermitian A → its eigenvalues (ascending).

The same library calls as :mod:`cusolver_trace.ops.eigh` with ``jobz = NOVECTOR`` (torch
factors a column-major clone of A as scratch); judged by the eigenvalues against a float64
reference (:func:`cusolver_trace.checks.eig_check` without vectors).
"""
from __future__ import annotations

from . import REPLAY, TORCH, TORCH_CUSOLVER, Op, register
from . import _eigh as fam


def torch_call(inputs, opts):
    """``torch.linalg.eigvalsh``: the eigenvalues; torch raises for a failed convergence."""
    import torch

    return torch.linalg.eigvalsh(inputs.x, UPLO=opts.UPLO), None


OP = register(Op(
    name="eigvalsh",
    summary="torch.linalg.eigvalsh: Hermitian A -> eigenvalues (XsyevBatched / Xsyevd / syevj, "
            "no vectors)",
    torch_name="torch.linalg.eigvalsh",
    options=(fam.UPLO,),
    structure="hermitian",
    make_inputs=fam.on_A("eigvalsh"),
    torch_call=torch_call,
    outputs=("eigenvalues",),
    empty_result=fam.empty(False),
    dispatch=fam.rows("eigvalsh", False),
    cpu_calls=("LAPACK {t}syevd / heevd (jobz = N) × batch",),
    cpu_replay=fam.lapack_replay(False, "lapack_syevd_values"),
    check_name="eigvals",
    check=fam.check(False),
    reads=fam.reads,
    flop_count=lambda inputs, on_gpu: "syevd_values",
    fails_on_info=True,
    failure_text=fam.failure_text,
    nonfinite_note=fam.NONFINITE_NOTE,
    methods=lambda: {m.name: m for m in (TORCH, TORCH_CUSOLVER, REPLAY,
                                         *fam.routine_methods(False))},
    default_methods={"cuda": ("torch", "replay", "auto"), "cpu": ("torch", "replay", "auto")},
))
