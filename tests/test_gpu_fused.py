"""GPU: the fused (cuSOLVERDx) kernels against torch — info per matrix, LAPACK ratios, both
memory orders, a batch that is not a multiple of batches_per_block, the public entry points.

Skipped (with the reason) without a GPU or without the ``cuda13-fused`` extra; failed where
that extra is installed and does not load. The first run
compiles each kernel (seconds to tens of seconds each), later runs load them from the disk
cache; the shapes and layouts are those of ``devrun``'s correctness script, so a cache
filled by one serves the other. Every layout at n <= 16, the main ones above.
"""
from __future__ import annotations

import os
import time
import warnings

import pytest
import torch

import cusolver_trace as ct
from cusolver_trace import checks, routines
from cusolver_trace.matrices import spd

from cusolver_trace.backends import fused  # the project's own module: an import error fails

# skipped (naming the extra) where cuda13-fused is not installed; failed, with the error, where it
# is installed and does not load (cusolver_trace._pytest_gpus). The explicit method="fused"
# calls below compile their kernels on a cold cache: the CompileWarning that says so is expected.
pytestmark = [pytest.mark.gpu, pytest.mark.needs_extra("cuda13-fused"),
              pytest.mark.filterwarnings("ignore::cusolver_trace.errors.CompileWarning")]

DTYPES = ["float32", "float64", "complex64", "complex128"]
BATCH = 37          # 37 = prime: a partly filled last block for every batches_per_block > 1


def _bad(A):
    """A copy of A whose members 5 and 36 (the last, in the tail block) are not positive
    definite, at the minors n//2 + 1 and 1."""
    n = A.shape[-1]
    B = A.clone()
    B[5, n // 2, n // 2] = -1
    B[-1, 0, 0] = -1
    return B


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("n", [4, 16, 32])
def test_potrf_info_and_factor_match_torch(dtype, upper, n):
    A = spd(n, batch=BATCH, cond=10.0, dtype=dtype, device="cuda", seed=n)
    bad = _bad(A)
    ref, info_t = torch.linalg.cholesky_ex(bad, upper=upper)
    pd = info_t == 0
    layouts = (bad, bad.mT.contiguous().mT) if n <= 16 else (bad,)   # row- and column-major
    for X in layouts:
        L, info = routines.potrf(X, upper, check=False, method="fused")
        assert torch.equal(info.cpu(), info_t.cpu())
        assert checks.pot01(A[pd], L[pd], upper) < 30
        assert bool(((L.tril(-1) if upper else L.triu(1)) == 0).all())
    with pytest.raises(ct.NotPositiveDefiniteError, match="Batch element 5"):
        routines.potrf(bad, upper, method="fused")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("n", [8, 16, 64])
def test_cholesky_inverse_fused(dtype, upper, n):
    A = spd(n, batch=BATCH, cond=10.0, dtype=dtype, device="cuda", seed=n)
    L = torch.linalg.cholesky(A, upper=upper)             # column-major strides
    for factor in ((L, L.contiguous()) if n <= 16 else (L,)):
        X = ct.cholesky_inverse(factor, upper, method="fused")
        assert checks.pot03(A, X, upper) < 30
        assert factor.data_ptr() != X.data_ptr()
    torch.testing.assert_close(X, torch.cholesky_inverse(L, upper=upper), rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("dtype", ["float64", "complex64"])
@pytest.mark.parametrize("nrhs", [1, 3, 16])
def test_potrs_fused(dtype, nrhs):
    n = 16
    A = spd(n, batch=BATCH, cond=10.0, dtype=dtype, device="cuda")
    L = torch.linalg.cholesky(A)                            # column-major
    B = torch.randn(BATCH, n, nrhs, dtype=torch.float64, device="cuda").to(A.dtype)
    X = routines.potrs(L, B, method="fused")
    assert checks.pot02(A, X, B) < 30
    if nrhs == 3:                                           # row-major factor, column-major B
        b = B.mT.contiguous().mT
        X = routines.potrs(L.contiguous(), b, method="fused")
        assert checks.pot02(A, X, b) < 30


def test_potrf_inverse_one_kernel():
    A = spd(16, batch=BATCH, cond=10.0, dtype="float64", device="cuda")
    bad = _bad(A)
    X, info = fused.potrf_inverse(bad, False)
    _, info_t = torch.linalg.cholesky_ex(bad)
    assert torch.equal(info.cpu(), info_t.cpu())
    pd = info_t == 0
    assert checks.pot03(A[pd], X[pd]) < 30


def test_too_large_is_a_clear_error():
    L = torch.eye(128, dtype=torch.complex128, device="cuda").expand(2, 128, 128)
    with pytest.raises(ValueError, match="shared memory"):
        ct.cholesky_inverse(L, method="fused")


def test_runs_on_torch_current_stream():
    A = spd(8, batch=BATCH, dtype="float64", device="cuda")
    L = torch.linalg.cholesky(A)
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        X = ct.cholesky_inverse(L, method="fused", check=False)
    s.synchronize()
    assert checks.pot03(A, X) < 30


def test_kernel_is_cached_on_disk(tmp_path, monkeypatch):
    monkeypatch.setenv("CUSOLVER_TRACE_CACHE", str(tmp_path))
    key = fused.make_key("inverse", 6, 6, "float32", False, "row_major", "row_major", (9, 0),
                         batches_per_block=4, block=(32,))
    cubin, meta = fused.compile_kernel(key)
    digest = fused.cache_key(key, fused.versions())
    fused.DiskCache().store(digest, cubin, meta)
    assert fused.DiskCache().load(digest)[0] == cubin


def test_spd_inverse_fused_one_kernel_and_its_check():
    A = spd(16, batch=BATCH, cond=10.0, dtype="float64", device="cuda")
    X = ct.spd_inverse(A, method="fused")
    assert checks.pot03(A, X) < 30
    with pytest.raises(ct.NotPositiveDefiniteError, match="Batch element 5"):
        ct.spd_inverse(_bad(A), method="fused")


def _poisoned_factor(L, upper):
    """A copy of the factor L (BATCH matrices) with: member 3 a NaN in its triangle, member 7
    an exact zero at diagonal position 2, member 9 a NaN in the triangle that is NOT read,
    member 36 (the tail block) an Inf on its diagonal."""
    n = L.shape[-1]
    P = L.clone()
    i, j = (1, n - 1) if upper else (n - 1, 1)
    P[3, i, j] = float("nan")
    P[7, 2, 2] = 0
    P[9, j, i] = float("nan")
    P[36, n - 1, n - 1] = float("inf")
    return P


@pytest.mark.parametrize("dtype", ["float64", "complex64"])
@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("n", [8, 32])
def test_check_in_the_fused_kernel_equals_the_check_kernel(dtype, upper, n):
    """The record the fused kernel computes for itself (the checked entry point's one
    launch) is entry for entry the record of the separate check kernel on the same output;
    the summary word says "nothing" again on the next clean call (its words were reset)."""
    from cusolver_trace.backends import cuda as cu

    A = spd(n, batch=BATCH, cond=10.0, dtype=dtype, device="cuda", seed=n)
    L = torch.linalg.cholesky(A, upper=upper)
    for factor in (L, L.contiguous()):                       # column- and row-major
        assert fused.cholesky_inverse_checked(factor, upper)[1] is None
        P = _poisoned_factor(factor, upper)
        before = P.clone()
        X, rec = fused.cholesky_inverse_checked(P, upper)
        ref = cu.inverse_status(P, X, upper, None).cpu().numpy()
        assert rec is not None and (rec == ref).all(), (rec[[3, 7, 9, 36]], ref[[3, 7, 9, 36]])
        assert rec[3, 1] & 1 and rec[7, 0] == n - 2 and rec[36, 1] & 1
        assert not rec[9, 1] & 1                              # the unread triangle is not judged
        assert torch.equal(P.isnan(), before.isnan()) and torch.equal(P.nan_to_num(), before.nan_to_num())
        X2, rec2 = fused.cholesky_inverse_checked(factor, upper)
        assert rec2 is None and checks.pot03(A, X2, upper) < 30
    # a zero pivot is reported before a non-finite entry (routines._raise_for_status)
    with pytest.raises(ct.SingularFactorError, match="Batch element 7"):
        ct.cholesky_inverse(P, upper, method="fused")
    P[7] = L[7]
    with pytest.raises(ct.NonFiniteError, match="Batch element 3"):
        ct.cholesky_inverse(P, upper, method="fused")


@pytest.mark.parametrize("upper", [False, True])
def test_check_in_the_fused_potrf_inverse_kernel(upper):
    """A → A⁻¹ checked in one kernel: potrf's info as cholesky_ex reports it, a NaN pivot
    flagged as Reference LAPACK does, the same record as the check kernel."""
    from cusolver_trace.backends import cuda as cu

    n = 16
    A = spd(n, batch=BATCH, cond=10.0, dtype="float64", device="cuda")
    bad = _bad(A)
    bad[11, 4, 4] = float("nan")
    X, info, rec = fused.potrf_inverse_checked(bad, upper)
    info_ref = routines.cholesky.flag_nan_pivots(bad, info)
    ref = cu.inverse_status(bad, X, upper, info_ref.reshape(-1)).cpu().numpy()
    assert rec is not None and (rec == ref).all()
    assert rec[5, 2] == n // 2 + 1 and rec[36, 2] == 1 and rec[11, 2] != 0
    assert fused.potrf_inverse_checked(A, upper)[2] is None
    with pytest.raises(ct.NotPositiveDefiniteError, match="Batch element 5"):
        ct.spd_inverse(bad, upper, method="fused")


def test_auto_on_a_cold_cache_runs_torch_then_fused(tmp_path, monkeypatch):
    """No first-call stall: with an empty disk cache, the first ``auto`` call of a new shape
    runs torch's path (its result bitwise torch's; nothing compiled in the call: no
    CompileWarning) and builds the fused kernel in the background; ``inverse_method`` /
    ``spd_inverse_method`` say torch until it is built, then fused, and the calls run it."""
    monkeypatch.setenv("CUSOLVER_TRACE_CACHE", str(tmp_path))   # cold: nothing on disk
    n, batch = 40, 200          # a shape no other test compiles: nothing in memory either
    A = spd(n, batch=batch, cond=10.0, dtype="float64", device="cuda", seed=40)
    L = torch.linalg.cholesky(A)                           # column-major, lower
    A32 = spd(n, batch=batch, cond=10.0, dtype="float32", device="cuda", seed=41)
    assert routines.resolve_method("auto", n, batch, "float64", "cuda") == "fused"   # the rule
    with warnings.catch_warnings():
        warnings.simplefilter("error", ct.CompileWarning)
        X = ct.cholesky_inverse(L, method="auto")
        assert ct.inverse_method(L, "auto") == "torch"     # still building
        assert checks.bitwise_equal(X, torch.cholesky_inverse(L))
        Y = ct.spd_inverse(A32)
        assert checks.pot03(A32, Y) < 30
        deadline = time.monotonic() + 600
        while ct.inverse_method(L, "auto") != "fused" or ct.spd_inverse_method(A32) != "fused":
            assert time.monotonic() < deadline, "the background builds did not finish in 10 min"
            time.sleep(0.5)
        X2 = ct.cholesky_inverse(L, method="auto")
        Y2 = ct.spd_inverse(A32)
    assert checks.pot03(A, X2) < 30 and checks.pot03(A32, Y2) < 30
    assert checks.bitwise_equal(X2, ct.cholesky_inverse(L, method="fused"))   # the fused kernel
    kernels = [f for f in os.listdir(tmp_path) if f.endswith(".cubin")
               and os.path.getsize(tmp_path / f) > 0]   # (a cached suggestion's is empty)
    assert len(kernels) >= 2
