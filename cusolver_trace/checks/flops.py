"""LAWN 41 flop counts."""
from __future__ import annotations

from fractions import Fraction


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
    # square getrf (m = n): FMULS n·(n·(2n/3 − 1) + n)/2 + 2n/3, FADDS n·(n·2n/3 − n)/2 + n/6
    "getrf": (lambda n, k: 2 * n**3 / 3 - n**2 / 2 + 5 * n / 6,
              lambda n, k: _c(n * (n * (2 * n / 3 - 1) + n) / 2 + 2 * n / 3,
                              n * (n * 2 * n / 3 - n) / 2 + n / 6)),
    "getrs": (lambda n, k: 2 * k * n**2 - k * n,
              lambda n, k: _c(k * n * n, k * n * (n - 1))),
    "getri": (lambda n, k: 4 * n**3 / 3 - n**2 + 5 * n / 3,
              lambda n, k: _c(n * (5 * _F6 + n * (2 * n / 3 + Fraction(1, 2))),
                              n * (5 * _F6 + n * (2 * n / 3 - Fraction(3, 2))))),
    # Hermitian eigensolvers (syevd / heevd, syevBatched, syevj), leading terms only: LAWN 41's
    # full polynomials for sytrd (FMULS n·(n·(2n/3 + 5/2) − 1/6) − 15, FADDS
    # n·(n·(2n/3 + 1) − 8/3) − 4) go negative for small n. Values only: the tridiagonal
    # reduction sytrd, 2n³/3 mults + 2n³/3 adds = 4n³/3; the tridiagonal eigenvalues (sterf) are
    # O(n²). With vectors: + the back-transformation ormtr (LAWN 41 unmqr(n, n, n): n³ mults,
    # n³ adds = 2n³) + divide and conquer on the tridiagonal (stedc), at most 4n³/3 without
    # deflation (Demmel, Applied Numerical Linear Algebra, §5.3.3; deflation makes it less),
    # 4n³/3 + 4n³/3 + 2n³ = 14n³/3. (Golub & Van Loan count 9n³ for the symmetric QR algorithm
    # with vectors, 4n³/3 without.) Complex: each mult 6, each add 2 real flops, as above.
    "syevd": (lambda n, k: 14 * n**3 / 3, lambda n, k: _c(7 * n**3 / 3, 7 * n**3 / 3)),
    "syevd_values": (lambda n, k: 4 * n**3 / 3, lambda n, k: _c(2 * n**3 / 3, 2 * n**3 / 3)),
}
FLOP_ROUTINES = (*_FLOPS, "inverse_potrs", "inverse_getrs")
NEEDS_NRHS = ("potrs", "trsm", "getrs")
"""The counts that take ``nrhs``."""


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
    inverse_getrs  2n³ − n²              8n³ − 2n²  (= getrs with nrhs = n)
    getrf          2n³/3 − n²/2 + 5n/6   8n³/3 − n² + 13n/3  (square)
    getrs          nrhs·(2n² − n)        nrhs·(8n² − 2n)
    getri          4n³/3 − n² + 5n/3     16n³/3 + 20n/3
    syevd          14n³/3                56n³/3  (values and vectors; leading terms)
    syevd_values   4n³/3                 16n³/3  (values only; leading terms)
    ============== ===================== ==========================

    ``syevd`` / ``syevd_values`` are the Hermitian eigensolvers (``?syevd`` / ``?heevd``,
    cuSOLVER ``Xsyevd``, ``syevBatched``, ``syevj``; ``torch.linalg.eigh`` / ``eigvalsh``),
    counted as tridiagonal reduction (LAWN 41 ``sytrd``, 4n³/3) plus, with vectors, the
    back-transformation (``ormtr``, 2n³) and divide and conquer without deflation (at most
    4n³/3); the lower-order terms are left out. A Jacobi solver (``syevj``) does more work
    than this; quote its rate against this count as the yardstick, as for ``potri``.

    Quote GFLOP/s with the count named; for any way of computing A⁻¹ the honest
    yardstick is the ``potri`` count (Hermitian positive definite A) or the
    ``getri`` count (general A, after getrf).

    Raises
    ------
    ValueError
        Unknown routine, negative sizes, ``nrhs`` missing for potrs/trsm/getrs, or
        given to a routine that takes none.
    """
    if routine not in FLOP_ROUTINES:
        raise ValueError(f"unknown routine {routine!r}; choose from {', '.join(FLOP_ROUTINES)}")
    if routine in ("inverse_potrs", "inverse_getrs"):
        if nrhs is not None:
            raise ValueError(f"{routine} takes no nrhs (it is {routine[8:]} with nrhs = n)")
        routine, nrhs = routine[8:], n
    elif routine in NEEDS_NRHS and nrhs is None:
        raise ValueError(f"{routine} needs nrhs")
    elif routine == "gemm":
        nrhs = n if nrhs is None else nrhs
    elif routine not in NEEDS_NRHS and nrhs is not None:
        raise ValueError(f"{routine} takes no nrhs")
    if n < 0 or (nrhs is not None and nrhs < 0):
        raise ValueError(f"sizes must be >= 0, got n={n}, nrhs={nrhs}")
    return float(_FLOPS[routine][bool(complex)](Fraction(n), Fraction(nrhs or 0)))
