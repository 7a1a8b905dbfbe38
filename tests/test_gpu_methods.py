"""GPU: every inverse method, judged by LAPACK's pot03 (< 30), and the batched paths vs torch."""
from __future__ import annotations

import pytest
import torch

import cusolver_trace as ct
from cusolver_trace import checks, plans, routines, sweep
from cusolver_trace.backends.cuda_plans import potrf_trsm_batched_factor
from cusolver_trace._dtypes import dtype_info
from cusolver_trace.ceiling import ceiling
from cusolver_trace.errors import SingularFactorError
from cusolver_trace.matrices import lapack_test_matrix, spd

pytestmark = pytest.mark.gpu


def potrf_trsm_batched(A, upper=False):
    """``(A⁻¹, info)`` of the backend's potrfBatched + two trsmBatched path."""
    X, _L, info = potrf_trsm_batched_factor(A, upper)
    return X, info


DTYPES = ["float32", "float64", "complex64", "complex128"]
FACTOR_METHODS = list(routines.METHOD_NAMES)


def _fused_cannot(method, n, dtype) -> bool:
    """The fused method at an n beyond shared memory: documented to raise ValueError (and
    skipped where its extra is not installed; failed where it is installed and does not load)."""
    if method != "fused":
        return False
    from cusolver_trace._pytest_gpus import require_extra
    from cusolver_trace.backends import fused

    require_extra("cuda13-fused")
    return not fused.fits("inverse", n, dtype)


def _cuda_inverse(F, upper, method):
    """The method's CUDA implementation, unchecked and unsynchronized: (Ainv, info or None)."""
    batch = F[..., 0, 0].numel()
    name = routines.resolve_method(method, F.shape[-1], batch, F.dtype, "cuda")
    return routines.INVERSE_METHODS[name].cuda(F, upper)


def _tol(dtype, cond=1e4, n=1000):
    """Relative difference allowed between two backward-stable inverses: cond · n · eps."""
    return cond * n * dtype_info(dtype).lapack_eps


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("n", [1, 7, 256, 1000, 2048])
@pytest.mark.parametrize("method", FACTOR_METHODS)
def test_method_pot03(method, n, upper, dtype):
    if _fused_cannot(method, n, dtype):   # raises before the input is made (n = 2048 is slow)
        with pytest.raises(ValueError, match="shared memory"):
            routines.cholesky_inverse(torch.eye(n, dtype=getattr(torch, dtype), device="cuda"),
                                      upper, method=method)
        return
    A = spd(n, cond=1e6, dtype=dtype, device="cuda", seed=n)
    F = torch.linalg.cholesky(A, upper=upper)
    X = routines.cholesky_inverse(F, upper, method=method)
    assert X.shape == A.shape and X.dtype == A.dtype and X.device == A.device
    assert checks.pot03(A, X) < checks.THRESHOLD
    if method in ("potri", "trtri_lauum", "rec_trtri_lauum"):
        assert checks.asymmetry(X) == 0


@pytest.mark.parametrize("kind", ["diagonal", "cond2", "ill-sqrt", "ill", "small", "large"])
@pytest.mark.parametrize("dtype", ["float32", "float64", "complex128"])
@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("method", FACTOR_METHODS)
def test_method_pot03_lapack_types(method, upper, dtype, kind):
    if _fused_cannot(method, 700, dtype):
        with pytest.raises(ValueError, match="shared memory"):
            routines.cholesky_inverse(torch.eye(700, dtype=getattr(torch, dtype), device="cuda"),
                                      upper, method=method)
        return
    A = lapack_test_matrix(kind, 700, dtype=dtype, device="cuda", seed=2).A
    F = torch.linalg.cholesky(A, upper=upper)
    assert checks.pot03(A, routines.cholesky_inverse(F, upper, method=method)) < checks.THRESHOLD


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("kernel", ["trsm", "xtrtri"])
def test_deep_recursion_with_gemm_split_matches_cpu_plan(monkeypatch, kernel, dtype, upper):
    """Small blocks: many levels, syrk and trmm split into gemm; the GPU executor (device pointers)
    and the CPU reference executor (as_strided views) run the same plan."""
    monkeypatch.setattr(plans, "BLOCKING", dict(lauum_base=64, trtri_base=80, block=32,
                                                syrk_base=64, trmm_base=48, trtri_kernel=kernel))
    A = spd(1000, batch=(2,), cond=1e4, dtype=dtype, device="cuda", seed=5)
    F = torch.linalg.cholesky(A, upper=upper)
    for m in ("trtri_lauum", "rec_trtri_lauum"):
        X = routines.cholesky_inverse(F, upper, method=m)
        assert checks.pot03(A, X) < checks.THRESHOLD
        ref = routines.cholesky_inverse(F.cpu(), upper, method=m)
        assert checks.rel_fro_diff(X.cpu(), ref) < _tol(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("batch,n", [(10000, 8), (1000, 32), (100, 128), (8, 512)])
def test_batched_methods_vs_torch(batch, n, upper, dtype):
    A = spd(n, batch=(batch,), cond=1e4, dtype=dtype, device="cuda", seed=batch)
    F = torch.linalg.cholesky(A, upper=upper)
    ref = torch.cholesky_inverse(F, upper=upper)
    for m in ("trsm_batched", "auto"):
        X = routines.cholesky_inverse(F, upper, method=m)
        assert checks.pot03(A, X) < checks.THRESHOLD
        assert checks.rel_fro_diff(X, ref) < _tol(dtype)
    X, info = potrf_trsm_batched(A, upper)
    assert (info == 0).all() and info.shape == (batch,)
    assert checks.pot03(A, X) < checks.THRESHOLD
    assert checks.rel_fro_diff(X, ref) < _tol(dtype)


def test_potrf_trsm_batched_reports_the_failing_minor():
    t = lapack_test_matrix("zero-middle", 32, batch=(4,), device="cuda")
    _, info = potrf_trsm_batched(t.A)
    assert info.tolist() == [t.expected_info] * 4


@pytest.mark.parametrize("method", [m for m in FACTOR_METHODS if m not in ("torch", "auto")])
def test_singular_factor_raises(method):
    n = 120 if method == "fused" else 600   # fused: an n that fits in shared memory
    if method == "fused":
        _fused_cannot(method, n, "float64")   # skips where the extra is missing
    F = torch.linalg.cholesky(spd(n, device="cuda", seed=1))
    F[n // 2, n // 2] = 0
    with pytest.raises(SingularFactorError) as e:
        routines.cholesky_inverse(F, method=method)
    assert e.value.index == n // 2 + 1
    F = torch.linalg.cholesky(spd(n, batch=(3,), device="cuda", seed=2))   # batch element 1
    F[1, 7, 7] = 0
    with pytest.raises(SingularFactorError) as e:
        routines.cholesky_inverse(F, method=method)
    assert (e.value.index, e.value.batch_index) == (8, 1)


def test_auto_follows_the_table():
    for batch, n in [(1, 64), (1, 4096), (1000, 32), (8, 512)]:
        want = routines.resolve_method("auto", n, batch, "float64", "cuda")
        if want == "fused":   # auto runs torch's path until the kernel is built: build it first
            ct.warmup(["cholesky_inverse"], [n], ["float64"], check=[False], workers=1)
        shape = () if batch == 1 else (batch,)
        F = torch.linalg.cholesky(spd(n, batch=shape, device="cuda", seed=3))
        assert routines.inverse_method(F, "auto", check=False) == want
        X = routines.cholesky_inverse(F, False, method="auto", check=False)
        Y, _ = routines.INVERSE_METHODS[want].cuda(F, False)
        assert checks.bitwise_equal(X, Y), (batch, n, want)


@pytest.mark.parametrize("m", FACTOR_METHODS)
def test_cuda_inverse_contract(m):
    _fused_cannot(m, 64, "float64")   # fused: skipped where its extra is not installed
    F = torch.linalg.cholesky(spd(64, batch=(3, 2), device="cuda"))
    X, info = _cuda_inverse(F, False, m)
    assert X.shape == F.shape
    if info is None:  # methods whose calls report nothing: torch's own call, the fused
        # kernel (potrs on an identity: backends.fused.cholesky_inverse) and gemm_lauum
        # (trtri by trsm into an identity buffer: backends.cuda_plans.gemm_lauum)
        assert routines.resolve_method(m, 64, 6, "float64", "cuda") in (
            "torch", "fused", "gemm_lauum", "gemm_lauum_emu")
        return
    assert info.dtype == torch.int32 and info.shape == (6,)
    assert info.device == F.device and (info == 0).all()


def test_ceiling_on_gpu():
    c = ceiling("cuda", "float64")
    assert c.clock == "cuda-events" and c.gemm_gflops > 0 and c.copy_gbs > 0  # no speed assertion
    assert ceiling("cuda:0", "float64") is c


def test_sweep_gpu_small(tmp_path):
    rows = sweep.run_sweep("cholesky_inverse", [256], [1, 50], ["float64"], device="cuda:0",
                           repeat=3, progress=False)
    assert rows and all(r["status"] == "ok" and r["clock"] == "cuda-events" for r in rows)
    rows = sweep.run_sweep("spd_inverse", [16], [100], ["complex64"], device="cuda:0", repeat=3,
                           progress=False)
    assert all(r["status"] == "ok" for r in rows)
