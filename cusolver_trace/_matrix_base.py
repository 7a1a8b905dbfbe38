"""What the matrix generators share: :class:`TestMatrix`, argument checks, Haar matrices,
dlatms-style spectra, and the parser of numbers typed on the command line.

Used through :mod:`cusolver_trace.matrices`, which re-exports the public names.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import torch

from ._dtypes import dtype_info
from ._matrix_files import _rounds_to

MODES = ("geometric", "arithmetic")
"""Eigenvalue distributions: dlatms MODE 3 (σᵢ = cond^(−(i−1)/(n−1))) and MODE 4
(σᵢ = 1 − (i−1)/(n−1)·(1 − 1/cond))."""


@dataclass(frozen=True)
class TestMatrix:
    """A test input with what a correct factorization must report for it.

    Attributes
    ----------
    A : torch.Tensor, (..., n, n)
    expected_info : int or None
        The ``info`` of every matrix of the batch: for potrf (Hermitian positive
        definite inputs) 0 = positive definite, k > 0 = the leading minor of order k
        is not; for getrf (general inputs) 0, or k > 0 = U(k, k) is exactly zero;
        None = not known in advance.
    description : str
    cond : float or None
        The 2-norm condition number the matrix was built with (None if unknown).
    kind : str
    L : torch.Tensor or None
        The exact lower Cholesky factor, when known (``classic_spd3``).
    eigenvalues : torch.Tensor or None
        The exact eigenvalues of a Hermitian input, when known (float64, shape (..., n),
        ascending; before rounding to the matrix's dtype): the generators of
        :mod:`cusolver_trace._matrices_herm`.
    """

    __test__ = False  # not a pytest test class

    A: torch.Tensor
    expected_info: int | None = 0
    description: str = ""
    cond: float | None = None
    kind: str = ""
    L: torch.Tensor | None = None
    eigenvalues: torch.Tensor | None = None


def _order(n) -> int:
    """``n`` as a matrix order: an int >= 0 (TypeError / ValueError otherwise)."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise TypeError(f"n must be an int >= 0, got {n!r}")
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    return int(n)


def _batch(batch) -> tuple[int, ...]:
    """``batch`` (an int or a tuple of ints, each >= 0) as a tuple."""
    dims = (batch,) if isinstance(batch, (int, np.integer)) and not isinstance(batch, bool) \
        else batch
    try:
        dims = tuple(dims)
    except TypeError:
        raise TypeError(f"batch must be an int or a tuple of ints, got {batch!r}") from None
    for d in dims:
        if isinstance(d, bool) or not isinstance(d, (int, np.integer)):
            raise TypeError(f"batch must be an int or a tuple of ints, got {batch!r}")
        if d < 0:
            raise ValueError(f"batch dimensions must be >= 0, got {batch!r}")
    return tuple(int(d) for d in dims)


def _device(device) -> torch.device:
    """``device`` as a torch device: cpu or cuda (ValueError), a visible GPU for cuda
    (:class:`~cusolver_trace.errors.GPUUnavailableError` otherwise)."""
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError):
        raise ValueError(f"device must be 'cpu', 'cuda' or 'cuda:N', got {device!r}") from None
    if dev.type not in ("cpu", "cuda"):
        raise ValueError(f"device must be 'cpu', 'cuda' or 'cuda:N', got {device!r}")
    if dev.type == "cuda" and not torch.cuda.is_available():
        from .errors import GPUUnavailableError

        raise GPUUnavailableError(f"device {device!r}: no CUDA GPU is visible to torch "
                                  f"{torch.__version__}")
    return dev


def _finish(A64: torch.Tensor, dtype, device) -> torch.Tensor:
    """Make exactly Hermitian (real diagonal) in 64-bit, then cast and move."""
    A64 = (A64 + A64.mH) / 2
    return A64.to(dtype_info(dtype).torch).to(device)


def _sigma(n: int, cond: float, mode: str) -> torch.Tensor:
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    if not 1 <= cond < float("inf"):
        raise ValueError(f"cond must be a finite number >= 1, got {cond}")
    t = torch.arange(n, dtype=torch.float64) / max(n - 1, 1)
    return cond ** -t if mode == "geometric" else 1 - t * (1 - 1 / cond)


def _haar(batch, n: int, cdtype, gen: torch.Generator) -> torch.Tensor:
    """Haar-distributed orthogonal / unitary (*batch, n, n): QR of a Gaussian with the
    signs (phases) of R's diagonal moved into Q."""
    Q, R = torch.linalg.qr(torch.randn(*batch, n, n, dtype=cdtype, generator=gen))
    d = R.diagonal(dim1=-2, dim2=-1)
    return Q * torch.where(d == 0, 1, d / d.abs()).unsqueeze(-2)


_PLAIN_FLOAT = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


def plain_float(text) -> float:
    """A number written plainly (digits, one point, an exponent): no spaces, underscores,
    ``inf`` / ``nan`` or hexadecimal, which Python's ``float`` would take. The one parser of
    numbers typed on the command line (``--cond``, ``--matrix random:cond=…``).

    Examples
    --------
    >>> plain_float("1e6"), plain_float("-2.5"), plain_float(".5")
    (1000000.0, -2.5, 0.5)
    >>> plain_float(" 1e3")
    Traceback (most recent call last):
    ...
    ValueError: expected a number written plainly (digits, '.', an exponent), got ' 1e3'
    """
    if not isinstance(text, str) or not _PLAIN_FLOAT.fullmatch(text):
        raise ValueError(f"expected a number written plainly (digits, '.', an exponent), got "
                         f"{text!r}")
    v = float(text)
    if _rounds_to(text, v) == "0":
        raise ValueError(f"{text!r} is not 0 but rounds to 0 in float64 (below 4.9e-324)")
    return v


def max_cond(dtype) -> float:
    """The largest condition number a generated SPD matrix of ``dtype`` may ask for:
    ``0.5 / eps`` (NumPy's eps, one ulp at 1). From ``cond·eps >= 1/2`` on, rounding can make
    such a matrix indefinite, so it would not be the positive definite matrix it is called.

    Examples
    --------
    >>> f"{max_cond('float32'):.3g}", f"{max_cond('float64'):.3g}"
    ('4.19e+06', '2.25e+15')
    """
    return 0.5 / (2 * dtype_info(dtype).lapack_eps)


def check_cond(cond: float, dtype) -> None:
    """Raise ``ValueError`` unless ``1 <= cond <`` :func:`max_cond` for ``dtype`` (sweep's
    ``--cond`` and compare's ``--matrix random:cond=…`` alike)."""
    limit = max_cond(dtype)
    if not 1 <= cond:   # NaN too
        raise ValueError(f"cond must be a number >= 1, got {cond!r}")
    if cond >= limit:
        name = dtype_info(dtype).name
        raise ValueError(f"cond {cond:.7g} is too large for {name}: a matrix that ill-conditioned "
                         f"(cond·eps >= 0.5, eps = {0.5 / limit:.3g}) is not positive definite "
                         f"after rounding; use less than {limit:.7g}")


def _column(text) -> int:
    """A column number written plainly: digits only, >= 1."""
    if not re.fullmatch(r"[0-9]+", text) or int(text) < 1:
        raise ValueError(f"expected a whole number >= 1, got {text!r}")
    return int(text)

