"""GPU: compare() verdicts for torch 2.11's paths (H200), per issue 3's acceptance list."""
from __future__ import annotations

import pytest
import torch

from cusolver_trace.compare import compare
from cusolver_trace.matrices import spd
from cusolver_trace.replay import parse_version

pytestmark = pytest.mark.gpu

DTYPES = ["float32", "float64", "complex64", "complex128"]
OPS = ["cholesky", "cholesky_inverse", "cholesky_solve"]


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("n", [1, 64, 1000, 4096])
def test_batch1_bitwise_equal(op, dtype, upper, n):
    A = spd(n, cond=1e3, dtype=dtype, device="cuda", seed=n)
    c = compare(op, A, upper=upper, timing=False, provenance=False)
    assert c.path.backend == "cusolver"
    assert c.verdict == "bitwise-equal", c
    assert c.torch.ratio < 30 and c.replay.ratio < 30


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("dtype", ["float64", "complex64"])
@pytest.mark.parametrize("upper", [False, True])
def test_batched_preferred_cusolver_bitwise(op, dtype, upper):
    A = spd(96, batch=(4,), dtype=dtype, device="cuda", seed=3)
    c = compare(op, A, upper=upper, preferred="cusolver", timing=False, provenance=False)
    assert c.verdict == "bitwise-equal", c


@pytest.mark.parametrize("op", ["cholesky_inverse", "cholesky_solve"])
def test_batched_default_path(op):
    A = spd(32, batch=(64,), dtype="float64", device="cuda", seed=4)
    c = compare(op, A, timing=False, provenance=False)
    if parse_version(torch.__version__) <= (2, 11):
        assert c.path.backend == "magma" and not c.path.bitwise
        assert c.verdict in ("within-tolerance", "bitwise-equal")
    else:
        assert c.verdict == "bitwise-equal"
    assert c.torch.ratio < 30 and c.replay.ratio < 30


def test_failed_factorization_compares_info_only():
    A = -spd(3, dtype="float64", device="cuda")
    c = compare("cholesky", A, timing=False, provenance=False)
    assert c.verdict == "failed-alike" and c.torch.info == c.replay.info == [1]


def test_timing_and_provenance_reported():
    A = spd(1024, dtype="float64", device="cuda")
    c = compare("cholesky_inverse", A, repeat=10)
    assert c.torch.timing.clock == "cuda-events" and c.time_ratio > 0
    d = c.to_dict()
    assert d["provenance"]["gpu"]["available"] and d["provenance"]["shared_libraries"] is True
