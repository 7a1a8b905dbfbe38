"""compare on the GPU for the LU family: bitwise-equal wherever torch calls cuSOLVER or cuBLAS
(pivots compared exactly), within-tolerance where it runs MAGMA, failed-alike with the same
column for a singular matrix, and equal call sequences on the exact paths."""
from __future__ import annotations

import itertools

import pytest
import torch

from cusolver_trace import ops
from cusolver_trace.compare import compare
from cusolver_trace.matrices import general, general_singular

pytestmark = pytest.mark.gpu

DTYPES = ("float32", "float64", "complex64", "complex128")
SIZES = (1, 2, 33, 256, 1024)
OPS = ("lu_factor", "lu_solve", "solve", "inv", "det", "slogdet")


def _batches(n):
    """Batch 1, and the batched paths: small batches (cuBLAS getrfBatched for n <= 128, the
    loop or the triangular solves past that), batch 64 where cuBLAS serves n <= 16."""
    if n >= 1024:
        return (1,)
    if n >= 256:
        return (1, 2)
    return (1, 2, 4, 64) if n <= 16 else (1, 2, 4)


def _option_sets(op):
    o = ops.get(op)
    names = [x.name for x in o.options]
    return [dict(zip(names, v)) for v in itertools.product(*(x.values for x in o.options))]


CASES = [(op, dt, n, b, tuple(sorted(opts.items())))
         for op in OPS for dt in DTYPES for n in SIZES for b in _batches(n)
         for opts in _option_sets(op)]


def _inputs(op, dt, n, b, seed=0):
    A = general(n, batch=() if b == 1 else (b,), cond=10.0, dtype=dt, device="cuda", seed=seed)
    return A


@pytest.mark.parametrize("op,dtype,n,batch,options", CASES,
                         ids=[f"{c[0]}-{c[1]}-n{c[2]}-b{c[3]}-" + "-".join(
                             f"{k}{int(v)}" for k, v in c[4]) for c in CASES])
def test_compare_lu_family_default_preference(op, dtype, n, batch, options):
    A = _inputs(op, dtype, n, batch)
    before = A.clone()
    c = compare(op, A, repeat=0, provenance=False, **dict(options))
    assert torch.equal(A, before)
    # where torch runs MAGMA, equal bits are possible too (seen: det at n = 256, batch 2)
    want = ("bitwise-equal",) if c.path.bitwise else ("bitwise-equal", "within-tolerance")
    assert c.verdict in want, (c.path, c.notes, c.max_ulp_distance)
    assert all(c.parts_equal.values()) or not c.path.bitwise


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("preferred", ["cusolver", "magma"])
@pytest.mark.parametrize("n,batch", [(33, 1), (33, 4), (256, 2), (8, 64)])
def test_compare_lu_family_preferences(op, preferred, n, batch):
    A = _inputs(op, "float64", n, batch, seed=1)
    c = compare(op, A, repeat=0, provenance=False, preferred=preferred)
    want = ("bitwise-equal",) if c.path.bitwise else ("bitwise-equal", "within-tolerance")
    assert c.verdict in want, (c.path, c.notes)


@pytest.mark.parametrize("op", ["lu_factor", "solve", "inv"])
@pytest.mark.parametrize("n,batch,k", [(8, 1, 3), (33, 1, 7), (33, 4, 2), (256, 1, 100)])
def test_singular_input_is_failed_alike_naming_the_column(op, n, batch, k):
    A = general_singular(n, k, batch=() if batch == 1 else (batch,), dtype="float64",
                         device="cuda", seed=2)
    c = compare(op, A, repeat=0, provenance=False)
    assert c.verdict == "failed-alike", (c.path, c.notes)
    assert c.torch.info == c.replay.info and all(v == k for v in c.torch.info)
    assert any(f"U[{k}, {k}] is exactly zero" in note for note in c.notes)


TRACED = [("lu_factor", 33, 1, {}), ("lu_factor", 33, 4, {}), ("lu_factor", 33, 1, {"pivot": False}),
          ("lu_solve", 33, 1, {}), ("lu_solve", 8, 4, {}), ("lu_solve", 256, 1, {}),
          ("lu_solve", 33, 1, {"adjoint": True}), ("lu_solve", 33, 1, {"left": False}),
          ("solve", 33, 1, {}), ("solve", 33, 4, {}), ("inv", 8, 1, {}), ("inv", 256, 1, {}),
          ("det", 33, 1, {}), ("slogdet", 33, 4, {})]


@pytest.mark.parametrize("op,n,batch,options", TRACED)
def test_call_sequences_equal_on_the_exact_paths(op, n, batch, options):
    A = _inputs(op, "float64", n, batch, seed=3)
    c = compare(op, A, repeat=0, provenance=False, trace=True, **options)
    assert c.path.bitwise
    assert c.call_sequences.equal is True, c.call_sequences.detail
    assert c.verdict == "bitwise-equal"
