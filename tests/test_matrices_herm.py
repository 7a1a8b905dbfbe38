"""Hermitian (indefinite) test matrices for the eigensolvers: known spectra, LAPACK's ddrvst
types, graded matrices, the digits covariance, the --matrix words of structure "hermitian"."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings, strategies as st

from cusolver_trace import checks as C
from cusolver_trace import matrices as M

DTYPES = ("float32", "float64", "complex64", "complex128")


def _eps(dtype):
    return 2.0**-24 if dtype in ("float32", "complex64") else 2.0**-53


def _eigvalsh64(A):
    return torch.linalg.eigvalsh(A.to(torch.complex128 if A.is_complex() else torch.float64))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kind", M.SPECTRA)
@pytest.mark.parametrize("signs", M.SIGNS)
def test_known_spectra_reproduced(dtype, kind, signs):
    n = 9
    tm = M.hermitian_with_spectrum(n, batch=(2,), spectrum=kind, cond=1e3, signs=signs,
                                   dtype=dtype, seed=5)
    A = tm.A
    assert A.shape == (2, n, n) and A.dtype == getattr(torch, dtype)
    assert torch.equal(A, A.mH) and (A.diagonal(dim1=-2, dim2=-1).imag == 0).all() \
        if A.is_complex() else torch.equal(A, A.mT)
    lam = M.spectrum(n, kind, 1e3, signs, 5)
    assert torch.equal(tm.eigenvalues, torch.sort(lam).values.expand(2, n))
    err = (_eigvalsh64(A) - tm.eigenvalues).abs().max()
    assert err < 8 * n * _eps(dtype)
    assert lam.abs().max() == 1 and lam.abs().min() == pytest.approx(1e-3)
    if signs == "positive":
        assert (lam > 0).all()
    else:
        assert (lam < 0).any() and (lam > 0).any()
    assert C.eig_check(A, torch.linalg.eigvalsh(A), None) < C.THRESHOLD


def test_spectrum_modes():
    assert M.spectrum(3, "arithmetic", 4.0, "positive").tolist() == [1.0, 0.625, 0.25]
    assert M.spectrum(4, "clustered", 10.0, "positive").tolist() == [1.0, 0.1, 0.1, 0.1]
    assert M.spectrum(4, "clustered-top", 10.0, "positive").tolist() == [1.0, 1.0, 1.0, 0.1]
    rep = M.spectrum(10, "repeated", 8.0, "random", seed=3)
    assert len(set(rep.abs().tolist())) == 4 and len(set(rep.tolist())) == 4   # ⌈√10⌉ values
    assert M.spectrum(0).shape == (0,) and M.spectrum(1).abs().tolist() == [1.0]
    for bad in [dict(kind="log"), dict(signs="negative"), dict(cond=0.5), dict(cond=math.inf)]:
        with pytest.raises(ValueError):
            M.spectrum(3, **bad)


def test_seeds_reproducible_and_equal_across_dtypes():
    a = M.hermitian(6, batch=2, seed=11, cond=50.0)
    assert torch.equal(a, M.hermitian(6, batch=2, seed=11, cond=50.0))
    assert not torch.equal(a, M.hermitian(6, batch=2, seed=12, cond=50.0))
    assert torch.equal(M.hermitian(6, batch=2, seed=11, cond=50.0, dtype="float32"),
                       a.to(torch.float32))
    z = M.hermitian(6, seed=11, dtype="complex128")
    assert torch.equal(M.hermitian(6, seed=11, dtype="complex64"), z.to(torch.complex64))
    assert torch.equal(M.structured("hermitian", 6, seed=11, cond=50.0),
                       M.hermitian(6, seed=11, cond=50.0))
    g = M.graded(5, seed=2, dtype="complex128")
    assert torch.equal(M.graded(5, seed=2, dtype="complex64"), g.to(torch.complex64))
    t = M.lapack_eig_test_matrix("random", 5, seed=4).A   # (cond 1/ulp types depend on dtype)
    assert torch.equal(M.lapack_eig_test_matrix("random", 5, seed=4, dtype="float32").A,
                       t.to(torch.float32))


def test_structured_hermitian_is_indefinite_with_norm_one():
    A = M.structured("hermitian", 8, batch=(3,), cond=100.0, seed=1)
    lam = torch.linalg.eigvalsh(A)
    assert (lam.abs().amax(-1) - 1).abs().max() < 1e-14
    assert (lam.min(-1).values < 0).all() and (lam.max(-1).values > 0).all()
    assert float(M.achieved_cond(A, structure="hermitian")) == pytest.approx(100.0)
    assert M.STRUCTURES == ("hpd", "general", "hermitian")
    with pytest.raises(ValueError, match="structure"):
        M.structured("symmetric", 3)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [0, 1, 2, 5])
def test_every_lapack_sy_type_builds(dtype, n):
    for jtype, kind in enumerate(M.LAPACK_SY_TYPES, 1):
        tm = M.lapack_eig_test_matrix(kind, n, dtype=dtype, seed=jtype, batch=(2,))
        A = tm.A
        assert A.shape == (2, n, n) and A.dtype == getattr(torch, dtype), kind
        assert torch.equal(A, A.mH) and torch.isfinite(A).all(), kind
        assert f"type {jtype} ({kind})" in tm.description and tm.kind == f"lapack:{kind}"
        if tm.eigenvalues is None:
            assert kind.startswith("random")
            continue
        assert tm.eigenvalues.shape == (2, n)
        if n:
            scale = tm.eigenvalues.abs().max()
            err = (_eigvalsh64(A) - tm.eigenvalues).abs().max() / max(float(scale), 1e-300)
            assert err < 8 * max(n, 2) * _eps(dtype), (kind, float(err))
        # the ratios of a LAPACK solve pass on every type
        w, V = torch.linalg.eigh(A)
        assert C.eig_check(A, w, V) < C.THRESHOLD, kind


def test_lapack_sy_type_details():
    ulp = 2.0**-52
    geo = M.lapack_eig_test_matrix("diag-geometric", 5, seed=1)
    assert torch.equal(geo.A, torch.diag_embed(geo.A.diagonal()))     # diagonal, not rotated
    assert sorted(geo.A.diagonal().abs().tolist())[0] == pytest.approx(ulp)
    assert geo.cond == pytest.approx(1 / ulp)
    assert torch.equal(M.lapack_eig_test_matrix("zero", 3).A, torch.zeros(3, 3, dtype=torch.float64))
    big = M.lapack_eig_test_matrix("large", 4, dtype="float32").A
    assert float(torch.linalg.matrix_norm(big.double(), 2)) == pytest.approx(
        math.sqrt(float(np.finfo(np.float32).max)) * 2.0**-23 / 4, rel=1e-5)
    small = M.lapack_eig_test_matrix("random-small", 4).A
    assert float(small.abs().max()) == pytest.approx(math.sqrt(float(np.finfo(np.float64).tiny))
                                                     * 4 / ulp)
    # band: a half-bandwidth below n − 1 for some seed, the band respected
    n = 12
    widths = set()
    for seed in range(8):
        tm = M.lapack_eig_test_matrix("band", n, seed=seed)
        b = int(tm.description.split("half-bandwidth ")[1].split(",")[0])
        widths.add(b)
        i = torch.arange(n)
        assert (tm.A[(i[:, None] - i[None, :]).abs() > b] == 0).all()
    assert len(widths) > 2 and any(0 < b < n - 1 for b in widths)
    with pytest.raises(ValueError, match="SY eigen"):
        M.lapack_eig_test_matrix("ill", 3)
    tm = M.lapack_test_matrix("band", 4, structure="hermitian")
    assert tm.eigenvalues is not None


def test_graded():
    n, dec = 6, 6.0
    A = M.graded(n, batch=(2,), decades=dec, seed=3)
    assert torch.equal(A, A.mT)
    d = 10.0 ** (-dec * torch.arange(n, dtype=torch.float64) / (n - 1))
    H = A / (d[:, None] * d[None, :])      # well conditioned, |λ| in [1/2, 1]
    lam = torch.linalg.eigvalsh(H).abs()
    assert (lam.amax(-1) - 1).abs().max() < 1e-9 and (lam.amin(-1) - 0.5).abs().max() < 1e-9
    assert float(A[..., -1, -1].abs().max()) <= 1e-12
    assert M.graded(1).shape == (1, 1) and M.graded(0).shape == (0, 0)
    with pytest.raises(ValueError):
        M.graded(3, decades=-1.0)


def test_digits_covariance():
    pytest.importorskip("sklearn", reason="scikit-learn not installed (pip install 'cusolver-trace[data]')")
    from sklearn.datasets import load_digits

    Cv = M.digits_covariance()
    assert Cv.shape == (64, 64) and Cv.dtype == torch.float64 and torch.equal(Cv, Cv.mT)
    assert np.allclose(Cv.numpy(), np.cov(load_digits().data, rowvar=False), rtol=0, atol=1e-12)
    assert (Cv.diagonal() == 0).any()                      # always-blank pixels
    assert torch.linalg.eigvalsh(Cv).min() > -1e-12
    assert M.digits_covariance(dtype="float32").dtype == torch.float32
    tm = M.parse_matrix_spec("digits").make(batch=2, structure="hermitian")
    assert tm.A.shape == (2, 64, 64)
    assert M.parse_matrix_spec("digits").fixed_n("hermitian") == 64
    assert M.parse_matrix_spec("digits").fixed_n() == M.DIGITS_SAMPLES
    with pytest.raises(ValueError, match="64x64"):
        M.parse_matrix_spec("digits").make(10, structure="hermitian")


GOOD = ["random", "random:cond=1e6", "random:cond=10,mode=arithmetic", "spectrum:clustered",
        "spectrum:repeated,cond=100", "spectrum:geometric,signs=positive,cond=1e3",
        "spectrum:clustered-top,signs=random", "lapack:band", "lapack:zero", "lapack:random-small",
        "graded", "graded:decades=12", "classic3"]


@pytest.mark.parametrize("spec", GOOD)
def test_spec_hermitian_words(spec):
    tm = M.parse_matrix_spec(spec).make(None if spec == "classic3" else 5, batch=2,
                                        dtype="complex64", structure="hermitian", seed=3)
    n = tm.A.shape[-1]
    assert tm.A.shape == (2, n, n) and tm.A.dtype == torch.complex64
    assert torch.equal(tm.A, tm.A.mH) and tm.kind == spec and tm.description
    if tm.eigenvalues is not None:
        assert (_eigvalsh64(tm.A) - tm.eigenvalues).abs().max() \
            <= 20 * n * 2.0**-24 * tm.eigenvalues.abs().max()
    p = M.parse_matrix_spec("spectrum:repeated,cond=100").params
    assert p == {"spectrum": "repeated", "cond": 100.0}


def test_spec_file_hermitian_keeps_values(tmp_path):
    A = np.array([[1.0, 5.0], [2.0, 3.0]])          # not symmetric: only a triangle is read
    np.save(tmp_path / "a.npy", A)
    got = M.parse_matrix_spec(f"file:{tmp_path / 'a.npy'}").make(structure="hermitian").A
    assert np.array_equal(got.numpy(), A)
    B = np.array([[1.0, 2.0 + 4e-15], [2.0, 3.0]])   # rounding-noise asymmetry
    np.save(tmp_path / "b.npy", B)
    assert np.array_equal(M.from_file(tmp_path / "b.npy", structure="hermitian").numpy(), B)
    assert not np.array_equal(M.from_file(tmp_path / "b.npy").numpy(), B)   # hpd symmetrizes


@pytest.mark.parametrize("bad", ["spectrum", "spectrum:", "spectrum:log", "spectrum:cond=3",
                                 "spectrum:clustered,cond=0.5", "spectrum:clustered,cond=abc",
                                 "spectrum:clustered,signs=negative", "spectrum:geometric,seed=1",
                                 "spectrum:geometric,cond=2,cond=3", "graded:", "graded:decades=-1",
                                 "graded:dec=3", "lapack:banded", "Spectrum:geometric"])
def test_spec_hermitian_parse_errors(bad):
    with pytest.raises(ValueError, match="expected random") as exc:
        M.parse_matrix_spec(bad)
    assert repr(bad) in str(exc.value) and "\n" not in str(exc.value)


@pytest.mark.parametrize("spec,structure,match", [
    ("singular:k=1", "hermitian", "not a Hermitian one"),
    ("lapack:ill", "hermitian", "SY eigen test types"),
    ("lapack:zero-first", "hermitian", "SY eigen test types"),
    ("digits:gamma=0.1", "hermitian", "takes no options"),
    ("spectrum:clustered", "hpd", "Hermitian indefinite"),
    ("graded", "general", "Hermitian indefinite"),
    ("lapack:band", "hpd", "PO test types"),
    ("lapack:identity", "general", "GE test types"),
])
def test_spec_structure_errors(spec, structure, match):
    with pytest.raises(ValueError, match=match) as exc:
        M.parse_matrix_spec(spec).make(4, structure=structure)
    assert "\n" not in str(exc.value)


def test_spec_hermitian_needs_n():
    for spec in ("random", "spectrum:geometric", "graded", "lapack:band"):
        with pytest.raises(ValueError, match="needs a size"):
            M.parse_matrix_spec(spec).make(structure="hermitian")


@settings(max_examples=30, deadline=None)
@given(kind=st.sampled_from(M.SPECTRA), cond=st.sampled_from(["1", "2", "1e3", "1.5e7"]),
       signs=st.sampled_from([None, *M.SIGNS]), n=st.integers(0, 7),
       dtype=st.sampled_from(DTYPES), seed=st.integers(0, 2**31 - 1))
def test_property_spectrum_spec(kind, cond, signs, n, dtype, seed):
    text = f"spectrum:{kind},cond={cond}" + (f",signs={signs}" if signs else "")
    tm = M.parse_matrix_spec(text).make(n, dtype=dtype, seed=seed, structure="hermitian")
    lam = M.spectrum(n, kind, float(cond), signs or "random", seed)
    assert torch.equal(tm.eigenvalues, torch.sort(lam).values)
    assert torch.equal(tm.A, tm.A.mH)
    if n:
        assert float((_eigvalsh64(tm.A) - tm.eigenvalues).abs().max()) < 8 * max(n, 2) * _eps(dtype)
