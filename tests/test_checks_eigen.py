"""The Hermitian eigenproblem checks (checks/eigen.py): LAPACK's ?syt21 ratios, the eigenvalue
ratio, eig_check, normalize_phase, eigvec_distance; and the syevd flop counts. CPU only; every
threshold is LAPACK's 30 (nothing here depends on the machine's LAPACK beyond that)."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings, strategies as st

from cusolver_trace import checks as C

DTYPES = (torch.float32, torch.float64, torch.complex64, torch.complex128)


def _herm(n, batch=(), dtype=torch.float64, seed=0):
    g = torch.Generator().manual_seed(seed)
    c = torch.complex128 if dtype.is_complex else torch.float64
    X = torch.randn(*batch, n, n, dtype=c, generator=g)
    return ((X + X.mH) / 2).to(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [0, 1, 2, 33])
@pytest.mark.parametrize("batch", [(), (3,), (2, 2)])
def test_eigh_passes(dtype, n, batch):
    A = _herm(n, batch, dtype, seed=n)
    w, V = torch.linalg.eigh(A)
    for r in (C.eig_residual(A, w, V), C.eig_orthogonality(V), C.eig_values(A, w),
              C.eig_check(A, w, V), C.eig_check(A, w)):
        assert r < C.THRESHOLD and r.per_matrix.shape == batch
    ref = C.eig_reference(A)
    assert ref.dtype == torch.float64 and ref.shape == (*batch, n)
    assert float(C.eig_check(A, w, V, reference=ref)) == float(C.eig_check(A, w, V))


@pytest.mark.parametrize("dtype", DTYPES)
def test_exact_decomposition_from_float64(dtype):
    """A made from known w, V (float64), then rounded: the rounded pair passes."""
    n = 17
    c = torch.complex128 if dtype.is_complex else torch.float64
    Q = torch.linalg.qr(torch.randn(n, n, dtype=c, generator=torch.Generator().manual_seed(1))).Q
    lam = torch.linspace(-1, 1, n, dtype=torch.float64)
    A = (Q * lam) @ Q.mH
    real = torch.float32 if dtype in (torch.float32, torch.complex64) else torch.float64
    assert C.eig_check(A.to(dtype), lam.to(real), Q.to(dtype)) < C.THRESHOLD


@pytest.mark.parametrize("dtype", DTYPES)
def test_perturbations_fail(dtype):
    A = _herm(8, (2,), dtype, seed=3)
    w, V = torch.linalg.eigh(A)
    big = 1e3
    V2 = V.clone()
    V2[1, 0, 0] += 1e-2
    r = C.eig_residual(A, w, V2)
    assert r > big and r.per_matrix[0] < C.THRESHOLD
    assert C.eig_orthogonality(V2) > big
    assert C.eig_check(A, w, V2).per_matrix[1] > big
    w2 = w.clone()
    w2[0, 3] *= 1 + 1e-2
    assert C.eig_residual(A, w2, V) > big and C.eig_values(A, w2) > big
    assert C.eig_check(A, w2).per_matrix.tolist()[1] < C.THRESHOLD
    assert C.eig_values(A, w.flip(-1)) > big          # order matters
    assert C.eig_check(A, w, V.flip(-1)) > big


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("upper", [False, True])
def test_only_the_triangle_is_read(dtype, upper):
    A = _herm(6, (2,), dtype, seed=4)
    w, V = torch.linalg.eigh(A, UPLO="U" if upper else "L")
    junk = torch.randn(2, 6, 6, dtype=dtype) * 1e3
    ones = torch.ones(6, 6, dtype=torch.bool)
    G = torch.where(ones.tril(-1) if upper else ones.triu(1), junk, A)   # the unread triangle
    assert not torch.equal(G, A)
    if dtype.is_complex:   # the imaginary part of the diagonal is not read either
        G = G + 1j * torch.eye(6, dtype=dtype)
    for f in (lambda M: C.eig_check(M, w, V, upper=upper),
              lambda M: C.eig_residual(M, w, V, upper=upper),
              lambda M: C.eig_values(M, w, upper=upper)):
        assert np.array_equal(f(G).per_matrix, f(A).per_matrix)
    assert torch.equal(C.eig_reference(G, upper), C.eig_reference(A, upper))
    assert C.eig_check(G, w, V, upper=not upper) > 1e3


@pytest.mark.parametrize("dtype", DTYPES)
def test_nan_gives_nan(dtype):
    A = _herm(4, (3,), dtype, seed=5)
    w, V = torch.linalg.eigh(A)
    An = A.clone()
    An[1, 2, 1] = math.nan
    r = C.eig_check(An, w, V)
    assert math.isnan(r) and math.isnan(r.per_matrix[1]) and r.per_matrix[0] < C.THRESHOLD
    assert torch.isnan(C.eig_reference(An)[1]).all()
    Vn = V.clone()
    Vn[2, 0, 0] = math.nan
    assert math.isnan(C.eig_check(A, w, Vn).per_matrix[2])
    assert math.isnan(C.eig_orthogonality(Vn))
    wn = w.clone()
    wn[0, 1] = math.nan
    assert math.isnan(C.eig_check(A, wn).per_matrix[0])
    assert math.isnan(C.eig_residual(A, wn, V))
    assert math.isnan(C.eigvec_distance(V, Vn, w))


def test_zero_matrix_and_edge_cases():
    Z = torch.zeros(3, 3, dtype=torch.float64)
    w, V = torch.linalg.eigh(Z)
    assert float(C.eig_check(Z, w, V)) == 0
    assert C.eig_values(Z, w + 1e-300) == 1 / 2**-52   # 1/ulp, as ?syt21
    assert C.eig_residual(Z, w + 1, V) == pytest.approx(1 / 2**-52)
    empty = torch.zeros(2, 0, 0)
    assert float(C.eig_check(empty, torch.zeros(2, 0), empty)) == 0
    assert C.eig_check(empty, torch.zeros(2, 0), empty).per_matrix.shape == (2,)


def test_bad_arguments():
    A = _herm(3)
    w, V = torch.linalg.eigh(A)
    with pytest.raises(TypeError):
        C.eig_residual(A, w.to(torch.float32), V)
    with pytest.raises(TypeError):
        C.eig_residual(A, w, V.to(torch.float32))
    with pytest.raises(ValueError):
        C.eig_values(A, w[:2])
    with pytest.raises(ValueError):
        C.eig_residual(A[:2], w, V)
    with pytest.raises(ValueError):
        C.eig_values(A, w, reference=torch.zeros(2, dtype=torch.float64))
    with pytest.raises(ValueError):
        C.eigvec_distance(V, V, w, cluster=-1.0)
    with pytest.raises(TypeError):
        C.eigvec_distance(V, V.to(torch.complex128), w)


def test_numpy_inputs():
    A = _herm(5, (), torch.float64).numpy()
    w, V = np.linalg.eigh(A)
    assert C.eig_check(A, w, V) < C.THRESHOLD
    assert C.eigvec_distance(V, -V, w) < 1e-15


@pytest.mark.parametrize("dtype", DTYPES)
def test_normalize_phase(dtype):
    A = _herm(7, (2,), dtype, seed=6)
    _, V = torch.linalg.eigh(A)
    g = torch.Generator().manual_seed(0)
    if dtype.is_complex:
        ph = torch.exp(1j * torch.rand(2, 1, 7, generator=g, dtype=torch.float64) * 2 * math.pi)
    else:
        ph = torch.where(torch.rand(2, 1, 7, generator=g) < 0.5, -1.0, 1.0).to(torch.float64)
    W = V * ph.to(dtype)
    N1, N2 = C.normalize_phase(V), C.normalize_phase(W)
    assert torch.allclose(N1, N2, atol=10 * torch.finfo(dtype).eps)
    top = N1.gather(-2, N1.abs().argmax(-2, keepdim=True))
    assert (top.real > 0).all() and (top.imag == 0).all() if dtype.is_complex else (top > 0).all()
    assert N1.dtype == V.dtype
    # ties: the first one
    assert C.normalize_phase(torch.tensor([[-1.0], [1.0]])).flatten().tolist() == [1.0, -1.0]
    assert torch.equal(C.normalize_phase(torch.zeros(3, 2)), torch.zeros(3, 2))


@pytest.mark.parametrize("dtype", DTYPES)
def test_eigvec_distance(dtype):
    n = 9
    A = _herm(n, (2,), dtype, seed=7)
    w, V = torch.linalg.eigh(A)
    eps = 2.0**-24 if dtype in (torch.float32, torch.complex64) else 2.0**-53
    g = torch.Generator().manual_seed(1)
    if dtype.is_complex:
        ph = torch.exp(1j * torch.rand(2, 1, n, generator=g, dtype=torch.float64) * 6.3)
    else:
        ph = torch.where(torch.rand(2, 1, n, generator=g) < 0.5, -1.0, 1.0).to(torch.float64)
    d = C.eigvec_distance(V, V * ph.to(dtype), w)
    assert d < 100 * eps and d.per_matrix.shape == (2,)
    # a wrong vector: swap two columns
    Vs = V.clone()
    Vs[..., [2, 5]] = V[..., [5, 2]]
    assert C.eigvec_distance(V, Vs, w) > 0.1
    # a second solver's vectors (float64 eigh of the same matrix, rounded)
    c = torch.complex128 if dtype.is_complex else torch.float64
    _, V64 = torch.linalg.eigh(A.to(c))
    assert C.eigvec_distance(V, V64.to(dtype), w) < 1e4 * n * eps


@pytest.mark.parametrize("dtype", DTYPES)
def test_eigvec_distance_repeated_eigenvalues(dtype):
    n, k = 8, 3     # eigenvalue 0.5 three times (columns 2..4), the rest simple
    c = torch.complex128 if dtype.is_complex else torch.float64
    g = torch.Generator().manual_seed(2)
    Q = torch.linalg.qr(torch.randn(n, n, dtype=c, generator=g)).Q
    lam = torch.tensor([-1.0, -0.5, 0.5, 0.5, 0.5, 0.7, 0.9, 1.0], dtype=torch.float64)
    Qk = torch.linalg.qr(torch.randn(k, k, dtype=c, generator=g)).Q   # random unitary block
    U = torch.eye(n, dtype=c)
    U[2:5, 2:5] = Qk
    eps = 2.0**-24 if dtype in (torch.float32, torch.complex64) else 2.0**-53
    V1, V2 = Q.to(dtype), (Q @ U).to(dtype)
    assert C.eigvec_distance(V1, V2, lam) < 100 * eps
    assert C.eigvec_distance(V1, V2, lam, cluster=0.0) < 100 * eps   # exactly equal: one cluster
    assert C.eigvec_distance(V1, V2, lam + torch.tensor([0, 0, 0, 1e-3, 0, 0, 0, 0])) > 0.01
    V3 = V2.clone()
    V3[:, 4] = Q[:, 5].to(dtype)                # leaves the subspace
    assert C.eigvec_distance(V1, V3, lam) > 0.5
    A = ((Q * lam) @ Q.mH).to(dtype)
    w, V = torch.linalg.eigh(A)
    real = torch.float32 if dtype in (torch.float32, torch.complex64) else torch.float64
    assert C.eigvec_distance(V, V1, w.to(real)) < 1e3 * n * eps
    assert C.eig_check(A, lam.to(real), V2) < C.THRESHOLD


DTYPE_ST = st.sampled_from(DTYPES)


@settings(max_examples=40, deadline=None)
@given(dtype=DTYPE_ST, n=st.integers(0, 6), batch=st.lists(st.integers(0, 3), max_size=2),
       seed=st.integers(0, 2**31 - 1), upper=st.booleans(),
       scale=st.sampled_from([1.0, 1e-10, 1e10]))
def test_property_eigh_passes(dtype, n, batch, seed, upper, scale):
    A = _herm(n, tuple(batch), dtype, seed) * scale
    A = A + torch.randn(A.shape, generator=torch.Generator().manual_seed(seed), dtype=A.dtype) \
        * (torch.ones(n, n).triu(1) if not upper else torch.ones(n, n).tril(-1)).to(A.dtype)
    before = A.clone()
    w, V = torch.linalg.eigh(A, UPLO="U" if upper else "L")
    r = C.eig_check(A, w, V, upper=upper)
    assert r < C.THRESHOLD and r.per_matrix.shape == tuple(batch)
    assert C.eig_check(A, w, upper=upper) < C.THRESHOLD
    assert C.eigvec_distance(V, V, w) < 1e-12
    assert torch.equal(A, before)


def test_flops_syevd():
    assert C.flops("syevd", 3) == pytest.approx(14 * 27 / 3)
    assert C.flops("syevd_values", 3) == pytest.approx(36)
    assert C.flops("syevd", 3, complex=True) == pytest.approx(4 * 14 * 27 / 3)
    assert C.flops("syevd_values", 3, complex=True) == pytest.approx(4 * 36)
    assert C.flops("syevd", 0) == 0
    assert {"syevd", "syevd_values"} <= set(C.FLOP_ROUTINES)
    for bad in [("syevd", 3, 2), ("syevd_values", -1)]:
        with pytest.raises(ValueError):
            C.flops(*bad)
