"""GPU: the GEMM inverse plan on several streams, the rec plans on streams, spd_inverse."""
from __future__ import annotations

import pytest
import torch

import cusolver_trace as ct
from cusolver_trace import checks, plans, routines
from cusolver_trace.matrices import spd

pytestmark = pytest.mark.gpu

DTYPES = ["float32", "float64", "complex64", "complex128"]


@pytest.fixture
def blocking(monkeypatch):
    """A private copy of BLOCKING to tune in a test."""
    table = {k: (dict(v) if isinstance(v, dict) else v) for k, v in plans.BLOCKING.items()}
    table["gemm_lauum"] = {k: dict(v) for k, v in plans.BLOCKING["gemm_lauum"].items()}
    monkeypatch.setattr(plans, "BLOCKING", table)
    return table


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("n", [1, 7, 300, 1500])
@pytest.mark.parametrize("opts", [dict(), dict(streams=1), dict(fill="kernel"),
                                  dict(streams=3, trmm_kernel="gemm", lauum_diag="trmm"),
                                  dict(trtri_scratch=True),
                                  dict(trtri_batched=True, streams=3, fill="kernel")])
def test_gemm_lauum_pot03(blocking, dtype, upper, n, opts):
    blocking["gemm_lauum"][dtype].update(trtri_base=128, trmm_base=256, lauum_block=192, **opts)
    A = spd(n, cond=1e4, dtype=dtype, device="cuda", seed=n, batch=(2,))
    L = torch.linalg.cholesky(A, upper=upper)
    X = ct.cholesky_inverse(L, upper, method="gemm_lauum")
    assert X.shape == A.shape and X.dtype == A.dtype and torch.equal(X, X.mH)
    assert float(checks.pot03(A, X, upper)) < 30


def test_gemm_lauum_on_a_side_stream_is_joined_before_it_returns(blocking):
    """Called on a non-default stream: the plan forks from and joins back to that stream, so
    work queued after it on the same stream sees the finished inverse."""
    blocking["gemm_lauum"]["float64"].update(trtri_base=256, lauum_block=256, streams=3)
    A = spd(2000, cond=1e3, dtype="float64", device="cuda")
    L = torch.linalg.cholesky(A)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            X = ct.cholesky_inverse(L, method="gemm_lauum", check=False)
            R = A @ X
    s.synchronize()
    assert (R - torch.eye(2000, dtype=A.dtype, device="cuda")).abs().max() < 1e-8


@pytest.mark.parametrize("dtype", ["float64", "complex64"])
@pytest.mark.parametrize("upper", [False, True])
def test_rec_trtri_lauum_on_streams_with_gemm_for_syrk(blocking, dtype, upper):
    blocking.update(streams=2, syrk_kernel="gemm", syrk_base=256, trmm_base=256, trtri_base=256,
                    lauum_base={k: 256 for k in DTYPES})
    A = spd(1200, cond=1e4, dtype=dtype, device="cuda", seed=1)
    L = torch.linalg.cholesky(A, upper=upper)
    X = ct.cholesky_inverse(L, upper, method="rec_trtri_lauum")
    assert float(checks.pot03(A, X, upper)) < 30


def test_gemm_lauum_emulated_float64():
    from cusolver_trace.raw import cublas_modes

    why = cublas_modes.emulation_available()   # the one documented reason, asked for by name
    if why is not None:
        pytest.skip(why)
    A = spd(1024, cond=1e3, dtype="float64", device="cuda")
    L = torch.linalg.cholesky(A)
    X = ct.cholesky_inverse(L, method="gemm_lauum_emu")
    assert float(checks.pot03(A, X)) < 30
    # the shared handle is back to its own math mode: a plain method still runs natively
    Y = ct.cholesky_inverse(L, method="gemm_lauum")
    assert float(checks.pot03(A, Y)) < 30


@pytest.mark.parametrize("method", ["auto", "gemm_lauum", "rec_trtri_lauum", "potrf_trsm_batched",
                                    "torch", "potri"])
@pytest.mark.parametrize("upper", [False, True])
def test_spd_inverse_gpu(method, upper):
    A = spd(200, cond=1e3, dtype="complex128", device="cuda", batch=(3,))
    X = ct.spd_inverse(A, upper, method=method)
    ref = torch.cholesky_inverse(torch.linalg.cholesky(A, upper=upper), upper=upper)
    assert X.device == A.device and torch.allclose(X, ref, atol=1e-8)
    assert float(checks.pot03(A, X, upper)) < 30


@pytest.mark.parametrize("method", ["auto", "gemm_lauum", "potrf_trsm_batched", "torch"])
def test_spd_inverse_gpu_raises_like_potrf(method):
    A = spd(64, dtype="float64", device="cuda", batch=(3,))
    A[2, 10, 10] = -4.0
    with pytest.raises(ct.NotPositiveDefiniteError, match="order 11"):
        ct.spd_inverse(A, method=method)
    ct.spd_inverse(A, method=method, check=False)  # no raise
    assert routines.spd_inverse_method(A, "auto") in routines.INVERSE_METHODS


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("n", [5, 700])
@pytest.mark.parametrize("batched", [False, True])
def test_potrf_gemm_lauum_gpu(blocking, dtype, upper, n, batched):
    blocking["gemm_lauum"][dtype].update(trtri_base=128, trmm_base=256, lauum_block=192,
                                         potrf_base=160, streams=3, fill="kernel",
                                         trtri_batched=batched)
    A = spd(n, cond=1e4, dtype=dtype, device="cuda", seed=n, batch=(2,))
    X = ct.spd_inverse(A, upper, method="potrf_gemm_lauum")
    assert torch.equal(X, X.mH) and float(checks.pot03(A, X, upper)) < 30
    B = A.clone()
    B[1, n // 2, n // 2] = -1.0
    with pytest.raises(ct.NotPositiveDefiniteError, match=f"order {n // 2 + 1}"):
        ct.spd_inverse(B, upper, method="potrf_gemm_lauum")
    C = A.clone()
    C[0, n - 1, n - 1] = float("nan")
    with pytest.raises(ct.NotPositiveDefiniteError, match=f"order {n}"):
        ct.spd_inverse(C, upper, method="potrf_gemm_lauum")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("n", [1, 31, 32, 33, 100])
def test_mirror_triangle_kernel(dtype, upper, n):
    from cusolver_trace.backends import cuda_plans
    from cusolver_trace.backends._context import on_device

    g = torch.Generator(device="cuda").manual_seed(n)
    X = torch.randn(3, n, n, dtype=getattr(torch, dtype), device="cuda", generator=g)
    w = X.mT.contiguous()          # column-major storage of each X[b]
    with on_device(w.device):
        cuda_plans.mirror_triangle(w, upper)
    got = w.mT
    tri = X.triu() if upper else X.tril()
    ref = tri + (X.triu(1) if upper else X.tril(-1)).mH
    if ref.is_complex():
        ref.diagonal(dim1=-2, dim2=-1).imag.zero_()
    assert torch.equal(got, ref)


@pytest.mark.parametrize("n", [1000, 3000])
def test_mirror_triangle_kernel_large(n):
    """Tiles across the whole matrix (the 32 x 8 threads' four rows each), float64 lower."""
    from cusolver_trace.backends import cuda_plans
    from cusolver_trace.backends._context import on_device

    X = torch.randn(1, n, n, dtype=torch.float64, device="cuda")
    w = X.mT.contiguous()
    with on_device(w.device):
        cuda_plans.mirror_triangle(w, False)
    assert torch.equal(w.mT, X.tril() + X.tril(-1).mT)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("n", [1, 31, 33, 100])
def test_copy_triangle_kernel(dtype, upper, n):
    """The triangle's tiles arrive (the diagonal tiles whole), nothing else of dst is
    touched, the source is unchanged."""
    from cusolver_trace.backends import cuda_plans
    from cusolver_trace.backends._context import on_device

    src = torch.randn(n, n, dtype=getattr(torch, dtype), device="cuda").mT.contiguous().mT
    before = src.clone()
    dst = torch.full((n, n), 7.0, dtype=src.dtype, device="cuda")   # dst.mT is the matrix
    with on_device(dst.device):
        cuda_plans.copy_triangle(dst, src, upper)
    got = dst.mT
    i = torch.arange(n, device="cuda")
    tri = (i[:, None] <= i[None, :]) if upper else (i[:, None] >= i[None, :])
    tiles = tri | ((i[:, None] // 32) == (i[None, :] // 32))
    assert torch.equal(got[tiles], src[tiles])
    assert bool((got[~tiles] == 7.0).all())
    assert torch.equal(src, before)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("n", [5, 300, 1000])
def test_gemm_lauum_copies_only_the_triangle_bitwise_as_the_whole(monkeypatch, dtype, upper, n):
    """A column-major factor with NaN in the triangle not read: copying only its triangle
    (copy_triangle) gives the same bits as copying it whole, and the input is unchanged."""
    from cusolver_trace.backends import cuda_plans

    A = spd(n, cond=1e4, dtype=dtype, device="cuda", seed=n)
    L = torch.linalg.cholesky(A, upper=upper)
    other = torch.ones(n, n, dtype=torch.bool, device="cuda")
    other = other.tril(-1) if upper else other.triu(1)
    G = torch.where(other, torch.full_like(L, float("nan")), L).mT.contiguous().mT
    before = G.clone()
    used = []
    real = cuda_plans.copy_triangle
    monkeypatch.setattr(cuda_plans, "copy_triangle",
                        lambda *a: (used.append(a[2]), real(*a))[1])
    monkeypatch.setattr(cuda_plans, "TRIANGLE_COPY_MIN_N", 1)
    tri, _ = cuda_plans.gemm_lauum(G, upper)
    assert used == [upper]
    monkeypatch.setattr(cuda_plans, "TRIANGLE_COPY_MIN_N", 10**9)
    whole, _ = cuda_plans.gemm_lauum(G, upper)
    assert used == [upper]
    assert torch.isfinite(tri).all() and torch.equal(tri, whole)
    assert torch.equal(G.isnan(), before.isnan()) and torch.equal(G.nan_to_num(), before.nan_to_num())
    assert float(checks.pot03(A, tri, upper)) < 30


def test_auto_at_large_n_copies_only_the_triangle(monkeypatch):
    """cholesky_inverse(method="auto") on one float64 factor of order 4096 from
    torch.linalg.cholesky (column-major) takes the triangle copy; a row-major factor the
    whole copy; both agree bitwise."""
    from cusolver_trace.backends import cuda_plans

    n = 4096
    A = spd(n, cond=1e3, dtype="float64", device="cuda", seed=1)
    L = torch.linalg.cholesky(A)
    used = []
    real = cuda_plans.copy_triangle
    monkeypatch.setattr(cuda_plans, "copy_triangle", lambda *a: (used.append(1), real(*a))[1])
    assert routines.inverse_method(L, "auto") == "gemm_lauum"
    X = ct.cholesky_inverse(L, method="auto")
    assert used == [1]
    Y = ct.cholesky_inverse(L.contiguous(), method="auto")
    assert used == [1] and torch.equal(X, Y)
    assert float(checks.pot03(A, X)) < 30


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("method", ["potrs", "trsm", "trtri_lauum", "rec_trtri_lauum",
                                    "gemm_lauum", "torch"])
def test_a_complex_factor_with_a_diagonal_not_real_is_read_as_given(dtype, upper, method):
    """L·diag(phases) (diag(phases)·U) with unit phases has the same L·Lᴴ (Uᴴ·U) = A: every
    method but potri (LAPACK's reading, the diagonal taken as real) returns inv(A)."""
    n = 200
    A = spd(n, cond=1e3, dtype=dtype, device="cuda", seed=3, batch=(2,))
    L = torch.linalg.cholesky(A, upper=upper)
    g = torch.Generator(device="cuda").manual_seed(5)
    theta = torch.rand(2, n, device="cuda", generator=g,
                       dtype=torch.float64 if dtype == "complex128" else torch.float32) * 6.28
    phase = torch.polar(torch.ones_like(theta), theta)
    F = phase[:, :, None] * L if upper else L * phase[:, None, :]
    assert float(F.diagonal(dim1=-2, dim2=-1).imag.abs().max()) > 0.1
    before = F.clone()
    X = ct.cholesky_inverse(F, upper, method=method)
    assert float(checks.pot03(A, X, upper)) < 30
    assert torch.equal(F, before)
