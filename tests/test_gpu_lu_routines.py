"""GPU: the LU family's array routines (:mod:`cusolver_trace.routines.lu`), every CUDA row of
GETRF, GETRS / LU_SOLVE, SOLVE and INV, against torch and LAPACK's ratios (written for torch
2.11, CuPy 14, nvmath-python 1.0 on the H200; never run on a GPU when written).

* every row, every dtype, batches and one matrix: get01 / get02 / get03 < 30, the input
  unchanged, the result a CUDA tensor of A's dtype (CuPy in, CuPy out);
* bitwise where the row makes torch's own calls on the same layout: getrf ``legacy`` at batch 1
  and ``batched`` for batches of n <= 16; inv and solve ``batched`` for batches of n <= 8
  (torch: getrfBatched, then getrsBatched);
* a singular matrix names the same column and batch element as torch's info; NaN raises
  :class:`~cusolver_trace.errors.NonFiniteError`; ``check=False`` makes no synchronizing
  torch call (``torch.cuda.set_sync_debug_mode("error")``);
* the large-matrix inverse rows (getri, getri_rec, getri_X) at n = 1024 and 4096.

Run: ``python3 -m pytest -q -p no:cacheprovider tests/test_gpu_lu_routines.py``.
"""
from __future__ import annotations

import contextlib

import pytest
import torch

import cusolver_trace as ct
from cusolver_trace import checks, ops, routines, sweep
from cusolver_trace.matrices import structured

pytestmark = pytest.mark.gpu

DTYPES = ["float32", "float64", "complex64", "complex128"]
CASES = [(1, ()), (7, ()), (7, (5,)), (32, (3,)), (33, (2, 2)), (100, (3,))]


def _A(n, dtype, batch=(), seed=0):
    return structured("general", n, batch=batch, cond=100.0, dtype=dtype, device="cuda",
                      seed=seed)


def _B(A, k, seed=1):
    g = torch.Generator(device="cuda").manual_seed(seed)
    B = torch.randn(*A.shape[:-1], k, generator=g, dtype=torch.float64, device="cuda")
    return B.to(A.dtype)


def _rows(table, n):
    """The CUDA rows of ``table`` that take order ``n`` (matinvBatched: n <= 32)."""
    return [m for m in table.names if not (m == "matinv_batched" and n > 32)]


@contextlib.contextmanager
def no_torch_sync():
    old = torch.cuda.get_sync_debug_mode()
    torch.cuda.set_sync_debug_mode("error")
    try:
        yield
    finally:
        torch.cuda.set_sync_debug_mode(old)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n,batch", CASES)
def test_inv_every_row(dtype, n, batch):
    A = _A(n, dtype, batch, seed=n)
    A0 = A.clone()
    for m in _rows(routines.INV, n):
        X = routines.inv(A, method=m)
        assert X.is_cuda and X.dtype == A.dtype and X.shape == A.shape, m
        assert checks.get03(A, X) < 30, m
    assert torch.equal(A, A0)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n,batch", CASES)
@pytest.mark.parametrize("left", [True, False])
def test_solve_every_row(dtype, n, batch, left):
    A = _A(n, dtype, batch, seed=n + 1)
    B = _B(A, 3)
    Bs = B if left else B.mT.contiguous()
    A0, B0 = A.clone(), Bs.clone()
    for m in routines.SOLVE.names:
        X = routines.solve(A, Bs, left=left, method=m)
        assert X.shape == Bs.shape and X.is_cuda, m
        r = checks.get02(A, X, Bs) if left else checks.get02(A, X.mH, Bs.mH, True)
        assert r < 30, (m, r)
    assert torch.equal(A, A0) and torch.equal(Bs, B0)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n,batch", CASES)
def test_getrf_getrs_lu_solve_every_row(dtype, n, batch):
    A = _A(n, dtype, batch, seed=n + 2)
    for m in routines.GETRF.names:
        LU, piv, info = routines.getrf(A, method=m)
        assert checks.get01(A, LU, piv) < 30 and (info == 0).all(), m
        assert piv.dtype == torch.int32 and piv.is_cuda
    LU, piv, _ = routines.getrf(A)
    B = _B(A, 2)
    for m in routines.GETRS.names:
        for adjoint in (False, True):
            X = routines.getrs(LU, piv, B, adjoint=adjoint, method=m)
            assert checks.get02(A, X, B, adjoint) < 30, (m, adjoint)
            Y = routines.lu_solve(LU, piv, B.mT, left=False, adjoint=adjoint, method=m)
            assert not Y.is_conj()
            assert checks.get02(A, Y.mH, B.mT.mH, not adjoint) < 30, (m, adjoint, "right")


@pytest.mark.parametrize("dtype", DTYPES)
def test_getrf_bitwise_on_torchs_own_paths(dtype):
    A = _A(40, dtype, seed=3)
    LU, piv, info = routines.getrf(A, method="legacy")
    tLU, tpiv, tinfo = torch.linalg.lu_factor_ex(A)
    assert checks.bitwise_equal(LU, tLU) and torch.equal(piv, tpiv)
    Ab = _A(12, dtype, (6,), seed=4)
    LU, piv, info = routines.getrf(Ab)          # auto: getrfBatched, as torch
    tLU, tpiv, _ = torch.linalg.lu_factor_ex(Ab)
    assert checks.bitwise_equal(LU, tLU) and torch.equal(piv, tpiv)


@pytest.mark.parametrize("dtype", DTYPES)
def test_inv_and_solve_batched_bitwise_torch(dtype):
    """torch 2.11 for batches of n <= 8: getrfBatched, then getrsBatched (the identity, or
    nrhs = 1): the rows ``batched`` make the same two calls."""
    A = _A(8, dtype, (100,), seed=5)
    X = routines.inv(A, method="batched")
    assert checks.bitwise_equal(X, torch.linalg.inv(A)), checks.max_ulp_distance(
        X, torch.linalg.inv(A))
    B = _B(A, 1)
    X = routines.solve(A, B, method="batched")
    assert checks.bitwise_equal(X, torch.linalg.solve(A, B))


@pytest.mark.parametrize("method", [m for m in routines.INV.names])
def test_singular_same_column_and_element_as_torch(method):
    A = _A(16, "float64", (4,), seed=6)
    A[2, :, 4] = 0
    _, tinfo = torch.linalg.inv_ex(A)
    k = int(tinfo[2])
    assert k >= 1 and tinfo[[0, 1, 3]].eq(0).all()
    with pytest.raises(ct.SingularMatrixError, match=rf"Batch element 2\).* U\[{k}, {k}\]"):
        routines.inv(A, method=method)
    routines.inv(A, method=method, check=False)


@pytest.mark.parametrize("method", routines.SOLVE.names)
def test_singular_and_nan_in_solve(method):
    A = _A(9, "float32", (3,), seed=7)
    A[1, :, 0] = 0
    with pytest.raises(ct.SingularMatrixError, match=r"Batch element 1\)"):
        routines.solve(A, _B(A, 1), method=method)
    A = _A(9, "float32", (3,), seed=7)
    A[0, 3, 3] = float("nan")
    # LAPACK's getrf takes a NaN pivot as nonzero (info 0, NaN in X); a library that calls it
    # a zero pivot reports the same batch element as singular
    with pytest.raises((ct.NonFiniteError, ct.SingularMatrixError), match=r"Batch element 0\)"):
        routines.solve(A, _B(A, 1), method=method)


@pytest.mark.parametrize("routine", ["inv", "solve", "getrf"])
def test_check_false_makes_no_synchronizing_torch_call(routine):
    table = {"inv": routines.INV, "solve": routines.SOLVE, "getrf": routines.GETRF}[routine]
    A = _A(24, "float64", (4,), seed=8)
    B = _B(A, 2)
    for m in _rows(table, 24):
        if m == "torch":
            continue
        with no_torch_sync():
            if routine == "inv":
                routines.inv(A, method=m, check=False)
            elif routine == "solve":
                routines.solve(A, B, method=m, check=False)
            else:
                routines.getrf(A, method=m, check=False)
    torch.cuda.synchronize()


@pytest.mark.parametrize("n", [1024, 4096])
@pytest.mark.parametrize("method", ["getri", "getri_rec", "getri_X"])
def test_large_inverse_rows(n, method):
    A = _A(n, "float64", seed=n)
    X = routines.inv(A, method=method)
    ref = torch.linalg.inv(A)
    assert checks.get03(A, X) < 30
    assert checks.rel_fro_diff(X, ref) < 1e-9


def test_matinv_refuses_n_over_32_and_auto_never_picks_it():
    A = _A(33, "float64", (3,))
    with pytest.raises(ValueError, match="order <= 32"):
        routines.inv(A, method="matinv_batched")
    assert routines.lu_method("inv", "auto", 33, 3) == "torch"   # not a measured shape


def test_cupy_in_cupy_out():
    cupy = pytest.importorskip("cupy")
    A = _A(6, "float64", (3,), seed=9)
    a = cupy.from_dlpack(A.clone())
    for m in ("matinv_batched", "getri_batched", "batched", "torch"):
        x = routines.inv(a, method=m)
        assert isinstance(x, cupy.ndarray) and checks.get03(A, torch.from_dlpack(x)) < 30
    LU, piv, info = routines.getrf(a)
    assert isinstance(piv, cupy.ndarray) and piv.dtype == cupy.int32
    x = routines.getrs(LU, piv, cupy.from_dlpack(_B(A, 1)))
    assert isinstance(x, cupy.ndarray)


@pytest.mark.parametrize("op", ["inv", "solve", "lu_factor", "lu_solve"])
def test_sweep_methods_on_cuda(op):
    o = ops.get(op)
    case = sweep.make_case(op, 16, 8, "float64", "cuda:0", nrhs=2)
    names = [m for m in o.methods if m not in ("torch_cusolver",)]
    rows = sweep.measure_case(case, names, repeat=2, warmup=1)
    bad = [r for r in rows if r["status"] != "ok"]
    assert not bad, bad
