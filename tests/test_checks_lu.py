"""LAPACK's LU ratios get01 / get02 / get03, lu_det_P, and the determinant check
(cusolver_trace.checks). Known answers are computed by hand; results of scipy's LAPACK and
torch are judged against the threshold with margins, never by their bits."""
import math

import numpy as np
import pytest
import scipy.linalg.lapack as lapack
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from cusolver_trace import checks as C
from cusolver_trace._dtypes import SUPPORTED_DTYPES, dtype_info
from cusolver_trace.matrices import general, general_singular

EPS = {d: dtype_info(d).lapack_eps for d in SUPPORTED_DTYPES}


def _lapack(dtype, name):
    return getattr(lapack, dtype_info(dtype).prefix + name)


def _getrf(A: torch.Tensor):
    """scipy's ?getrf per matrix: (LU, 1-based int32 pivots, info), batched as A."""
    f = _lapack(A.dtype, "getrf")
    flat = A.reshape(-1, *A.shape[-2:]).numpy()
    out = [f(a) for a in flat]
    LU = torch.from_numpy(np.stack([o[0] for o in out])).reshape(A.shape)
    piv = torch.from_numpy(np.stack([o[1] for o in out]).astype(np.int32) + 1)
    return LU, piv.reshape(*A.shape[:-2], -1), [o[2] for o in out]


def _perm_rows(X: torch.Tensor, piv) -> torch.Tensor:
    """P·X: getrf's interchanges undone (applied in reverse), as dlaswp with INCX = -1."""
    X = X.clone()
    for i in reversed(range(len(piv))):
        j = int(piv[i]) - 1
        X[[i, j]] = X[[j, i]]
    return X


# an exact LU in binary: L, U of small dyadic numbers, pivots that swap
L3 = torch.tensor([[1.0, 0, 0], [0.5, 1, 0], [-0.25, 0.5, 1]])
U3 = torch.tensor([[4.0, 2, -1], [0, 2, 1], [0, 0, -0.5]])
PIV3 = torch.tensor([3, 3, 3], dtype=torch.int32)


def _exact3(dtype):
    t = dtype_info(dtype).torch
    LU = (L3.tril(-1) + U3).to(t)
    return _perm_rows(L3 @ U3, PIV3).to(t), LU, PIV3


# --------------------------------------------------------------------------- get01
@pytest.mark.parametrize("dtype", SUPPORTED_DTYPES)
def test_get01_exact_lu_is_zero_and_a_forgotten_permutation_is_not(dtype):
    A, LU, piv = _exact3(dtype)
    assert C.get01(A, LU, piv) == 0.0
    assert C.get01(A.numpy(), LU.numpy(), piv.numpy()) == 0.0           # numpy in
    assert C.get01(A, LU, piv.to(torch.int64)) == 0.0                    # any integer dtype
    assert C.get01(A, LU, torch.tensor([1, 2, 3], dtype=torch.int32)) > 1e3 * C.THRESHOLD
    assert C.get01(A, LU, torch.tensor([3, 2, 3], dtype=torch.int32)) > 1e3 * C.THRESHOLD


@pytest.mark.parametrize("dtype", SUPPORTED_DTYPES)
def test_get01_scaling_by_hand(dtype):
    """A = [[2, 1], [4, 3]]: rows swapped, L = [[1, 0], [1/2, 1]], U = [[4, 3], [0, -1/2]].
    Adding δ to U(1, 2) leaves the residual (δ, δ/2) in column 2: ‖R‖₁ = 3δ/2, ‖A‖₁ = 6,
    n = 2, so dget01's ratio is (3δ/2) / (2 · 6 · eps) = δ / (8 eps), exactly."""
    t = dtype_info(dtype).torch
    A = torch.tensor([[2.0, 1.0], [4.0, 3.0]], dtype=t)
    LU = torch.tensor([[4.0, 3.0], [0.5, -0.5]], dtype=t)
    piv = torch.tensor([2, 2], dtype=torch.int32)
    assert C.get01(A, LU, piv) == 0.0
    delta = 2.0**-10
    LU[0, 1] += delta
    assert C.get01(A, LU, piv) == delta / (8 * EPS[dtype])


def test_get01_follows_lapack_at_the_edges():
    Z = torch.zeros(3, 3)
    ident = torch.tensor([1, 2, 3], dtype=torch.int32)
    assert C.get01(Z, Z, ident) == 0.0                    # ‖A‖₁ = 0, residual 0: 0
    assert C.get01(Z, torch.eye(3), ident) == 1 / EPS["float32"]   # residual != 0: 1/eps
    assert C.get01(torch.zeros(0, 0), torch.zeros(0, 0), torch.zeros(0, dtype=torch.int32)) == 0
    assert C.get01(torch.zeros(2, 0, 3), torch.zeros(2, 0, 3),
                   torch.zeros(2, 0, dtype=torch.int32)).per_matrix.shape == (2,)
    A, LU, _ = _exact3("float64")
    for bad in ([0, 3, 3], [4, 3, 3], [3, -1, 3]):        # no permutation is defined
        assert C.get01(A, LU, torch.tensor(bad)) == math.inf
    with pytest.raises(TypeError):
        C.get01(A, LU, torch.tensor([3.0, 3.0, 3.0]))
    with pytest.raises(ValueError):
        C.get01(A, LU, PIV3[:2])
    with pytest.raises(ValueError):
        C.get01(A, LU[:2], PIV3)
    with pytest.raises(TypeError):
        C.get01(A, LU.float(), PIV3)


@pytest.mark.parametrize("m, n", [(7, 4), (4, 7), (1, 5), (5, 1)])
def test_get01_rectangular(m, n):
    A = torch.from_numpy(np.random.default_rng(m * 10 + n).standard_normal((2, m, n)))
    LU, piv, info = _getrf(A)
    assert info == [0, 0] and piv.shape == (2, min(m, n))
    r = C.get01(A, LU, piv)
    assert r.per_matrix.shape == (2,) and r < C.THRESHOLD
    LU[1, -1, -1] += 1e-6
    assert C.get01(A, LU, piv).per_matrix[1] > 1e3 * C.THRESHOLD


def test_get01_batches_broadcast_and_name_the_bad_matrix():
    A = general(6, batch=(2, 3), seed=4)
    LU, piv = torch.linalg.lu_factor(A)
    LU[1, 0, 2, 4] *= 1 + 1e-9
    r = C.get01(A, LU, piv)
    assert r.per_matrix.shape == (2, 3)
    assert np.unravel_index(r.per_matrix.argmax(), (2, 3)) == (1, 0) and r > 100 * C.THRESHOLD
    # one A against a batch of factors of it
    LU1, piv1 = torch.linalg.lu_factor(A[0, 0])
    assert C.get01(A[0, 0], LU1.expand(4, 6, 6), piv1).per_matrix.shape == (4,)


# --------------------------------------------------------------------------- get02
@pytest.mark.parametrize("dtype", SUPPORTED_DTYPES)
def test_get02_scaling_by_hand_and_the_norm_of_op_a(dtype):
    """A = [[2, 1], [0, 4]]: ‖A‖₁ = 5 (trans N), ‖A‖∞ = 4 (trans T / C, LAPACK's
    dlange('I')); x = (1, 1), ‖x‖₁ = 2; a residual δ·e₁ gives δ / (‖op(A)‖₁ · 2 · eps)."""
    t = dtype_info(dtype).torch
    A = torch.tensor([[2.0, 1.0], [0.0, 4.0]], dtype=t)
    X = torch.ones(2, 1, dtype=t)
    e1 = torch.tensor([[1.0], [0.0]], dtype=t)
    delta, rel = 2.0**-12, 4 * EPS[dtype]   # ‖r‖₁/‖A‖₁ is divided in working precision
    assert C.get02(A, X, A @ X) == 0.0 and C.get02(A, X, A.mH @ X, adjoint=True) == 0.0
    assert C.get02(A, X, A @ X + delta * e1) == pytest.approx(delta / (5 * 2 * EPS[dtype]), rel=rel)
    assert C.get02(A, X, A.mH @ X + delta * e1, adjoint=True) == pytest.approx(
        delta / (4 * 2 * EPS[dtype]), rel=rel)


def test_get02_complex_norms_are_dzasum_and_adjoint_conjugates():
    A = torch.tensor([[2 + 1j, 1], [0, 4 - 2j]], dtype=torch.complex128)
    X = torch.tensor([[1 + 1j], [0]], dtype=torch.complex128)
    B = A @ X
    delta = 2.0**-20
    # ‖x‖₁ as zget02 takes it: |Re| + |Im| = 2 (not √2); ‖A‖₁ = max column of |aᵢⱼ|
    anorm = max(abs(2 + 1j), 1 + abs(4 - 2j))
    assert C.get02(A, X, B + delta) == pytest.approx(delta * 2 / (anorm * 2 * EPS["complex128"]))
    assert C.get02(A, X, A.mH @ X, adjoint=True) == 0.0
    assert C.get02(A, X, A.mT @ X, adjoint=True) > 1e3 * C.THRESHOLD   # transpose is not C


def test_get02_edges_shapes_and_left_false():
    A = general(5, seed=1)
    B = torch.randn(5, 3, dtype=A.dtype, generator=torch.Generator().manual_seed(0))
    X = torch.linalg.solve(A, B)
    assert C.get02(A, X, B) < C.THRESHOLD
    X0 = X.clone()
    X0[:, 1] = 0
    assert C.get02(A, X0, B) == 1 / EPS["float64"]              # a zero column of X: 1/eps
    assert C.get02(torch.zeros_like(A), X, B) == 1 / EPS["float64"]   # ‖A‖₁ = 0: 1/eps
    assert C.get02(A, X[:, :0], B[:, :0]) == 0.0
    # left=False, X·A = B, is judged as Aᴴ·Xᴴ = Bᴴ
    Bl = B.mT
    Xl = torch.linalg.solve(A, Bl, left=False)
    assert C.get02(A, Xl.mH, Bl.mH, adjoint=True) < C.THRESHOLD
    # rectangular A (m x n): X is n x nrhs, B is m x nrhs; adjoint swaps them
    R = torch.randn(4, 6, dtype=torch.float64)
    Y = torch.randn(6, 2, dtype=torch.float64)
    assert C.get02(R, Y, R @ Y) < 1 and C.get02(R, Y[:4], R.mT @ Y[:4], adjoint=True) < 1
    with pytest.raises(ValueError):
        C.get02(R, Y, R @ Y, adjoint=True)
    with pytest.raises(TypeError):
        C.get02(A, X.float(), B)


# --------------------------------------------------------------------------- get03
@pytest.mark.parametrize("dtype", SUPPORTED_DTYPES)
def test_get03_by_hand(dtype):
    """A = diag(2, 4), A⁻¹ exact → 0. δ added to A⁻¹(1, 1): I − A⁻¹·A has −2δ there,
    ‖A‖₁ = 4, ‖A⁻¹‖₁ = 1/2 + δ: ratio 2δ / (2 · 4 · (1/2 + δ) · eps)."""
    t = dtype_info(dtype).torch
    A = torch.diag(torch.tensor([2.0, 4.0])).to(t)
    Ainv = torch.diag(torch.tensor([0.5, 0.25])).to(t)
    assert C.get03(A, Ainv) == 0.0
    delta = 2.0**-12
    Ainv[0, 0] += delta
    assert C.get03(A, Ainv) == pytest.approx(2 * delta / (8 * (0.5 + delta) * EPS[dtype]), rel=1e-12)
    assert C.get03(torch.zeros_like(A), Ainv) == 1 / EPS[dtype]
    assert C.get03(A, torch.zeros_like(A)) == 1 / EPS[dtype]
    assert C.get03(A[:0, :0], A[:0, :0]) == 0.0


def test_get03_multiplies_ainv_by_a():
    """dget03 forms I − AINV·A. A left inverse that is not a right inverse is exact for it."""
    A = torch.tensor([[1.0, 1e-3], [0.0, 1.0]], dtype=torch.float64)
    Ainv = torch.linalg.inv(A)
    assert C.get03(A, Ainv) < 1


# --------------------------------------------------------------------------- scipy's LAPACK
@pytest.mark.parametrize("dtype", SUPPORTED_DTYPES)
def test_scipy_lu_results_pass_and_wrong_ones_fail(dtype):
    A = general(40, batch=3, cond=1e3, dtype=dtype, seed=2)
    LU, piv, info = _getrf(A)
    assert info == [0, 0, 0]
    B = torch.from_numpy(np.random.default_rng(1).standard_normal((3, 40, 2))).to(A.dtype)
    getrs, getri = _lapack(dtype, "getrs"), _lapack(dtype, "getri")
    trans = 2 if A.is_complex() else 1
    X = torch.from_numpy(np.stack([getrs(lu, p - 1, b)[0]
                                   for lu, p, b in zip(LU.numpy(), piv.numpy(), B.numpy())]))
    XH = torch.from_numpy(np.stack([getrs(lu, p - 1, b, trans=trans)[0]
                                    for lu, p, b in zip(LU.numpy(), piv.numpy(), B.numpy())]))
    Ainv = torch.from_numpy(np.stack([getri(lu, p - 1)[0] for lu, p in zip(LU.numpy(), piv.numpy())]))
    ratios = [C.get01(A, LU, piv), C.get02(A, X, B), C.get02(A, XH, B, adjoint=True),
              C.get03(A, Ainv)]
    for r in ratios:
        assert r.per_matrix.shape == (3,) and 0 <= r < C.THRESHOLD / 3
    assert C.get02(A, XH, B) > 100 * C.THRESHOLD          # the adjoint's solution for N
    swapped = piv.clone()
    k = int(torch.nonzero(piv[0] != torch.arange(1, 41, dtype=torch.int32))[0])
    swapped[0, k] = k + 1                                 # one interchange forgotten
    assert C.get01(A, LU, swapped).per_matrix[0] > 100 * C.THRESHOLD
    # det = det(P)·Π uᵢᵢ, on matrices whose det float32 holds (40 x 40, cond 1e3 underflows)
    A = general(12, batch=3, cond=10, dtype=dtype, seed=2)
    LU, piv, _ = _getrf(A)
    d = torch.from_numpy(np.array([np.prod(np.diag(lu)) for lu in LU.numpy()])).to(A.dtype)
    d = d * C.lu_det_P(piv).to(A.dtype)
    ref = C.det_reference(A)
    assert C.det_ratio(A, d, reference=ref) < C.THRESHOLD / 3
    assert C.det_ratio(A, -d, reference=ref).per_matrix.min() > 100 * C.THRESHOLD
    swapped = piv.clone()
    k = int(torch.nonzero(piv[0] != torch.arange(1, 13, dtype=torch.int32))[0])
    swapped[0, k] = k + 1                                 # one interchange forgotten: det's sign
    assert C.det_ratio(A, d * C.lu_det_P(swapped).to(A.dtype) * C.lu_det_P(piv).to(A.dtype),
                       reference=ref).per_matrix[0] > 100 * C.THRESHOLD


# --------------------------------------------------------------------------- lu_det_P
def test_lu_det_P_is_torchs():
    # one interchange per pivots[i] != i + 1: [2, 1, 3] swaps rows 1, 2 and back (+1)
    p = torch.tensor([[1, 2, 3], [2, 2, 3], [3, 3, 3], [2, 1, 3], [3, 2, 3]], dtype=torch.int32)
    s = C.lu_det_P(p)
    assert s.dtype == torch.int64 and s.tolist() == [1, -1, 1, 1, -1]
    assert C.lu_det_P(torch.zeros(2, 0, dtype=torch.int32)).tolist() == [1, 1]
    # the det torch computes, rebuilt from its own LU with lu_det_P, bit for bit (same process):
    # real contiguous A is factored as A.mH, complex A as it is
    for dtype in SUPPORTED_DTYPES:
        A = general(9, batch=4, cond=10, dtype=dtype, seed=3)
        LU, piv = torch.linalg.lu_factor(A if A.is_complex() else A.mH)
        mine = C.lu_det_P(piv) * LU.diagonal(dim1=-2, dim2=-1).prod(-1)
        assert C.bitwise_equal(mine, torch.linalg.det(A))


# --------------------------------------------------------------------------- det_ratio
@pytest.mark.parametrize("dtype", SUPPORTED_DTYPES)
def test_det_ratio_exact_known_answers(dtype):
    t = dtype_info(dtype).torch
    D = torch.diag(torch.tensor([2.0, -4.0, 0.5])).to(t)       # det −4, exactly
    P = torch.eye(3, dtype=t)[[2, 0, 1]]                        # an even permutation: det 1
    for A, det in [(D, -4.0), (P, 1.0), (D @ P, -4.0)]:
        assert C.det_ratio(A, torch.tensor(det, dtype=t)) == 0.0
        assert C.det_ratio(A, torch.tensor(-det, dtype=t)) > 1e3 * C.THRESHOLD
        assert C.det_ratio(A, torch.tensor(2 * det, dtype=t)) > 1e3 * C.THRESHOLD
        s, l = torch.linalg.slogdet(A)
        assert C.slogdet_ratio(A, s, l) < 1
        assert C.slogdet_ratio(A, -s, l) > 1e3 * C.THRESHOLD
    E = torch.zeros(0, 0, dtype=t)                              # det of 0 x 0 is 1
    assert C.det_ratio(E, torch.tensor(1.0, dtype=t)) == 0.0
    assert C.det_ratio(E, torch.tensor(0.0, dtype=t)) == 1 / EPS[dtype]
    Z = torch.zeros(2, 2, dtype=t)                              # A = 0: det 0 or 1/eps
    assert C.det_ratio(Z, torch.tensor(0.0, dtype=t)) == 0.0
    assert C.det_ratio(Z, torch.tensor(1e-30, dtype=t)) == 1 / EPS[dtype]


@pytest.mark.parametrize("dtype", SUPPORTED_DTYPES)
def test_det_ratio_singular(dtype):
    A = general_singular(6, 3, batch=2, dtype=dtype, seed=5)
    d = torch.linalg.det(A)
    assert (d == 0).all() and C.det_ratio(A, d) == 0.0
    s, l = torch.linalg.slogdet(A)
    assert (s == 0).all() and torch.isneginf(l).all() and C.slogdet_ratio(A, s, l) == 0.0
    assert C.det_ratio(A, torch.full_like(d, 1e-3)) > 1e3 * C.THRESHOLD
    assert C.slogdet_ratio(A, torch.ones_like(s), torch.full_like(l, -5.0)) > 1e3 * C.THRESHOLD


def test_det_ratio_range_overflow_and_underflow_float32():
    big = torch.diag(torch.tensor([1e30, 1e30]))               # det 1e60: inf in float32
    assert torch.linalg.det(big) == math.inf and C.det_ratio(big, torch.linalg.det(big)) == 0.0
    assert C.det_ratio(big, torch.tensor(-math.inf)) > 1e3 * C.THRESHOLD    # wrong sign
    assert C.det_ratio(big, torch.tensor(3e38)) > 1e3 * C.THRESHOLD         # finite: wrong
    s, l = torch.linalg.slogdet(big)
    assert C.slogdet_ratio(big, s, l) < 1 and C.slogdet_ratio(big, s, l + 1e-3) > C.THRESHOLD
    small = torch.diag(torch.tensor([1e-30, 1e-30]))           # det 1e-60: 0 in float32
    assert C.det_ratio(small, torch.linalg.det(small)) == 0.0
    assert C.det_ratio(small, torch.tensor(1e-40)) == 0.0      # a subnormal: within the range rule
    assert C.det_ratio(small, torch.tensor(1e-20)) > 1e3 * C.THRESHOLD
    near = torch.diag(torch.tensor([2e19, 1e19]))               # det 2e38, just representable
    assert C.det_ratio(near, torch.linalg.det(near)) < 1
    assert C.det_ratio(near, torch.tensor(math.inf)) > C.THRESHOLD


def test_det_ratio_complex_phase():
    A = general(6, dtype="complex128", seed=8)
    d = torch.linalg.det(A)
    assert abs(d.imag) > 1e-3 * abs(d)
    assert C.det_ratio(A, d) < 1
    for wrong in (d.conj(), d * 1j, -d, d * (1 + 1e-8)):
        assert C.det_ratio(A, wrong) > 1e3 * C.THRESHOLD


def test_det_ratio_scales_with_the_condition_number():
    """The same relative error 1e-4 of a float32 det: far outside for a well-conditioned A,
    inside for one with cond 1e7 (eps·κ_det ≈ 1: the det has no correct digit there)."""
    for cond, passes in [(2.0, False), (1e7, True)]:
        A = general(8, cond=cond, dtype="float32", seed=9)
        d = torch.linalg.det(A)
        assert C.det_ratio(A, d) < 1
        assert C.passes(C.det_ratio(A, d * (1 + 1e-4))) == passes
    # a sign flip of a real det needs a perturbation of at least σₙ: 1/(eps·κ₂) = 1.7e7/cond
    A = general(8, cond=1e4, dtype="float32", seed=9)
    assert C.det_ratio(A, -torch.linalg.det(A)) >= 0.99 / (EPS["float32"] * 1e4)


@pytest.mark.parametrize("dtype", SUPPORTED_DTYPES)
@pytest.mark.parametrize("cond, scale", [(2.0, 1.0), (1e3, 1.0), (1e6, 1.0), (1e12, 1.0),
                                         (2.0, 1e-20), (2.0, 1e20)])
def test_det_and_slogdet_of_torch_pass(dtype, cond, scale):
    A = general(24, batch=2, cond=cond, dtype=dtype, seed=11)
    A = (A.to(torch.complex128 if A.is_complex() else torch.float64) * scale).to(A.dtype)
    ref = C.det_reference(A)
    d = torch.linalg.det(A)
    s, l = torch.linalg.slogdet(A)
    if torch.isfinite(d).all() or not A.is_complex():   # a complex product that overflows is NaN
        assert C.det_ratio(A, d, reference=ref) < C.THRESHOLD / 3
    assert C.slogdet_ratio(A, s, l, reference=ref) < C.THRESHOLD / 3
    if cond * EPS[dtype] < 1e-3:                        # the sign is determined by the data
        assert C.slogdet_ratio(A, -s, l, reference=ref).per_matrix.min() > 10 * C.THRESHOLD


def test_det_ratio_inputs_batches_and_errors():
    A = general(5, batch=(2, 3), seed=12)
    A0 = A.clone()
    d = torch.linalg.det(A)
    d0 = d.clone()
    d[1, 2] *= -1
    r = C.det_ratio(A, d)
    assert r.per_matrix.shape == (2, 3)
    assert np.unravel_index(r.per_matrix.argmax(), (2, 3)) == (1, 2)
    assert (np.delete(r.per_matrix.ravel(), 5) < 1).all()
    assert torch.equal(A, A0)                                          # inputs untouched
    assert C.det_ratio(A.numpy(), d0.numpy()) < 1                      # numpy in
    An = A.clone()
    An[0, 1, 2, 2] = math.nan
    assert math.isnan(C.det_ratio(An, torch.linalg.det(An)))
    assert np.isnan(C.det_ratio(An, torch.linalg.det(An)).per_matrix).sum() == 1
    assert math.isnan(C.det_ratio(A, torch.full_like(d0, math.nan)))
    with pytest.raises(ValueError, match="det must be"):
        C.det_ratio(A, d0.float())
    with pytest.raises(ValueError, match="det must be"):
        C.det_ratio(A, d0[0])
    with pytest.raises(ValueError, match="reference"):
        C.det_ratio(A, d0, reference=C.det_reference(A[0]))
    with pytest.raises(ValueError):
        C.det_ratio(A[..., :4], d0)
    with pytest.raises(ValueError, match="logabsdet must be"):
        C.slogdet_ratio(A, torch.ones_like(d0), torch.zeros(2, 3, dtype=torch.float32))


def test_read_only_arrays_views_and_conj_bits_without_warnings(recwarn):
    A = general(6, dtype="complex128", seed=13)
    LU, piv = torch.linalg.lu_factor(A)
    An, LUn, pn = (t.numpy().copy() for t in (A, LU, piv))
    for a in (An, LUn, pn):
        a.setflags(write=False)
    r = C.get01(An, LUn, pn)
    assert r == C.get01(A, LU, piv) and r < C.THRESHOLD
    assert C.lu_det_P(pn) == C.lu_det_P(piv)
    Ac = A.conj()                                   # a lazy conj view of Ā
    LUc, pc = torch.linalg.lu_factor(Ac.resolve_conj())
    assert C.get01(Ac, LUc, pc) < C.THRESHOLD
    assert C.det_ratio(Ac, torch.linalg.det(Ac)) < 1
    assert C.det_ratio(Ac, torch.linalg.det(A)) > 1e3 * C.THRESHOLD   # det(Ā) = conj(det A)
    assert not [w for w in recwarn if issubclass(w.category, UserWarning)]


# --------------------------------------------------------------------------- properties
@settings(max_examples=60, deadline=None)
@given(n=st.integers(0, 6), batch=st.lists(st.integers(0, 2), max_size=2),
       dtype=st.sampled_from(SUPPORTED_DTYPES), seed=st.integers(0, 2**31 - 1),
       piv=st.lists(st.integers(-1, 8), min_size=6, max_size=6),
       special=st.sampled_from([None, "nan", "inf", "zero"]))
def test_property_lu_ratios_are_lapacks_or_documented(n, batch, dtype, seed, piv, special):
    """Any pivots, NaN / Inf / zero entries: a ratio >= 0 (inf for pivots outside 1..n, NaN
    allowed only where an input is not finite), never an exception, inputs unchanged."""
    A = general(n, batch=tuple(batch), dtype=dtype, seed=seed)
    if special and A.numel():
        A[..., 0, -1] = {"nan": math.nan, "inf": math.inf, "zero": 0.0}[special]
    LU, p = torch.linalg.lu_factor_ex(A)[:2]
    p_any = torch.tensor(piv[:n], dtype=torch.int32).expand_as(p)
    saved = [t.clone() for t in (A, LU, p, p_any)]
    for r in (C.get01(A, LU, p), C.get01(A, LU, p_any), C.get03(A, torch.linalg.inv_ex(A)[0]),
              C.get02(A, LU[..., :1], A @ LU[..., :1])):
        assert r.per_matrix.shape == tuple(batch)
        finite = special in (None, "zero")
        assert (r.per_matrix >= 0).all() or not finite
    valid = all(1 <= v <= n for v in piv[:n])
    if not valid and A.numel():
        assert (C.get01(A, LU, p_any).per_matrix == math.inf).all()
    if special is None and A.numel():
        assert C.get01(A, LU, p) < C.THRESHOLD
    for t, s in zip((A, LU, p, p_any), saved):
        assert C.bitwise_equal(t, s) if t.is_floating_point() or t.is_complex() else torch.equal(t, s)


# --------------------------------------------------------------------------- CUDA
@pytest.mark.gpu
@pytest.mark.gpu_torch_only
@pytest.mark.parametrize("dtype", SUPPORTED_DTYPES)
def test_lu_checks_and_general_matrices_on_cuda(dtype):
    """The ratios of CUDA tensors agree with the CPU's (TF32 allowed globally: the checks
    forbid it); det_ratio's reference is computed on the CPU by default, or on the GPU."""
    A = general(96, batch=3, cond=1e3, dtype=dtype, seed=4)
    assert C.bitwise_equal(general(96, batch=3, cond=1e3, dtype=dtype, seed=4, device="cuda"),
                           A.cuda())
    assert torch.equal(general_singular(9, 4, dtype=dtype, device="cuda").cpu(),
                       general_singular(9, 4, dtype=dtype))
    LU, piv = torch.linalg.lu_factor(A)
    B = torch.ones(3, 96, 2, dtype=A.dtype)
    X, XH = torch.linalg.lu_solve(LU, piv, B), torch.linalg.lu_solve(LU, piv, B, adjoint=True)
    Ainv = torch.linalg.inv(A)
    cpu = [C.get01(A, LU, piv), C.get02(A, X, B), C.get02(A, XH, B, adjoint=True), C.get03(A, Ainv)]
    saved = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision("high")
    try:
        g = [t.cuda() for t in (A, LU, piv, X, XH, B, Ainv)]
        gpu = [C.get01(g[0], g[1], g[2]), C.get02(g[0], g[3], g[5]),
               C.get02(g[0], g[4], g[5], adjoint=True), C.get03(g[0], g[6])]
    finally:
        torch.set_float32_matmul_precision(saved)
    for c, r in zip(cpu, gpu):
        assert r < C.THRESHOLD and r == pytest.approx(float(c), rel=0.5, abs=0.05)
    Ag = A.cuda()
    d = torch.linalg.det(Ag[:, :12, :12] * 8)
    ref_gpu = C.det_reference(Ag[:, :12, :12] * 8, device="cuda")
    assert ref_gpu.sign.is_cuda
    assert C.det_ratio(Ag[:, :12, :12] * 8, d) < C.THRESHOLD
    assert C.det_ratio(Ag[:, :12, :12] * 8, d, reference=ref_gpu) < C.THRESHOLD
    assert C.det_ratio(Ag[:, :12, :12] * 8, -d, reference=ref_gpu) > 100 * C.THRESHOLD
    s, l = torch.linalg.slogdet(Ag)
    assert C.slogdet_ratio(Ag, s, l) < C.THRESHOLD
