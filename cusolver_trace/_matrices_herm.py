"""Hermitian (indefinite) test matrices for the eigensolvers (``structure="hermitian"``:
syevd / heevd, ``torch.linalg.eigh`` / ``eigvalsh``): known spectra, LAPACK's symmetric
eigenproblem test types (``ddrvst``), graded matrices, the digits covariance.

As every generator of :mod:`cusolver_trace.matrices`: built in float64 / complex128 on the CPU
from ``seed`` (the same matrix on every device; the float32 matrix is the rounded float64 one),
made exactly Hermitian (``(A + Aᴴ)/2``, real diagonal), then cast and moved. Used through
:mod:`cusolver_trace.matrices`, which re-exports the public names.
"""
from __future__ import annotations

import math

import numpy as np
import torch

from ._dtypes import dtype_info
from ._matrix_base import TestMatrix, _batch, _device, _finish, _haar, _order

__all__ = ["SPECTRA", "SIGNS", "LAPACK_SY_TYPES", "spectrum", "hermitian",
           "hermitian_with_spectrum", "lapack_eig_test_matrix", "graded", "digits_covariance"]

SPECTRA = ("geometric", "arithmetic", "clustered", "clustered-top", "repeated")
"""Eigenvalue distributions of :func:`spectrum` (magnitudes from 1 down to 1/cond)."""

SIGNS = ("random", "positive")

LAPACK_SY_TYPES = ("zero", "identity", "diag-arithmetic", "diag-geometric", "diag-clustered",
                   "diag-large", "diag-small", "arithmetic", "geometric", "clustered", "large",
                   "small", "random", "random-large", "random-small", "band", "band-large",
                   "band-small")
"""LAPACK's symmetric eigenproblem test types, ``ddrvst`` / ``zdrvst`` JTYPE 1–18 in order."""


def _cdtype(is_complex: bool):
    return torch.complex128 if is_complex else torch.float64


def spectrum(n: int, kind: str = "geometric", cond: float = 2.0, signs: str = "random",
             seed: int = 0) -> torch.Tensor:
    """Known eigenvalues, float64 of shape (n,), largest magnitude (1) first.

    ==============  ==========================================================================
    kind            magnitudes, i = 1 … n
    ==============  ==========================================================================
    geometric       cond^(−(i−1)/(n−1)): dlatms MODE 3
    arithmetic      1 − (i−1)/(n−1)·(1 − 1/cond): dlatms MODE 4
    clustered       1, 1/cond, …, 1/cond: dlatms MODE 1 (n − 1 eigenvalues in one cluster)
    clustered-top   1, …, 1, 1/cond: dlatms MODE 2 (all 1 but one)
    repeated        ⌈√n⌉ distinct values, geometric from 1 to 1/cond, each repeated over a
                    block of consecutive indices (sizes differing by at most one)
    ==============  ==========================================================================

    ``signs="random"`` multiplies by seeded random signs (dlatm1's IRSIGN; for ``repeated``
    one sign per distinct value, so the repeats stay exact); for n >= 2 the last eigenvalue's
    sign is flipped should all come out equal, so the spectrum is always indefinite.
    ``"positive"`` keeps them positive. n <= 1 gives [1] or [].

    Raises
    ------
    ValueError
        Unknown kind or signs; cond not a finite number >= 1; n < 0.

    Examples
    --------
    >>> spectrum(4, "geometric", cond=8.0, signs="positive").tolist()
    [1.0, 0.5, 0.25, 0.125]
    >>> spectrum(5, "repeated", cond=4.0, signs="positive").tolist()
    [1.0, 1.0, 0.5, 0.5, 0.25]
    >>> bool((spectrum(6) < 0).any() and (spectrum(6) > 0).any())
    True
    """
    n = _order(n)
    if kind not in SPECTRA:
        raise ValueError(f"spectrum must be one of {', '.join(SPECTRA)}, got {kind!r}")
    if signs not in SIGNS:
        raise ValueError(f"signs must be one of {', '.join(SIGNS)}, got {signs!r}")
    if not 1 <= cond < math.inf:
        raise ValueError(f"cond must be a finite number >= 1, got {cond}")
    t = torch.arange(n, dtype=torch.float64) / max(n - 1, 1)
    block = torch.zeros(n, dtype=torch.int64)
    if kind == "geometric":
        lam = cond ** -t
    elif kind == "arithmetic":
        lam = 1 - t * (1 - 1 / cond)
    elif kind == "clustered":
        lam = torch.full((n,), 1 / cond, dtype=torch.float64)
        lam[:1] = 1
    elif kind == "clustered-top":
        lam = torch.ones(n, dtype=torch.float64)
        lam[-1:] = 1 / cond if n > 1 else 1
    else:
        d = max(1, math.ceil(math.sqrt(n)))
        block = torch.arange(n) * d // max(n, 1)                 # 0 … d−1, consecutive blocks
        lam = cond ** -(block.to(torch.float64) / max(d - 1, 1))
    if signs == "random" and n:
        s = np.where(np.random.default_rng([seed, 1]).random(n) < 0.5, -1.0, 1.0)
        idx = block if kind == "repeated" else torch.arange(n)
        s = torch.from_numpy(s)[idx]
        if n >= 2 and bool((s == s[0]).all()):
            s[idx == idx[-1]] = -s[0]
        lam = lam * s
    return lam


_spectrum = spectrum   # for the functions whose ``spectrum`` argument hides it


def _q_diag_qh(lam: torch.Tensor, batch, is_complex: bool, seed: int) -> torch.Tensor:
    """Q·diag(λ)·Qᴴ with Haar Q (*batch, n, n), float64 / complex128 on the CPU."""
    n, c = lam.shape[-1], _cdtype(is_complex)
    if n == 0:
        return torch.zeros(*batch, 0, 0, dtype=c)
    Q = _haar(batch, n, c, torch.Generator().manual_seed(seed))
    return (Q * lam.to(c)) @ Q.mH


def hermitian(n: int, *, batch=(), spectrum: str = "geometric", cond: float = 2.0,
              signs: str = "random", dtype="float64", device="cpu", seed: int = 0) -> torch.Tensor:
    """Random Hermitian A = Q·diag(λ)·Qᴴ with known eigenvalues λ, shape ``(*batch, n, n)``.

    Q is Haar-distributed (as in :func:`~cusolver_trace.matrices.spd`); λ is
    :func:`spectrum` ``(n, spectrum, cond, signs, seed)`` (indefinite by default), so
    ‖A‖₂ = 1 and κ₂(A) = cond. Built in float64 / complex128 on the CPU, made exactly
    Hermitian, then cast and moved; every matrix of the batch has the same λ.

    Parameters
    ----------
    n : int >= 0
    batch : int or tuple of int
    spectrum : one of :data:`SPECTRA`
    cond : float >= 1
    signs : "random" or "positive"
    dtype : float32, float64, complex64 or complex128
    device : str or torch.device
    seed : int

    Raises
    ------
    ValueError
        What :func:`spectrum` raises; a batch dimension < 0; a device other than cpu / cuda.
    TypeError
        Unsupported dtype; n or batch not ints.

    Examples
    --------
    >>> A = hermitian(4, batch=2, cond=8.0, signs="positive", seed=1)
    >>> A.shape, bool(torch.equal(A, A.mT))
    (torch.Size([2, 4, 4]), True)
    >>> torch.linalg.eigvalsh(A[0]).round(decimals=12).tolist()
    [0.125, 0.25, 0.5, 1.0]
    """
    return hermitian_with_spectrum(n, batch=batch, spectrum=spectrum, cond=cond, signs=signs,
                                   dtype=dtype, device=device, seed=seed).A


def hermitian_with_spectrum(n: int, *, batch=(), spectrum: str = "geometric",
                            cond: float = 2.0, signs: str = "random", dtype="float64",
                            device="cpu", seed: int = 0) -> TestMatrix:
    """:func:`hermitian` with its eigenvalues: a :class:`~cusolver_trace.matrices.TestMatrix`
    whose ``eigenvalues`` are λ ascending, float64, shape (*batch, n) on the CPU (exact for
    the float64 matrix before rounding; the rounded matrix's differ by about eps·‖A‖).

    Parameters and errors are those of :func:`hermitian`.

    Examples
    --------
    >>> tm = hermitian_with_spectrum(3, spectrum="clustered", cond=10.0, seed=2)
    >>> tm.eigenvalues.tolist(), tm.cond
    ([-0.1, 0.1, 1.0], 10.0)
    """
    n, dims, dev, info = _order(n), _batch(batch), _device(device), dtype_info(dtype)
    lam = _spectrum(n, spectrum, cond, signs, seed)
    A = _finish(_q_diag_qh(lam, dims, info.is_complex, seed), dtype, dev)
    ev = torch.sort(lam).values.expand(*dims, n).clone()
    desc = (f"random Hermitian (Haar Q, {spectrum} λ, {signs} signs), cond={cond:.3g}")
    return TestMatrix(A, 0, desc, cond, f"spectrum:{spectrum}", eigenvalues=ev)


def _band(A: torch.Tensor, b: int) -> torch.Tensor:
    """A Hermitian matrix of half-bandwidth b similar to A (Householder QR of each b-column
    panel below the band, applied from both sides: sy2sb's first stage), entries outside the
    band then set to zero (they are rounding noise) and the result made Hermitian."""
    A = A.clone()
    n = A.shape[-1]
    for j in range(0, max(n - b - 1, 0), b) if b else ():
        Q = torch.linalg.qr(A[..., j + b:, j:j + b], mode="complete").Q
        A[..., j + b:, :] = Q.mH @ A[..., j + b:, :]
        A[..., :, j + b:] = A[..., :, j + b:] @ Q
    i = torch.arange(n)
    A = torch.where((i[:, None] - i[None, :]).abs() <= b, A, 0)
    return (A + A.mH) / 2


def lapack_eig_test_matrix(kind: str, n: int, *, dtype="float64", device="cpu", seed: int = 0,
                           batch=()) -> TestMatrix:
    """One of LAPACK's symmetric / Hermitian eigenproblem test matrices (``ddrvst`` /
    ``zdrvst``; the same table in ``dchkst``), :data:`LAPACK_SY_TYPES`.

    ===============  =====  ====================================================================
    kind             JTYPE  matrix (ddrvst's KTYPE, KMODE, KMAGN)
    ===============  =====  ====================================================================
    zero             1      the zero matrix
    identity         2      the identity
    diag-arithmetic  3      diag(λ), λ arithmetic 1 … ulp (MODE 4), random signs
    diag-geometric   4      diag(λ), geometric 1 … ulp (MODE 3)
    diag-clustered   5      diag(λ), clustered 1, ulp, …, ulp (MODE 1)
    diag-large       6      type 3 scaled to ‖A‖₂ = √overflow · ulp / n
    diag-small       7      type 3 scaled to ‖A‖₂ = √underflow · n / ulp
    arithmetic       8      Q·diag(λ)·Qᴴ, Haar Q, λ as type 3
    geometric        9      Q·diag(λ)·Qᴴ, λ as type 4
    clustered        10     Q·diag(λ)·Qᴴ, λ as type 5
    large            11     type 8 scaled as type 6
    small            12     type 8 scaled as type 7
    random           13     random entries uniform in (−1, 1) (complex: real and imaginary
                            parts), Hermitian, scaled to max abs(aᵢⱼ) = 1 (dlatmr)
    random-large     14     type 13 scaled to max abs(aᵢⱼ) = √overflow · ulp / n
    random-small     15     type 13 scaled to max abs(aᵢⱼ) = √underflow · n / ulp
    band             16     half-bandwidth b drawn in 0 … n−1, λ as type 3 (dense storage)
    band-large       17     type 16 scaled as type 6
    band-small       18     type 16 scaled as type 7
    ===============  =====  ====================================================================

    cond = 1/ulp with ulp = ``?lamch('Precision')`` = 2·eps of the dtype (2**-52 / 2**-23);
    overflow and underflow are those of ``dtype`` (ddrvst's RTOVFL, RTUNFL). ddrvst's comment
    calls types 6–7 "same as (4)", but its KMODE table gives them MODE 4 (arithmetic, type 3):
    the table is followed. Random signs are seeded (``seed``), as are Q, the entries of types
    13–15 and the bandwidth of types 16–18 (one per call, shared by the batch; the band is
    made by Householder reductions of Q·diag(λ)·Qᴴ, LAPACK's dlatms uses Givens rotations).

    Returns
    -------
    TestMatrix
        ``eigenvalues`` ascending, float64, ``(*batch, n)``, for every type but 13–15 (None:
        not known in advance); ``cond`` the ratio max abs(λ) / min abs(λ) built in (None for 13–15,
        inf for the zero matrix); ``expected_info`` 0.

    Raises
    ------
    ValueError
        Unknown kind; n or a batch dimension < 0; a device other than cpu / cuda.
    TypeError
        Unsupported dtype; n or batch not ints.

    Examples
    --------
    >>> tm = lapack_eig_test_matrix("clustered", 4, seed=1)
    >>> tm.description
    'LAPACK SY eigen type 10 (clustered), n=4, cond=4.5e+15'
    >>> lapack_eig_test_matrix("identity", 3, dtype="complex64").A.diagonal().tolist()
    [(1+0j), (1+0j), (1+0j)]
    """
    if kind not in LAPACK_SY_TYPES:
        raise ValueError(f"unknown LAPACK SY eigen test type {kind!r} for hermitian matrices; "
                         f"choose from {', '.join(LAPACK_SY_TYPES)}")
    n, dims, dev, info = _order(n), _batch(batch), _device(device), dtype_info(dtype)
    jtype = LAPACK_SY_TYPES.index(kind) + 1
    c = _cdtype(info.is_complex)
    fin = np.finfo(info.real_name)
    ulp = 2 * info.lapack_eps
    cond = 1 / ulp
    magn = kind.rsplit("-", 1)[-1] if kind.endswith(("-large", "-small")) else kind
    anorm = {"large": math.sqrt(float(fin.max)) * ulp / max(n, 1),
             "small": math.sqrt(float(fin.tiny)) * max(n, 1) / ulp}.get(magn, 1.0)
    base = kind.split("-")[0] if kind.startswith(("diag", "random", "band")) else kind
    mode = {"diag-geometric": "geometric", "geometric": "geometric",
            "diag-clustered": "clustered", "clustered": "clustered"}.get(kind, "arithmetic")
    lam = spectrum(n, mode, cond, "random", seed) * anorm
    ev, desc_extra = lam, ""
    if kind == "zero":
        A, ev, cond = torch.zeros(*dims, n, n, dtype=c), torch.zeros(n, dtype=torch.float64), \
            math.inf
    elif kind == "identity":
        A, ev, cond = torch.eye(n, dtype=c).expand(*dims, n, n), \
            torch.ones(n, dtype=torch.float64), 1.0
    elif base == "diag":
        A = torch.diag_embed(lam.to(c)).expand(*dims, n, n)
    elif base == "random":
        g = torch.Generator().manual_seed(seed)
        X = torch.rand(*dims, n, n, dtype=torch.float64, generator=g) * 2 - 1
        if info.is_complex:
            X = torch.complex(X, torch.rand(*dims, n, n, dtype=torch.float64, generator=g) * 2 - 1)
        X = X.tril(-1) + X.tril(-1).mH + torch.diag_embed(X.real.diagonal(dim1=-2, dim2=-1)).to(c)
        if n:
            X = X * (anorm / X.abs().flatten(-2).amax(-1).clamp_min(1e-300))[..., None, None]
        A, ev, cond = X, None, None
    elif base == "band":
        b = int((n - 1) * np.random.default_rng([seed, 2]).random()) if n > 1 else 0
        A = _q_diag_qh(lam, dims, info.is_complex, seed) if b else \
            torch.diag_embed(lam.to(c)).expand(*dims, n, n)
        A = _band(A, b)
        desc_extra = f", half-bandwidth {b}"
    else:
        A = _q_diag_qh(lam, dims, info.is_complex, seed)
    if ev is not None:
        ev = torch.sort(ev).values.expand(*dims, n).clone()
    desc = f"LAPACK SY eigen type {jtype} ({kind}), n={n}" + (
        f", cond={cond:.3g}" if cond is not None and math.isfinite(cond) else "") + desc_extra
    if anorm != 1.0:
        desc += f", scaled to norm {anorm:.3g}"
    return TestMatrix(_finish(A, dtype, dev), 0, desc, cond, f"lapack:{kind}", eigenvalues=ev)


def graded(n: int, *, batch=(), decades: float = 8.0, dtype="float64", device="cpu",
           seed: int = 0) -> torch.Tensor:
    """A graded Hermitian matrix D·H·D, D = diag(10^(−decades·i/(n−1))), i = 0 … n−1.

    H is :func:`hermitian` with cond 2 (well-conditioned, indefinite): the entries decay
    from 1 to about 10^(−2·decades) along the diagonal. The classic graded eigenproblem:
    its small eigenvalues are determined to high relative accuracy by the data (Jacobi
    solvers find them, tridiagonal-reduction ones in general only to ‖A‖·eps).

    Raises
    ------
    ValueError
        decades not a finite number >= 0; what :func:`hermitian` raises.

    Examples
    --------
    >>> A = graded(5, decades=4)
    >>> bool(torch.equal(A, A.mT)), float(A[4, 4].abs() / A[0, 0].abs()) < 1e-6
    (True, True)
    """
    if not 0 <= decades < math.inf:
        raise ValueError(f"decades must be a finite number >= 0, got {decades}")
    n, dims, dev = _order(n), _batch(batch), _device(device)
    info = dtype_info(dtype)
    H = _q_diag_qh(spectrum(n, "geometric", 2.0, "random", seed), dims, info.is_complex, seed)
    d = 10.0 ** (-decades * torch.arange(n, dtype=torch.float64) / max(n - 1, 1))
    return _finish(d[:, None] * H * d[None, :], dtype, dev)


DIGITS_FEATURES = 64


def digits_covariance(*, dtype="float64", device="cpu") -> torch.Tensor:
    """The 64 × 64 sample covariance of scikit-learn's bundled digits data.

    ``numpy.cov`` of the 1797 8×8 digit images (features = pixels, values 0–16, divisor
    1796), computed in float64, made exactly symmetric, then cast and moved. Positive
    semidefinite and singular: some border pixels are zero in every image, so their rows and
    columns are zero (a realistic PCA input with exactly zero eigenvalues).

    Raises
    ------
    ImportError
        scikit-learn is not installed.

    Examples
    --------
    >>> C = digits_covariance()                                     # doctest: +SKIP
    >>> C.shape, bool(torch.equal(C, C.mT))                          # doctest: +SKIP
    (torch.Size([64, 64]), True)
    """
    try:
        from sklearn.datasets import load_digits
    except ImportError as e:
        raise ImportError("the digits covariance needs scikit-learn: "
                          "pip install 'cusolver-trace[data]'") from e
    X = load_digits().data.astype(np.float64)
    C = torch.from_numpy(np.cov(X, rowvar=False))
    return _finish(C, dtype, _device(device))


# --------------------------------------------------------------------------- --matrix SPEC
def _parse_spectrum(arg: str, bad) -> dict:
    """``KIND[,cond=C][,signs=S]`` of ``--matrix spectrum:…`` → params (``bad(why)`` makes the
    parser's ValueError)."""
    from ._matrix_base import plain_float

    kind, *items = arg.split(",") if arg else ("",)
    if kind not in SPECTRA:
        raise bad(f"spectrum: needs a kind, one of {', '.join(SPECTRA)}; got {kind!r}")
    params: dict = {"spectrum": kind}
    for item in items:
        key, eq, val = item.partition("=")
        if key not in ("cond", "signs") or not eq or not val:
            raise bad(f"unknown or malformed option {item!r} (options: cond, signs)")
        if key in params:
            raise bad(f"option {key!r} given twice")
        if key == "signs":
            if val not in SIGNS:
                raise bad(f"signs must be one of {', '.join(SIGNS)}")
            params[key] = val
            continue
        try:
            params[key] = plain_float(val)
        except ValueError:
            raise bad(f"{key}={val!r} is not a number") from None
        if not 1 <= params[key] < math.inf:
            raise bad("need a finite cond >= 1")
    return params


def _describe_hermitian(spec) -> str:
    p = spec.params
    if spec.kind in ("random", "spectrum"):
        kind = p.get("spectrum", p.get("mode", "geometric"))
        return (f"random Hermitian (Haar Q, {kind} λ, {p.get('signs', 'random')} signs), "
                f"cond={p.get('cond', 2.0):.3g}")
    if spec.kind == "lapack":
        return f"LAPACK SY eigen test type {p['type']}"
    if spec.kind == "graded":
        return f"graded Hermitian D·H·D, D from 1 to 1e-{p.get('decades', 8.0):g}"
    return "sample covariance of sklearn digits (64x64, positive semidefinite, singular)"


def _unfit_hermitian(spec) -> str | None:
    if spec.kind == "singular":
        return ("makes a general matrix with a zero column, not a Hermitian one (the input of "
                "the eigensolvers); singular Hermitian ones are lapack:zero and digits")
    if spec.kind == "lapack" and spec.params["type"] not in LAPACK_SY_TYPES:
        return ("is not one of LAPACK's SY eigen test types, those for hermitian matrices: "
                + ", ".join(LAPACK_SY_TYPES))
    if spec.kind == "digits" and spec.params:
        return ("takes no options for hermitian matrices (it is the 64x64 covariance; gamma and "
                "jitter are for the RBF kernel of hpd matrices)")
    return None


def _make_hermitian(spec, n, batch, dtype, device, seed) -> TestMatrix:
    """:meth:`MatrixSpec.make` for ``structure="hermitian"`` (but classic3 and file)."""
    import dataclasses

    p, desc = spec.params, _describe_hermitian(spec)
    if spec.kind in ("random", "spectrum"):
        kind = p.get("spectrum", p.get("mode", "geometric"))
        tm = hermitian_with_spectrum(n, batch=batch, spectrum=kind, cond=p.get("cond", 2.0),
                                     signs=p.get("signs", "random"), dtype=dtype, device=device,
                                     seed=seed)
        return dataclasses.replace(tm, description=desc, kind=spec.text)
    if spec.kind == "lapack":
        tm = lapack_eig_test_matrix(p["type"], n, dtype=dtype, seed=seed, batch=batch,
                                    device=device)
        return dataclasses.replace(tm, kind=spec.text)
    if spec.kind == "graded":
        A = graded(n, batch=batch, decades=p.get("decades", 8.0), dtype=dtype, device=device,
                   seed=seed)
        return TestMatrix(A, 0, desc, None, spec.text)
    if n is not None and n != DIGITS_FEATURES:
        raise ValueError(f"--matrix {spec.text} is {DIGITS_FEATURES}x{DIGITS_FEATURES} for "
                         f"hermitian matrices (the covariance); got n={n}")
    A = digits_covariance(dtype=dtype, device=device)
    if batch:
        A = A.expand(*batch, *A.shape).clone()
        desc += f", the same matrix repeated over batch {'x'.join(map(str, batch))}"
    return TestMatrix(A, 0, desc, None, spec.text)
