"""The determinant check: ``det_ratio`` / ``slogdet_ratio`` against a float64 reference.

LAPACK has no determinant test; this one is built from its ideas (a backward error in units
of eps, a threshold of 30). See :func:`det_ratio` for the definition and its justification.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import torch

from ._base import BatchMax, _square, as_tensor, batch_max
from .lapack import lu_det_P
from .._dtypes import dtype_info


class DetReference(NamedTuple):
    """What :func:`det_ratio` / :func:`slogdet_ratio` compare with, per matrix (float64).

    Attributes
    ----------
    det : (*batch) float64 or complex128
        det(P)·Π uᵢᵢ rounded to float64; NaN where that is not a normal float64 number
        (then only sign and logabsdet stand for it).
    sign : (*batch) float64 (real A: ±1, 0) or complex128 (|sign| = 1, or 0)
    logabsdet : (*batch) float64, log|det A|; -inf where the LU has an exact zero pivot
    log_sv : (*batch, n) float64, log σᵢ(A), descending (-inf for σᵢ = 0)
    log_u_sum : (*batch) float64, Σᵢ |log|uᵢᵢ|| over the nonzero pivots of the LU
    dtype : str
        A's dtype: its eps and its range judge the result.
    """

    det: torch.Tensor
    sign: torch.Tensor
    logabsdet: torch.Tensor
    log_sv: torch.Tensor
    log_u_sum: torch.Tensor
    dtype: str


def det_reference(A, *, device="cpu") -> DetReference:
    """det(A) from the LU (getrf) of A upcast to float64 / complex128, and A's singular values.

    Each matrix is first scaled by a power of two (exact) so that max |aᵢⱼ| is in [1/2, 1):
    neither the LU nor the SVD over- or underflows, and log|det| is exact to that scaling.
    det = det(P)·Π uᵢᵢ (as torch's ``det``, in float64 with the scaling undone exactly),
    sign = det(P)·Π sgn(uᵢᵢ) (:func:`lu_det_P`), logabsdet = log|det| where det is a
    normal float64 number, else Σ log|uᵢᵢ| (as torch's ``slogdet``); the singular values
    come from ``torch.linalg.svdvals``. A matrix with a NaN or inf gives NaN everywhere.

    Parameters
    ----------
    A : (..., n, n) tensor or array
    device : str or torch.device
        Where the reference is computed. The default, the CPU (LAPACK through torch), keeps
        it independent of the GPU libraries under test; ``A.device`` is faster for large n
        (an SVD costs about ten LUs).

    Returns
    -------
    DetReference

    Examples
    --------
    >>> ref = det_reference(torch.tensor([[0.0, 2.0], [3.0, 0.0]]))
    >>> float(ref.sign), round(float(ref.logabsdet.exp()), 12), ref.dtype
    (-1.0, 6.0, 'float32')
    """
    A = as_tensor(A)
    n, info = _square(A), dtype_info(A.dtype)
    W = A.detach().to(device=device, dtype=torch.complex128 if info.is_complex else torch.float64)
    batch, real = W.shape[:-2], dict(dtype=torch.float64, device=W.device)
    if n == 0:
        one = torch.ones(batch, dtype=W.dtype, device=W.device)
        return DetReference(one, one, torch.zeros(batch, **real), torch.zeros(*batch, 0, **real),
                            torch.zeros(batch, **real), info.name)
    finite = torch.isfinite(W).flatten(-2).all(-1)
    W = torch.where(finite[..., None, None], W, torch.eye(n, dtype=W.dtype, device=W.device))
    amax = W.abs().flatten(-2).amax(-1)
    e = torch.where(amax > 0, torch.frexp(amax).exponent, 0).to(torch.float64)
    h = torch.floor(e / 2)   # two steps: 2**-e alone can overflow for subnormal data
    W = W * torch.exp2(-h)[..., None, None] * torch.exp2(h - e)[..., None, None]
    LU, piv, _ = torch.linalg.lu_factor_ex(W)
    u = LU.diagonal(dim1=-2, dim2=-1)
    logu = torch.log(u.abs()) + (e * math.log(2))[..., None]
    nan = torch.tensor(math.nan, **real)
    det_p = lu_det_P(piv).to(W.dtype)
    sign = det_p * u.sgn().prod(-1)
    logsum = logu.sum(-1)
    # the product in order, each partial product a normal number (else no float64 value),
    # then times 2**(n·e) in three exact steps
    partial = torch.cumprod(u, -1)
    tiny = torch.finfo(torch.float64).tiny
    normal = ((partial.abs() >= tiny) & torch.isfinite(partial.abs())).all(-1)
    det = det_p * partial[..., -1]
    third = torch.floor(n * e / 3)
    for part in (third, third, n * e - 2 * third):
        det = det * torch.exp2(part)
    a = det.abs()
    normal &= torch.isfinite(a) & (a >= tiny)
    log_sv = torch.log(torch.linalg.svdvals(W)) + (e * math.log(2))[..., None]
    return DetReference(
        torch.where(finite & normal, det, nan.to(W.dtype)),
        torch.where(finite, sign, nan.to(W.dtype)),
        torch.where(finite, torch.where(normal, torch.log(a), logsum), nan),
        torch.where(finite[..., None], log_sv, nan),
        torch.where(finite, torch.where(torch.isfinite(logu), logu.abs(), 0).sum(-1), nan),
        info.name)


def _log_abs_diff(sx, lx, sr, lr) -> torch.Tensor:
    """log|sx·e^lx − sr·e^lr| for unit-modulus (or zero) signs sx, sr and float64 logs
    (-inf for a zero), without forming either number: with g = −|lx − lr| ≤ 0 and θ the
    angle between sx and sr, |1 − e^(g + iθ)|² = expm1(g)² + 4·e^g·sin²(θ/2)."""
    zx, zr = (sx == 0) | torch.isneginf(lx), (sr == 0) | torch.isneginf(lr)
    w = sx * sr.conj()
    half = torch.angle(w) / 2 if w.is_complex() else torch.where(w < 0, math.pi / 2, 0.0)
    g = -(lx - lr).abs()
    out = torch.maximum(lx, lr) + 0.5 * torch.log(torch.expm1(g) ** 2
                                                 + 4 * torch.exp(g) * torch.sin(half) ** 2)
    return torch.where(zx, torch.where(zr, -math.inf, lr), torch.where(zr, lx, out))


def _log_bound(log_sv: torch.Tensor, log_eta: torch.Tensor) -> torch.Tensor:
    """log(Πⱼ(σⱼ + η) − Πⱼ σⱼ): Ipsen & Rehman's bound on |det(A + E) − det(A)| for ‖E‖₂ = η."""
    L1 = torch.logaddexp(log_sv, log_eta[..., None]).sum(-1)
    D = torch.log1p(torch.exp(log_eta[..., None] - log_sv)).sum(-1)   # = Σ log1p(η/σⱼ)
    return L1 + torch.log(-torch.expm1(-D))


def _det_c(ref: DetReference, log_dist, bad, flip) -> BatchMax:
    """The smallest c with log_dist(c) <= log B(c·eps·σ₁), by bisection on log c in
    [-700, 700] (0 for an exact result; inf beyond); at least σₙ/(eps·σ₁) where ``flip``
    (a real det of the wrong sign: det(A + tE) passes through 0, so ‖E‖₂ >= σₙ); 1/eps
    where A = 0 and the result is not exact; NaN where ``bad``."""
    eps = dtype_info(ref.dtype).lapack_eps
    exact = torch.isneginf(log_dist(torch.zeros_like(ref.logabsdet)))
    bad = bad | torch.isnan(ref.logabsdet)
    if ref.log_sv.shape[-1] == 0:   # n = 0: det = 1 exactly, anything else is 1/eps
        return batch_max(torch.where(bad, math.nan, torch.where(exact, 0.0, 1.0 / eps)))
    ls1 = ref.log_sv[..., 0]
    lo, hi = torch.full_like(ls1, -700.0), torch.full_like(ls1, 700.0)
    reached = _log_bound(ref.log_sv, hi + math.log(eps) + ls1) >= log_dist(hi.exp())
    for _ in range(60):
        mid = (lo + hi) / 2
        up = _log_bound(ref.log_sv, mid + math.log(eps) + ls1) >= log_dist(mid.exp())
        lo, hi = torch.where(up, lo, mid), torch.where(up, mid, hi)
    r = torch.where(reached, hi.exp(), math.inf)
    r = torch.where(flip, torch.maximum(r, (ref.log_sv[..., -1] - ls1).exp() / eps), r)
    r = torch.where(torch.isneginf(ls1), 1.0 / eps, r)
    return batch_max(torch.where(bad, math.nan, torch.where(exact, 0.0, r)))


def _shifted(lx, ref: DetReference, c, eps):
    """lx moved towards the reference by up to c·eps·Σ|log|uᵢᵢ|| (the rounding of a sum of
    logarithms of that size: float32's log|det| of a 1024 x 1024 matrix near overflow is
    about 7e4, whose ulp is 0.008)."""
    slack = c * eps * ref.log_u_sum
    d = lx - ref.logabsdet
    return lx - torch.where(torch.isnan(d), 0.0, d).clamp(-slack, slack)


def _det_inputs(A, reference, **values):
    """A as a tensor, its dtype's facts, the reference (computed, or checked to be A's), and
    each value (name=(value, "real" for A's real dtype, or "A" for A's)) checked to be of A's
    batch shape and upcast to float64 / complex128 on the reference's device."""
    A = as_tensor(A)
    n, info = _square(A), dtype_info(A.dtype)
    ref = det_reference(A) if reference is None else reference
    if not isinstance(ref, DetReference) or ref.dtype != info.name \
            or ref.log_sv.shape != (*A.shape[:-2], n):
        raise ValueError(f"reference must be det_reference(A) of this A ({info.name}, shape "
                         f"{tuple(A.shape)})")
    out = []
    for name, (v, kind) in values.items():
        v, want = as_tensor(v), getattr(torch, info.real_name) if kind == "real" else A.dtype
        if v.dtype != want or v.shape != A.shape[:-2]:
            raise ValueError(f"{name} must be {want} of shape {tuple(A.shape[:-2])} (A's batch), "
                             f"got {v.dtype} of shape {tuple(v.shape)}")
        out.append(v.to(ref.sign.device, torch.float64 if kind == "real" else ref.sign.dtype))
    return info, ref, out


def det_ratio(A, det, *, reference: DetReference | None = None) -> BatchMax:
    """Determinant ratio: the backward error, in units of eps·‖A‖₂, that the computed det implies.

    LAPACK has no determinant test; this one is built from its ideas. A backward-stable
    getrf computes the exact LU of A + E with ‖E‖ a small multiple of eps·‖A‖ (``?get01``
    bounds it), so the computed det is det(A + E) up to the rounding of the product.
    Ipsen & Rehman (SIAM J. Matrix Anal. Appl. 30, 2008) bound the change exactly, for
    any E with ‖E‖₂ <= η, by the singular values σ₁ >= … >= σₙ of A::

        |det(A + E) − det(A)| <= B(η) = Πⱼ (σⱼ + η) − Πⱼ σⱼ
                               = |det A| · η · Σⱼ 1/σⱼ + O(η²)

    (the bound is attained: E = η·U·Vᴴ). The ratio is the smallest c with

        |det − det_ref| <= B(c · eps · σ₁)

    i.e. no perturbation of A smaller than c·eps·‖A‖₂ has the computed det as its
    determinant. To first order, for a nonsingular A,
    ratio = |det/det_ref − 1| / (eps · κ_det) with κ_det = ‖A‖₂·‖A⁻¹‖_* = Σⱼ σ₁/σⱼ, the
    condition number of the determinant (between κ₂(A) and n·κ₂(A)): the error scales with
    the conditioning, and an ill-conditioned or singular A, where det's sign is not
    determined by the data, is not held to more than the data can give. The higher terms
    keep the ratio linear in the backward error near singularity (a rank deficiency of r
    makes the change O(ηʳ)), and B(η) is defined for singular A (det_ref = 0).

    Measured on random matrices of :func:`cusolver_trace.matrices.general` (n up to
    2048, cond up to 1e12, scaled by up to 1e±30, all four dtypes), LAPACK's and torch's
    det and slogdet score below 2 (docs/lu-checks.md has the loop). A wrong sign scores
    about 2/(eps·κ_det) (1.2e4 for complex64 at n = 1024, cond 2) and, for real A, at least
    σₙ/(eps·σ₁) = 1/(eps·κ₂(A)): a real det changes sign only through a singular A + E, so
    ‖E‖₂ >= σₙ. A factor 2 scores of the order of 1/(eps·κ_det). The same threshold,
    :data:`THRESHOLD`, applies.

    The comparison is made in logarithms (sign or phase, and log|det|), so neither the
    reference nor the bound overflows:

    - the reference is :func:`det_reference` (float64 / complex128 LU of the upcast A),
      compared as a float64 number where it is one (so an exact det scores 0);
    - a det beyond the dtype's range is judged as what rounding gives: ±inf is exact
      for a reference at or beyond the largest finite number (with the same sign for real
      A, any phase for complex), and any |det| below the smallest normal number is taken
      as ± that number's width (an underflowed product, 0 or subnormal);
    - :func:`slogdet_ratio`'s log|det| may also differ by c·eps·Σ|log|uᵢᵢ||, the rounding
      of the logarithms it sums.

    Parameters
    ----------
    A : (..., n, n) tensor or array
        The input, as the op read it (all of it).
    det : (...) tensor or array of A's dtype
        The computed determinant(s): ``torch.linalg.det(A)`` or a replay of it.
    reference : DetReference, optional
        :func:`det_reference` of A, to compute it once for several results (both sides of
        a comparison, det and slogdet) or on another device. Default: computed here, on
        the CPU.

    Returns
    -------
    BatchMax
        Per matrix. 0 when det equals the reference exactly (as for n = 0, det = 1, and a
        singular A with det = 0); 1/eps where A = 0 and det != 0; NaN where A or det has a
        NaN (or a complex overflow made one) or a NaN / inf in A.

    Raises
    ------
    ValueError
        A not square, det not of A's dtype and batch shape, a reference of another A.

    Examples
    --------
    >>> from cusolver_trace.checks import THRESHOLD
    >>> A = torch.tensor([[2.0, 1.0], [1.0, 3.0]], dtype=torch.float64)
    >>> float(det_ratio(A, torch.linalg.det(A))) < THRESHOLD
    True
    >>> float(det_ratio(A, -torch.linalg.det(A))) > 1e12     # the sign wrong
    True
    >>> float(det_ratio(torch.zeros(2, 2), torch.tensor(0.0)))  # singular: det 0 exactly
    0.0
    """
    info, ref, (x,) = _det_inputs(A, reference, det=(det, "A"))
    fi = torch.finfo(getattr(torch, info.real_name))
    log_max, log_tiny = math.log(fi.max), math.log(fi.tiny)
    ax = x.abs()
    sx = torch.where(ax > 0, x / ax, 0).to(x.dtype)
    lx = torch.log(ax)
    sr, lr = ref.sign, ref.logabsdet
    under = _log_abs_diff(sx, lx, sr, lr)
    # |x| < tiny: the distance to a disc of radius tiny around x (an underflowed product)
    under = torch.where(under > log_tiny, under + torch.log(-torch.expm1(log_tiny - under)),
                        -math.inf)
    # x = ±inf: the distance to |y| >= max (same sign when real, any phase when complex)
    inside = torch.where(lr >= log_max, -math.inf,
                         log_max + torch.log(-torch.expm1(lr - log_max)))
    if x.is_complex():
        over = torch.where(sr == 0, log_max, inside)
    else:
        opposite = torch.logaddexp(torch.full_like(lr, log_max), lr)
        over = torch.where(sr == 0, log_max, torch.where(sr == torch.sign(x), inside, opposite))
    kind = torch.where(torch.isinf(ax), 2, torch.where(ax < fi.tiny, 1, 0))
    normal = torch.where(torch.isnan(ref.det), _log_abs_diff(sx, lx, sr, lr),
                         torch.log((x - ref.det).abs()))
    dist = torch.where(kind == 2, over, torch.where(kind == 1, under, normal))

    def log_dist(c):
        return dist

    flip = torch.zeros_like(ax, dtype=torch.bool) if x.is_complex() else torch.sign(x) * sr < 0
    return _det_c(ref, log_dist, torch.isnan(ax), flip)


def slogdet_ratio(A, sign, logabsdet, *, reference: DetReference | None = None) -> BatchMax:
    """:func:`det_ratio` for ``torch.linalg.slogdet``'s (sign, logabsdet).

    The pair stands for det = sign·exp(logabsdet) (sign of modulus 1, or 0 with
    logabsdet = -inf for a singular A, as torch returns them; any other modulus of sign is
    taken as it is). It is judged as det is, with no range limit (nothing under- or
    overflows); a log|det| that differs from the reference by up to c·eps·Σ|log|uᵢᵢ|| (the
    rounding of the summed logarithms) counts as within c.

    Parameters
    ----------
    A : (..., n, n)
    sign : (...) A's dtype
    logabsdet : (...) A's real dtype
    reference : DetReference, optional (see :func:`det_ratio`)

    Examples
    --------
    >>> from cusolver_trace.checks import THRESHOLD
    >>> A = torch.tensor([[1e30, 0.0], [0.0, 1e30]])     # det overflows float32, slogdet does not
    >>> s, l = torch.linalg.slogdet(A)
    >>> float(slogdet_ratio(A, s, l)) < THRESHOLD, float(slogdet_ratio(A, s, l + 1e-3)) > THRESHOLD
    (True, True)
    """
    info, ref, (s, lx) = _det_inputs(A, reference, sign=(sign, "A"),
                                     logabsdet=(logabsdet, "real"))
    a = s.abs()
    sx = torch.where(a > 0, s / a, 0).to(s.dtype)
    lx = lx + torch.log(a)

    def log_dist(c):
        return _log_abs_diff(sx, _shifted(lx, ref, c, info.lapack_eps), ref.sign, ref.logabsdet)

    flip = torch.zeros_like(a, dtype=torch.bool) if sx.is_complex() else sx * ref.sign < 0
    return _det_c(ref, log_dist, torch.isnan(a) | torch.isnan(lx), flip)
