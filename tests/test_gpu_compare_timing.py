"""GPU: compare's three times per side, the time split, --trace and the NVTX ranges on a real GPU."""
from __future__ import annotations

import pytest
import torch

from cusolver_trace.compare import compare
from cusolver_trace.matrices import spd
from cusolver_trace.replay import parse_version
from cusolver_trace.timing import TIME_SPLIT_KINDS, Timing
from cusolver_trace.tracing.nvtx import set_nvtx_recorder

pytestmark = pytest.mark.gpu


def test_three_times_per_side():
    A = spd(256, dtype="float64", device="cuda")
    c = compare("cholesky_inverse", A, repeat=5, warmup=1, provenance=False)
    for side in (c.torch, c.replay):
        t = side.times()
        assert t["events"].clock == "cuda-events"
        assert isinstance(t["gpu_busy"], Timing), t["gpu_busy"]
        assert t["gpu_busy"].clock == "profiler-kernels" and t["gpu_busy"].median_ms > 0
        assert isinstance(t["host"], Timing) and t["host"].clock == "host-perf_counter"
        assert len(t["gpu_busy"].samples_ms) == len(t["host"].samples_ms) == 5
    assert c.time_split.kind in TIME_SPLIT_KINDS and c.time_split.kind != "not-separated"
    d = c.to_dict()
    assert d["torch"]["timing"]["gpu_busy"]["available"] is True


def test_trace_batch1_call_sequences_equal():
    A = spd(128, dtype="float64", device="cuda")
    c = compare("cholesky_inverse", A, timing=False, provenance=False, trace=True)
    cs = c.call_sequences
    assert cs.equal is True, cs.to_dict()
    assert cs.calls_torch == 3 and cs.torch_calls[0].startswith("cusolverDnXpotrs")
    assert c.verdict == "bitwise-equal"


def test_trace_magma_batch_is_not_a_mismatch():
    if parse_version(torch.__version__) > (2, 11):
        pytest.skip("torch >= 2.12 has no MAGMA path for cholesky_inverse")
    A = spd(64, batch=(4,), dtype="float64", device="cuda")
    c = compare("cholesky_inverse", A, timing=False, provenance=False, trace=True)
    assert c.path.backend == "magma" and c.call_sequences.equal is False
    assert not c.call_sequences.counts_as_mismatch and c.verdict != "MISMATCH"


def test_nvtx_ranges_on_gpu():
    log = []

    class Rec:
        def push_range(self, message, domain, color=None):
            log.append(message)

        def pop_range(self, domain):
            log.append(None)

    old = set_nvtx_recorder(Rec())
    try:
        compare("cholesky", spd(64, device="cuda"), repeat=2, warmup=0, provenance=False)
    finally:
        set_nvtx_recorder(old)
    pushes = [m for m in log if m is not None]
    assert len(pushes) == log.count(None) and pushes
    assert "replay cholesky: cusolverDnXpotrf_bufferSize → cusolverDnXpotrf n=64 batch=1" in pushes
