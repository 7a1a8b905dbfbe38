"""The LU family's array routines (:mod:`cusolver_trace.routines.lu`) on the CPU: known answers,
every method of every table and dtype judged by LAPACK's ratios, the errors, empty inputs,
broadcasting, the one check, ``auto``'s rules, and properties (hypothesis) of classes of
input: shapes and batches, dtypes, singular, NaN / Inf, read-only and strided inputs, the
input unchanged, ``check=False`` never raising."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cusolver_trace as ct
from cusolver_trace import checks, ops, routines, sweep
from cusolver_trace.errors import NonFiniteError, SingularMatrixError
from cusolver_trace.routines import _lu_check as rlu_check

DTYPES = ["float32", "float64", "complex64", "complex128"]


def general(n, batch=(), dtype="float64", seed=0):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((*batch, n, n))
    if "complex" in dtype:
        a = a + 1j * rng.standard_normal((*batch, n, n))
    return a.astype(dtype)


def rhs(shape, dtype="float64", seed=1):
    rng = np.random.default_rng(seed)
    b = rng.standard_normal(shape)
    if "complex" in dtype:
        b = b + 1j * rng.standard_normal(shape)
    return b.astype(dtype)


# --------------------------------------------------------------------------- known answers
def test_two_by_two_by_hand():
    A = np.array([[2.0, 1.0], [4.0, 1.0]])   # pivot row 2: U = [[4, 1], [0, 0.5]], l21 = 0.5
    LU, piv, info = ct.getrf(A)
    np.testing.assert_array_equal(LU, [[4.0, 1.0], [0.5, 0.5]])
    assert piv.tolist() == [2, 2] and piv.dtype == np.int32 and int(info) == 0
    inverse = np.array([[-0.5, 0.5], [2.0, -1.0]])   # exact in binary
    for method in routines.INV.names:
        np.testing.assert_array_equal(ct.inv(A, method=method), inverse, err_msg=method)
    B = np.array([[3.0], [5.0]])                      # x = [1, 1]
    for method in routines.SOLVE.names:
        np.testing.assert_array_equal(ct.solve(A, B, method=method), [[1.0], [1.0]])
    for method in routines.GETRS.names:
        np.testing.assert_array_equal(ct.getrs(LU, piv, B, method=method), [[1.0], [1.0]])
        # Aᵀ·x = [6, 2] for x = [1, 1]
        np.testing.assert_array_equal(ct.getrs(LU, piv, np.array([[6.0], [2.0]]), adjoint=True,
                                               method=method), [[1.0], [1.0]])


def test_torch_in_torch_out_and_cupy_kind_untouched():
    A = torch.tensor([[2.0, 1.0], [4.0, 1.0]], dtype=torch.float64)
    LU, piv, info = ct.getrf(A)
    assert all(isinstance(t, torch.Tensor) for t in (LU, piv, info))
    assert piv.dtype == torch.int32 and info.dtype == torch.int32 and info.shape == ()
    X = ct.inv(A)
    assert isinstance(X, torch.Tensor) and X.dtype == torch.float64
    assert torch.equal(X, torch.tensor([[-0.5, 0.5], [2.0, -1.0]], dtype=torch.float64))


# --------------------------------------------------------------------------- every method and dtype
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kind", ["numpy", "torch"])
def test_every_method_passes_lapacks_ratios(dtype, kind):
    A = general(12, (3,), dtype, seed=2)
    B = rhs((3, 12, 4), dtype)
    wrap = (lambda x: x) if kind == "numpy" else torch.from_numpy
    a, b = wrap(A), wrap(B)
    for m in routines.GETRF.names:
        LU, piv, info = ct.getrf(a, method=m)
        assert checks.get01(A, LU, piv) < 30, m
        assert type(LU) is type(a) and LU.dtype == a.dtype and (np.asarray(info) == 0).all()
    LU, piv, _ = ct.getrf(a)
    for m in routines.GETRS.names:
        for adjoint in (False, True):
            X = ct.getrs(LU, piv, b, adjoint=adjoint, method=m)
            assert checks.get02(A, X, B, adjoint) < 30, (m, adjoint)
            Y = ct.lu_solve(LU, piv, wrap(B.swapaxes(-1, -2).copy()), left=False,
                            adjoint=adjoint, method=m)
            # X·op(A) = B  <=>  op(A)ᴴ·Xᴴ = Bᴴ
            assert checks.get02(A, np.conj(np.asarray(Y).swapaxes(-1, -2)),
                                np.conj(B), not adjoint) < 30, (m, adjoint, "right")
    for m in routines.SOLVE.names:
        X = ct.solve(a, b, method=m)
        assert checks.get02(A, X, B) < 30 and type(X) is type(b), m
        Y = np.asarray(ct.solve(a, wrap(B.swapaxes(-1, -2).copy()), left=False, method=m))
        assert checks.get02(A, np.conj(Y.swapaxes(-1, -2)), np.conj(B), True) < 30, m
    for m in routines.INV.names:
        X = ct.inv(a, method=m)
        assert checks.get03(A, X) < 30 and X.shape == A.shape and X.dtype == a.dtype, m


def test_unbatched_and_multi_batch_shapes():
    for batch in ((), (1,), (2, 3)):
        A = general(5, batch, seed=3)
        LU, piv, info = ct.getrf(A)
        assert LU.shape == A.shape and piv.shape == (*batch, 5) and info.shape == batch
        assert ct.inv(A).shape == A.shape


def test_broadcast_batches():
    A = general(6, (2, 1), seed=4)
    B = rhs((3, 6, 2))
    X = ct.solve(A, B)
    assert X.shape == (2, 3, 6, 2)
    np.testing.assert_allclose(X, np.linalg.solve(np.broadcast_to(A, (2, 3, 6, 6)), B),
                               rtol=1e-10, atol=1e-10)
    LU, piv, _ = ct.getrf(A[0, 0])
    for m in routines.GETRS.names:
        Y = ct.lu_solve(LU, piv, B, method=m)
        assert Y.shape == (3, 6, 2) and checks.get02(A[0, 0], Y, B) < 30, m
    with pytest.raises(ValueError, match="do not broadcast"):
        ct.solve(general(6, (2,)), rhs((3, 6, 1)))


def test_empty_inputs():
    for A in (np.zeros((0, 0)), np.zeros((3, 0, 0)), np.zeros((0, 4, 4))):
        LU, piv, info = ct.getrf(A)
        assert LU.shape == A.shape and piv.shape == A.shape[:-1] and info.shape == A.shape[:-2]
        assert ct.inv(A).shape == A.shape
    assert ct.solve(general(3), np.zeros((3, 0))).shape == (3, 0)
    t = torch.zeros(2, 0, 0)
    LU, piv, info = ct.getrf(t)
    assert isinstance(piv, torch.Tensor) and piv.shape == (2, 0)


# --------------------------------------------------------------------------- errors and the check
def singular(n=6, batch=(3,), k=3, member=1, dtype="float64"):
    A = general(n, batch, dtype, seed=5)
    A.reshape(-1, n, n)[member, :, k - 1] = 0   # column k zero: U(k, k) = 0 exactly
    return A


@pytest.mark.parametrize("method", routines.INV.names)
def test_singular_names_the_column_and_the_batch_element(method):
    A = singular()
    with pytest.raises(SingularMatrixError, match=r"Batch element 1\).* U\[3, 3\]") as e:
        ct.inv(A, method=method)
    assert e.value.index == 3 and e.value.batch_index == 1
    LU, piv, info = ct.getrf(A, check=False)
    assert info.tolist() == [0, 3, 0]
    with pytest.raises(SingularMatrixError, match="U\\[3, 3\\]"):
        ct.getrf(A)
    with pytest.raises(SingularMatrixError):
        ct.solve(A, rhs((3, 6, 1)), method=method if method in routines.SOLVE.rows else "auto")


def test_unbatched_singular_has_no_batch_element():
    with pytest.raises(SingularMatrixError) as e:
        ct.inv(np.zeros((3, 3)))
    assert e.value.batch_index is None and "Batch" not in str(e.value)


def test_nonfinite_input_raises_and_check_false_returns():
    A = general(5, (2,), seed=6)
    A[1, 2, 3] = np.nan
    for fn in (lambda **k: ct.inv(A, **k), lambda **k: ct.solve(A, rhs((2, 5, 1)), **k),
               lambda **k: ct.getrf(A, **k)):
        with pytest.raises(NonFiniteError) as e:
            fn()
        assert e.value.batch_index == 1
        fn(check=False)
    B = rhs((2, 5, 1))
    B[0, 0, 0] = np.inf
    with pytest.raises(NonFiniteError, match="Batch element 0"):
        ct.solve(general(5, (2,), seed=6), B)


def test_the_check_reads_device_style_tensors():
    """The torch branch of the one check (what runs on CUDA), on CPU tensors."""
    info = torch.tensor([0, 0, 2], dtype=torch.int32)
    x = torch.ones(3, 4, 4)
    with pytest.raises(SingularMatrixError, match="Batch element 2"):
        rlu_check.check_lu("r", info, x, (3,), "what")
    x[1, 0, 0] = float("inf")
    with pytest.raises(NonFiniteError, match="Batch element 1.*what"):
        rlu_check.check_lu("r", torch.zeros(3, dtype=torch.int32), x, (3,), "what")
    rlu_check.check_lu("r", torch.zeros(3, dtype=torch.int32), torch.ones(3, 4, 4), (3,), "what")
    with pytest.raises(NonFiniteError):   # `also`: A holds what the result cannot show
        a = torch.ones(3, 4, 4)
        a[2, 1, 1] = float("nan")
        rlu_check.check_lu("r", torch.zeros(3, dtype=torch.int32), torch.ones(3, 4, 4), (3,), "w",
                   also=a)


def test_bad_arguments():
    A = general(4)
    LU, piv, _ = ct.getrf(A)
    with pytest.raises(ValueError, match="pivot=False runs on CUDA only"):
        ct.getrf(A, pivot=False)
    with pytest.raises(ValueError, match="method must be one of"):
        ct.inv(A, method="magma")
    with pytest.raises(ValueError, match="square"):
        ct.inv(np.zeros((3, 4)))
    with pytest.raises(TypeError):
        ct.inv(np.eye(3, dtype=np.int64))
    with pytest.raises(TypeError, match="check must be True or False"):
        ct.inv(A, check="yes")
    with pytest.raises(TypeError, match="dtype"):
        ct.solve(A, rhs((4, 1), "float32"))
    with pytest.raises(ValueError, match="B must have shape"):
        ct.solve(A, rhs((5, 1)))
    with pytest.raises(ValueError, match=r"\(\.\.\., nrhs, 4\)"):
        ct.solve(A, rhs((4, 2)).T[:1, :3], left=False)
    with pytest.raises(ValueError, match="pivots must have shape"):
        ct.getrs(LU, piv[:3], rhs((4, 1)))
    with pytest.raises(TypeError, match="pivots must be integers"):
        ct.getrs(LU, piv.astype(np.float64), rhs((4, 1)))
    with pytest.raises(ValueError, match="pivots must lie in 1..4"):
        ct.getrs(LU, np.array([0, 2, 3, 4], np.int32), rhs((4, 1)))
    with pytest.raises(TypeError, match="pivots: expected"):
        ct.getrs(LU, "1234", rhs((4, 1)))
    with pytest.raises(ValueError, match="order <= 32, got n = 33"):
        ct.inv(general(33), method="matinv_batched")
    with pytest.raises(ValueError, match="lu_method|routine must be one of"):
        routines.lu_method("potrf", "auto", 4)
    # int64 pivots (NumPy's default) and torch int64 are taken
    ct.getrs(LU, piv.astype(np.int64), rhs((4, 1)))
    ct.getrs(torch.from_numpy(LU), torch.from_numpy(piv).long(), torch.from_numpy(rhs((4, 1))))


# --------------------------------------------------------------------------- tables and auto
def test_auto_rules():
    """auto picks a faster row only where the H200 measured one faster (routines/lu.py)."""
    r = routines.lu_method
    assert r("inv", "auto", 8, 10000) == "torch"            # matinvBatched 2.2x torch there
    assert r("inv", "auto", 32, 1000) == "matinv_batched"
    assert r("inv", "auto", 32, 1000, "float32") == "torch"   # float32 not measured
    assert r("inv", "auto", 128, 100) == "getri_batched"
    assert r("inv", "auto", 512, 8) == "torch"
    assert r("inv", "auto", 8192, 1) == "getri_rec" and r("inv", "auto", 4096, 1) == "torch"
    assert r("inv", "auto", 4096, 1, "float64", "cpu") == "legacy"
    assert r("solve", "auto", 8, 10000) == "torch" and r("solve", "auto", 8, 1) == "torch"
    assert r("solve", "auto", 128, 100) == "batched" and r("solve", "auto", 64, 100) == "torch"
    assert r("getrf", "auto", 100, 1) == "legacy" and r("getrf", "auto", 16, 50) == "batched"
    assert r("getrf", "auto", 100, 50) == "torch"
    assert r("getrs", "auto", 100, 50) == "torch" and r("lu_solve", "auto", 9, 1, "float32",
                                                        "cpu") == "legacy"


def test_tables_rows_name_their_routine_and_count():
    for table in (routines.GETRF, routines.GETRS, routines.LU_SOLVE, routines.SOLVE,
                  routines.INV):
        for name, row in table.rows.items():
            assert row.cuda is not None and row.cpu is not None, (table.operation, name)
            assert row.flops in checks.FLOP_ROUTINES
            assert row.routine_name("complex64", True) and row.routine_name("float64", False)
    assert routines.INV.row("getri").routine_name("float64", True) == (
        "cusolverDnDgetrf + cusolverDnXtrtri + cublasDtrsm")
    assert routines.LU_SOLVE.rows is routines.GETRS.rows


def test_a_replaced_rule_set_is_used_and_restored():
    old = routines.INV.auto
    try:
        routines.INV.auto = {"all: getri": routines.AutoRule("getri")}
        assert routines.lu_method("inv", "auto", 8, 10000) == "getri"
    finally:
        routines.INV.auto = old
    assert routines.lu_method("inv", "auto", 8, 10000) == "torch"


# --------------------------------------------------------------------------- the ops' sweep methods
@pytest.mark.parametrize("op", ["lu_factor", "lu_solve", "solve", "inv"])
def test_sweep_methods_run_the_routines(op):
    o = ops.get(op)
    case = sweep.make_case(op, 9, 3, "float64", "cpu", nrhs=2)
    table = {"lu_factor": routines.GETRF, "lu_solve": routines.LU_SOLVE,
             "solve": routines.SOLVE, "inv": routines.INV}[op]
    assert set(table.names) - {"torch"} <= set(o.methods)
    rows = sweep.measure_case(case, [m for m in table.names if m != "torch"], repeat=1,
                              warmup=0)
    for r in rows:
        assert r["status"] == "ok" and r["ratio"] < 30, r
        if r["method"] != "torch":
            assert r["checked"] is (op != "lu_solve" or None), r
    auto = next(r for r in rows if r["method"] == "auto")
    assert auto["resolved"] == "legacy"


# --------------------------------------------------------------------------- properties
_dtype = st.sampled_from(DTYPES)
_batch = st.sampled_from([(), (1,), (3,), (2, 2)])


@st.composite
def matrices(draw, square=True):
    n = draw(st.integers(1, 7))
    batch = draw(_batch)
    dtype = draw(_dtype)
    A = general(n, batch, dtype, seed=draw(st.integers(0, 2**16)))
    kind = draw(st.sampled_from(["plain", "readonly", "fortran", "strided", "torch"]))
    if kind == "readonly":
        A.setflags(write=False)
    elif kind == "fortran":
        A = np.asfortranarray(A)
    elif kind == "strided":
        big = np.zeros((*batch, n, 2 * n), dtype=dtype)
        big[..., ::2] = A
        A = big[..., ::2]
    elif kind == "torch":
        A = torch.from_numpy(A)
    return A


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(A=matrices(), method=st.sampled_from(routines.INV.names))
def test_property_inverse_right_and_input_unchanged(A, method):
    before = np.asarray(A).copy()
    X = ct.inv(A, method=method)
    assert checks.get03(np.asarray(A), X) < 30
    np.testing.assert_array_equal(np.asarray(A), before)
    assert type(X) is type(A) and tuple(X.shape) == tuple(A.shape)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(A=matrices(), k=st.integers(0, 3), method=st.sampled_from(routines.SOLVE.names),
       left=st.booleans())
def test_property_solve_right_and_inputs_unchanged(A, k, method, left):
    a = np.asarray(A)
    n = a.shape[-1]
    B = rhs((*a.shape[:-2], n, k) if left else (*a.shape[:-2], k, n), str(a.dtype))
    if isinstance(A, torch.Tensor):
        B = torch.from_numpy(B)
    before_a, before_b = a.copy(), np.asarray(B).copy()
    X = ct.solve(A, B, left=left, method=method)
    assert tuple(X.shape) == tuple(B.shape)
    if k:
        Xn = np.asarray(X)
        ratio = (checks.get02(a, Xn, np.asarray(B)) if left else
                 checks.get02(a, np.conj(Xn.swapaxes(-1, -2)),
                              np.conj(np.asarray(B).swapaxes(-1, -2)), True))
        assert ratio < 30
    np.testing.assert_array_equal(np.asarray(A), before_a)
    np.testing.assert_array_equal(np.asarray(B), before_b)


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(A=matrices(), k=st.integers(1, 4), member=st.integers(0, 3), poison=st.sampled_from(
    ["zero column", "nan", "inf"]), routine=st.sampled_from(["inv", "solve", "getrf"]),
    data=st.data())
def test_property_bad_inputs_raise_documented_errors_or_never_with_check_false(
        A, k, member, poison, routine, data):
    a = np.asarray(A).copy(order="C")
    n = a.shape[-1]
    flat = a.reshape(-1, n, n)   # a view of a
    m = member % flat.shape[0]
    col = k % n
    if poison == "zero column":
        flat[m, :, col] = 0
    else:
        flat[m, data.draw(st.integers(0, n - 1)), col] = np.nan if poison == "nan" else np.inf
    table = {"inv": routines.INV, "solve": routines.SOLVE, "getrf": routines.GETRF}[routine]
    method = data.draw(st.sampled_from(table.names))
    B = rhs((*a.shape[:-2], n, 1), str(a.dtype))

    def call(check):
        if routine == "inv":
            return ct.inv(a, check=check, method=method)
        if routine == "solve":
            return ct.solve(a, B, check=check, method=method)
        return ct.getrf(a, check=check, method=method)

    before = a.copy()
    with np.errstate(all="ignore"):
        call(False)          # never raises for bad data
        try:
            out = call(True)
        except SingularMatrixError as e:
            assert poison == "zero column" or np.isnan(a).any() or np.isinf(a).any()
            assert 1 <= e.index <= n
            assert e.batch_index == (m if a.ndim > 2 else None)
        except NonFiniteError as e:
            assert poison != "zero column"
            assert e.batch_index == (m if a.ndim > 2 else None)
        else:   # only an infinite entry can give a finite result (1 / inf = 0): then it is one
            res = out[0] if isinstance(out, tuple) else out
            assert poison == "inf" and np.isfinite(np.asarray(res)).all(), (routine, method)
    np.testing.assert_array_equal(a, before)
