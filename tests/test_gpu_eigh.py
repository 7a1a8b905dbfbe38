"""The eigensolvers on the GPU: compare reports bitwise-equal wherever torch calls cuSOLVER
(eigenvalues and eigenvectors), within-tolerance where it runs MAGMA or LAPACK, equal call
sequences on the exact paths; torch's failure on batches of 65,536 or more is reported with the
replay failing alike and the project's own path passing; every row of the SYEV table passes
LAPACK's eigen ratios."""
from __future__ import annotations

import pytest
import torch

from cusolver_trace import checks, ops, routines
from cusolver_trace.compare import compare
from cusolver_trace.matrices import structured

pytestmark = pytest.mark.gpu

DTYPES = ("float32", "float64", "complex64", "complex128")
SIZES = (1, 2, 3, 8, 33, 256, 1024)
OPS = ("eigh", "eigvalsh")


def _batches(n):
    if n >= 1024:
        return (1, 2)
    if n >= 256:
        return (1, 3)
    return (1, 4, 64)


CASES = [(op, dt, n, b, uplo) for op in OPS for dt in DTYPES for n in SIZES
         for b in _batches(n) for uplo in ("L", "U")]


def _A(n, batch, dtype, seed=0):
    return structured("hermitian", n, batch=() if batch == 1 else (batch,), cond=100.0,
                      dtype=dtype, device="cuda", seed=seed)


@pytest.mark.parametrize("op,dtype,n,batch,uplo", CASES,
                         ids=[f"{c[0]}-{c[1]}-n{c[2]}-b{c[3]}-{c[4]}" for c in CASES])
def test_compare_eigensolvers_default_preference(op, dtype, n, batch, uplo):
    A = _A(n, batch, dtype)
    before = A.clone()
    c = compare(op, A, repeat=0, provenance=False, UPLO=uplo)
    assert torch.equal(A, before)
    assert c.path.bitwise
    assert c.verdict == "bitwise-equal", (c.path, c.notes, c.max_ulp_distance)
    assert all(c.parts_equal.values())
    assert c.torch.ratio is not None and c.torch.ratio < 30, c.torch.ratio


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("preferred", ["cusolver", "magma"])
@pytest.mark.parametrize("n,batch", [(8, 1), (33, 4), (256, 2), (8, 64)])
def test_compare_eigensolvers_preferences(op, preferred, n, batch):
    A = _A(n, batch, "float64", seed=1)
    c = compare(op, A, repeat=0, provenance=False, preferred=preferred)
    want = ("bitwise-equal",) if c.path.bitwise else ("bitwise-equal", "within-tolerance")
    assert c.verdict in want, (c.path, c.notes)


def test_only_the_uplo_triangle_is_read():
    A = _A(33, 4, "float64", seed=2)
    garbage = A.clone()
    garbage.triu_(1).mul_(1e3)
    junk = A.tril() + garbage            # the strict upper triangle is not A's
    for uplo, x in (("L", junk), ("U", junk.mT.contiguous())):
        c = compare("eigh", x, repeat=0, provenance=False, UPLO=uplo)
        assert c.verdict == "bitwise-equal", (c.notes,)
        assert c.torch.ratio < 30


@pytest.mark.parametrize("op", OPS)
def test_nan_input_is_judged_like_every_other_op(op):
    A = _A(8, 4, "float64", seed=3)
    A[1, 5, 2] = float("nan")
    c = compare(op, A, repeat=0, provenance=False)
    assert c.verdict in ("bitwise-equal", "failed-alike"), (c.verdict, c.notes)


TRACED = [("eigh", "float64", 8, 1), ("eigh", "float64", 8, 4), ("eigh", "float64", 33, 4),
          ("eigh", "float32", 64, 2), ("eigh", "complex128", 33, 1),
          ("eigvalsh", "float64", 16, 64), ("eigvalsh", "float32", 64, 1)]


@pytest.mark.parametrize("op,dtype,n,batch", TRACED)
def test_call_sequences_equal_on_the_exact_paths(op, dtype, n, batch):
    A = _A(n, batch, dtype, seed=4)
    c = compare(op, A, repeat=0, provenance=False, trace=True)
    assert c.path.bitwise
    assert c.call_sequences.equal is True, c.call_sequences.first_difference
    assert c.verdict == "bitwise-equal"


@pytest.mark.parametrize("op", OPS)
def test_a_batch_torch_cannot_run_is_reported_and_ours_passes(op):
    A = _A(3, 65536, "float64", seed=5)
    c = compare(op, A, repeat=0, provenance=False)
    assert c.verdict == "failed-alike", (c.verdict, c.notes)
    assert "CUSOLVER_STATUS" in c.torch.error and "XsyevBatched" in c.torch.error
    assert any("failed the same way" in note for note in c.notes), c.notes
    assert any(note.startswith("method auto") and " passes " in note for note in c.notes), c.notes


def test_a_million_3x3_matrices():
    A = _A(3, 1_000_000, "float64", seed=6)
    w, V = routines.eigh(A)
    assert float(checks.eig_check(A, w, V)) < 30
    w2 = routines.eigvalsh(A)
    assert torch.equal(w, w2) or float(checks.eig_check(A, w2)) < 30


@pytest.mark.parametrize("method", ["Xsyevd", "XsyevBatched", "syevjBatched", "syevj", "syevd",
                                    "jacobi", "torch", "auto"])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n,batch", [(3, 1000), (8, 100), (32, 10), (33, 4), (128, 3)])
def test_every_row_passes_the_eigen_ratios(method, dtype, n, batch):
    if method == "syevjBatched" and n > 32:
        pytest.skip("syevjBatched takes n <= 32")
    if method == "jacobi" and n > 8:
        pytest.skip("jacobi takes n <= 8")
    A = _A(n, batch, dtype, seed=7)
    before = A.clone()
    w, V = routines.eigh(A, method=method, UPLO="U")
    assert torch.equal(A, before)
    assert float(checks.eig_check(A, w, V, upper=True)) < 30
    assert float(checks.eig_check(A, routines.eigvalsh(A, method=method, UPLO="U"),
                                  upper=True)) < 30
