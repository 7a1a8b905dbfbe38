"""``torch.linalg.eigh(A, UPLO)``: a Hermitian A → its eigenvalues (ascending) and orthonormal
eigenvectors.

torch reads the ``UPLO`` triangle only and runs, on CUDA (:func:`cusolver_trace.ops._eigh.kind`):
torch 2.11 one ``cusolverDnXsyevBatched`` for batch > 1 with n <= 32, a loop of
``cusolverDnSsyevj`` for float32 with 32 <= n <= 512, else a loop of ``cusolverDnXsyevd``
(MAGMA or a CPU round trip under the magma preference); torch 2.12+ one
``cusolverDnXsyevBatched`` for every shape. ``info > 0`` (no convergence) raises. CPU: LAPACK
``?syevd`` / ``?heevd``. Judged by LAPACK's eigen test ratios (``dsyt21``'s residual and
orthogonality, eigenvalues against a float64 reference, :func:`cusolver_trace.checks.eig_check`);
the sweep methods beside torch and the replay are the rows of
:data:`cusolver_trace.routines.SYEV` (but ``torch``) and ``auto``.
"""
from __future__ import annotations

from . import REPLAY, TORCH, TORCH_CUSOLVER, Op, register
from . import _eigh as fam


def torch_call(inputs, opts):
    """``torch.linalg.eigh``: ``(eigenvalues, eigenvectors)``; info is not returned (torch
    raises for a failed convergence)."""
    import torch

    return tuple(torch.linalg.eigh(inputs.x, UPLO=opts.UPLO)), None


OP = register(Op(
    name="eigh",
    summary="torch.linalg.eigh: Hermitian A -> eigenvalues, eigenvectors (XsyevBatched / "
            "Xsyevd / syevj)",
    torch_name="torch.linalg.eigh",
    options=(fam.UPLO,),
    structure="hermitian",
    make_inputs=fam.on_A("eigh"),
    torch_call=torch_call,
    outputs=("eigenvalues", "eigenvectors"),
    empty_result=fam.empty(True),
    dispatch=fam.rows("eigh", True),
    cpu_calls=("LAPACK {t}syevd / heevd × batch",),
    cpu_replay=fam.lapack_replay(True, "lapack_syevd"),
    check_name="syt21",
    check=fam.check(True),
    reads=fam.reads,
    flop_count=lambda inputs, on_gpu: "syevd",
    fails_on_info=True,
    failure_text=fam.failure_text,
    nonfinite_note=fam.NONFINITE_NOTE,
    parts_agreement=fam.vectors_agreement,
    methods=lambda: {m.name: m for m in (TORCH, TORCH_CUSOLVER, REPLAY,
                                         *fam.routine_methods(True))},
    default_methods={"cuda": ("torch", "replay", "auto"), "cpu": ("torch", "replay", "auto")},
))
