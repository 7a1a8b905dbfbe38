"""LAPACK ratios, difference metrics and flop counts (cusolver_trace.checks)."""
import math
import pickle

import numpy as np
import pytest
import scipy.linalg as sl
import scipy.linalg.lapack as lapack
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from cusolver_trace import checks as C
from cusolver_trace._dtypes import SUPPORTED_DTYPES, dtype_info
from cusolver_trace.matrices import classic_spd3, spd

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


def _scipy_results(A: np.ndarray, B: np.ndarray):
    """Per-matrix scipy/LAPACK factor (lower, upper), solve and inverse."""
    L = np.stack([sl.cholesky(a, lower=True) for a in A])
    U = np.stack([sl.cholesky(a) for a in A])
    X = np.stack([sl.cho_solve((l, True), b) for l, b in zip(L, B)])
    Ainv = np.stack([sl.inv(a) for a in A])
    return L, U, X, Ainv


# --------------------------------------------------------------------------- ratios
@pytest.mark.parametrize("dtype", SUPPORTED_DTYPES)
def test_classic3_exact_factor_gives_zero(dtype):
    tm = classic_spd3(dtype=dtype)
    assert C.pot01(tm.A, tm.L) == 0.0
    assert C.pot01(tm.A, tm.L.mH, upper=True) == 0.0


@pytest.mark.parametrize("dtype", SUPPORTED_DTYPES)
def test_perturbed_factor_fails(dtype):
    A = spd(20, dtype=dtype, seed=3)
    L = torch.linalg.cholesky(A)
    L[..., 7, 3] += 1e-3
    r = C.pot01(A, L)
    assert r > 10 * C.THRESHOLD and not C.passes(r)


@pytest.mark.parametrize("dtype", SUPPORTED_DTYPES)
def test_scipy_lapack_results_pass(dtype):
    A = spd(48, batch=3, cond=1e3, dtype=dtype, seed=1).numpy()
    B = np.random.default_rng(0).standard_normal((3, 48, 4)).astype(dtype)
    L, U, X, Ainv = _scipy_results(A, B)
    ratios = [C.pot01(A, L), C.pot01(A, U, upper=True), C.pot02(A, X, B), C.pot03(A, Ainv)]
    for r in ratios:
        assert isinstance(r, C.BatchMax) and r.per_matrix.shape == (3,)
        assert 0 <= r < C.THRESHOLD and r == r.per_matrix.max()
    # potri output: one triangle only, the other holds garbage; fill=True as dpot03 does
    potri = getattr(lapack, dtype_info(dtype).prefix + "potri")
    inv_lower = np.stack([np.tril(potri(l, lower=1)[0]) + np.triu(np.full_like(l, 7), 1) for l in L])
    assert C.pot03(A, inv_lower, fill=True) < C.THRESHOLD
    assert C.pot03(A, inv_lower) > 100 * C.THRESHOLD  # judged as given, the garbage counts


def test_batch_max_identifies_bad_element():
    A = spd(16, batch=(2, 3), seed=5)
    L = torch.linalg.cholesky(A)
    L[1, 2, 5, 5] *= 1 + 1e-6
    r = C.pot01(A, L)
    assert r.per_matrix.shape == (2, 3)
    assert np.unravel_index(r.per_matrix.argmax(), (2, 3)) == (1, 2)
    assert (np.delete(r.per_matrix.ravel(), 5) < C.THRESHOLD).all() and r > 1e3
    assert pickle.loads(pickle.dumps(r)).per_matrix.shape == (2, 3)


def test_only_referenced_triangles_count():
    A = spd(10, seed=2)
    L = torch.linalg.cholesky(A)
    junk = torch.triu(torch.full_like(A, 99.0), 1)
    r0 = C.pot01(A, L)
    assert C.pot01(A + junk, L + junk) == r0  # potrf / ?pot01 read the lower triangles
    assert C.pot01(A + junk.mT, L.mH + junk.mT, upper=True) < C.THRESHOLD
    B = torch.randn(10, 2, dtype=A.dtype)
    X = torch.cholesky_solve(B, L)
    assert C.pot02(A + junk, X, B) == C.pot02(A, X, B)


def test_numpy_and_torch_agree():
    A = spd(12, dtype="complex128", seed=4)
    L = torch.linalg.cholesky(A)
    assert C.pot01(A, L) == C.pot01(A.numpy(), L.numpy())
    assert C.pot01(A, np.asfortranarray(L.numpy())) == pytest.approx(C.pot01(A, L), rel=1e-3)


@pytest.mark.parametrize("dtype", SUPPORTED_DTYPES)
def test_edge_cases_follow_lapack(dtype):
    inv_eps = 1 / dtype_info(dtype).lapack_eps
    t = dtype_info(dtype).torch
    empty = torch.zeros(0, 0, dtype=t)
    assert C.pot01(empty, empty) == 0 and C.pot03(empty, empty) == 0
    assert C.pot02(empty, torch.zeros(0, 2, dtype=t), torch.zeros(0, 2, dtype=t)) == 0
    assert C.pot02(torch.eye(3, dtype=t), torch.zeros(3, 0, dtype=t), torch.zeros(3, 0, dtype=t)) == 0
    Z, eye = torch.zeros(3, 3, dtype=t), torch.eye(3, dtype=t)
    assert C.pot01(Z, eye) == inv_eps                      # anorm = 0
    assert C.pot03(eye, Z) == inv_eps                      # ‖A⁻¹‖ = 0
    X = torch.ones(3, 2, dtype=t)
    X[:, 1] = 0
    assert C.pot02(eye, X, X) == inv_eps                   # a zero solution column
    assert C.pot01(torch.zeros(0, 3, 3, dtype=t), torch.zeros(0, 3, 3, dtype=t)).per_matrix.shape == (0,)  # empty batch


def test_complex_factor_with_imaginary_diagonal():
    tm = classic_spd3(dtype="complex128")
    L = tm.L.clone()
    L[1, 1] = 1 + 1e-300j
    assert C.pot01(tm.A, L) == 2.0**53


def test_nonfinite_gives_nan_or_inf_not_exception():
    A = spd(6, seed=0)
    L = torch.linalg.cholesky(A)
    Ln, Li = L.clone(), L.clone()
    Ln[3, 2], Li[3, 2] = math.nan, math.inf
    assert math.isnan(C.pot01(A, Ln)) and not C.passes(C.pot01(A, Ln))
    assert not math.isfinite(C.pot01(A, Li))  # inf·0 in L·Lᴴ: NaN, as in ?pot01
    An = A.clone()
    An[4, 4] = math.nan
    assert math.isnan(C.pot02(An, L, L)) and math.isnan(C.pot03(An, A))
    batch = torch.stack([A, An])
    r = C.pot03(batch, torch.linalg.inv(A))
    assert math.isnan(r) and r.per_matrix[0] < C.THRESHOLD  # NaN anywhere → NaN max


def test_passes():
    assert C.passes(29.9) and not C.passes(30.0) and not C.passes(math.nan)
    assert C.passes(np.array([1.0, 31.0])).tolist() == [True, False]


@pytest.mark.parametrize("device", DEVICES)
def test_device_agnostic_and_no_tf32(device):
    """float32 ratios are the same on every device, even with TF32 allowed globally."""
    A = spd(256, cond=1e3, dtype="float32", seed=7)
    L = torch.linalg.cholesky(A)
    cpu = C.pot01(A, L)
    saved = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision("high")
    try:
        r = C.pot01(A.to(device), L.to(device))
    finally:
        torch.set_float32_matmul_precision(saved)
    assert r < C.THRESHOLD and r == pytest.approx(cpu, rel=0.5)


# --------------------------------------------------------------------------- differences
def _ulps(a, b, dtype=np.float64):
    return C.max_ulp_distance(np.array([a], dtype), np.array([b], dtype))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_ulp_hand_made(dtype):
    one = dtype(1)
    up = np.nextafter(one, dtype(2))
    up3 = np.nextafter(np.nextafter(up, dtype(2)), dtype(2))
    tiny = np.nextafter(dtype(0), dtype(1))  # smallest subnormal
    big = np.finfo(dtype).max
    assert _ulps(one, one, dtype) == 0
    assert _ulps(one, up, dtype) == 1 and _ulps(up3, one, dtype) == 3
    assert _ulps(np.nextafter(one, dtype(0)), up, dtype) == 2  # across a binade boundary
    assert _ulps(-0.0, 0.0, dtype) == 0 and _ulps(-tiny, tiny, dtype) == 2
    assert _ulps(big, np.inf, dtype) == 1
    expected = 2**63 - 1 if dtype is np.float64 else 2 * 0x7F7FFFFF
    assert _ulps(-big, big, dtype) == expected  # float64 saturates


def test_ulp_nan_and_complex():
    x = np.array([1.0, np.nan, np.nan, 2.0])
    y = np.array([1.0, np.nan, 5.0, np.nan])
    assert C.ulp_distance(x, y).tolist() == [0, 0, -1, -1]
    assert C.max_ulp_distance(x, y) == 0 and C.nan_mismatches(x, y) == 2
    u = np.nextafter(np.float32(1), np.float32(2))
    z = np.array([1 + 1j, 1 + 1j], np.complex64)
    w = np.array([u + 1j, 1 + 1j * np.nextafter(np.nextafter(u, 2), 2)], np.complex64)
    assert C.ulp_distance(z, w).tolist() == [1, 3]
    zn = z.copy()
    zn[0] = complex(1, np.nan)
    assert C.nan_mismatches(z, zn) == 1
    with pytest.raises(TypeError):
        C.max_ulp_distance(np.ones(2), np.ones(2, np.float32))


finite64 = st.floats(-2.0, 2.0, allow_nan=False, width=64)
finite32 = st.floats(allow_nan=False, allow_infinity=False, width=32)


@settings(max_examples=200, deadline=None)
@given(st.sampled_from([(finite32, np.float32), (finite64, np.float64)]).flatmap(
    lambda p: st.tuples(st.lists(p[0], min_size=3, max_size=3), st.just(p[1]))))
def test_ulp_is_a_metric_along_the_number_line(case):
    vals, dtype = case
    a, b, c = sorted(dtype(v) for v in vals)
    d = lambda x, y: _ulps(x, y, dtype)  # noqa: E731
    if d(a, b) + d(b, c) < 2**63 - 1:          # float64 distances across zero saturate (documented)
        assert d(a, c) == d(a, b) + d(b, c)    # monotonic integer mapping: additive
    else:
        assert d(a, c) == 2**63 - 1
    assert d(a, b) == d(b, a)
    assert (d(a, b) == 0) == (a == b)
    if np.isfinite(np.nextafter(a, dtype(np.inf))):
        assert d(a, np.nextafter(a, dtype(np.inf))) == 1


def test_bitwise_equal():
    assert C.bitwise_equal(np.array([0.0]), np.array([0.0]))
    assert not C.bitwise_equal(np.array([0.0]), np.array([-0.0]))
    nan1 = np.array([np.nan])
    nan2 = nan1.view(np.int64).copy()
    nan2 += 1
    assert C.bitwise_equal(nan1, nan1.copy()) and not C.bitwise_equal(nan1, nan2.view(np.float64))
    assert not C.bitwise_equal(np.ones(2), np.ones(2, np.float32))
    assert not C.bitwise_equal(np.ones(2), np.ones(3))
    z = torch.tensor([1 + 2j, -0.0 + 0j])
    assert C.bitwise_equal(z, z.conj().conj()) and not C.bitwise_equal(z, z.conj())


def test_difference_metrics():
    Y = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    X = Y.clone()
    X[1, 0] = 3.5
    assert C.max_abs_diff(X, Y) == 0.5
    assert C.rel_fro_diff(X, Y) == pytest.approx(0.5 / math.sqrt(30))
    assert C.rel_fro_diff(torch.zeros(2, 2), torch.zeros(2, 2)) == 0
    assert C.rel_fro_diff(torch.ones(2, 2), torch.zeros(2, 2)) == math.inf
    big = torch.full((2, 4, 4), 1e300, dtype=torch.float64)
    assert C.rel_fro_diff(big * (1 + 2**-40), big) == pytest.approx(2**-40)  # no overflow
    assert C.asymmetry(Y) == pytest.approx(math.sqrt(2) / math.sqrt(30))
    assert C.asymmetry(spd(5, dtype="complex64")) == 0
    assert C.asymmetry(torch.zeros(3, 3)) == 0
    S = torch.tensor([[math.nan, math.inf], [1.0, -math.inf]])
    assert C.nonfinite_count(S) == 3
    assert C.max_abs_diff(S, S.clone()) == 0  # equal infs and matched NaNs count 0
    T = S.clone()
    T[1, 0] = math.nan
    assert math.isnan(C.max_abs_diff(S, T))
    per = C.max_abs_diff(torch.stack([X, Y]), torch.stack([Y, Y])).per_matrix
    assert per.tolist() == [0.5, 0.0]
    with pytest.raises(ValueError):
        C.max_abs_diff(torch.ones(2), torch.ones(3))


# --------------------------------------------------------------------------- flops
def test_flops_small_n():
    assert C.flops("potrf", 1) == 1 and C.flops("potrf", 2) == 5
    assert C.flops("potrf", 1, complex=True) == 6
    assert C.flops("potrf", 3, complex=True) == pytest.approx(36 + 27 + 5)
    assert C.flops("potrs", 4, nrhs=2) == 64 and C.flops("potrs", 4, nrhs=2, complex=True) == 2 * 144
    assert C.flops("potri", 1) == pytest.approx(2) and C.flops("potri", 3) == 25
    assert C.flops("potri", 3, complex=True) == pytest.approx(72 + 45 + 13)
    assert C.flops("trtri", 3) == pytest.approx(11) and C.flops("trtri", 3, complex=True) == pytest.approx(62)
    assert C.flops("inverse_potrs", 5) == 250 == C.flops("potrs", 5, nrhs=5)
    assert C.flops("inverse_potrs", 5, complex=True) == 1000 + 100
    assert C.flops("trsm", 4, nrhs=3) == 48 and C.flops("trsm", 4, nrhs=3, complex=True) == 3 * (64 + 8)
    assert C.flops("gemm", 3) == 54 and C.flops("gemm", 3, 2, complex=True) == 144
    assert C.flops("potrf", 0) == 0
    # LU (LAWN 41): getrf 2n³/3 − n²/2 + 5n/6, getrs nrhs·(2n² − n), getri 4n³/3 − n² + 5n/3
    assert C.flops("getrf", 1) == 1 and C.flops("getrf", 3) == 16 and C.flops("getrf", 0) == 0
    assert C.flops("getrf", 3, complex=True) == pytest.approx(72 - 9 + 13)
    assert C.flops("getrs", 4, nrhs=2) == 56 and C.flops("getrs", 4, nrhs=2, complex=True) == 2 * 120
    assert C.flops("getri", 3) == pytest.approx(36 - 9 + 5)
    assert C.flops("getri", 3, complex=True) == pytest.approx(144 + 20)
    for bad in [("geqrf", 3), ("potrs", 3), ("getrs", 3), ("getrf", 3, 2), ("potrf", 3, 2),
                ("potrf", -1)]:
        with pytest.raises(ValueError):
            C.flops(*bad)
