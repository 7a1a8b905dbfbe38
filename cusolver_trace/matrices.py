"""Input matrices: random Hermitian positive definite, general and Hermitian indefinite,
LAPACK's test types, files, data.

Every generator builds its matrix in float64/complex128 on the CPU with a
``torch.Generator`` seeded by ``seed`` (so the same seed gives the same matrix on
every device, and the float32 matrix is the rounded float64 one), then casts and
moves it. Hermitian positive definite ones (``structure="hpd"``, for potrf) are made
exactly Hermitian first (``(A + Aᴴ)/2``, real diagonal; rounding to a lower precision
keeps that exact); general ones (``structure="general"``, for getrf) are
U·diag(σ)·Vᴴ as built; Hermitian ones (``structure="hermitian"``, for the eigensolvers
syevd / heevd) are Q·diag(λ)·Qᴴ with known, signed λ (:mod:`cusolver_trace._matrices_herm`,
re-exported here). Shapes are ``(*batch, n, n)``; dtypes are those of
:mod:`cusolver_trace._dtypes`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import torch

from ._dtypes import dtype_info
from ._matrix_base import (MODES, TestMatrix, _batch, _device, _finish, _haar, _order, _sigma,
                           _column, check_cond, max_cond, plain_float)
from ._matrix_files import from_file
from ._matrices_herm import (LAPACK_SY_TYPES, SIGNS, SPECTRA, _describe_hermitian,
                             _make_hermitian, _parse_spectrum, _unfit_hermitian, digits_covariance,
                             graded, hermitian, hermitian_with_spectrum, lapack_eig_test_matrix,
                             spectrum)
from .checks import BatchMax, batch_max, as_tensor

__all__ = [
    "TestMatrix", "STRUCTURES", "LAPACK_TYPES", "LAPACK_GE_TYPES", "MODES", "spd", "general",
    "general_singular", "structured", "BIG_N", "lapack_test_matrix", "classic_spd3", "from_file", "rbf_kernel_digits",
    "DIGITS_SAMPLES", "MatrixSpec", "parse_matrix_spec", "achieved_cond",
    "SPECTRA", "SIGNS", "LAPACK_SY_TYPES", "spectrum", "hermitian", "hermitian_with_spectrum",
    "lapack_eig_test_matrix", "graded", "digits_covariance",
]

STRUCTURES = ("hpd", "general", "hermitian")
"""What an op reads: a Hermitian positive definite matrix (potrf), a general one (getrf) or a
Hermitian one, indefinite in general, of which one triangle is read (syevd)."""

LAPACK_TYPES = ("diagonal", "cond2", "zero-first", "zero-last", "zero-middle",
                "ill-sqrt", "ill", "small", "large")
"""LAPACK's positive-definite test types (``dchkpo`` IMAT 1–9, ``dlatb4`` path PO)."""

LAPACK_GE_TYPES = ("diagonal", "upper", "lower", "cond2", "zero-first", "zero-last", "zero-half",
                   "ill-sqrt", "ill", "small", "large")
"""LAPACK's general test types (``dchkge`` IMAT 1–11, ``dlatb4`` path GE)."""

DIGITS_SAMPLES = 1797


def _svd64(n, batch, cond, mode, is_complex, seed, rotate=True, hermitian=True) -> torch.Tensor:
    """Q·diag(σ)·Qᴴ (``hermitian``) or U·diag(σ)·Vᴴ (U, then V drawn) in float64 /
    complex128 (CPU), σ from 1 down to 1/cond; diag(σ) when not ``rotate``."""
    cdtype = torch.complex128 if is_complex else torch.float64
    sigma = _sigma(n, cond, mode).to(cdtype)
    if not rotate or n == 0:
        return torch.diag_embed(sigma.expand(*batch, n)).clone()
    gen = torch.Generator().manual_seed(seed)
    U = _haar(batch, n, cdtype, gen)
    return (U * sigma) @ (U if hermitian else _haar(batch, n, cdtype, gen)).mH


def spd(n: int, *, batch=(), cond: float = 2.0, dtype="float64", device="cpu",
        seed: int = 0, mode: str = "geometric") -> torch.Tensor:
    """Random Hermitian positive definite A = Q·diag(σ)·Qᴴ, shape ``(*batch, n, n)``.

    Q is Haar-distributed (QR of a Gaussian, real or complex, with the signs of
    R's diagonal moved into Q); σ runs from 1 down to 1/cond, geometrically or
    arithmetically (``mode``, as dlatms MODE 3 / 4), so ‖A‖₂ = 1 and the
    2-norm condition number is ``cond`` (before rounding to ``dtype``).

    Parameters
    ----------
    n : int >= 0
    batch : int or tuple of int
    cond : float >= 1
    dtype : str or torch/numpy dtype — float32, float64, complex64, complex128
    device : str or torch.device
    seed : int — seeds a CPU ``torch.Generator``: same matrix on every device
    mode : "geometric" or "arithmetic"

    Raises
    ------
    ValueError
        cond not a finite number >= 1, unknown mode, n or a batch dimension < 0, a device
        other than cpu / cuda.
    TypeError
        Unsupported dtype; n or batch not ints.
    cusolver_trace.errors.GPUUnavailableError
        ``device`` is a CUDA device and no GPU is visible.
    RuntimeError
        torch's allocator cannot hold the matrices (``torch.OutOfMemoryError`` on a GPU):
        they are built in float64 / complex128, several n × n at a time per matrix of the
        batch, before the cast to ``dtype`` (the CLI refuses such sizes up front with an
        estimate).

    Examples
    --------
    >>> A = spd(3, batch=2, cond=10.0)
    >>> A.shape, bool(torch.allclose(A, A.mT))
    (torch.Size([2, 3, 3]), True)
    """
    n, dims, dev = _order(n), _batch(batch), _device(device)
    A = _svd64(n, dims, cond, mode, dtype_info(dtype).is_complex, seed)
    return _finish(A, dtype, dev)


def _structure(structure) -> str:
    if structure not in STRUCTURES:
        raise ValueError(f"structure must be one of {', '.join(STRUCTURES)}, got {structure!r}")
    return structure


def general(n: int, *, batch=(), cond: float = 2.0, dtype="float64", device="cpu",
            seed: int = 0, mode: str = "geometric") -> torch.Tensor:
    """Random general (non-symmetric) A = U·diag(σ)·Vᴴ, shape (*batch, n, n).

    U and V are independent Haar-distributed orthogonal / unitary matrices (as in
    :func:`spd`); σ runs from 1 down to 1/cond (``mode``: dlatms MODE 3 or 4), so
    ‖A‖₂ = 1 and κ₂(A) = ``cond`` before rounding to ``dtype``: LAPACK's ``dlatms`` with
    TYPE 'N', the matrices of ``dchkge``'s type 4 (cond 2) and 8–9 (ill-conditioned).
    Any cond is allowed; from cond·eps >= 1 on the rounded matrix is numerically singular.

    Parameters and errors are those of :func:`spd`.

    Examples
    --------
    >>> A = general(4, batch=2, cond=100.0, seed=1)
    >>> A.shape, bool(torch.allclose(A, A.mT))
    (torch.Size([2, 4, 4]), False)
    >>> round(float(achieved_cond(A, structure="general")), 6)
    100.0
    """
    n, dims, dev = _order(n), _batch(batch), _device(device)
    A = _svd64(n, dims, cond, mode, dtype_info(dtype).is_complex, seed, hermitian=False)
    return A.to(dtype_info(dtype).torch).to(dev)


#: From this order on, :func:`structured` builds a CUDA input's factors on the GPU.
BIG_N = 4096


def structured(structure: str, n: int, *, batch=(), cond: float = 2.0, dtype="float64",
               device="cpu", seed: int = 0) -> torch.Tensor:
    """A seeded matrix of the structure an op asks for: :func:`spd` for ``"hpd"``,
    :func:`general` for ``"general"`` (σ geometric from 1 to 1/cond), :func:`hermitian` for
    ``"hermitian"`` (|λ| geometric from 1 to 1/cond, random signs: indefinite).

    For a CUDA device and n >= :data:`BIG_N` the QR factorizations and the products run on
    the GPU (the same construction from the same seeded Gaussians, equal up to rounding; a
    CPU QR of order 16384 takes minutes).

    Raises
    ------
    ValueError
        An unknown structure; what :func:`spd` / :func:`general` / :func:`hermitian` raise.

    Examples
    --------
    >>> structured("general", 3, seed=1).shape
    torch.Size([3, 3])
    """
    if structure not in STRUCTURES:
        raise ValueError(f"structure must be 'hpd', 'general' or 'hermitian', got {structure!r}")
    dev = _device(device)
    if dev.type != "cuda" or _order(n) < BIG_N:
        make = {"hpd": spd, "general": general, "hermitian": hermitian}[structure]
        return make(n, batch=batch, cond=cond, dtype=dtype, device=dev, seed=seed)
    dt = dtype_info(dtype)
    c = torch.complex128 if dt.is_complex else torch.float64
    g = torch.Generator().manual_seed(seed)

    def haar():
        G = torch.randn(*_batch(batch), n, n, dtype=c, generator=g)
        Q, R = torch.linalg.qr(G.to(dev))
        d = R.diagonal(dim1=-2, dim2=-1)
        return Q * torch.where(d == 0, 1, d / d.abs()).unsqueeze(-2)

    sigma = cond ** -(torch.arange(n, dtype=torch.float64, device=dev) / max(n - 1, 1))
    if structure == "hermitian":   # the signed λ of hermitian(): Q·diag(λ)·Qᴴ
        sigma = spectrum(n, "geometric", cond, "random", seed).to(dev)
    U = haar()
    if structure != "general":
        A = (U * sigma) @ U.mH
        return ((A + A.mH) / 2).to(dt.torch)
    return ((U * sigma) @ haar().mH).to(dt.torch)


def general_singular(n: int, k: int, *, batch=(), cond: float = 2.0, dtype="float64",
                     device="cpu", seed: int = 0, mode: str = "geometric") -> torch.Tensor:
    """:func:`general` with column k (1-based) set to zero: getrf reports info = k.

    As LAPACK's ``dchkge`` types 5–7 (first, last, middle column zero): columns 1..k−1
    of a random matrix are independent, so U(1,1) … U(k−1,k−1) are nonzero and column k
    is still zero when its pivot is chosen, making U(k, k) exactly zero. det = 0.

    Raises
    ------
    ValueError
        k not an int within 1..n (and the errors of :func:`spd`).

    Examples
    --------
    >>> A = general_singular(4, 2)
    >>> torch.linalg.lu_factor_ex(A).info.item(), bool((A[:, 1] == 0).all())
    (2, True)
    """
    n = _order(n)
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 1 <= k <= n:
        raise ValueError(f"the zero column k must be an int within 1..n = {n}, got {k!r}")
    A = general(n, batch=batch, cond=cond, dtype=dtype, device="cpu", seed=seed, mode=mode)
    A[..., :, int(k) - 1] = 0
    return A.to(_device(device))


def lapack_test_matrix(kind: str, n: int, *, structure: str = "hpd", dtype="float64",
                       seed: int = 0, batch=(), device="cpu") -> TestMatrix:
    """One of LAPACK's test matrices: positive definite (``dchkpo``) or general (``dchkge``).

    ``structure="hpd"`` (path PO, for potrf; :data:`LAPACK_TYPES`):

    ==========  ====  =========================================================
    kind        IMAT  matrix (σ geometric, MODE 3; ‖A‖₂ = anorm)
    ==========  ====  =========================================================
    diagonal    1     diag(σ), cond 2 (no rotation)
    cond2       2     Q·diag(σ)·Qᴴ, cond 2
    zero-first  3     cond 2, row and column 1 zeroed → expected info 1
    zero-last   4     cond 2, row and column n zeroed → expected info n
    zero-middle 5     cond 2, row and column n//2 + 1 zeroed → that info
    ill-sqrt    6     cond = sqrt(0.1/prec)  (2.1e7 double, 916 single)
    ill         7     cond = 0.1/prec        (4.5e14 double, 8.4e5 single)
    small       8     cond 2, anorm = 0.25·sfmin/prec (2.5e-293 / 2.5e-32)
    large       9     cond 2, anorm = 1/small          (4.0e292 / 4.1e31)
    ==========  ====  =========================================================

    ``structure="general"`` (path GE, for getrf; :data:`LAPACK_GE_TYPES`), A = U·diag(σ)·Vᴴ:

    ==========  ====  =========================================================
    kind        IMAT  matrix (σ geometric, MODE 3; ‖A‖₂ = anorm)
    ==========  ====  =========================================================
    diagonal    1     diag(σ), cond 2 (no rotation)
    upper       2     upper triangular, cond 2 (R of the QR of a cond2 matrix)
    lower       3     lower triangular, cond 2
    cond2       4     U·diag(σ)·Vᴴ, cond 2
    zero-first  5     cond 2, column 1 zeroed → expected info 1
    zero-last   6     cond 2, column n zeroed → expected info n
    zero-half   7     cond 2, columns n//2 + 1 … n zeroed → info n//2 + 1
                      (LAPACK: "last n/2 columns zero")
    ill-sqrt    8     cond = sqrt(0.1/prec)
    ill         9     cond = 0.1/prec
    small       10    cond 2, anorm = 0.25·sfmin/prec
    large       11    cond 2, anorm = 1/small
    ==========  ====  =========================================================

    ``prec`` is dlatb4's ``dlamch('Precision')`` = eps·base = 2·``lapack_eps``
    (2**-52 / 2**-23), ``sfmin`` the smallest normal number; cond is 1 for n <= 1,
    as in dlatb4. A zeroed row/column leaves the leading minors before it
    positive definite and makes the one of that order exactly singular; a zeroed
    column makes getrf's U(k, k) exactly zero.

    Raises
    ------
    ValueError  unknown kind or structure; n < 0, or n < 1 for a zero-* kind; a batch
                dimension < 0; a device other than cpu / cuda.
    TypeError   unsupported dtype; n or batch not ints.
    """
    if _structure(structure) == "hermitian":
        return lapack_eig_test_matrix(kind, n, dtype=dtype, seed=seed, batch=batch, device=device)
    hpd = structure == "hpd"
    types = LAPACK_TYPES if hpd else LAPACK_GE_TYPES
    if kind not in types:
        raise ValueError(f"unknown LAPACK {'PO' if hpd else 'GE'} test type {kind!r} for "
                         f"{structure} matrices; choose from {', '.join(types)}")
    n, batch = _order(n), _batch(batch)
    _device(device)
    info = dtype_info(dtype)
    prec = 2 * info.lapack_eps
    small = 0.25 * float(np.finfo(info.real_name).tiny) / prec
    cond = {"ill-sqrt": math.sqrt(0.1 / prec), "ill": 0.1 / prec}.get(kind, 2.0)
    cond = 1.0 if n <= 1 else cond
    anorm = {"small": small, "large": 1 / small}.get(kind, 1.0)
    A = _svd64(n, batch, cond, "geometric", info.is_complex, seed, rotate=kind != "diagonal",
               hermitian=hpd) * anorm
    if kind in ("upper", "lower"):   # the triangle of a QR: the same singular values
        A = torch.linalg.qr(A).R if kind == "upper" else torch.linalg.qr(A.mH).R.mH.resolve_conj()
    desc = f"LAPACK {'PO' if hpd else 'GE'} type {types.index(kind) + 1} ({kind}), n={n}, " \
           f"cond={cond:.3g}"
    izero = 0
    if kind.startswith("zero-"):
        if n < 1:
            raise ValueError(f"{kind} needs n >= 1")
        izero = {"zero-first": 1, "zero-last": n}.get(kind, n // 2 + 1)
        A[..., :, izero - 1:n if kind == "zero-half" else izero] = 0
        if hpd:
            A[..., izero - 1, :] = 0
        desc += f", {'row/' if hpd else ''}column{'s' if kind == 'zero-half' else ''} " \
                f"{izero}{'..' + str(n) if kind == 'zero-half' else ''} zeroed (singular)"
    elif anorm != 1.0:
        desc += f", scaled to norm {anorm:.3g}"
    A = _finish(A, dtype, device) if hpd else A.to(info.torch).to(device)
    return TestMatrix(A, izero, desc, cond, f"lapack:{kind}")


_CLASSIC_A = [[4.0, 12.0, -16.0], [12.0, 37.0, -43.0], [-16.0, -43.0, 98.0]]
_CLASSIC_L = [[2.0, 0.0, 0.0], [6.0, 1.0, 0.0], [-8.0, 5.0, 3.0]]


def classic_spd3(*, negative: bool = False, dtype="float64", device="cpu") -> TestMatrix:
    """The classic 3×3 SPD example and its exact factor (every step exact in binary).

    A = [[4, 12, −16], [12, 37, −43], [−16, −43, 98]] = L·Lᵀ with
    L = [[2, 0, 0], [6, 1, 0], [−8, 5, 3]]. ``negative=True`` gives −A
    (negative definite: expected info 1, no factor).
    """
    t = dtype_info(dtype).torch
    A = torch.tensor(_CLASSIC_A, dtype=torch.float64)
    cond = float(achieved_cond(A))
    if negative:
        return TestMatrix((-A).to(t).to(device), 1, "classic 3x3, negated (negative definite)",
                          cond, "classic3:negative")
    return TestMatrix(A.to(t).to(device), 0, "classic 3x3 SPD [[4,12,-16],[12,37,-43],[-16,-43,98]]",
                      cond, "classic3", torch.tensor(_CLASSIC_L, dtype=t, device=device))


def rbf_kernel_digits(n: int | None = None, *, gamma: float | None = None,
                      jitter: float = 1e-6, dtype="float64") -> torch.Tensor:
    """RBF kernel Gram matrix of scikit-learn's bundled digits data, + jitter·I.

    K[i, j] = exp(−gamma·‖xᵢ − xⱼ‖²) over the first ``n`` of the 1797 8×8 digit
    images (64 features, pixel values 0–16; the data ship inside scikit-learn,
    no download). ``gamma`` defaults to scikit-learn's 1/64. A realistic
    Gaussian-process / kernel-ridge input; smaller gamma = worse conditioned.

    Returns
    -------
    torch.Tensor (n, n) on the CPU, exactly symmetric (built in float64).

    Raises
    ------
    ImportError  scikit-learn is not installed.
    ValueError   n outside 0..1797, gamma <= 0, jitter < 0.
    """
    try:
        from sklearn.datasets import load_digits
        from sklearn.metrics.pairwise import rbf_kernel
    except ImportError as e:
        raise ImportError("the digits kernel needs scikit-learn: "
                          "pip install 'cusolver-trace[data]'") from e
    n = DIGITS_SAMPLES if n is None else n
    if not 0 <= n <= DIGITS_SAMPLES:
        raise ValueError(f"digits has {DIGITS_SAMPLES} samples; n must be in 0..{DIGITS_SAMPLES}, got {n}")
    if (gamma is not None and not gamma > 0) or not jitter >= 0:
        raise ValueError(f"need gamma > 0 and jitter >= 0, got gamma={gamma}, jitter={jitter}")
    X = load_digits().data[:n].astype(np.float64)
    K = torch.from_numpy(rbf_kernel(X, gamma=gamma)) + jitter * torch.eye(n, dtype=torch.float64)
    return _finish(K, dtype, "cpu")


# --------------------------------------------------------------------------- --matrix SPEC
_SPEC_HELP = ("random | random:cond=C[,mode=geometric|arithmetic] | lapack:TYPE | classic3 | "
              "classic3:negative | file:PATH | digits | digits:gamma=G[,jitter=J] | "
              "singular:k=K[,cond=C][,mode=M] | spectrum:KIND[,cond=C][,signs=random|positive] | "
              "graded[:decades=D]")
_GENERAL_HELP = ("random, random:cond=C[,mode=M], lapack:TYPE (" + ", ".join(LAPACK_GE_TYPES)
                 + "), singular:k=K or file:PATH")

_KEYS = {"random": {"cond": plain_float, "mode": str},
         "digits": {"gamma": plain_float, "jitter": plain_float},
         "singular": {"k": _column, "cond": plain_float, "mode": str},
         "graded": {"decades": plain_float}}


@dataclass(frozen=True)
class MatrixSpec:
    """A parsed ``--matrix SPEC``; see :func:`parse_matrix_spec`."""

    kind: str
    params: dict = field(default_factory=dict)
    text: str = ""

    def fixed_n(self, structure: str = "hpd") -> int | None:
        """The order the source implies (classic3, file, digits default), else None."""
        if self.kind == "digits" and _structure(structure) == "hermitian":
            return 64   # the covariance of the 64 pixels
        if self.kind == "classic3":
            return 3
        if self.kind == "file":
            return from_file(self.params["path"]).shape[-1]
        if self.kind == "digits":
            return DIGITS_SAMPLES
        return None

    def describe(self, structure: str = "hpd") -> str:
        p, hpd = self.params, _structure(structure) == "hpd"
        if structure == "hermitian" and self.kind not in ("classic3", "file"):
            return _describe_hermitian(self)
        shape = f"{p.get('mode', 'geometric')} σ), cond={p.get('cond', 2.0):.3g}"
        if self.kind == "random":
            return ("random Hermitian PD (Haar Q, " if hpd
                    else "random general (Haar U, V, ") + shape
        if self.kind == "singular":
            return (f"random general (Haar U, V, {shape}, column {p['k']} zero (singular: "
                    f"getrf info {p['k']})")
        if self.kind == "lapack":
            return f"LAPACK {'PO' if hpd else 'GE'} test type {p['type']}"
        if self.kind == "classic3":
            return "classic 3x3 " + ("negative definite" if p.get("negative") else "SPD")
        if self.kind == "file":
            return f"matrix from {p['path']}"
        return (f"RBF kernel of sklearn digits, gamma={p.get('gamma', 1 / 64):.3g}, "
                f"jitter={p.get('jitter', 1e-6):.3g}")

    def _unfit(self, structure: str) -> str | None:
        """Why this spec makes no matrix of ``structure`` (None when it does)."""
        if structure == "hermitian":
            return _unfit_hermitian(self)
        if self.kind in ("spectrum", "graded"):
            return (f"makes a Hermitian indefinite matrix (the input of the eigensolvers), not "
                    f"a {'Hermitian positive definite' if structure == 'hpd' else 'general'} one")
        if structure == "general" and self.kind in ("classic3", "digits"):
            return (f"makes a Hermitian positive definite example, not a general matrix (the "
                    f"input of getrf); for general matrices use {_GENERAL_HELP}")
        if structure == "hpd" and self.kind == "singular":
            return ("makes a general matrix with a zero column, not a Hermitian positive definite "
                    "one (the input of potrf); singular ones of that kind are lapack:zero-first, "
                    "lapack:zero-last and lapack:zero-middle")
        types = LAPACK_TYPES if structure == "hpd" else LAPACK_GE_TYPES
        if self.kind == "lapack" and self.params["type"] not in types:
            return (f"is not one of LAPACK's {'PO' if structure == 'hpd' else 'GE'} test types, "
                    f"those for {structure} matrices: {', '.join(types)}")
        return None

    def check(self, structure: str = "hpd") -> None:
        """Raise ``ValueError`` (the message :meth:`make` gives) when this spec makes no matrix
        of ``structure``: a caller can refuse it before any work."""
        why = self._unfit(_structure(structure))
        if why:
            raise ValueError(f"--matrix {self.text!r} {why}")

    def make(self, n: int | None = None, batch=(), dtype=None, device="cpu",
             seed: int = 0, structure: str = "hpd") -> TestMatrix:
        """Build the input, shape (*batch, n, n).

        Parameters
        ----------
        n : int, optional
            Required for random, lapack and singular. classic3 and file fix n (None
            takes it; a different n is an error); digits takes n <= 1797 (None: all).
        batch : int or tuple of int
            Deterministic sources are repeated over ``batch``; a batched
            ``.npy`` keeps its own batch (a different ``batch`` is an error).
        dtype : str, torch.dtype or numpy dtype, optional
            None (default): a file's own dtype (see :func:`from_file`), float64
            for every generated source. Given explicitly: the generated
            matrix's dtype; for a file it must equal the file's dtype (a file
            is never converted), else :class:`~cusolver_trace.errors.InputFileError`.
            A command-line ``--dtype`` that the user did not give should be
            passed as None.
        device : str or torch.device
        seed : int
            Seeds random, lapack and singular; ignored by the deterministic sources.
        structure : "hpd", "general" or "hermitian"
            The matrix the op reads: Hermitian positive definite (potrf; ``random`` is
            :func:`spd`, ``lapack:TYPE`` a PO type, files are read with their rounding
            noise symmetrized), general (getrf; ``random`` is :func:`general`,
            ``lapack:TYPE`` a GE type, ``singular:k=K`` is :func:`general_singular`,
            files keep their values) or Hermitian (syevd; ``random`` and ``spectrum:KIND``
            are :func:`hermitian_with_spectrum`, ``lapack:TYPE`` an SY eigen type,
            ``graded`` is :func:`graded`, ``digits`` :func:`digits_covariance` (n = 64),
            files keep their values); the known eigenvalues come in ``.eigenvalues``.

        Returns
        -------
        TestMatrix

        Raises
        ------
        ValueError
            n missing or conflicting; batch conflicting with a file's; a spec that
            makes no matrix of that structure (classic3, digits or a PO-only LAPACK type
            for general; singular or a GE-only type for hpd; spectrum and graded for both;
            singular, options of digits or a type that is not an SY eigen type for
            hermitian); k outside 1..n.
        InputFileError
            (a ``ValueError``) ``file:PATH`` cannot be read, is malformed, or
            holds another dtype than ``dtype``; see :func:`from_file`.
        FileNotFoundError
            ``file:PATH`` does not exist.
        TypeError
            Unsupported ``dtype``.

        Examples
        --------
        >>> from cusolver_trace.matrices import parse_matrix_spec
        >>> parse_matrix_spec("classic3").make(batch=2).A.shape
        torch.Size([2, 3, 3])
        >>> parse_matrix_spec("random").make(4, dtype="float32").A.dtype
        torch.float32
        >>> tm = parse_matrix_spec("singular:k=3").make(5, structure="general")
        >>> tm.expected_info, torch.linalg.lu_factor_ex(tm.A).info.item()
        (3, 3)
        >>> parse_matrix_spec("classic3").make(structure="general")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: --matrix 'classic3' makes a Hermitian positive definite example, not a ...
        """
        batch, p = _batch(batch), self.params
        self.check(structure)
        file_dtype, dtype = dtype, "float64" if dtype is None else dtype
        if self.kind in ("random", "lapack", "singular", "spectrum", "graded") and n is None:
            raise ValueError(f"--matrix {self.text} needs a size n")
        if structure == "hermitian" and self.kind not in ("classic3", "file"):
            return _make_hermitian(self, n, batch, dtype, device, seed)
        if self.kind == "singular":
            kw = {key: v for key, v in p.items() if key != "k"}
            if not p["k"] <= _order(n):
                raise ValueError(f"--matrix {self.text!r}: the zero column k={p['k']} is not "
                                 f"within 1..n = {n}")
            A = general_singular(n, p["k"], batch=batch, dtype=dtype, device=device, seed=seed,
                                 **kw)
            return TestMatrix(A, p["k"], self.describe("general"), kw.get("cond", 2.0), self.text)
        if self.kind == "random":
            make = spd if structure == "hpd" else general
            A = make(n, batch=batch, dtype=dtype, device=device, seed=seed, **p)
            desc, cond, info = self.describe(structure), p.get("cond", 2.0), 0
            if structure == "general":
                if cond * 2 * dtype_info(dtype).lapack_eps >= 1:
                    info = None
                    desc += (f", numerically singular in {dtype_info(dtype).name} (cond·eps >= 1): "
                             f"getrf's info not known in advance")
                return TestMatrix(A, info, desc, cond, self.text)
            try:
                check_cond(cond, dtype)
            except ValueError:
                # allowed here (compare on inputs that fail on purpose), but never called
                # positive definite: rounding to dtype can make it indefinite
                desc = desc.replace("Hermitian PD", "Hermitian") + (
                    f", past {max_cond(dtype):.3g} = 0.5/eps of {dtype_info(dtype).name}: "
                    "not positive definite after rounding, expect info > 0")
            return TestMatrix(A, 0, desc, cond, self.text)
        if self.kind == "lapack":
            return lapack_test_matrix(p["type"], n, structure=structure, dtype=dtype, seed=seed,
                                      batch=batch, device=device)
        L = info = cond = None
        if self.kind == "classic3":
            tm = classic_spd3(negative=p["negative"], dtype=dtype, device=device)
            A, L, info, cond = tm.A, tm.L, tm.expected_info, tm.cond
        elif self.kind == "file":
            A = from_file(p["path"], dtype=file_dtype, structure=structure)
        else:
            A = rbf_kernel_digits(n, dtype=dtype, **p)
        fixed = A.shape[-1]
        if n is not None and n != fixed:
            raise ValueError(f"--matrix {self.text} is {fixed}x{fixed}; got n={n}")
        if A.ndim > 2:
            if batch and batch != tuple(A.shape[:-2]):
                raise ValueError(f"{p['path']} holds a batch of shape {tuple(A.shape[:-2])}; "
                                 f"got batch={batch}")
        desc = self.describe(structure)
        if A.ndim == 2 and batch:
            A = A.expand(*batch, fixed, fixed).clone()
            L = None if L is None else L.expand(*batch, fixed, fixed).clone()
            # said in the label: a batch of copies of one matrix, not a batch the source held
            desc += f", the same matrix repeated over batch {'x'.join(map(str, batch))}"
        return TestMatrix(A.to(device), info, desc, cond, self.text, L)


def parse_matrix_spec(spec: str) -> MatrixSpec:
    """Parse a ``--matrix SPEC`` string.

    ===============================  ===========================================
    SPEC                             input
    ===============================  ===========================================
    ``random``                       :func:`spd`, cond 2, geometric σ
    ``random:cond=1e6``              :func:`spd` with cond 1e6
    ``random:cond=1e6,mode=arithmetic``  … arithmetic σ
    ``lapack:TYPE``                  :func:`lapack_test_matrix`, TYPE one of
                                     :data:`LAPACK_TYPES` (e.g. ``lapack:ill``)
    ``classic3`` / ``classic3:negative``  :func:`classic_spd3` (n = 3)
    ``file:PATH``                    :func:`from_file` (.npy / .mtx; n from file)
    ``digits`` / ``digits:gamma=0.001,jitter=1e-8``  :func:`rbf_kernel_digits`
    ===============================  ===========================================

    The table is for Hermitian positive definite inputs (``make(structure="hpd")``,
    the default). For general ones (``make(structure="general")``):

    ===============================  ===========================================
    SPEC                             input
    ===============================  ===========================================
    ``random``, ``random:cond=1e6``  :func:`general` (options as above)
    ``lapack:TYPE``                  :func:`lapack_test_matrix` with
                                     ``structure="general"``, TYPE one of
                                     :data:`LAPACK_GE_TYPES` (``lapack:ill``,
                                     ``lapack:small``, ``lapack:zero-half``, …)
    ``singular:k=3``                 :func:`general_singular`: column 3 zero,
                                     getrf info 3 (k within 1..n; options
                                     ``cond``, ``mode`` as for random)
    ``file:PATH``                    :func:`from_file`, values as stored
    ===============================  ===========================================

    For Hermitian ones (``make(structure="hermitian")``, the eigensolvers):

    =======================================  ===========================================
    SPEC                                     input
    =======================================  ===========================================
    ``random``, ``random:cond=1e6``          :func:`hermitian_with_spectrum`, |λ|
                                             geometric (``mode``: or arithmetic),
                                             random signs
    ``spectrum:KIND[,cond=C][,signs=S]``     the same with KIND one of :data:`SPECTRA`
                                             (``spectrum:clustered,cond=1e8``), S
                                             ``random`` (default) or ``positive``
    ``lapack:TYPE``                          :func:`lapack_eig_test_matrix`, TYPE one of
                                             :data:`LAPACK_SY_TYPES` (``lapack:band``)
    ``graded`` / ``graded:decades=12``       :func:`graded` (default 8 decades)
    ``digits``                               :func:`digits_covariance` (n = 64)
    ``classic3``, ``file:PATH``              as for hpd; files keep their values
    =======================================  ===========================================

    A spec is checked against the structure when the matrix is made
    (:meth:`MatrixSpec.make`): ``classic3`` and ``digits`` make no general matrix,
    ``singular`` no positive definite or Hermitian one, ``spectrum`` and ``graded`` only
    Hermitian ones, and each structure has its LAPACK types.

    Raises
    ------
    ValueError  unknown kind, key, value or LAPACK type (the message lists the forms).
    """
    # strict and case-sensitive, like every other value: kinds, keys and names are lower case
    kind, colon, arg = spec.partition(":")

    def bad(why):
        return ValueError(f"bad --matrix {spec!r}: {why}; expected {_SPEC_HELP}")

    params: dict = {}
    if kind in _KEYS:
        if colon and not arg:
            raise bad(f"{kind}: needs options after ':' (or no ':')")
        for item in arg.split(",") if arg else ():
            key, eq, val = item.partition("=")
            if key not in _KEYS[kind] or not eq or not val:
                raise bad(f"unknown or malformed option {item!r} (options: {', '.join(_KEYS[kind])})")
            if key in params:
                raise bad(f"option {key!r} given twice")
            try:
                params[key] = _KEYS[kind][key](val)
            except ValueError:
                raise bad(f"{key}={val!r} is not "
                          + ("a whole number >= 1" if key == "k" else "a number")) from None
        if params.get("mode", "geometric") not in MODES:
            raise bad(f"mode must be one of {', '.join(MODES)}")
        numbers = [v for v in params.values() if isinstance(v, float)]
        if not all(np.isfinite(numbers)) or not params.get("cond", 1.0) >= 1 \
                or not params.get("gamma", 1.0) > 0 or not params.get("jitter", 0.0) >= 0 \
                or not params.get("decades", 0.0) >= 0:
            raise bad("need a finite cond >= 1, gamma > 0, jitter >= 0, decades >= 0")
        if kind == "singular" and "k" not in params:
            raise bad("singular needs k=K, the zero column (1-based)")
    elif kind == "spectrum":
        params.update(_parse_spectrum(arg, bad))
    elif kind == "lapack":
        if arg not in LAPACK_TYPES + LAPACK_GE_TYPES + LAPACK_SY_TYPES:
            raise bad(f"LAPACK type must be one of {', '.join(LAPACK_TYPES)} (positive definite), "
                      f"{', '.join(LAPACK_GE_TYPES)} (general) or {', '.join(LAPACK_SY_TYPES)} "
                      f"(hermitian)")
        params["type"] = arg
    elif kind == "classic3":
        if arg not in ("", "negative"):
            raise bad(f"classic3 takes no option but 'negative', got {arg!r}")
        params["negative"] = arg == "negative"
    elif kind == "file":
        if not arg:
            raise bad("file: needs a path")
        params["path"] = arg
    else:
        raise bad(f"unknown kind {kind!r}")
    return MatrixSpec(kind, params, spec)


def achieved_cond(A, structure: str = "hpd") -> BatchMax:
    """2-norm condition number of A, (..., n, n), per matrix, in float64/complex128 on A's device.

    ``structure="hpd"`` or ``"hermitian"``: max|λ| / min|λ| of Hermitian A (``torch.linalg.eigvalsh``, lower
    triangle referenced); ``"general"``: σ_max / σ_min (``torch.linalg.svdvals``, all of A).
    inf for a singular matrix, 1 for n = 0.
    """
    A = as_tensor(A)
    A = A.to(torch.complex128 if A.is_complex() else torch.float64)
    if A.shape[-1] == 0:
        return batch_max(torch.ones(A.shape[:-2]))
    if _structure(structure) == "general":
        s = torch.linalg.svdvals(A)
        return batch_max(s[..., 0] / s[..., -1])
    lam = torch.linalg.eigvalsh(A).abs()
    return batch_max(lam.amax(-1) / lam.amin(-1))
