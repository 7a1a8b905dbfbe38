"""How the field judges numbers: LAPACK test ratios, difference metrics, flop counts.

Every function takes torch tensors (CPU or CUDA; the work stays on the tensor's
device, only per-matrix scalars come back to the host, and for ``get01`` getrf's
pivots, whose interchanges are applied there) or numpy arrays (converted with
:func:`as_tensor`). The determinant check computes its float64 reference on the
CPU unless told otherwise (:func:`det_reference`). Matrices have shape ``(..., n, n)``; the
leading dimensions are a batch. Supported dtypes are those of
:mod:`cusolver_trace._dtypes` (float32, float64, complex64, complex128); ``eps``
below is LAPACK's ``?lamch('E')`` from that table (2**-24 / 2**-53, half of
numpy's eps).

Batched results come back as :class:`BatchMax`: a ``float`` equal to the worst
(largest) value over the batch, NaN if any element is NaN, carrying the
per-matrix values in ``.per_matrix`` (a float64 numpy array of the batch shape).

The LAPACK ratios (``pot01``, ``pot02``, ``pot03`` for Cholesky; ``get01``,
``get02``, ``get03`` for LU) follow Reference LAPACK's TESTING/LIN
``?pot01/02/03`` and ``?get01/02/03``: residuals are recomputed in the working
precision of the inputs (as those routines do with ``?her``/``?trmv``/``?hemm`` /
``?gemm`` in the same precision as the factorization; float32/complex64 products
on CUDA are forced to IEEE fp32, never TF32), norms are 1-norms in working
precision, and only the final division ``resid / n / anorm / eps`` runs in float64.
A ratio below :data:`THRESHOLD` (30, as in LAPACK's ``dtest.in``) passes.
The Hermitian eigenproblem checks (``eig_residual``, ``eig_orthogonality`` for ``eigh``;
``eig_values`` against a float64 ``eig_reference``; ``eig_check``, the worst of them) follow
TESTING/EIG ``?syt21`` and ``?drvst``; ``eigvec_distance`` compares two eigenvector sets of one
matrix up to phases and within clusters of close eigenvalues.
LAPACK has no determinant test; ``det_ratio`` / ``slogdet_ratio`` are built from
its ideas (a backward error in units of eps, against a float64 reference).

Modules: ``_base`` (plumbing), ``lapack`` (the ratios), ``det``, ``eigen`` (eigenproblems), ``diff``
(difference metrics), ``flops`` (LAWN 41 counts); use them through this package.
"""
from __future__ import annotations

from ._base import THRESHOLD, BatchMax, as_tensor, batch_max, ieee_fp32, passes
from .det import DetReference, det_ratio, det_reference, slogdet_ratio
from .diff import (asymmetry, bitwise_equal, max_abs_diff, max_ulp_distance, nan_mismatches,
                   nonfinite_count, rel_fro_diff, ulp_distance)
from .eigen import (eig_check, eig_orthogonality, eig_reference, eig_residual, eig_values,
                    eigvec_distance, normalize_phase)
from .flops import FLOP_ROUTINES, NEEDS_NRHS, flops
from .lapack import get01, get02, get03, lu_det_P, pot01, pot02, pot03

__all__ = [
    "THRESHOLD", "BatchMax", "as_tensor", "passes", "batch_max", "ieee_fp32",
    "pot01", "pot02", "pot03", "get01", "get02", "get03", "lu_det_P",
    "DetReference", "det_reference", "det_ratio", "slogdet_ratio",
    "eig_residual", "eig_orthogonality", "eig_reference", "eig_values", "eig_check",
    "normalize_phase", "eigvec_distance",
    "max_abs_diff", "rel_fro_diff", "ulp_distance", "max_ulp_distance",
    "nan_mismatches", "bitwise_equal", "asymmetry", "nonfinite_count",
    "FLOP_ROUTINES", "NEEDS_NRHS", "flops",
]

