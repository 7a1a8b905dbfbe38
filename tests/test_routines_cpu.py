"""Array-level routines on the CPU (LAPACK through scipy): known answers, every dtype, errors."""
from __future__ import annotations

import re

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import cusolver_trace as ct
from cusolver_trace import checks, routines
from cusolver_trace.matrices import spd

DTYPES = ["float32", "float64", "complex64", "complex128"]


def test_two_by_two_hand_computed():
    # A = [[4, 2], [2, 5]]  ->  L = [[2, 0], [1, 2]]  (2*2 = 4, 1*2 = 2, 1 + 4 = 5)
    A = np.array([[4.0, 2.0], [2.0, 5.0]])
    L, info = routines.potrf(A)
    assert info == 0
    np.testing.assert_array_equal(L, [[2.0, 0.0], [1.0, 2.0]])
    U, _ = routines.potrf(A, upper=True)
    np.testing.assert_array_equal(U, [[2.0, 1.0], [0.0, 2.0]])
    # A^-1 = [[5, -2], [-2, 4]] / 16, exact in binary
    for method in ("potrs", "potri"):
        np.testing.assert_array_equal(routines.cholesky_inverse(L, method=method),
                                      np.array([[5.0, -2.0], [-2.0, 4.0]]) / 16)
    np.testing.assert_array_equal(routines.trtri(L), [[0.5, 0.0], [-0.25, 0.5]])


def test_classic_3x3_exact():
    A = torch.tensor([[4.0, 12, -16], [12, 37, -43], [-16, -43, 98]], dtype=torch.float64)
    L, info = routines.potrf(A)
    assert isinstance(L, torch.Tensor) and int(info) == 0
    torch.testing.assert_close(L, torch.tensor([[2.0, 0, 0], [6, 1, 0], [-8, 5, 3]], dtype=torch.float64),
                               rtol=0, atol=0)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("upper", [False, True])
def test_lapack_ratios_every_dtype(dtype, upper):
    A = spd(40, batch=(3,), cond=1e3, dtype=dtype, seed=3)
    L, info = routines.potrf(A, upper=upper)
    assert L.dtype == A.dtype and L.shape == A.shape and (info == 0).all()
    assert checks.pot01(A, L, upper=upper) < 30
    B = torch.randn(3, 40, 5, dtype=torch.float64, generator=torch.Generator().manual_seed(1)).to(A.dtype)
    X = routines.potrs(L, B, upper=upper)
    assert X.shape == B.shape and checks.pot02(A, X, B) < 30
    for method in ("potrs", "potri"):
        Ainv = routines.cholesky_inverse(L, upper=upper, method=method)
        assert checks.pot03(A, Ainv) < 30, method
    # potri's inverse is exactly Hermitian (mirror of the computed triangle)
    assert checks.asymmetry(routines.potri(L, upper=upper)) == 0


@pytest.mark.parametrize("dtype", DTYPES)
def test_numpy_in_numpy_out_matches_scipy(dtype):
    import scipy.linalg

    A = spd(17, dtype=dtype, seed=5).numpy()
    L, info = routines.potrf(A)
    assert isinstance(L, np.ndarray) and L.dtype == A.dtype and info.shape == ()
    np.testing.assert_array_equal(L, scipy.linalg.cholesky(A, lower=True))


def test_only_declared_triangle_is_read():
    A = spd(9, batch=(2,), seed=1)
    garbage = torch.randn(2, 9, 9, dtype=torch.float64)
    for upper in (False, True):
        keep = A.triu() if upper else A.tril()
        noisy = keep + (garbage.tril(-1) if upper else garbage.triu(1))
        noisy[0, 0, -1 if not upper else 0] = float("nan") if not upper else noisy[0, 0, 0]
        L1, _ = routines.potrf(A, upper=upper)
        L2, _ = routines.potrf(noisy, upper=upper)
        assert checks.bitwise_equal(L1, L2)
        garbage_factor = L1 + (garbage.tril(-1) if upper else garbage.triu(1))
        assert checks.bitwise_equal(routines.cholesky_inverse(L1, upper=upper, method="potri"),
                                    routines.cholesky_inverse(garbage_factor, upper=upper, method="potri"))


def test_not_positive_definite_names_minor_and_batch_element():
    A = spd(12, batch=(2, 3), seed=2)
    A[1, 2, 7, 7] = -5.0  # leading minor of order 8 of batch element (1, 2) = flat 5
    with pytest.raises(ct.NotPositiveDefiniteError) as e:
        routines.potrf(A)
    assert e.value.order == 8 and e.value.batch_index == 5
    assert "leading minor of order 8" in str(e.value) and "Batch element 5" in str(e.value)
    assert isinstance(e.value, np.linalg.LinAlgError)
    L, info = routines.potrf(A, check=False)
    expected = torch.zeros(2, 3, dtype=torch.int32)
    expected[1, 2] = 8
    assert torch.equal(info, expected)


def test_unbatched_message_has_no_batch_number():
    A = -torch.eye(3, dtype=torch.float64)
    with pytest.raises(ct.NotPositiveDefiniteError, match=r"dpotrf: The factorization.*order 1 "):
        routines.potrf(A)


def test_nan_input_reported_as_failure():
    with pytest.raises(ct.NotPositiveDefiniteError):
        routines.potrf(np.full((2, 2), np.nan))


@pytest.mark.parametrize("method", ["potrs", "potri"])
def test_singular_factor_flagged(method):
    L = np.zeros((3, 3))
    with pytest.raises(ct.SingularFactorError, match="diagonal element 1 is zero"):
        routines.cholesky_inverse(L, method=method)
    L = np.eye(3, dtype=np.complex128)
    L[2, 2] = 0
    with pytest.raises(ct.SingularFactorError, match="diagonal element 3"):
        routines.cholesky_inverse(L, method=method)


@pytest.mark.parametrize("bad", [torch.float16, torch.bfloat16, torch.int64, torch.bool])
def test_unsupported_dtypes(bad):
    with pytest.raises(TypeError, match="float32, float64, complex64, complex128"):
        routines.potrf(torch.ones(3, 3, dtype=bad))


def test_shape_errors():
    with pytest.raises(ValueError, match="square"):
        routines.potrf(np.ones((3, 4)))
    with pytest.raises(ValueError, match="1-D"):
        routines.potrf(np.ones(3))
    L = np.eye(3)
    with pytest.raises(ValueError, match="rows"):
        routines.potrs(L, np.ones((4, 1)))
    with pytest.raises(ValueError, match="broadcast"):
        routines.potrs(np.stack([L, L]), np.ones((3, 3, 1)))
    with pytest.raises(TypeError, match="dtype"):
        routines.potrs(L, np.ones((3, 1), dtype=np.float32))
    with pytest.raises(TypeError, match="numpy.ndarray"):
        routines.potrf("not an array")
    with pytest.raises(ValueError, match="method"):
        routines.cholesky_inverse(L, method="magic")
    with pytest.raises(ValueError, match="CUDA"):
        routines.cholesky_inverse(L, method="trsm")


def test_inputs_not_modified_and_views():
    A = spd(10, batch=(2,), dtype="complex128", seed=4)
    Ah = A.mH  # A is Hermitian: same matrix, a transposed + conj view
    before, strides = A.clone(), A.stride()
    L, _ = routines.potrf(A)
    assert torch.equal(A, before) and A.stride() == strides
    L2, _ = routines.potrf(Ah)
    assert checks.bitwise_equal(L, L2)
    Lc, _ = routines.potrf(A.conj().resolve_conj().conj())  # conj of a conj view
    assert checks.bitwise_equal(L, Lc)
    big = torch.zeros(2, 20, 20, dtype=A.dtype)
    big[:, ::2, ::2] = A  # strided, non-contiguous slice
    Ls, _ = routines.potrf(big[:, ::2, ::2])
    assert checks.bitwise_equal(L, Ls)
    Lbefore = L.clone()
    routines.cholesky_inverse(L)
    routines.potrs(L, torch.ones(2, 10, 1, dtype=A.dtype))
    assert torch.equal(L, Lbefore)


def test_n_n_and_1_n_n_identical():
    A = spd(8, seed=9)
    L1, i1 = routines.potrf(A)
    L2, i2 = routines.potrf(A[None])
    assert L2.shape == (1, 8, 8) and i2.shape == (1,) and i1.shape == ()
    assert checks.bitwise_equal(L1, L2[0])


def test_empty_inputs():
    L, info = routines.potrf(torch.zeros(0, 0))
    assert L.shape == (0, 0) and info.shape == ()
    L, info = routines.potrf(np.zeros((0, 4, 4)))
    assert L.shape == (0, 4, 4) and info.shape == (0,)
    assert routines.cholesky_inverse(np.zeros((2, 0, 0))).shape == (2, 0, 0)
    assert routines.potrs(np.eye(3), np.zeros((3, 0))).shape == (3, 0)


def test_gpu_call_without_gpu_says_what_is_missing(monkeypatch):
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    from cusolver_trace.raw import _load, cusolver

    _load.torch_cuda.cache_clear()
    with pytest.raises(ct.GPUUnavailableError, match="no CUDA GPU"):
        cusolver.create()


def test_method_fused_on_a_cpu_input_raises_in_every_routine():
    """``method="fused"`` is a GPU-only row of each table: on a CPU input it raises, while
    the rows of cuSOLVER's entry points run LAPACK in their CPU column."""
    import numpy as np

    import cusolver_trace as ct

    A = np.array([[4.0, 2.0], [2.0, 3.0]])
    with pytest.raises(ValueError, match="CUDA input"):
        ct.potrf(A, method="fused")
    L, _ = ct.potrf(A, method="X")                      # LAPACK dpotrf, as documented
    with pytest.raises(ValueError, match="CUDA input"):
        ct.potrs(L, np.ones((2, 1)), method="fused")
    with pytest.raises(ValueError, match="CUDA input"):
        ct.cholesky_inverse(L, method="fused")


def test_small_lapack_calls_run_on_one_blas_thread(monkeypatch):
    """Up to the work of n = 256, LAPACK runs with one BLAS thread (a threaded OpenBLAS
    contends with torch's OpenMP pool there); above it, and from threads other than the main
    one (the count is process-wide), the process's setting is kept; the setting is restored
    after the call, and a user's own limit is respected (review findings)."""
    import threading

    threadpoolctl = pytest.importorskip("threadpoolctl")
    from cusolver_trace.backends import cpu

    def blas_threads():
        return [i["num_threads"] for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"]

    seen = []
    real = cpu._fn

    def spy(dtype, base):
        fn = real(dtype, base)

        def wrapped(*a, **kw):
            seen.append((base, a[0].shape[-1], a[1].shape[-1] if base == "potrs" else None,
                         threading.current_thread() is threading.main_thread(),
                         set(blas_threads())))
            return fn(*a, **kw)
        return wrapped

    monkeypatch.setattr(cpu, "_fn", spy)
    before = blas_threads()
    small, big = cpu.SINGLE_THREAD_MAX_N, cpu.SINGLE_THREAD_MAX_N + 1
    with threadpoolctl.threadpool_limits(2, user_api="blas"):   # a threaded pool, as by default
        for n in (small, big):
            X, info = cpu.potri(np.linalg.cholesky(np.eye(n) * 4.0), False)
            np.testing.assert_allclose(X, np.eye(n) / 4.0)   # L = 2I: A = 4I
            assert int(info) == 0
        cpu.potrs(np.eye(64) * 2.0, np.ones((64, 4)), False)        # 64² · 4: small work
        cpu.potrs(np.eye(64) * 2.0, np.ones((64, 5000)), False)     # 64² · 5000 > 256³
        t = threading.Thread(target=cpu.potri, args=(np.eye(8) * 2.0, False))
        t.start()
        t.join()
        assert set(blas_threads()) == {2}   # restored
    with threadpoolctl.threadpool_limits(1, user_api="blas"):     # the user's own limit
        cpu.potri(np.eye(8) * 2.0, False)
        assert set(blas_threads()) == {1}
    assert blas_threads() == before
    got = {(b, n, k, main): t for b, n, k, main, t in seen}
    assert got[("potri", small, None, True)] == {1}
    assert got[("potri", big, None, True)] == {2}
    assert got[("potrs", 64, 4, True)] == {1}
    assert got[("potrs", 64, 5000, True)] == {2}
    assert got[("potri", 8, None, False)] == {2}   # a worker thread: not touched
    assert got[("potri", 8, None, True)] == {1}    # under the user's limit


@pytest.mark.parametrize("method", ["auto", "potri", "fused"])
@pytest.mark.parametrize("n,batch,dtype,device,err", [
    (-1, 1, "float64", "cuda", ValueError), ("8", 1, "float64", "cuda", ValueError),
    (8.5, 1, "float64", "cuda", ValueError), (True, 1, "float64", "cuda", ValueError),
    (8, -5, "float64", "cuda", ValueError), (8, 1, "float64", "gpu", ValueError),
    (8, 1, "float64", None, ValueError), (8, 1, "float16", "cuda", TypeError),
    (8, 1, "int32", "cpu", TypeError)])
def test_resolve_method_validates_its_arguments(method, n, batch, dtype, device, err):
    """Every method, auto or not, rejects a bad n / batch / device / dtype the same way
    (fresh-user report: only auto checked the dtype, and n = -1 gave a LookupError)."""
    with pytest.raises(err):
        routines.resolve_method(method, n, batch, dtype, device)


_any_value = st.one_of(st.integers(-10**6, 10**6), st.floats(allow_nan=True, allow_infinity=True),
                       st.text(max_size=8), st.none(), st.booleans())


@settings(max_examples=200, deadline=None)
@given(method=st.sampled_from(routines.METHOD_NAMES), n=_any_value, batch=_any_value,
       dtype=st.one_of(st.sampled_from(["float32", "float64", "complex64", "complex128",
                                        "float16", "int32", "bfloat16"]), _any_value),
       device=st.one_of(st.sampled_from(["cuda", "cpu", "cuda:1", "gpu", "mps", ""]), _any_value))
def test_property_resolve_method_answers_or_raises_a_documented_error(method, n, batch, dtype,
                                                                      device):
    """Any arguments: a method name of INVERSE_METHODS, or ValueError / TypeError /
    LookupError (documented); valid ints and devices are never rejected for their type."""
    args = (method, n, batch, dtype, device)
    valid = (isinstance(n, int) and not isinstance(n, bool) and n >= 0
             and isinstance(batch, int) and not isinstance(batch, bool) and batch >= 0
             and isinstance(device, str) and device.split(":")[0] in ("cuda", "cpu")
             and isinstance(dtype, str)   # a name, or its LAPACK prefix letter (documented)
             and dtype in ("float32", "float64", "complex64", "complex128", "s", "d", "c", "z"))
    try:
        got = routines.resolve_method(*args)
    except (ValueError, TypeError, LookupError) as exc:
        if valid:   # valid arguments are refused only for a GPU-only method on the CPU
            assert isinstance(exc, ValueError) and "runs on the GPU" in str(exc), exc
            assert device.startswith("cpu") and routines.INVERSE_METHODS[method].gpu_only
        return
    assert valid and got in routines.INVERSE_METHODS
    assert (method, n, batch, dtype, device) == args   # arguments untouched


@settings(max_examples=200, deadline=None)
@given(method=st.one_of(st.sampled_from(list(routines.INVERSE_METHODS)), _any_value),
       device=st.one_of(st.sampled_from([None, "cuda", "cpu"]), _any_value),
       n_min=_any_value, dtypes=st.one_of(st.none(), st.lists(st.sampled_from(
           ["float64", "float32", "int8"]), max_size=3), _any_value))
def test_property_auto_rule_is_valid_or_refused(method, device, n_min, dtypes):
    """An AutoRule is built only from values that can match (else ValueError / TypeError);
    a list of dtypes given is left as it was. A rule naming a method that is not a row of
    the table it is put in is refused when the table uses it (ValueError, naming it)."""
    before = list(dtypes) if isinstance(dtypes, list) else dtypes
    try:
        rule = routines.AutoRule(method, device=device, n_min=n_min, dtypes=dtypes)
    except (ValueError, TypeError):
        assert (dtypes == before) if isinstance(dtypes, list) else True
        return
    assert isinstance(rule.method, str) and rule.device in (None, "cuda", "cpu")
    if rule.method not in routines.INVERSE_METHODS:
        table = routines.Table("t", routines.INVERSE_METHODS, {"r": rule})
        with pytest.raises(ValueError, match=re.escape(repr(rule.method))):
            table.resolve("auto", 8, 1, "float64", "cpu")
        return
    assert isinstance(rule.n_min, int) and rule.n_min >= 0
    assert rule.dtypes is None or set(rule.dtypes) <= {"float64", "float32"}
    if isinstance(dtypes, list):
        assert dtypes == before
