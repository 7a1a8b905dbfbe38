"""The CPU backend's LU routines (``cpu.getrf`` / ``cpu.getrs``, scipy LAPACK): known answers,
scipy.linalg.lu_factor / lu_solve semantics, singular inputs, and properties over batch shapes,
broadcasting, strides and views, read-only arrays and dtypes (the input is never written).

Expectations are LAPACK's own answers through scipy (the same library the backend calls) or
exact facts (a zero column k gives info = k), never a value that depends on the LAPACK build.
Bitwise comparisons with scipy run both sides on one BLAS thread (``threadpoolctl``): OpenBLAS
gives other bits with another thread count (seen: cgetrs of a 1 x 1 system, 1 ulp).
"""
from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from threadpoolctl import threadpool_limits

from cusolver_trace.backends import cpu

DTYPES = (np.float32, np.float64, np.complex64, np.complex128)
SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _rand(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)


def _scipy_factor(a):
    lus, pivs, = [], []
    for M in a.reshape(-1, *a.shape[-2:]):
        lu, p = scipy.linalg.lu_factor(M, check_finite=False)
        lus.append(lu)
        pivs.append(p + 1)
    k = min(a.shape[-2:])
    return np.stack(lus).reshape(a.shape), np.stack(pivs).reshape(*a.shape[:-2], k)


def test_known_answer():
    lu, piv, info = cpu.getrf(np.array([[1.0, 2.0], [3.0, 4.0]]))
    # P A = L U with P swapping the rows: L = [[1, 0], [1/3, 1]], U = [[3, 4], [0, 2/3]]
    assert np.allclose(lu, [[3.0, 4.0], [1 / 3, 2 / 3]], rtol=0, atol=4e-16)
    assert piv.tolist() == [2, 2] and piv.dtype == np.int32 and info.shape == () and info == 0
    x, info = cpu.getrs(lu, piv, np.array([[5.0], [6.0]]))
    assert np.allclose(x, [[-4.0], [4.5]], rtol=0, atol=1e-14) and info == 0
    x, _ = cpu.getrs(lu, piv, np.array([[5.0], [6.0]]), adjoint=True)   # Aᵀ x = b
    assert np.allclose(x, [[-1.0], [2.0]], rtol=0, atol=1e-14)


def test_complex_adjoint_is_the_conjugate_transpose():
    A = np.array([[2 + 1j, 1 - 1j], [0.5j, 3 + 0j]])
    b = np.array([[1 + 2j], [3 - 1j]])
    lu, piv, _ = cpu.getrf(A)
    x, _ = cpu.getrs(lu, piv, b, adjoint=True)
    assert np.allclose(A.conj().T @ x, b, atol=1e-14)
    assert not np.allclose(A.T @ x, b, atol=1e-3)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("k", [1, 3, 5])
def test_singular_column_k_gives_info_k(dtype, k):
    A = _rand((2, 5, 5), dtype, seed=k)
    A[1, :, k - 1] = 0
    lu, piv, info = cpu.getrf(A)
    assert info.tolist() == [0, k] and info.dtype == np.int32
    assert lu[1, k - 1, k - 1] == 0                 # U(k, k) exactly zero, factorization completed
    assert cpu.getrf(np.zeros((3, 3), dtype))[2] == 1


def test_pivot_false_is_refused():
    with pytest.raises(ValueError, match="pivot=False"):
        cpu.getrf(np.eye(3), pivot=False)


def test_pivots_out_of_range_are_refused_before_lapack():
    lu, piv, _ = cpu.getrf(np.eye(3))
    for bad in (piv * 0, piv + 3):
        with pytest.raises(ValueError, match="pivots must lie in 1..3"):
            cpu.getrs(lu, bad, np.ones((3, 1)))


def test_empty_operands_give_empty_results():
    lu, piv, info = cpu.getrf(np.zeros((2, 0, 0)))
    assert lu.shape == (2, 0, 0) and piv.shape == (2, 0) and info.tolist() == [0, 0]
    lu, piv, info = cpu.getrf(np.zeros((0, 3, 3)))
    assert lu.shape == (0, 3, 3) and piv.shape == (0, 3) and info.shape == (0,)
    x, info = cpu.getrs(np.eye(3), np.arange(1, 4, dtype=np.int32), np.zeros((3, 0)))
    assert x.shape == (3, 0) and info == 0


@pytest.mark.parametrize("routine", ["getrf", "getrs"])
def test_routine_names(routine):
    assert cpu.routine_name(np.complex64, routine) == f"LAPACK c{routine}"


@st.composite
def arrays(draw, rect=True):
    m = draw(st.integers(1, 6))
    n = draw(st.integers(1, 6)) if rect else m
    batch = draw(st.sampled_from([(), (1,), (3,), (2, 2), (0,)]))
    dtype = draw(st.sampled_from(DTYPES))
    view = draw(st.sampled_from(["plain", "fortran", "transposed", "strided", "negative",
                                 "readonly"]))
    a = _rand((*batch, m, n), dtype, seed=draw(st.integers(0, 9)))
    if draw(st.booleans()) and min(m, n) >= 2:
        a[..., :, draw(st.integers(0, min(m, n) - 1))] = 0       # a zero column
    return _view(a, view), a.copy()


def _view(a, view):
    if view == "fortran":
        return np.asfortranarray(a)
    if view == "transposed":
        return np.swapaxes(np.swapaxes(a, -1, -2).copy(), -1, -2)
    if view == "strided":
        return np.repeat(a, 2, axis=-1)[..., ::2]          # the values of a, column stride 2
    if view == "negative":
        return a[..., ::-1, :].copy()[..., ::-1, :]
    if view == "readonly":
        b = a.copy()
        b.setflags(write=False)
        return b
    return a.copy()


@SETTINGS
@given(arrays())
def test_property_getrf_is_scipys_lu_factor(case):
    a, values = case
    before = a.copy()
    with threadpool_limits(1, user_api="blas"):
        lu, piv, info = cpu.getrf(a)
        ref_lu, ref_piv = _scipy_factor(values) if a.size else (None, None)
    assert np.array_equal(a, before)                               # the input is never written
    k = min(a.shape[-2:])
    assert lu.shape == a.shape and lu.dtype == a.dtype
    assert piv.shape == (*a.shape[:-2], k) and piv.dtype == np.int32
    assert info.shape == a.shape[:-2] and info.dtype == np.int32
    if a.size:
        assert np.array_equal(lu, ref_lu) and np.array_equal(piv, ref_piv)
        assert ((1 <= piv) & (piv <= a.shape[-2])).all()
        # info: the first exact zero on U's diagonal, 0 if none (LAPACK's definition)
        d = np.diagonal(lu, axis1=-2, axis2=-1)
        first = np.where((d == 0).any(-1), (d == 0).argmax(-1) + 1, 0)
        assert np.array_equal(info, first)


@st.composite
def solves(draw):
    (a, values) = draw(arrays(rect=False))
    n = a.shape[-1]
    batch = a.shape[:-2]
    b_batch = draw(st.sampled_from([batch, batch[1:], (), (1,) * len(batch)]))
    if draw(st.booleans()) and len(batch) == 1:
        b_batch = (2,) + batch if batch != (0,) else b_batch              # b has more batch dims
    k = draw(st.integers(1, 3))
    dtype = a.dtype
    b = _view(_rand((*b_batch, n, k), dtype, seed=draw(st.integers(0, 9))),
              draw(st.sampled_from(["plain", "fortran", "strided", "readonly"])))
    return a, values, b, draw(st.booleans())


@SETTINGS
@given(solves())
def test_property_getrs_is_scipys_lu_solve_with_broadcasting(case):
    a, values, b, adjoint = case
    values = values + 4 * a.shape[-1] * np.eye(a.shape[-1], dtype=a.dtype)   # nonsingular
    lu, piv, _ = cpu.getrf(values)
    lu_b, piv_b, b_before = lu.copy(), piv.copy(), b.copy()
    with threadpool_limits(1, user_api="blas"):
        x, info = cpu.getrs(lu, piv, b, adjoint=adjoint)
        refs = _scipy_solves(lu, piv, b, adjoint)
    assert np.array_equal(lu, lu_b) and np.array_equal(piv, piv_b) and np.array_equal(b, b_before)
    bshape = np.broadcast_shapes(lu.shape[:-2], b.shape[:-2])
    assert x.shape == (*bshape, *b.shape[-2:]) and x.dtype == a.dtype
    assert info.shape == bshape and not info.any()
    assert np.array_equal(x, refs)


def _scipy_solves(lu, piv, b, adjoint):
    """scipy.linalg.lu_solve of each broadcast matrix (trans 1 = T for real, 2 = C for complex)."""
    trans = (2 if np.iscomplexobj(lu) else 1) if adjoint else 0
    bshape = np.broadcast_shapes(lu.shape[:-2], b.shape[:-2])
    L = np.broadcast_to(lu, (*bshape, *lu.shape[-2:]))
    P = np.broadcast_to(piv, (*bshape, piv.shape[-1]))
    B = np.broadcast_to(b, (*bshape, *b.shape[-2:]))
    out = np.empty(B.shape, dtype=lu.dtype)
    for idx in np.ndindex(*bshape):
        out[idx] = scipy.linalg.lu_solve((L[idx], P[idx] - 1), B[idx], trans=trans,
                                         check_finite=False)
    return out
