"""GPU: raw cuSOLVER calls and the array routines against torch, bit for bit (H200)."""
from __future__ import annotations

import threading

import pytest
import torch

import cusolver_trace as ct
from cusolver_trace import checks, routines
from cusolver_trace.backends import cuda as cuda_backend
from cusolver_trace.backends._context import handle_count, on_device
from cusolver_trace.matrices import spd
from cusolver_trace.raw import cusolver

pytestmark = pytest.mark.gpu

DTYPES = ["float32", "float64", "complex64", "complex128"]
SIZES = [1, 2, 33, 256, 1024]


def _A(n, dtype, batch=(), seed=0):
    return spd(n, batch=batch, cond=100.0, dtype=dtype, device="cuda", seed=seed)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("n", SIZES)
def test_potrf_X_and_legacy_bitwise_equal_torch(dtype, upper, n):
    A = _A(n, dtype, seed=n)
    expected = torch.linalg.cholesky(A, upper=upper)
    for api in ("X", "legacy"):
        L, info = routines.potrf(A, upper=upper, method=api)
        assert int(info) == 0
        assert checks.bitwise_equal(L, expected), (api, checks.max_ulp_distance(L, expected))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("n", SIZES)
def test_xpotrs_identity_bitwise_equal_torch_cholesky_inverse(dtype, upper, n):
    A = _A(n, dtype, seed=n + 1)
    F = torch.linalg.cholesky(A, upper=upper)
    expected = torch.cholesky_inverse(F, upper=upper)
    got = routines.cholesky_inverse(F, upper=upper, method="potrs")
    assert checks.bitwise_equal(got, expected), checks.max_ulp_distance(got, expected)
    # potri: a different algorithm; judged by LAPACK's ratio, and exactly Hermitian
    Ainv = routines.potri(F, upper=upper)
    assert checks.pot03(A, Ainv) < 30
    assert checks.asymmetry(Ainv) == 0
    assert checks.rel_fro_diff(Ainv, expected) < 1e3 * ct.dtype_info(dtype).lapack_eps * 100


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("upper", [False, True])
def test_potrf_batched_and_potrs_bitwise(dtype, upper):
    A = _A(48, dtype, batch=(5,), seed=7)
    L, info = routines.potrf(A, upper=upper)  # auto: potrfBatched, as torch
    assert checks.bitwise_equal(L, torch.linalg.cholesky(A, upper=upper))
    assert (info == 0).all() and info.device == A.device
    B = torch.randn(1, 48, 3, dtype=torch.float64, device="cuda").to(A.dtype)
    X = routines.potrs(L[:1], B, upper=upper)
    assert checks.bitwise_equal(X, torch.cholesky_solve(B, L[:1], upper=upper))
    x1 = routines.potrs(L, B[..., :1].expand(5, 48, 1), upper=upper, method="batched")
    assert checks.pot02(A, x1, B[..., :1].expand(5, 48, 1)) < 30


def test_non_pd_same_minor_as_torch():
    A = _A(64, "float64")
    A[11 - 1, 11 - 1] = -1.0
    _, tinfo = torch.linalg.cholesky_ex(A)
    for api in ("X", "legacy"):
        with pytest.raises(ct.NotPositiveDefiniteError) as e:
            routines.potrf(A, method=api)
        assert e.value.order == int(tinfo) == 11
    Ab = _A(16, "float32", batch=(3,))
    Ab[2, 4, 4] = -3.0
    _, tinfo = torch.linalg.cholesky_ex(Ab)
    _, info = routines.potrf(Ab, check=False)
    assert torch.equal(info, tinfo)
    with pytest.raises(ct.NotPositiveDefiniteError, match=r"Batch element 2\): .*order 5"):
        routines.potrf(Ab)


def test_nan_input_is_a_failure_on_gpu():
    A = torch.full((2, 2), float("nan"), dtype=torch.float64, device="cuda")
    _, info = routines.potrf(A, check=False)
    assert int(info) > 0


def test_singular_factor_on_gpu():
    for dtype in (torch.float64, torch.complex128):
        Z = torch.zeros(4, 4, dtype=dtype, device="cuda")
        for method in ("potrs", "potri"):
            with pytest.raises(ct.SingularFactorError, match="diagonal element 1"):
                routines.cholesky_inverse(Z, method=method)


def test_inputs_unchanged_and_views_on_gpu():
    A = _A(20, "complex128", batch=(2,))
    before = A.clone()
    L, _ = routines.potrf(A.mH)  # a transposed conj view of the same Hermitian matrix
    assert torch.equal(A, before)
    assert checks.bitwise_equal(L, torch.linalg.cholesky(A))
    L2, _ = routines.potrf(A.conj().resolve_conj().conj())
    assert checks.bitwise_equal(L, L2)


def test_cupy_in_cupy_out():
    import cupy as cp   # the gpu marker already skipped where the extra is not installed
    A = _A(32, "float64")
    a = cp.from_dlpack(A)
    L, info = routines.potrf(a)
    assert isinstance(L, cp.ndarray) and int(info) == 0
    assert checks.bitwise_equal(torch.from_dlpack(L), torch.linalg.cholesky(A))


def test_runs_on_torch_current_stream():
    A = _A(128, "float64")
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        L, _ = routines.potrf(A, method="legacy")
        with on_device(A.device) as ctx:
            assert cusolver.getStream(ctx.solver) == s.cuda_stream
    s.synchronize()
    assert checks.bitwise_equal(L, torch.linalg.cholesky(A))


def test_handles_reused_and_memory_stable():
    A = _A(8, "float64")
    routines.potrf(A)
    routines.cholesky_inverse(torch.linalg.cholesky(A))
    # warm-up with the very calls of the loop: workspaces sized for them on this stream (a
    # buffer an earlier test left at another size or stream is replaced here, not in the loop)
    for _ in range(20):
        routines.potrf(A, check=False)
        routines.cholesky_inverse(A, check=False)
    n_ctx = handle_count()
    torch.cuda.synchronize()
    base = torch.cuda.memory_allocated()
    for _ in range(2000):
        routines.potrf(A, check=False)
        routines.cholesky_inverse(A, check=False)
    torch.cuda.synchronize()
    assert handle_count() == n_ctx
    assert torch.cuda.memory_allocated() == base


def test_two_threads_two_streams():
    out, errors = {}, []

    def work(k):
        try:
            s = torch.cuda.Stream()
            with torch.cuda.stream(s):
                A = _A(200, "float64", seed=k)
                for _ in range(20):
                    L, _ = routines.potrf(A)
                    inv = routines.cholesky_inverse(L)
                s.synchronize()
                out[k] = (checks.bitwise_equal(L, torch.linalg.cholesky(A)),
                          checks.bitwise_equal(inv, torch.cholesky_inverse(L)))
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(k,)) for k in (1, 2)]
    [t.start() for t in threads]
    [t.join() for t in threads]
    assert not errors, errors
    assert out == {1: (True, True), 2: (True, True)}


@pytest.mark.parametrize("upper", [False, True])
def test_trtri_and_trsm_inverse(upper):
    A = _A(300, "float64")
    F = torch.linalg.cholesky(A, upper=upper)
    Finv = routines.trtri(F, upper=upper)
    I = torch.eye(300, dtype=torch.float64, device="cuda")
    assert float((Finv @ F - I).abs().max()) < 1e-10
    for batched in (False, True):
        X, _ = cuda_backend.trsm_identity_inverse(F[None], upper, batched)
        assert checks.pot03(A, X[0]) < 30
