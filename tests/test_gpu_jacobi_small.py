"""The one-thread-per-matrix Jacobi kernel (cusolver_trace.backends.jacobi_small) on the GPU,
against torch.linalg.eigh with LAPACK's ?syt21 ratios: every dtype, n = 1 .. 8, both
triangles, row- / column-major / strided / conjugate inputs, batches up to 1,000,000 x 3, the
input never written, the triangle not read, non-finite input, and the routines' ``jacobi``
row. (tests/test_jacobi_small_cpu.py checks the same source compiled for the host.)"""
from __future__ import annotations

import pytest
import torch

from cusolver_trace import checks, routines
from cusolver_trace.matrices import structured

pytestmark = pytest.mark.gpu

DTYPES = ("float32", "float64", "complex64", "complex128")
TORCH = {"float32": torch.float32, "float64": torch.float64, "complex64": torch.complex64,
         "complex128": torch.complex128}


def _A(n, batch, dtype, seed=0, cond=100.0):
    return structured("hermitian", n, batch=(batch,), cond=cond, dtype=dtype, device="cuda",
                      seed=seed)


def _syev(a, upper=False, vectors=True, **kw):
    from cusolver_trace.backends.jacobi_small import syevj_small

    return syevj_small(a, upper, vectors, **kw)


def _ratios(A, w, V, upper):
    """``(residual, orthogonality)`` ratios of ?syt21 and the eigenvalue error against torch's
    ``eigh`` of the float64 / complex128 matrix, in units of ulp·|A|_2."""
    n = A.shape[-1]
    wide = A.to(torch.complex128 if A.is_complex() else torch.float64)
    tri = wide.triu(1) if upper else wide.tril(-1)
    full = tri + tri.mH + torch.diag_embed(wide.diagonal(dim1=-2, dim2=-1).real.to(wide.dtype))
    ulp = torch.finfo(A.dtype).eps
    # on the CPU: torch's CUDA eigvalsh fails from batch 65,536 on (cusolverDnXsyevBatched)
    wref = torch.linalg.eigvalsh(full.cpu()).to(A.device)
    norm2 = wref.abs().amax(-1).clamp_min(torch.finfo(torch.float64).tiny)
    err_w = ((w.double() - wref).abs().amax(-1) / (norm2 * ulp)).max().item()
    if V is None:
        return None, None, err_w
    Vw = V.to(wide.dtype)
    norm1 = full.abs().sum(-2).amax(-1).clamp_min(torch.finfo(torch.float64).tiny)
    res = (full @ Vw - Vw * w.double().to(wide.dtype)[..., None, :]).abs().sum(-2).amax(-1)
    orth = (Vw.mH @ Vw - torch.eye(n, dtype=wide.dtype, device=A.device)).abs().sum(-2).amax(-1)
    return ((res / (n * norm1 * ulp)).max().item(), (orth / (n * ulp)).max().item(), err_w)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", range(1, 9))
@pytest.mark.parametrize("upper", [False, True], ids=["L", "U"])
def test_ratios_against_torch(dtype, n, upper):
    A = _A(n, 4096 + 17, dtype, seed=n)
    before = A.clone()
    w, V, info = _syev(A, upper)
    assert torch.equal(A, before)
    assert (info == 0).all()
    assert V.stride() == (n * n, 1, n) and w.is_contiguous()
    assert (w.diff(dim=-1) >= 0).all()
    r1, r2, err_w = _ratios(A, w, V, upper)
    assert r1 < 30 and r2 < 30, (r1, r2)
    assert err_w <= 4 * n, err_w
    w2, V2, info2 = _syev(A, upper, vectors=False)
    assert V2 is None and (info2 == 0).all()
    assert torch.equal(w, w2)
    assert float(checks.eig_check(A, w, V, upper=upper)) < 30


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [1, 3, 4, 8])
def test_layouts_give_the_same_bits(dtype, n):
    A = _A(n, 1000, dtype, seed=3)
    w, V, _ = _syev(A)
    spread = torch.empty(2000, 2 * n, 3 * n, dtype=A.dtype, device="cuda")[::2, ::2, ::3]
    spread.copy_(A)                                                      # strided, not packed
    for x in (A.mT.contiguous().mT, spread, A.reshape(10, 100, n, n)):   # column-major, ...
        wx, Vx, _ = _syev(x)
        assert torch.equal(wx.reshape(w.shape), w)
        assert torch.equal(Vx.reshape(V.shape), V)
    if A.is_complex():
        # a conjugate view: the lower triangle of conj(A) is the upper triangle of A
        wc, Vc, _ = _syev(A.conj(), upper=False)
        wu, _, _ = _syev(A, upper=True)
        assert torch.allclose(wc, wu, rtol=0, atol=50 * n * torch.finfo(wc.dtype).eps *
                              wu.abs().max().item())


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("upper", [False, True], ids=["L", "U"])
def test_only_the_triangle_is_read(dtype, upper):
    A = _A(5, 300, dtype, seed=4)
    junk = A.clone()
    mask = torch.ones(5, 5, dtype=torch.bool, device="cuda")
    mask = mask.tril(-1) if upper else mask.triu(1)
    junk[:, mask] = float("nan")
    w, V, info = _syev(A, upper)
    wj, Vj, infoj = _syev(junk, upper)
    assert torch.equal(info, infoj) and torch.equal(w, wj) and torch.equal(V, Vj)


@pytest.mark.parametrize("dtype", DTYPES)
def test_non_finite_input(dtype):
    A = _A(4, 8, dtype, seed=5)
    A[1, 2, 1] = float("nan")
    A[3, 0, 0] = float("inf")
    w, V, info = _syev(A)
    assert info.tolist() == [0, 5, 0, 5, 0, 0, 0, 0]
    assert w[[1, 3]].isnan().all() and V[[1, 3]].isnan().all()
    assert w[[0, 2, 4]].isfinite().all()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("batch", [1, 255, 256, 257, 65536, 1_000_000])
def test_large_batches_of_3x3(dtype, batch):
    if batch == 1_000_000 and dtype != "float64":
        pytest.skip("one dtype at a million is enough")
    A = _A(3, batch, dtype, seed=6)
    before = A.clone()
    w, V, info = _syev(A, upper=batch % 2 == 0)
    torch.cuda.synchronize()
    assert torch.equal(A, before)
    assert (info == 0).all()
    r1, r2, err_w = _ratios(A, w, V, batch % 2 == 0)
    assert r1 < 30 and r2 < 30 and err_w <= 12, (r1, r2, err_w)


def test_covariances_and_the_routines_row():
    pts = torch.randn(200_000, 16, 3, dtype=torch.float64, device="cuda")
    pts[:50_000] = pts[:50_000, :, :1] * torch.randn(3, dtype=torch.float64, device="cuda")
    c = pts - pts.mean(1, keepdim=True)
    cov = c.mT @ c / 15
    w, V = routines.eigh(cov, method="jacobi")
    assert float(checks.eig_check(cov, w, V)) < 30
    w2 = routines.eigvalsh(cov, method="jacobi", UPLO="U")
    assert float(checks.eig_check(cov, w2)) < 30
    with pytest.raises(ValueError, match="order <= 8, got n = 9"):
        routines.eigh(torch.eye(9, dtype=torch.float64, device="cuda"), method="jacobi")


def test_errors_and_empty():
    with pytest.raises(ValueError, match="n <= 8"):
        _syev(torch.zeros(2, 9, 9, device="cuda"))
    with pytest.raises(TypeError):
        _syev(torch.zeros(2, 3, 3, dtype=torch.float16, device="cuda"))
    w, V, info = _syev(torch.zeros(0, 3, 3, device="cuda"))
    assert w.shape == (0, 3) and V.shape == (0, 3, 3) and info.shape == (0,)


def test_no_synchronization_and_the_current_stream():
    A = _A(3, 100_000, "float64", seed=7)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        w, V, info = _syev(A)
    s.synchronize()
    r1, r2, _ = _ratios(A, w, V, False)
    assert r1 < 30 and r2 < 30
