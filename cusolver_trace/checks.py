"""How the field judges numbers: LAPACK test ratios, difference metrics, flop counts.

Every function takes torch tensors (CPU or CUDA; the work stays on the tensor's
device, only per-matrix scalars come back to the host) or numpy arrays
(converted with :func:`as_tensor`). Matrices have shape ``(..., n, n)``; the
leading dimensions are a batch. Supported dtypes are those of
:mod:`cusolver_trace._dtypes` (float32, float64, complex64, complex128); ``eps``
below is LAPACK's ``?lamch('E')`` from that table (2**-24 / 2**-53, half of
numpy's eps).

Batched results come back as :class:`BatchMax`: a ``float`` equal to the worst
(largest) value over the batch, NaN if any element is NaN, carrying the
per-matrix values in ``.per_matrix`` (a float64 numpy array of the batch shape).

The LAPACK ratios (``pot01``, ``pot02``, ``pot03``) follow Reference LAPACK's
TESTING/LIN ``?pot01/02/03``: residuals are recomputed in the working precision
of the inputs (as those routines do with ``?her``/``?trmv``/``?hemm`` in the
same precision as the factorization; float32/complex64 products on CUDA are
forced to IEEE fp32, never TF32), norms are 1-norms in working precision, and
only the final division ``resid / n / anorm / eps`` runs in float64.
A ratio below :data:`THRESHOLD` (30, as in LAPACK's ``dtest.in``) passes.
"""
from __future__ import annotations

import contextlib
from fractions import Fraction
from typing import Callable

import numpy as np
import torch

from ._dtypes import dtype_info

__all__ = [
    "THRESHOLD", "BatchMax", "as_tensor", "passes", "batch_max", "ieee_fp32",
    "pot01", "pot02", "pot03",
    "max_abs_diff", "rel_fro_diff", "ulp_distance", "max_ulp_distance",
    "nan_mismatches", "bitwise_equal", "asymmetry", "nonfinite_count",
    "FLOP_ROUTINES", "flops",
]

THRESHOLD = 30.0
"""LAPACK's pass threshold for the test ratios (TESTING/dtest.in)."""


# --------------------------------------------------------------------------- plumbing
class BatchMax(float):
    """A float (the max over the batch) with the per-matrix values attached.

    Attributes
    ----------
    per_matrix : numpy.ndarray
        float64 array of the batch shape (``()`` for a single matrix).
    """

    per_matrix: np.ndarray

    def __new__(cls, value: float, per_matrix) -> "BatchMax":
        obj = super().__new__(cls, value)
        obj.per_matrix = np.asarray(per_matrix, dtype=np.float64)
        return obj

    def __reduce__(self):
        return (BatchMax, (float(self), self.per_matrix))

    def __repr__(self) -> str:
        return f"BatchMax({float(self)!r}, batch_shape={self.per_matrix.shape})"


def batch_max(per: torch.Tensor) -> BatchMax:
    """Per-matrix values (on any device) → :class:`BatchMax` (one small host copy)."""
    arr = per.detach().to("cpu", torch.float64).numpy()
    return BatchMax(float(arr.max()) if arr.size else 0.0, arr)


def as_tensor(x, device=None) -> torch.Tensor:
    """A torch tensor of a supported dtype, without copying when avoidable.

    numpy arrays become CPU tensors (``torch.from_numpy``; read-only arrays and arrays
    with negative strides or non-native byte order are copied first). Lazy conjugate/negative
    views are resolved. ``device`` moves the result (used to bring a second
    operand to the first one's device).

    Raises
    ------
    TypeError
        Unsupported dtype (see :func:`cusolver_trace._dtypes.dtype_info`).
    """
    if isinstance(x, np.ndarray):
        dtype_info(x.dtype)   # our TypeError before torch's (e.g. longdouble)
        if any(s < 0 for s in x.strides) or not x.dtype.isnative or not x.flags.writeable:
            # a copy torch can own: negative strides and foreign byte order it cannot view,
            # and a read-only array it would view writable (its UserWarning)
            x = np.array(x, dtype=x.dtype.newbyteorder("="))
        x = torch.from_numpy(x)
    elif not isinstance(x, torch.Tensor):
        x = torch.as_tensor(x)
    dtype_info(x.dtype)
    x = x.resolve_conj().resolve_neg()
    return x if device is None else x.to(device)


def _pair(X, Y, what="X and Y"):
    X = as_tensor(X)
    Y = as_tensor(Y, X.device)
    if X.dtype != Y.dtype:
        raise TypeError(f"{what} must have the same dtype, got {X.dtype} and {Y.dtype}")
    return X, Y


def _square(A, name="A") -> int:
    if A.ndim < 2 or A.shape[-1] != A.shape[-2]:
        raise ValueError(f"{name} must have shape (..., n, n), got {tuple(A.shape)}")
    return A.shape[-1]


def _square_pair(A, X, name):
    """Two square operands of one dtype: (A, X, n, LAPACK eps, broadcast batch shape)."""
    A, X = _pair(A, X, f"A and {name}")
    n = _square(A)
    _square(X, name)
    return A, X, n, dtype_info(A.dtype).lapack_eps, torch.broadcast_shapes(A.shape[:-2], X.shape[:-2])


@contextlib.contextmanager
def ieee_fp32(t: torch.Tensor):
    """Forbid TF32 for float32/complex64 matmuls on CUDA, restoring the setting after.

    Uses the per-backend ``torch.backends.cuda.matmul.fp32_precision`` (torch >= 2.9;
    reading/writing it works whichever API the caller used) or, on older torch,
    ``allow_tf32``.
    """
    m = torch.backends.cuda.matmul
    if t.device.type != "cuda" or t.dtype not in (torch.float32, torch.complex64):
        yield
        return
    try:
        attr, saved, off = "fp32_precision", m.fp32_precision, "ieee"
    except (AttributeError, RuntimeError):  # torch < 2.9
        attr, saved, off = "allow_tf32", m.allow_tf32, False
    setattr(m, attr, off)
    try:
        yield
    finally:
        setattr(m, attr, saved)


def _herm(X: torch.Tensor, upper: bool) -> torch.Tensor:
    """The Hermitian matrix whose ``upper``/lower triangle is X's (real diagonal).

    This is what LAPACK's ``?lanhe``/``?hemm`` with ``UPLO`` see: the other
    triangle of X is never referenced.
    """
    T = X.triu(1) if upper else X.tril(-1)
    d = X.diagonal(dim1=-2, dim2=-1).real
    return T + T.mH + torch.diag_embed(d).to(X.dtype)


def _norm1(X: torch.Tensor) -> torch.Tensor:
    """Matrix 1-norm (max column sum of |x|), per matrix, working precision."""
    if X.shape[-1] == 0:
        return X.new_zeros(X.shape[:-2], dtype=X.real.dtype)
    return X.abs().sum(-2).amax(-1)


def _asum(X: torch.Tensor) -> torch.Tensor:
    """Per-column ``?asum``: sum |x| (real), sum |Re x| + |Im x| (complex, as dzasum)."""
    if X.is_complex():
        return (X.real.abs() + X.imag.abs()).sum(-2)
    return X.abs().sum(-2)


def _ratio(num, den, eps: float, bad) -> BatchMax:
    """``num / den / eps`` in float64, 1/eps where ``bad`` (LAPACK's convention)."""
    r = num.to(torch.float64) / den.to(torch.float64) / eps
    return torch.where(bad, torch.full_like(r, 1.0 / eps), r)


# --------------------------------------------------------------------------- LAPACK ratios
def pot01(A, L, upper: bool = False) -> BatchMax:
    """Factorization ratio ‖L·Lᴴ − A‖₁ / (n · ‖A‖₁ · eps) (``?pot01``); upper: Uᴴ·U.

    Parameters
    ----------
    A : (..., n, n) tensor or array
        The matrix that was factored; only its lower (``upper=False``) or upper
        triangle is referenced, as by potrf.
    L : (..., n, n), same dtype as A
        The computed factor; only the matching triangle is referenced (as in
        ``?pot01``: whatever the other triangle holds is ignored — check it
        separately if it must be zero).
    upper : bool
        ``True`` when L holds U with A = Uᴴ·U.

    Returns
    -------
    BatchMax
        0 for n = 0; 1/eps where ‖A‖₁ <= 0 or (complex) a diagonal entry of the
        factor has a nonzero imaginary part; NaN/inf for non-finite inputs.

    Examples
    --------
    >>> import numpy as np
    >>> A = np.array([[4.0, 2.0], [2.0, 3.0]])
    >>> bool(pot01(A, np.linalg.cholesky(A)) < 30)
    True
    """
    A, L, n, eps, batch = _square_pair(A, L, "L")
    if n == 0:
        return batch_max(torch.zeros(batch))
    F = L.triu() if upper else L.tril()
    with ieee_fp32(F):
        R = (F.mH @ F if upper else F @ F.mH) - A
    anorm = _norm1(_herm(A, upper))
    bad = (anorm <= 0).expand(batch)
    if F.is_complex():
        bad = bad | (F.diagonal(dim1=-2, dim2=-1).imag != 0).any(-1)
    return batch_max(_ratio(_norm1(_herm(R, upper)) / n, anorm, eps, bad))


def pot02(A, X, B, upper: bool = False) -> BatchMax:
    """Solve ratio maxⱼ ‖bⱼ − A·xⱼ‖₁ / (‖A‖₁ · ‖xⱼ‖₁ · eps) (``?pot02``).

    Parameters
    ----------
    A : (..., n, n)
        Hermitian matrix; only its lower (or ``upper``) triangle is referenced.
    X, B : (..., n, nrhs), same dtype as A
        Computed solution and right-hand side (batch dims broadcast).

    Returns
    -------
    BatchMax
        0 for n = 0 or nrhs = 0; 1/eps where ‖A‖₁ <= 0; a column with
        ‖xⱼ‖₁ = 0 counts 1/eps. For complex data the vector norms are LAPACK's
        ``dzasum`` (``Σ |Re| + |Im|``), as in ``zpot02``.
    """
    A, X = _pair(A, X, "A and X")
    _, B = _pair(A, B, "A and B")
    n = _square(A)
    if X.ndim < 2 or X.shape[-2] != n or X.shape[-2:] != B.shape[-2:]:
        raise ValueError(
            f"X and B must have shape (..., {n}, nrhs), got {tuple(X.shape)} and {tuple(B.shape)}")
    eps = dtype_info(A.dtype).lapack_eps
    batch = torch.broadcast_shapes(A.shape[:-2], X.shape[:-2], B.shape[:-2])
    if n == 0 or X.shape[-1] == 0:
        return batch_max(torch.zeros(batch))
    Ah = _herm(A, upper)
    with ieee_fp32(Ah):
        R = B - Ah @ X
    anorm = _norm1(Ah)
    xn = _asum(X).expand(*batch, X.shape[-1])
    col = _ratio(_asum(R) / anorm[..., None], xn, eps, xn <= 0)
    per = col.amax(-1)
    return batch_max(torch.where((anorm <= 0).expand(batch), 1.0 / eps, per))


def pot03(A, Ainv, upper: bool = False, fill: bool = False) -> BatchMax:
    """Inverse ratio ‖I − A·A⁻¹‖₁ / (n · ‖A‖₁ · ‖A⁻¹‖₁ · eps) (``?pot03``).

    Parameters
    ----------
    A : (..., n, n)
        Hermitian matrix; only its lower (or ``upper``) triangle is referenced.
    Ainv : (..., n, n), same dtype
        The computed inverse. By default it is used exactly as given (torch's
        GPU ``cholesky_inverse`` is not exactly Hermitian, and that is what its
        callers get); ``fill=True`` first expands it from its lower/``upper``
        triangle, as ``?pot03`` does for ``?potri`` output.

    Returns
    -------
    BatchMax
        0 for n = 0; 1/eps where ‖A‖₁ <= 0 or ‖A⁻¹‖₁ <= 0.
    """
    A, Ainv, n, eps, batch = _square_pair(A, Ainv, "Ainv")
    if n == 0:
        return batch_max(torch.zeros(batch))
    Ah = _herm(A, upper)
    Ai = _herm(Ainv, upper) if fill else Ainv
    with ieee_fp32(Ah):
        W = torch.eye(n, dtype=A.dtype, device=A.device) - Ah @ Ai
    anorm, ainorm = _norm1(Ah).expand(batch), _norm1(Ai).expand(batch)
    num = _norm1(W).to(torch.float64) / anorm.to(torch.float64)
    return batch_max(_ratio(num / n, ainorm, eps, (anorm <= 0) | (ainorm <= 0)))


def passes(ratio) -> bool | np.ndarray:
    """``ratio < THRESHOLD`` (NaN fails). Arrays give an elementwise bool array.

    Examples
    --------
    >>> passes(2.5), passes(float("nan")), passes([1.0, 40.0]).tolist()
    (True, False, [True, False])
    """
    r = np.less(ratio, THRESHOLD)
    return bool(r) if np.ndim(r) == 0 else r


# --------------------------------------------------------------------------- differences
def _per_matrix(t: torch.Tensor, reduce: Callable) -> torch.Tensor:
    """Apply ``reduce(flat, dim=-1)`` per matrix (last two dims; all of a 0-/1-D tensor)."""
    if t.ndim >= 2:
        flat = t.reshape(*t.shape[:-2], t.shape[-2] * t.shape[-1])
    else:
        flat = t.reshape(-1)
    if flat.shape[-1] == 0:
        return torch.zeros(flat.shape[:-1], dtype=torch.float64, device=t.device)
    return reduce(flat, dim=-1)


def _fro(X: torch.Tensor) -> torch.Tensor:
    """Per-matrix Frobenius norm, scaled by max |x| so that it neither overflows nor
    underflows (torch's ``vector_norm`` does neither)."""
    a = X.abs().to(torch.float64)
    s = _per_matrix(a, torch.amax)
    inner = _per_matrix(a / s.reshape(*s.shape, *([1] * min(2, X.ndim))), torch.linalg.vector_norm)
    return torch.where(s == 0, 0.0, torch.where(torch.isinf(s), s, s * inner))


def max_abs_diff(X, Y) -> BatchMax:
    """Per-matrix max |x − y| (modulus for complex), as float64.

    Positions where X and Y are equal (including equal infinities) or both NaN
    count 0; a NaN against a number gives NaN.
    """
    X, Y = _pair(X, Y)
    if X.shape != Y.shape:
        raise ValueError(f"shapes differ: {tuple(X.shape)} vs {tuple(Y.shape)}")
    d = (X - Y).abs()
    same = (X == Y) | (torch.isnan(X) & torch.isnan(Y))
    return batch_max(_per_matrix(torch.where(same, 0, d), torch.amax))


def rel_fro_diff(X, Y) -> BatchMax:
    """Per-matrix ‖X − Y‖_F / ‖Y‖_F (MAGMA's check; Y is the reference).

    0 when both are zero, inf when only Y is; NaN if any entry is NaN.
    Norms are computed with scaling in float64, so "large"/"small" LAPACK test
    matrices do not overflow.
    """
    X, Y = _pair(X, Y)
    if X.shape != Y.shape:
        raise ValueError(f"shapes differ: {tuple(X.shape)} vs {tuple(Y.shape)}")
    num, den = _fro(X - Y), _fro(Y)
    return batch_max(torch.where(num == 0, 0.0, num / den))


def asymmetry(X) -> BatchMax:
    """Per-matrix ‖X − Xᴴ‖_F / ‖X‖_F (0 for a zero matrix). X: (..., n, n)."""
    X = as_tensor(X)
    _square(X, "X")
    num, den = _fro(X - X.mH), _fro(X)
    return batch_max(torch.where(num == 0, 0.0, num / den))


def nonfinite_count(X) -> int:
    """Number of elements that are NaN or ±inf (a complex element counts once)."""
    X = as_tensor(X)
    return int((~torch.isfinite(X)).sum())


def _bits(X: torch.Tensor) -> torch.Tensor:
    """Raw IEEE bits as a signed integer tensor (complex: trailing dim of 2 = re, im)."""
    R = torch.view_as_real(X) if X.is_complex() else X
    return R.view(torch.int32 if R.dtype == torch.float32 else torch.int64)


def bitwise_equal(X, Y) -> bool:
    """Exact bit equality of every element (NaN payloads and the sign of zero count).

    False when shapes or dtypes differ; ``-0.0`` and ``+0.0`` are not bitwise equal.

    Examples
    --------
    >>> import numpy as np
    >>> bitwise_equal(np.array([[0.0]]), np.array([[-0.0]])), max_ulp_distance(np.array([[0.0]]), np.array([[-0.0]]))
    (False, 0)
    """
    X, Y = as_tensor(X), as_tensor(Y)
    if X.shape != Y.shape or X.dtype != Y.dtype:
        return False
    return bool(torch.equal(_bits(X), _bits(Y.to(X.device))))


_I64_MAX = torch.iinfo(torch.int64).max


def ulp_distance(X, Y) -> torch.Tensor:
    """Elementwise distance in units in the last place, an int64 tensor of X's shape.

    The IEEE bits are reinterpreted as integers and mapped sign-magnitude →
    monotonic (``k = bits`` for bits >= 0, ``k = INT_MIN − bits`` otherwise), so
    the distance ``|k(x) − k(y)|`` counts the representable numbers between x and y:
    adjacent floats are 1 apart, the largest finite number is 1 from inf, and
    **+0 and −0 are 0 ulps apart** (equal by IEEE ordering; :func:`bitwise_equal`
    tells them apart). Exactly equal values → 0; NaN vs NaN → 0; NaN vs a number
    → ``-1`` (a sentinel, counted by :func:`nan_mismatches`). float64 distances
    across zero saturate at 2**63 − 1. Complex: the larger of the real and
    imaginary parts' distances (−1 if either part is a NaN mismatch).
    """
    X, Y = _pair(X, Y)
    if X.shape != Y.shape:
        raise ValueError(f"shapes differ: {tuple(X.shape)} vs {tuple(Y.shape)}")
    bx, by = _bits(X), _bits(Y)
    imin = torch.iinfo(bx.dtype).min
    kx, ky = (torch.where(b < 0, imin - b.to(torch.int64), b.to(torch.int64)) for b in (bx, by))
    ax, ay = kx.abs(), ky.abs()
    across = (kx < 0) != (ky < 0)
    d = torch.where(across, torch.where(ax > _I64_MAX - ay, _I64_MAX, ax + ay), (kx - ky).abs())
    rx = torch.view_as_real(X) if X.is_complex() else X
    ry = torch.view_as_real(Y) if Y.is_complex() else Y
    nx, ny = torch.isnan(rx), torch.isnan(ry)
    d = torch.where(nx & ny, 0, torch.where(nx ^ ny, -1, d))
    if X.is_complex():
        d = torch.where((d == -1).any(-1), -1, d.amax(-1))
    return d


def max_ulp_distance(X, Y) -> int:
    """Largest :func:`ulp_distance` over all elements, NaN mismatches excluded
    (count them with :func:`nan_mismatches`). Per matrix:
    ``ulp_distance(X, Y).flatten(-2).amax(-1)``."""
    d = ulp_distance(X, Y)
    return int(d.max().clamp_min(0)) if d.numel() else 0


def nan_mismatches(X, Y) -> int:
    """Number of elements where exactly one of X, Y is NaN (complex: in either part)."""
    return int((ulp_distance(X, Y) == -1).sum())


# --------------------------------------------------------------------------- flop counts
def _c(m: float, a: float) -> float:
    """LAWN 41 complex flops from multiply/add counts: 6 per complex mul, 2 per add."""
    return 6 * m + 2 * a


# routine -> (real(n, k), complex(n, k)); k = nrhs. From LAWN 41's FMULS/FADDS,
# evaluated in exact rational arithmetic (n, k are Fractions).
_F3, _F6 = Fraction(1, 3), Fraction(1, 6)
_FLOPS = {
    "potrf": (lambda n, k: n**3 / 3 + n**2 / 2 + n / 6,
              lambda n, k: _c(n * (n * n / 6 + n / 2 + _F3), n * (n * n / 6 - _F6))),
    "potrs": (lambda n, k: 2 * k * n**2,
              lambda n, k: _c(k * n * (n + 1), k * n * (n - 1))),
    "potri": (lambda n, k: 2 * n**3 / 3 + n**2 / 2 + 5 * n / 6,
              lambda n, k: _c(n * (n * n / 3 + n + 2 * _F3), n * (n * n / 3 - n / 2 + _F6))),
    "trtri": (lambda n, k: n**3 / 3 + 2 * n / 3,
              lambda n, k: _c(n * (n * n / 6 + n / 2 + _F3), n * (n * n / 6 - n / 2 + _F3))),
    "trsm": (lambda n, k: k * n**2,
             lambda n, k: _c(k * n * (n + 1) / 2, k * n * (n - 1) / 2)),
    "gemm": (lambda n, k: 2 * n * n * k, lambda n, k: _c(n * n * k, n * n * k)),
}
FLOP_ROUTINES = (*_FLOPS, "inverse_potrs")
_NEEDS_NRHS = ("potrs", "trsm")


def flops(routine: str, n: int, nrhs: int | None = None, complex: bool = False) -> float:
    """LAWN 41 floating-point operation count (real flops; complex ops expanded).

    Routines (n×n matrix; ``nrhs`` columns on the right):

    ============== ===================== ==========================
    routine        real                  complex
    ============== ===================== ==========================
    potrf          n³/3 + n²/2 + n/6     4n³/3 + 3n² + 5n/3
    potrs          2·nrhs·n²             nrhs·(8n² + 4n)
    potri          2n³/3 + n²/2 + 5n/6   8n³/3 + 5n² + 13n/3
    trtri          n³/3 + 2n/3           4n³/3 + 2n² + 8n/3
    trsm (left)    nrhs·n²               nrhs·(4n² + 2n)
    gemm           2·n²·nrhs             8·n²·nrhs  (nrhs defaults to n)
    inverse_potrs  2n³                   8n³ + 4n²  (= potrs with nrhs = n)
    ============== ===================== ==========================

    Quote GFLOP/s with the count named; for any way of computing A⁻¹ the honest
    yardstick is the ``potri`` count.

    Raises
    ------
    ValueError
        Unknown routine, negative sizes, ``nrhs`` missing for potrs/trsm, or
        given to a routine that takes none.
    """
    if routine not in FLOP_ROUTINES:
        raise ValueError(f"unknown routine {routine!r}; choose from {', '.join(FLOP_ROUTINES)}")
    if routine == "inverse_potrs":
        if nrhs is not None:
            raise ValueError("inverse_potrs takes no nrhs (it is potrs with nrhs = n)")
        routine, nrhs = "potrs", n
    elif routine in _NEEDS_NRHS and nrhs is None:
        raise ValueError(f"{routine} needs nrhs")
    elif routine == "gemm":
        nrhs = n if nrhs is None else nrhs
    elif routine not in _NEEDS_NRHS and nrhs is not None:
        raise ValueError(f"{routine} takes no nrhs")
    if n < 0 or (nrhs is not None and nrhs < 0):
        raise ValueError(f"sizes must be >= 0, got n={n}, nrhs={nrhs}")
    return float(_FLOPS[routine][bool(complex)](Fraction(n), Fraction(nrhs or 0)))
