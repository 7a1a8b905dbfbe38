"""The data types of a plan: :class:`Call` (one BLAS / LAPACK call on blocks of a
column-major buffer), :func:`element_offset` (where a block starts in that buffer) and
:class:`Plan` (the calls of an inverse over several matrices side by side).

Pure, no torch. The plans themselves are made in :mod:`cusolver_trace.plans`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple


class Call(NamedTuple):
    """One BLAS / LAPACK call of a plan, on blocks of one column-major matrix.

    Block positions are ``(row, col)`` of the block's first element in the whole
    matrix; the call's pointer is ``base + element_offset(row, col, lda)·itemsize``.

    ``routine``: ``"lauum"`` (C ← Tᴴ·T lower / T·Tᴴ upper, in place), ``"trtri"``
    (C ← C⁻¹ in place, cusolverDnXtrtri), ``"trsm_inv"`` (C ← C⁻¹: cuBLAS trsm on
    an identity in a workspace, the triangle copied back), ``"syrk"``
    (C ← alpha·op(A)·op(A)ᴴ + beta·C; herk for complex), ``"trmm"`` (C ← alpha·op(T)·C (side ``"L"``) or alpha·C·op(T)
    (``"R"``), T triangular at ``a``; in place: cuBLAS's B = C), ``"gemm"``
    (C ← alpha·op(A)·op(B) + beta·C). ``m × n`` is the block written
    (lauum/trtri/syrk: ``m == n``), ``k`` the inner dimension (syrk, gemm).
    ``trans`` / ``transb``: ``"N"`` or ``"C"`` (conjugate transpose; transpose
    for real types). Only the ``uplo`` triangle of a lauum/trtri/syrk block is
    read or written.

    Added for the multi-buffer, multi-stream plans
    (:func:`~cusolver_trace.plans.inverse_plan`): ``"trsm"`` (C ← alpha·op(T)⁻¹·C (side L)
    or alpha·C·op(T)⁻¹ (R), T triangular at ``a``, in place), ``"trmm_out"``
    (C ← alpha·op(T)·B (side L) or alpha·B·op(T) (R), T at ``a``, B at ``b``, C at ``c``:
    out of place, C not read),
    ``"trsm_batched"`` (``"trsm"`` on every ``(c, a)`` pair of ``blocks``, all ``m × n``
    with the same side, trans, uplo and alpha: one cublas<t>trsmBatched; ``c`` and ``a`` are
    the first pair's), the stream pseudo-calls
    ``"record"`` (record event ``event`` on stream ``stream``: cudaEventRecord) and
    ``"wait"`` (stream ``stream`` waits for event ``event``: cudaStreamWaitEvent).
    ``stream`` is the stream a call is issued on (0: torch's current stream; 1, 2, …:
    side streams from a pool). A gemm with ``beta == 0`` does not read C.
    """

    routine: str
    uplo: str
    m: int
    n: int
    c: tuple
    k: int = 0
    a: tuple = (0, 0)
    b: tuple = (0, 0)
    side: str = "L"
    trans: str = "N"
    transb: str = "N"
    alpha: float = 1.0
    beta: float = 1.0
    stream: int = 0
    event: int = -1
    blocks: tuple = ()


def element_offset(i: int, j: int, lda: int) -> int:
    """Offset in elements of element (i, j) of a column-major matrix: ``i + j·lda``."""
    return i + j * lda


@dataclass(frozen=True)
class Plan:
    """A plan over a buffer of ``matrices`` column-major n × n matrices side by side
    (n × matrices·n, lda = n; matrix q's element (i, j) is at (i, q·n + j)).

    Before the calls run, matrix 0 holds the input (a Cholesky factor: its ``uplo``
    triangle is read, the rest may hold anything) and each matrix in ``identity`` is the
    identity. Afterwards the ``uplo`` triangle of matrix ``result`` holds the result.
    ``calls`` may carry streams and events (:func:`~cusolver_trace.plans.schedule`);
    ``streams`` is how many. ``info_slots``: for plans that factor first
    (:func:`~cusolver_trace.plans.spd_inverse_plan`), the diagonal offset of each ``potrf``
    block, in order; block ``j`` writes its ``info`` into slot ``j`` (its ``k`` field), and
    the factorization's info is ``info_slots[j] + info[j]`` for the first non-zero slot ``j``.
    """

    calls: tuple
    n: int
    upper: bool
    matrices: int = 1
    identity: tuple = ()
    result: int = 0
    streams: int = 1
    info_slots: tuple = ()

    @property
    def uplo(self) -> str:
        return "U" if self.upper else "L"
