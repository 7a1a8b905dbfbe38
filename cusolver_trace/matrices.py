"""Input matrices: random Hermitian positive definite, LAPACK's test types, files, data.

Every generator builds its matrix in float64/complex128 on the CPU with a
``torch.Generator`` seeded by ``seed`` (so the same seed gives the same matrix on
every device, and the float32 matrix is the rounded float64 one), makes it exactly
Hermitian (``(A + Aᴴ)/2``, real diagonal; rounding to a lower precision keeps
that exact), then casts and moves it. Shapes are ``(*batch, n, n)``; dtypes are
those of :mod:`cusolver_trace._dtypes`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from ._dtypes import dtype_info
from .checks import BatchMax, _batch_max, as_tensor

__all__ = [
    "TestMatrix", "LAPACK_TYPES", "MODES", "spd", "lapack_test_matrix", "classic_spd3",
    "from_file", "rbf_kernel_digits", "DIGITS_SAMPLES", "MatrixSpec", "parse_matrix_spec",
    "achieved_cond",
]

MODES = ("geometric", "arithmetic")
"""Eigenvalue distributions: dlatms MODE 3 (σᵢ = cond^(−(i−1)/(n−1))) and MODE 4
(σᵢ = 1 − (i−1)/(n−1)·(1 − 1/cond))."""

LAPACK_TYPES = ("diagonal", "cond2", "zero-first", "zero-last", "zero-middle",
                "ill-sqrt", "ill", "small", "large")
"""LAPACK's positive-definite test types (``dchkpo`` IMAT 1–9, ``dlatb4`` path PO)."""

DIGITS_SAMPLES = 1797


@dataclass(frozen=True)
class TestMatrix:
    """A test input with what a correct potrf must report for it.

    Attributes
    ----------
    A : torch.Tensor, (..., n, n)
    expected_info : int or None
        potrf's ``info`` for every matrix of the batch: 0 = positive definite,
        k > 0 = the leading minor of order k is not; None = not known in advance.
    description : str
    cond : float or None
        The 2-norm condition number the matrix was built with (None if unknown).
    kind : str
    L : torch.Tensor or None
        The exact lower Cholesky factor, when known (``classic_spd3``).
    """

    __test__ = False  # not a pytest test class

    A: torch.Tensor
    expected_info: int | None = 0
    description: str = ""
    cond: float | None = None
    kind: str = ""
    L: torch.Tensor | None = None


def _batch(batch) -> tuple[int, ...]:
    return (batch,) if isinstance(batch, int) else tuple(batch)


def _finish(A64: torch.Tensor, dtype, device) -> torch.Tensor:
    """Make exactly Hermitian (real diagonal) in 64-bit, then cast and move."""
    A64 = (A64 + A64.mH) / 2
    return A64.to(dtype_info(dtype).torch).to(device)


def _sigma(n: int, cond: float, mode: str) -> torch.Tensor:
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    if not cond >= 1:
        raise ValueError(f"cond must be >= 1, got {cond}")
    t = torch.arange(n, dtype=torch.float64) / max(n - 1, 1)
    return cond ** -t if mode == "geometric" else 1 - t * (1 - 1 / cond)


def _spd64(n, batch, cond, mode, is_complex, seed, rotate=True) -> torch.Tensor:
    """Q·diag(σ)·Qᴴ in float64/complex128 (CPU), σ from 1 down to 1/cond."""
    cdtype = torch.complex128 if is_complex else torch.float64
    sigma = _sigma(n, cond, mode).to(cdtype)
    if not rotate or n == 0:
        return torch.diag_embed(sigma.expand(*batch, n)).clone()
    gen = torch.Generator().manual_seed(seed)
    Q, R = torch.linalg.qr(torch.randn(*batch, n, n, dtype=cdtype, generator=gen))
    d = R.diagonal(dim1=-2, dim2=-1)
    Q = Q * torch.where(d == 0, 1, d / d.abs()).unsqueeze(-2)  # Haar: fix the signs
    return (Q * sigma) @ Q.mH


def spd(n: int, *, batch=(), cond: float = 2.0, dtype="float64", device="cpu",
        seed: int = 0, mode: str = "geometric") -> torch.Tensor:
    """Random Hermitian positive definite A = Q·diag(σ)·Qᴴ, shape (*batch, n, n).

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
    ValueError  cond < 1, unknown mode, n < 0.   TypeError  unsupported dtype.
    """
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    A = _spd64(n, _batch(batch), cond, mode, dtype_info(dtype).is_complex, seed)
    return _finish(A, dtype, device)


def lapack_test_matrix(kind: str, n: int, *, dtype="float64", seed: int = 0, batch=(),
                       device="cpu") -> TestMatrix:
    """One of LAPACK's positive-definite test matrices (``dchkpo`` + ``dlatb4``).

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

    ``prec`` is dlatb4's ``dlamch('Precision')`` = eps·base = 2·``lapack_eps``
    (2**-52 / 2**-23), ``sfmin`` the smallest normal number; cond is 1 for n <= 1,
    as in dlatb4. A zeroed row/column leaves the leading minors before it
    positive definite and makes the one of that order exactly singular.

    Raises
    ------
    ValueError  unknown kind; n < 1 for a zero-* kind.
    """
    if kind not in LAPACK_TYPES:
        raise ValueError(f"unknown LAPACK test type {kind!r}; choose from {', '.join(LAPACK_TYPES)}")
    info = dtype_info(dtype)
    prec = 2 * info.lapack_eps
    small = 0.25 * float(np.finfo(info.real_name).tiny) / prec
    cond = {"ill-sqrt": math.sqrt(0.1 / prec), "ill": 0.1 / prec}.get(kind, 2.0)
    cond = 1.0 if n <= 1 else cond
    anorm = {"small": small, "large": 1 / small}.get(kind, 1.0)
    A = _spd64(n, _batch(batch), cond, "geometric", info.is_complex, seed,
               rotate=kind != "diagonal") * anorm
    imat = LAPACK_TYPES.index(kind) + 1
    desc = f"LAPACK PO type {imat} ({kind}), n={n}, cond={cond:.3g}"
    izero = 0
    if kind.startswith("zero-"):
        if n < 1:
            raise ValueError(f"{kind} needs n >= 1")
        izero = {"zero-first": 1, "zero-last": n, "zero-middle": n // 2 + 1}[kind]
        A[..., izero - 1, :] = 0
        A[..., :, izero - 1] = 0
        desc += f", row/column {izero} zeroed (singular)"
    elif anorm != 1.0:
        desc += f", scaled to norm {anorm:.3g}"
    return TestMatrix(_finish(A, dtype, device), izero, desc, cond, f"lapack:{kind}")


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


_HERMITIAN_RTOL = 100  # × lapack_eps of the stored precision, relative to max |a_ij|


def from_file(path, *, dtype=None) -> torch.Tensor:
    """Read a Hermitian matrix (or a batch) from ``.npy`` or Matrix Market ``.mtx``.

    ``.npy`` may hold (n, n) or (..., n, n). ``.mtx`` / ``.mtx.gz`` are read with
    ``scipy.io.mmread``; sparse (coordinate) files become dense, and
    symmetric / hermitian storage (one triangle in the file) is expanded by scipy.

    Parameters
    ----------
    dtype : optional
        Target dtype; default: the file's if supported, else float64 (integers,
        pattern, other floats) or complex128 (other complex).

    Returns
    -------
    torch.Tensor on the CPU, exactly Hermitian. A matrix whose asymmetry
    max|A − Aᴴ| is within 100·eps·max|A| (rounding noise of the program that
    wrote it) is symmetrized as ``(A + Aᴴ)/2``.

    Raises
    ------
    ValueError
        Unsupported extension; not square; not symmetric/Hermitian (message
        gives the max asymmetry); non-finite entries; complex data with nonzero
        imaginary parts requested as a real dtype.
    """
    path = Path(path)
    name = path.name.lower()
    if name.endswith(".npy"):
        a = np.load(path, allow_pickle=False)
    elif name.endswith((".mtx", ".mtx.gz")):
        import scipy.io
        a = scipy.io.mmread(path)
        a = a.toarray() if hasattr(a, "toarray") else np.asarray(a)
    else:
        raise ValueError(f"{path}: unsupported file type; expected .npy or .mtx")
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ValueError(f"{path}: matrix is not square: shape {a.shape}")
    try:
        src = dtype_info(a.dtype)
    except TypeError:
        src = dtype_info("complex128" if np.iscomplexobj(a) else "float64")
    target = src if dtype is None else dtype_info(dtype)
    A = torch.from_numpy(np.array(a, dtype=src.numpy.newbyteorder("=")))
    if not torch.isfinite(A).all():
        raise ValueError(f"{path}: matrix has {int((~torch.isfinite(A)).sum())} non-finite entries")
    if A.is_complex() and not target.is_complex:
        if (A.imag != 0).any():
            raise ValueError(f"{path}: complex matrix with nonzero imaginary parts; "
                             f"cannot read it as {target.name}")
        A = A.real
    asym = float((A - A.mH).abs().max()) if A.numel() else 0.0
    scale = float(A.abs().max()) if A.numel() else 0.0
    if asym > _HERMITIAN_RTOL * src.lapack_eps * scale:
        kind = "Hermitian" if A.is_complex() else "symmetric"
        raise ValueError(f"{path}: matrix is not {kind}: max |A - A^H| = {asym:.3g} "
                         f"(max |A| = {scale:.3g})")
    A64 = A.to(torch.complex128 if A.is_complex() else torch.float64)
    return _finish(A64, target.name, "cpu")


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
              "classic3:negative | file:PATH | digits | digits:gamma=G[,jitter=J]")
_KEYS = {"random": {"cond": float, "mode": str}, "digits": {"gamma": float, "jitter": float}}


@dataclass(frozen=True)
class MatrixSpec:
    """A parsed ``--matrix SPEC``; see :func:`parse_matrix_spec`."""

    kind: str
    params: dict = field(default_factory=dict)
    text: str = ""

    def fixed_n(self) -> int | None:
        """The order the source implies (classic3, file, digits default), else None."""
        if self.kind == "classic3":
            return 3
        if self.kind == "file":
            return from_file(self.params["path"]).shape[-1]
        if self.kind == "digits":
            return DIGITS_SAMPLES
        return None

    def describe(self) -> str:
        p = self.params
        if self.kind == "random":
            return f"random Hermitian PD (Haar Q, {p.get('mode', 'geometric')} σ), cond={p.get('cond', 2.0):.3g}"
        if self.kind == "lapack":
            return f"LAPACK PO test type {p['type']}"
        if self.kind == "classic3":
            return "classic 3x3 " + ("negative definite" if p.get("negative") else "SPD")
        if self.kind == "file":
            return f"matrix from {p['path']}"
        return (f"RBF kernel of sklearn digits, gamma={p.get('gamma', 1 / 64):.3g}, "
                f"jitter={p.get('jitter', 1e-6):.3g}")

    def make(self, n: int | None = None, batch=(), dtype="float64", device="cpu",
             seed: int = 0) -> TestMatrix:
        """Build the input, shape (*batch, n, n).

        ``n`` is required for random and lapack; classic3 and file fix n (a
        different n is an error; None takes it); digits takes n <= 1797 (None:
        all). Deterministic sources are repeated over ``batch`` (a batched
        ``.npy`` keeps its own batch; a different ``batch`` is an error) and
        ignore ``seed``.

        Raises
        ------
        ValueError  n missing or conflicting; batch conflicting with a file's.
        """
        batch, p = _batch(batch), self.params
        if self.kind in ("random", "lapack") and n is None:
            raise ValueError(f"--matrix {self.text} needs a size n")
        if self.kind == "random":
            A = spd(n, batch=batch, dtype=dtype, device=device, seed=seed, **p)
            return TestMatrix(A, 0, self.describe(), p.get("cond", 2.0), self.text)
        if self.kind == "lapack":
            return lapack_test_matrix(p["type"], n, dtype=dtype, seed=seed, batch=batch, device=device)
        L = info = cond = None
        if self.kind == "classic3":
            tm = classic_spd3(negative=p["negative"], dtype=dtype, device=device)
            A, L, info, cond = tm.A, tm.L, tm.expected_info, tm.cond
        elif self.kind == "file":
            A = from_file(p["path"], dtype=dtype)
        else:
            A = rbf_kernel_digits(n, dtype=dtype, **p)
        fixed = A.shape[-1]
        if n is not None and n != fixed:
            raise ValueError(f"--matrix {self.text} is {fixed}x{fixed}; got n={n}")
        if A.ndim > 2:
            if batch and batch != tuple(A.shape[:-2]):
                raise ValueError(f"{p['path']} holds a batch of shape {tuple(A.shape[:-2])}; "
                                 f"got batch={batch}")
        elif batch:
            A = A.expand(*batch, fixed, fixed).clone()
            L = None if L is None else L.expand(*batch, fixed, fixed).clone()
        return TestMatrix(A.to(device), info, self.describe(), cond, self.text, L)


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

    Raises
    ------
    ValueError  unknown kind, key, value or LAPACK type (the message lists the forms).
    """
    kind, _, arg = spec.strip().partition(":")
    kind = kind.lower()

    def bad(why):
        return ValueError(f"bad --matrix {spec!r}: {why}; expected {_SPEC_HELP}")

    params: dict = {}
    if kind in _KEYS:
        for item in filter(None, arg.split(",")):
            key, eq, val = item.partition("=")
            key = key.strip().lower()
            if key not in _KEYS[kind] or not eq:
                raise bad(f"unknown or malformed option {item!r} (options: {', '.join(_KEYS[kind])})")
            try:
                params[key] = _KEYS[kind][key](val.strip())
            except ValueError:
                raise bad(f"{key}={val!r} is not a number") from None
        if params.get("mode", "geometric") not in MODES:
            raise bad(f"mode must be one of {', '.join(MODES)}")
        if not params.get("cond", 1.0) >= 1 or not params.get("gamma", 1.0) > 0 \
                or not params.get("jitter", 0.0) >= 0:
            raise bad("need cond >= 1, gamma > 0, jitter >= 0")
    elif kind == "lapack":
        if arg not in LAPACK_TYPES:
            raise bad(f"LAPACK type must be one of {', '.join(LAPACK_TYPES)}")
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
    return MatrixSpec(kind, params, spec.strip())


def achieved_cond(A) -> BatchMax:
    """2-norm condition number max|λ| / min|λ| of Hermitian A, (..., n, n), per matrix.

    Computed with ``torch.linalg.eigvalsh`` in float64/complex128 on A's device
    (lower triangle referenced); inf for a singular matrix, 1 for n = 0.
    """
    A = as_tensor(A)
    A = A.to(torch.complex128 if A.is_complex() else torch.float64)
    if A.shape[-1] == 0:
        return _batch_max(torch.ones(A.shape[:-2]))
    lam = torch.linalg.eigvalsh(A).abs()
    return _batch_max(lam.amax(-1) / lam.amin(-1))
