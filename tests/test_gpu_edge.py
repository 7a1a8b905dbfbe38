"""GPU edge cases (issue 6): launch limits, garbage triangles, devices, empties, views, memory."""
from __future__ import annotations

import pytest
import torch

from cusolver_trace import checks, routines
from cusolver_trace.compare import compare
from cusolver_trace.matrices import spd

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("batch", [65535, 65536, 262140, 262141])
def test_batch_counts_around_launch_limits(batch):
    A1 = spd(2, dtype="float32", device="cuda", seed=1)
    A = A1.expand(batch, 2, 2)  # stride-0 expanded input
    L, info = routines.potrf(A)  # potrfBatched, as torch
    assert L.shape == (batch, 2, 2) and not bool(info.any())
    assert checks.bitwise_equal(L, torch.linalg.cholesky(A))  # torch also runs potrfBatched
    # potrfBatched is a different kernel from Xpotrf: equal bits are not expected, accuracy is
    assert checks.pot01(A1, L[-1]) < 30
    Ainv = routines.cholesky_inverse(L, method="trsm_batched")
    assert checks.pot03(A, Ainv) < 30
    B = torch.ones(batch, 2, 1, device="cuda")
    X = routines.potrs(L, B, method="batched")
    assert checks.pot02(A, X, B) < 30


@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("batch", [(), (3,)])
def test_only_declared_triangle_read_on_gpu(upper, batch):
    A = spd(40, batch=batch, dtype="complex128", device="cuda", seed=2)
    noise = torch.randn_like(A)
    noise.view(-1, 40, 40)[0, 0, 5] = float("nan")
    noise.view(-1, 40, 40)[0, 5, 0] = float("nan")
    other = noise.tril(-1) if upper else noise.triu(1)
    keep = A.triu() if upper else A.tril()
    L1, _ = routines.potrf(A, upper=upper)
    L2, _ = routines.potrf(keep + other, upper=upper)
    assert checks.bitwise_equal(L1, L2)
    for method in ("potrs", "potri"):
        r1 = routines.cholesky_inverse(L1, upper=upper, method=method)
        r2 = routines.cholesky_inverse(L1 + other, upper=upper, method=method)
        assert checks.bitwise_equal(r1, r2), method


def test_zero_factor_compare_reports_cpu_cuda_difference():
    for dtype in (torch.float64, torch.complex128):
        Z = torch.zeros(3, 3, dtype=dtype, device="cuda")
        out = torch.cholesky_inverse(Z)  # torch's CUDA path: silent inf/nan
        assert not torch.isfinite(out).all()
        c = compare("cholesky_inverse", factor=Z, timing=False, provenance=False)
        assert c.torch.nonfinite > 0
        assert any("CPU path raises" in n for n in c.notes), c.notes


def test_negative_definite_classic_example():
    A = -torch.tensor([[4.0, 12, -16], [12, 37, -43], [-16, -43, 98]], dtype=torch.float64, device="cuda")
    _, info = routines.potrf(A, check=False)
    assert int(info) == 1
    c = compare("cholesky", A, timing=False, provenance=False)
    assert c.verdict == "failed-alike"


def test_dtype_and_device_errors_on_gpu():
    L = torch.eye(3, device="cuda")
    with pytest.raises(TypeError, match="float16"):
        routines.potrf(L.half())
    with pytest.raises(TypeError, match="bfloat16"):
        routines.potrf(L.bfloat16())
    with pytest.raises(ValueError, match="is on cpu but B is on cuda|is on cuda:0 but B is on cpu"):
        routines.potrs(L, torch.ones(3, 1))
    with pytest.raises(ValueError, match="on cpu"):
        routines.potrs(L.cpu(), torch.ones(3, 1, device="cuda"))


def test_other_device_than_current():
    if torch.cuda.device_count() < 2:
        pytest.skip("needs two GPUs to put a tensor on a non-current device (one visible)")
    A = spd(64, device="cuda:1")
    with torch.cuda.device(0):
        L, _ = routines.potrf(A)
    assert L.device == A.device
    assert checks.bitwise_equal(L, torch.linalg.cholesky(A))


def test_empty_on_gpu():
    L, info = routines.potrf(torch.zeros(0, 0, device="cuda"))
    assert L.shape == (0, 0) and L.is_cuda
    L, info = routines.potrf(torch.zeros(0, 5, 5, device="cuda"))
    assert L.shape == (0, 5, 5) and info.shape == (0,)
    assert routines.cholesky_inverse(torch.zeros(4, 0, 0, device="cuda")).shape == (4, 0, 0)


def test_views_and_batch_dims_identical_on_gpu():
    A = spd(33, batch=(2,), dtype="float64", device="cuda", seed=5)
    L, _ = routines.potrf(A)
    big = torch.zeros(2, 66, 66, dtype=A.dtype, device="cuda")
    big[:, 1::2, 1::2] = A
    assert checks.bitwise_equal(routines.potrf(big[:, 1::2, 1::2])[0], L)
    assert checks.bitwise_equal(routines.potrf(A.mT.contiguous().mT)[0], L)
    assert checks.bitwise_equal(routines.potrf(A[:1])[0][0], routines.potrf(A[0])[0])
    stride = A.stride()
    routines.cholesky_inverse(L)
    assert A.stride() == stride


def test_ten_thousand_calls_memory_stable():
    A = spd(4, device="cuda")
    L = torch.linalg.cholesky(A)
    B = torch.ones(4, 1, dtype=A.dtype, device="cuda")
    fns = [lambda: routines.potrf(A, check=False), lambda: routines.potrs(L, B),
           lambda: routines.cholesky_inverse(L, check=False),
           lambda: routines.cholesky_inverse(L, method="potri", check=False)]
    for fn in fns:
        fn()
    torch.cuda.synchronize()
    base = torch.cuda.memory_allocated()
    for fn in fns:
        for _ in range(10_000):
            fn()
    torch.cuda.synchronize()
    assert torch.cuda.memory_allocated() == base
