"""Hermitian eigenproblems (``?syevd`` / ``?heevd``, ``torch.linalg.eigh`` / ``eigvalsh``):
LAPACK's ``?syt21`` ratios, an eigenvalue ratio against a float64 reference, and a distance
between two eigenvector sets of one matrix.

A is ``(..., n, n)`` and only its lower (``upper=False``) or upper triangle is read, as by
syevd with ``UPLO``: the checks build the Hermitian matrix from that triangle (real diagonal).
w is ``(..., n)``, real, ascending; V is ``(..., n, n)`` with the eigenvectors as columns
(A·V = V·diag(w)). Batch dimensions broadcast.
"""
from __future__ import annotations

import math

import numpy as np
import torch

from ._base import BatchMax, _herm, _norm1, _pair, _square, as_tensor, batch_max, ieee_fp32
from .._dtypes import dtype_info

__all__ = ["eig_residual", "eig_orthogonality", "eig_reference", "eig_values", "eig_check", "ulp",
           "normalize_phase", "eigvec_distance"]


def _values(A: torch.Tensor, w, name="w") -> torch.Tensor:
    """w as a tensor of A's real dtype on A's device, shape (..., n) (TypeError /
    ValueError otherwise)."""
    w = as_tensor(w, A.device)
    real = A.real.dtype if A.is_complex() else A.dtype
    if w.dtype != real:
        raise TypeError(f"{name} must be real of A's precision ({real}), got {w.dtype}")
    if w.ndim < 1 or w.shape[-1] != A.shape[-1]:
        raise ValueError(f"{name} must have shape (..., {A.shape[-1]}), got {tuple(w.shape)}")
    return w


def eig_residual(A, w, V, upper: bool = False) -> BatchMax:
    """Decomposition ratio ‖A − V·diag(w)·Vᴴ‖₁ / (n · ‖A‖₁ · ulp) (``?syt21`` ITYPE 1, test 1).

    As LAPACK's ``dsyt21`` / ``zhet21``: the residual A − Σⱼ wⱼ·vⱼ·vⱼᴴ is formed in the
    working precision (float32 / complex64 products on CUDA forced to IEEE fp32) and measured
    with ``?lansy('1')`` on the triangle that was read; anorm = max(‖A‖₁, sfmin) and the
    result is ``(wnorm / anorm) / (n·eps)`` where anorm > wnorm, else
    ``min(wnorm, n·anorm) / anorm / (n·ulp)`` (so it is at most 1/ulp), in float64, with
    ``?syt21``'s ulp = ``?lamch('Epsilon')·?lamch('Base')`` = 2·eps (the package's eps is
    ``?lamch('E')``, see :mod:`cusolver_trace.checks`): LAPACK's own ratio.

    Parameters
    ----------
    A : (..., n, n) tensor or array, float32, float64, complex64 or complex128
        Only the lower (``upper=False``) or upper triangle is referenced.
    w : (..., n), real, of A's precision (float32 for complex64)
        The computed eigenvalues.
    V : (..., n, n), A's dtype
        The computed eigenvectors, as columns.
    upper : bool
        Which triangle of A holds the matrix.

    Returns
    -------
    BatchMax
        0 for n = 0; NaN where an input is NaN.

    Raises
    ------
    ValueError
        Shapes that do not match.
    TypeError
        Unsupported or differing dtypes (w must be real, of A's precision).

    Examples
    --------
    >>> A = torch.tensor([[2.0, 1.0], [1.0, 2.0]], dtype=torch.float64)
    >>> w, V = torch.linalg.eigh(A)
    >>> float(eig_residual(A, w, V)) < 30, float(eig_residual(A, w.flip(-1), V)) > 30
    (True, True)
    """
    A, V = _pair(A, V, "A and V")
    n = _square(A)
    _square(V, "V")
    w = _values(A, w)
    batch = torch.broadcast_shapes(A.shape[:-2], V.shape[:-2], w.shape[:-1])
    if n == 0:
        return batch_max(torch.zeros(batch))
    info = dtype_info(A.dtype)
    Ah = _herm(A, upper)
    with ieee_fp32(V):
        R = Ah - (V * w.unsqueeze(-2).to(V.dtype)) @ V.mH
    tiny = float(np.finfo(info.real_name).tiny)
    anorm = _norm1(Ah).to(torch.float64).clamp_min(tiny).expand(batch)   # NaN stays NaN
    wnorm = _norm1(_herm(R, upper)).to(torch.float64).expand(batch)
    r = torch.where(anorm > wnorm, wnorm / anorm, torch.minimum(wnorm, n * anorm) / anorm)
    return batch_max(r / (n * ulp(A.dtype)))


def ulp(dtype) -> float:
    """``?syt21``'s ULP, ``?lamch('Epsilon')·?lamch('Base')``: 2·eps of the dtype's precision
    (2⁻²³ for float32 / complex64, 2⁻⁵² for float64 / complex128).

    Examples
    --------
    >>> ulp("float64") == 2.0 ** -52
    True
    """
    return 2 * dtype_info(dtype).lapack_eps


def eig_orthogonality(V) -> BatchMax:
    """Orthogonality ratio min(‖I − Vᴴ·V‖₁, n) / (n · ulp) (``?syt21`` ITYPE 1, test 2).

    The product in the working precision (IEEE fp32 on CUDA for float32 / complex64), the
    division in float64. ``?syt21`` forms V·Vᴴ (the same for square V); ulp = 2·eps as
    there (:func:`ulp`).

    Parameters
    ----------
    V : (..., n, n) tensor or array, float32, float64, complex64 or complex128

    Returns
    -------
    BatchMax
        0 for n = 0; at most 1/ulp; NaN where V holds a NaN.

    Examples
    --------
    >>> Q = torch.linalg.qr(torch.randn(5, 5, dtype=torch.float64)).Q
    >>> float(eig_orthogonality(Q)) < 30, float(eig_orthogonality(2 * Q)) > 30
    (True, True)
    """
    V = as_tensor(V)
    n = _square(V, "V")
    if n == 0:
        return batch_max(torch.zeros(V.shape[:-2]))
    with ieee_fp32(V):
        W = torch.eye(n, dtype=V.dtype, device=V.device) - V.mH @ V
    r = _norm1(W).to(torch.float64).clamp_max(n)
    return batch_max(r / (n * ulp(V.dtype)))


def eig_reference(A, upper: bool = False) -> torch.Tensor:
    """The eigenvalues of the Hermitian matrix in A's lower (or ``upper``) triangle, in float64.

    Computed on the CPU in float64 / complex128 (``torch.linalg.eigvalsh``, LAPACK's
    ``?syevd``/``?heevd``), independent of the GPU libraries under test; compute it once and
    pass it as ``reference=`` to :func:`eig_values` / :func:`eig_check` to judge several
    results for one input.

    Parameters
    ----------
    A : (..., n, n) tensor or array
    upper : bool

    Returns
    -------
    torch.Tensor
        (..., n) float64 on the CPU, ascending; all NaN for a matrix with a NaN or inf in the
        triangle read.

    Examples
    --------
    >>> eig_reference(torch.tensor([[2.0, 9.0], [1.0, 2.0]])).tolist()   # the lower triangle
    [1.0, 3.0]
    >>> eig_reference(torch.tensor([[2.0, 9.0], [1.0, 2.0]]), upper=True).round(decimals=12).tolist()
    [-7.0, 11.0]
    """
    A = as_tensor(A)
    n = _square(A)
    H = _herm(A.detach().to("cpu", torch.complex128 if A.is_complex() else torch.float64), upper)
    if n == 0:
        return torch.zeros(*H.shape[:-1], dtype=torch.float64)
    finite = torch.isfinite(H).flatten(-2).all(-1)
    H = torch.where(finite[..., None, None], H, torch.eye(n, dtype=H.dtype))
    return torch.where(finite[..., None], torch.linalg.eigvalsh(H), math.nan)


def eig_values(A, w, upper: bool = False, reference=None) -> BatchMax:
    """Eigenvalue ratio maxᵢ abs(wᵢ − refᵢ) / (max(n, 1) · ulp · ‖A‖₁) against a float64 reference.

    Follows ``ddrvst``'s eigenvalue comparison (test 3: the largest difference of two
    eigenvalue sets, there ``/ (ulp·max|D|)``) but with ``?syt21``'s n·‖A‖₁ scale: a
    backward-stable solver has abs(wᵢ − λᵢ) <= ‖E‖₂ with ‖E‖ a small multiple of n·eps·‖A‖
    (Weyl), whatever the conditioning of the eigenvectors. ref is :func:`eig_reference`;
    ‖A‖₁ of the Hermitian matrix read, ulp (:func:`ulp`) of A's dtype. w must be ascending, as syevd
    returns it (it is compared entry by entry, not sorted).

    Parameters
    ----------
    A : (..., n, n) tensor or array; only the lower (or ``upper``) triangle is referenced.
    w : (..., n), real, of A's precision
    upper : bool
    reference : (..., n) float64 tensor, optional
        :func:`eig_reference` of A (computed here when None).

    Returns
    -------
    BatchMax
        0 for n = 0. A = 0 (as ``?syt21``): 0 if w equals ref, else 1/ulp. NaN where A, w
        or the reference holds a NaN.

    Raises
    ------
    ValueError
        Shapes that do not match.
    TypeError
        Unsupported dtype; w not real of A's precision.

    Examples
    --------
    >>> A = torch.tensor([[2.0, 1.0], [1.0, 2.0]])
    >>> w = torch.linalg.eigvalsh(A)
    >>> float(eig_values(A, w)) < 30, float(eig_values(A, w * (1 + 1e-4))) > 30
    (True, True)
    """
    A = as_tensor(A)
    n = _square(A)
    w = _values(A, w)
    ref = eig_reference(A, upper) if reference is None else as_tensor(reference)
    if ref.shape[-1:] != (n,) or ref.dtype != torch.float64:
        raise ValueError(f"reference must be float64 of shape (..., {n}) (eig_reference), got "
                         f"{ref.dtype} {tuple(ref.shape)}")
    batch = torch.broadcast_shapes(A.shape[:-2], w.shape[:-1], ref.shape[:-1])
    if n == 0:
        return batch_max(torch.zeros(batch))
    eps = ulp(A.dtype)
    diff = (w.to("cpu", torch.float64) - ref.to("cpu")).abs().amax(-1).expand(batch)
    anorm = _norm1(_herm(A, upper)).to("cpu", torch.float64).expand(batch)
    r = diff / (n * eps * anorm)
    zero = torch.where(diff == 0, 0.0, 1.0 / eps)
    return batch_max(torch.where(anorm == 0, zero, r))


def eig_check(A, w, V=None, upper: bool = False, reference=None) -> BatchMax:
    """Per matrix the worst of :func:`eig_residual`, :func:`eig_orthogonality` and
    :func:`eig_values`: the check of ``eigh`` (``V`` given) or ``eigvalsh`` (``V`` None: the
    value ratio only).

    Parameters
    ----------
    A : (..., n, n); only the lower (or ``upper``) triangle is referenced.
    w : (..., n), real, of A's precision
    V : (..., n, n), A's dtype, optional
    upper : bool
    reference : optional, :func:`eig_reference` of A

    Returns
    -------
    BatchMax
        NaN for a matrix where any of the ratios is NaN (a NaN anywhere in its inputs).

    Examples
    --------
    >>> A = torch.tensor([[4.0, 1.0], [1.0, -3.0]], dtype=torch.float64)
    >>> w, V = torch.linalg.eigh(A)
    >>> float(eig_check(A, w, V)) < 30, float(eig_check(A, w)) < 30
    (True, True)
    >>> float(eig_check(A, w, V.flip(-1))) > 30
    True
    """
    if not isinstance(upper, (bool, np.bool_)):
        raise TypeError(f"upper must be True or False, got {upper!r}")
    parts = [eig_values(A, w, upper, reference).per_matrix]
    if V is not None:
        parts += [eig_residual(A, w, V, upper).per_matrix, eig_orthogonality(V).per_matrix]
    per = np.max(np.stack(np.broadcast_arrays(*parts)), axis=0)   # NaN propagates
    return BatchMax(float(per.max()) if per.size else 0.0, per)


def normalize_phase(V) -> torch.Tensor:
    """V with each column scaled by a unit scalar so that its largest-magnitude entry (the
    first one on ties) is real and positive (for real V: a sign, so it is positive).

    Makes eigenvectors of simple eigenvalues comparable between solvers: each is defined up
    to such a scalar. A zero column stays zero.

    Parameters
    ----------
    V : (..., n, k) tensor or array

    Returns
    -------
    torch.Tensor
        A new tensor of V's shape, dtype and device.

    Examples
    --------
    >>> normalize_phase(torch.tensor([[1.0, 0.5], [-2.0, 0.1]]))
    tensor([[-1.0000,  0.5000],
            [ 2.0000,  0.1000]])
    >>> normalize_phase(torch.tensor([[1j], [0.5]])).flatten().tolist()
    [(1+0j), -0.5j]
    """
    V = as_tensor(V)
    if V.ndim < 2:
        raise ValueError(f"V must have shape (..., n, k), got {tuple(V.shape)}")
    if V.shape[-2] == 0:
        return V.clone()
    idx = V.abs().argmax(-2, keepdim=True)
    top = V.gather(-2, idx)
    phase = torch.where(top == 0, torch.ones_like(top), top / top.abs())
    # that entry set to |top| exactly (the complex product may leave an imaginary rounding)
    return (V * phase.conj()).scatter(-2, idx, top.abs().to(V.dtype))


def eigvec_distance(V1, V2, w, *, cluster=None) -> BatchMax:
    """How far apart two eigenvector sets of one Hermitian matrix are, in plain units.

    The eigenvalues w (ascending) are grouped into clusters: consecutive ones whose gap is at
    most ``cluster`` (default 1000·eps·max abs(w) per matrix, eps of V1's dtype; exactly repeated
    eigenvalues always share a cluster). An eigenvector is determined only up to a unit
    scalar, and the eigenvectors of a cluster only as a basis of their invariant subspace, so:

    - a cluster of one eigenvalue: the largest entry (in magnitude) of v₁ − c·v₂, v₁ phase-normalized
      (:func:`normalize_phase`) and c the unit scalar that best aligns v₂ with it (the phase
      of v₂ᴴ·v₁; the same as normalizing v₂ unless two entries of v₁ tie in magnitude);
    - a larger cluster: the sine of the largest principal angle between the subspaces,
      ‖V₂cᴴ·(I − V₁c·V₁cᴴ)‖₂, computed as ‖V₂c − V₁c·(V₁cᴴ·V₂c)‖₂ (no cancellation in
      1 − cos²).

    The result per matrix is the largest over its clusters. Computed in float64 /
    complex128 on the inputs' device. A nearly repeated eigenvalue whose gap exceeds
    ``cluster`` makes the single-vector distance large legitimately (its vectors are
    ill-determined, sin θ ≈ eps·‖A‖/gap): widen ``cluster`` to judge the subspace instead.

    Parameters
    ----------
    V1, V2 : (..., n, n) tensors or arrays of one dtype; eigenvectors as columns.
    w : (..., n) real tensor or array, ascending: the eigenvalues the columns belong to.
    cluster : float, optional
        The largest gap within a cluster (absolute, in the units of w).

    Returns
    -------
    BatchMax
        0 for n = 0; NaN for a matrix where V1, V2 or w holds a NaN or inf.

    Raises
    ------
    ValueError
        Shapes that do not match; a negative or NaN ``cluster``.
    TypeError
        Unsupported or differing dtypes.

    Examples
    --------
    >>> A = torch.tensor([[2.0, 1.0, 0.0], [1.0, 2.0, 0.0], [0.0, 0.0, 3.0]],
    ...                  dtype=torch.float64)
    >>> w, V = torch.linalg.eigh(A)        # 1, 3, 3: a repeated eigenvalue
    >>> c, s = 0.6, 0.8
    >>> R = torch.tensor([[1.0, 0, 0], [0, c, -s], [0, s, c]], dtype=torch.float64)
    >>> float(eigvec_distance(V, -V @ R, w)) < 1e-15    # another basis of the 3-eigenspace
    True
    >>> round(float(eigvec_distance(V, V.flip(-1), w)), 6)
    1.0
    """
    V1, V2 = _pair(V1, V2, "V1 and V2")
    n = _square(V1, "V1")
    if V2.shape[-2:] != (n, n):
        raise ValueError(f"V2 must have shape (..., {n}, {n}), got {tuple(V2.shape)}")
    w = as_tensor(w, V1.device)
    if w.is_complex() or w.ndim < 1 or w.shape[-1] != n:
        raise ValueError(f"w must be real of shape (..., {n}), got {w.dtype} {tuple(w.shape)}")
    batch = torch.broadcast_shapes(V1.shape[:-2], V2.shape[:-2], w.shape[:-1])
    if n == 0:
        return batch_max(torch.zeros(batch))
    eps = dtype_info(V1.dtype).lapack_eps
    c = torch.complex128 if V1.is_complex() else torch.float64
    X, Y = V1.to(c).expand(*batch, n, n), V2.to(c).expand(*batch, n, n)
    w = w.to(torch.float64).expand(*batch, n)
    if cluster is None:
        tol = (1000 * eps * w.abs().amax(-1, keepdim=True))
    else:
        if not cluster >= 0:
            raise ValueError(f"cluster must be a number >= 0, got {cluster!r}")
        tol = torch.full((*batch, 1), float(cluster), dtype=torch.float64, device=w.device)
    gap = w[..., 1:] - w[..., :-1]
    ids = torch.cat([torch.zeros(*batch, 1, dtype=torch.int64, device=w.device),
                     (gap > tol).to(torch.int64).cumsum(-1)], -1)        # cluster of each column
    same = ids.unsqueeze(-1) == ids.unsqueeze(-2)                       # (..., n, n)
    size = same.sum(-1)                                                  # cluster size per column
    # single-vector clusters: max |v1n − c·v2|, c aligning v2 with the normalized v1
    Xn = normalize_phase(X)
    dot = (Y.conj() * Xn).sum(-2, keepdim=True)                          # v2ᴴ·v1n per column
    align = torch.where(dot == 0, torch.ones_like(dot), dot / dot.abs())
    single = (Xn - Y * align).abs().amax(-2)                             # (..., n)
    single = torch.where(size == 1, single, 0.0).amax(-1)
    # clusters of more than one: the columns of R = V2 − V1·(mask ∘ V1ᴴV2) are V2c − P_c·V2c;
    # the masked Gram matrix Rᴴ·R is block diagonal, its largest eigenvalue the worst ‖R_c‖₂²
    multi = same & (size > 1).unsqueeze(-1) & (size > 1).unsqueeze(-2)
    Cm = torch.where(same, X.mH @ Y, 0)
    R = Y - X @ Cm
    G = torch.where(multi, R.mH @ R, 0)
    finite = (torch.isfinite(X).flatten(-2).all(-1) & torch.isfinite(Y).flatten(-2).all(-1)
              & torch.isfinite(w).all(-1))
    G = torch.where(finite[..., None, None], G, 0)
    sub = torch.linalg.eigvalsh(G)[..., -1].clamp_min(0).sqrt()
    per = torch.maximum(single, sub)
    return batch_max(torch.where(finite, per, math.nan))
