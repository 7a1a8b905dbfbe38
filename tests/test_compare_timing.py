"""compare's three times per side (CUDA events, GPU busy, host issue), the time split verdict,
``--trace`` call sequences and the NVTX ranges around both sides — all without a GPU."""
from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from cusolver_trace import ops, timing
from cusolver_trace.cli import main
from cusolver_trace.compare import (CallSequences, Facts, call_sequences, compare, run_side,
                                    verdict)
from cusolver_trace.matrices import spd
from cusolver_trace.replay import replay
from cusolver_trace.timing import (TIME_SPLIT_KINDS, Timing, Unavailable, gpu_busy_from_events,
                                   time_dict, time_gpu_busy, time_host, time_split)
from cusolver_trace.tracing import load_log
from cusolver_trace.tracing.nvtx import nvtx_available, nvtx_range, set_nvtx_recorder

DATA = Path(__file__).parent / "data" / "h200-torch2.11-cu130"
B1 = "cholesky_inverse dtype=float64 n=256 batch=1 upper=False"
B3 = "cholesky_inverse dtype=float64 n=256 batch=3 upper=False"


def _verdict(**kw):
    """:func:`verdict` of the facts named as keywords (``nonfinite_alike`` is ``alike``)."""
    if "nonfinite_alike" in kw:
        kw["alike"] = kw.pop("nonfinite_alike")
    return verdict(Facts(**kw))


# --------------------------------------------------------------------------- time_split (pure)
def test_issue_overhead_small_n():
    # issue 14's n = 64 pattern: the same kernels, a slower host
    s = time_split((0.025, 0.045), (0.020, 0.0201), (0.018, 0.041))
    assert s.kind == "issue-overhead"
    assert "issue overhead" in s.text and "GPU work is alike" in s.text
    assert "host issue time 0.041 vs 0.018 ms" in s.text
    assert s.ratio == pytest.approx(1.8) and s.delta_ms == pytest.approx(0.020)
    assert s.gpu_delta_ms + s.idle_delta_ms == pytest.approx(s.delta_ms)


def test_gpu_work_large_n():
    s = time_split((33.3, 23.1), (33.0, 22.9), (0.05, 0.3))
    assert s.kind == "gpu-work" and "is GPU work" in s.text and s.ratio < 1
    assert "GPU busy 22.9 vs 33 ms" in s.text


def test_both_and_alike_and_unavailable():
    s = time_split((1.0, 2.0), (0.8, 1.3), (0.1, 0.9))
    assert s.kind == "gpu-work-and-issue-overhead" and s.gpu_share == pytest.approx(0.5)
    assert "GPU work" in s.text and "issue overhead" in s.text
    assert time_split((1.0, 1.04), (0.5, 0.9), (0.1, 0.1)).kind == "alike"
    s = time_split((1.0, 1.3), (0.5, 0.9), (0.1, 0.1), noise_ms=0.4)   # inside the spread
    assert s.kind == "noisy" and "too noisy" in s.text and "alike" not in s.text
    assert time_split((0.9, 4.5), (None, None), (None, None), noise_ms=5.0).kind == "noisy"
    s = time_split((1.0, 2.0), (None, 1.0), (None, None), why_no_gpu="ran on the CPU")
    assert s.kind == "not-separated" and "ran on the CPU" in s.text and s.gpu_delta_ms is None
    s = time_split((None, None), (None, None), (None, None), why_no_event="not timed (repeat = 0)")
    assert s.kind == "not-timed" and "repeat = 0" in s.text and s.ratio is None


times = st.one_of(st.none(), st.floats(0.0, 1e4, allow_nan=False))
pos = st.floats(1e-4, 1e4, allow_nan=False)


@settings(max_examples=300, deadline=None)
@given(te=pos, re_=pos, tg=times, rg=times, th=times, rh=times, noise=st.floats(0, 10))
def test_property_time_split(te, re_, tg, rg, th, rh, noise):
    s = time_split((te, re_), (tg, rg), (th, rh), noise_ms=noise)
    assert s.kind in TIME_SPLIT_KINDS and s.kind != "not-timed"
    assert "nan" not in s.text and "inf" not in s.text
    assert s.delta_ms == pytest.approx(re_ - te)
    if s.kind == "alike":
        assert abs(re_ - te) <= 0.05 * max(te, re_) * (1 + 1e-12)
    elif s.kind == "noisy":
        assert 0.05 * max(te, re_) < abs(re_ - te) <= noise
    elif tg is None or rg is None:
        assert s.kind == "not-separated" and s.gpu_share is None
    else:
        assert s.gpu_delta_ms + s.idle_delta_ms == pytest.approx(s.delta_ms, abs=1e-9)
        share = s.gpu_share
        expect = ("gpu-work" if share >= 0.75 else "issue-overhead" if share <= 0.25
                  else "gpu-work-and-issue-overhead")
        assert s.kind == expect
        # what the difference is made of does not depend on which side is called first
        swapped = time_split((re_, te), (rg, tg), (rh, th), noise_ms=noise)
        assert swapped.kind == s.kind
    if s.kind in ("gpu-work", "gpu-work-and-issue-overhead"):
        assert "GPU work" in s.text
    if s.kind in ("issue-overhead", "gpu-work-and-issue-overhead"):
        assert "issue overhead" in s.text
    json.dumps(s.to_dict())


# --------------------------------------------------------------------------- GPU busy from events
def _ev(marks_and_kernels):
    """Synthetic kineto events: ("mark", k, j) or ("kernel", ms) launched after the last mark."""
    out, t, corr = [], 0, 100
    for item in marks_and_kernels:
        t += 10
        if item[0] == "mark":
            out.append(("cpu", t, 0, 0, f"ct_api#{item[1]}:s{item[2]}"))
        else:
            corr += 1
            out.append(("cpu", t, 2, corr, "cudaLaunchKernel"))
            out.append(("cuda", t + 1000, round(item[1] * 1e6), corr, "kern"))
    return out


def test_gpu_busy_sums_each_calls_kernels():
    ev = _ev([("kernel", 9.0),  # before any marker: not any call's
              ("mark", 0, 0), ("kernel", 1.0), ("kernel", 0.5),
              ("mark", 1, 1), ("kernel", 0.25),
              ("mark", 2, 0), ("kernel", 3.0),
              ("mark", 3, 1)])  # a call that launched nothing: 0 ms, measured
    got = gpu_busy_from_events(ev, ["torch", "replay"])
    assert got["torch"].samples_ms == [1.5, 3.0] and got["torch"].clock == "profiler-kernels"
    assert got["replay"].samples_ms == [0.25, 0.0]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.tuples(st.just("mark"), st.integers(0, 1)),
                          st.tuples(st.just("kernel"), st.floats(0.001, 50.0))), max_size=40))
def test_property_gpu_busy_adds_up_every_kernel_after_the_first_marker(items):
    seq, k = [], 0
    for kind, v in items:
        if kind == "mark":
            seq.append(("mark", k, v))
            k += 1
        else:
            seq.append(("kernel", v))
    got = gpu_busy_from_events(_ev(seq), ["torch", "replay"])
    kernels = [v for kind, v in items if kind == "kernel"]
    first = next((i for i, (kind, _) in enumerate(items) if kind == "mark"), len(items))
    after = sum(v for kind, v in items[first:] if kind == "kernel")
    if not kernels:  # nothing ran on the GPU: unavailable, never zeros
        assert all(isinstance(t, Unavailable) for t in got.values())
        return
    total = 0.0
    for j, name in enumerate(["torch", "replay"]):
        marks = sum(1 for kind, v in items if kind == "mark" and v == j)
        t = got[name]
        if marks == 0:
            assert isinstance(t, Unavailable)
        else:
            assert len(t.samples_ms) == marks and min(t.samples_ms) >= 0
            total += sum(t.samples_ms)
    # durations are whole nanoseconds: at most 0.5 ns = 5e-7 ms off per kernel
    assert total == pytest.approx(after, rel=0, abs=5e-7 * (len(kernels) + 1))


def test_gpu_busy_without_device_events_is_unavailable_not_zero():
    got = gpu_busy_from_events([("cpu", 0, 0, 0, "ct_api#0:s0")], ["torch", "replay"])
    assert all(isinstance(v, Unavailable) and "no GPU activity" in v.reason for v in got.values())


def test_cpu_times_are_unavailable_with_a_reason():
    fns = {"a": lambda: None, "b": lambda: None}
    for got in (time_gpu_busy(fns, device=None, repeat=2), time_host(fns, device="cpu", repeat=2)):
        assert set(got) == {"a", "b"}
        assert all(isinstance(v, Unavailable) and "CPU" in v.reason for v in got.values())
    with pytest.raises(ValueError):
        time_host(fns, repeat=0)
    with pytest.raises(ValueError):
        time_gpu_busy(fns, repeat=0)
    assert time_dict(Unavailable("why")) == {"available": False, "reason": "why"}
    d = time_dict(Timing.from_samples([1.0, 2.0, 3.0], "cuda-events"))
    assert d["available"] is True and d["median_ms"] == 2.0 and "samples_ms" not in d


# --------------------------------------------------------------------------- compare on the CPU
def test_compare_cpu_reports_unavailable_times_with_reasons():
    c = compare("cholesky_inverse", spd(12), repeat=2, warmup=0, provenance=False)
    t = c.to_dict()["torch"]["timing"]
    assert t["events"]["available"] and t["events"]["clock"] == "thread_time"
    for key in ("gpu_busy", "host"):
        assert t[key]["available"] is False and "CPU" in t[key]["reason"]
        assert "median_ms" not in t[key]  # never a zero standing in for "unknown"
    assert c.time_split.kind in ("alike", "noisy", "not-separated")
    text = str(c)
    assert "GPU busy (kernel sum)" in text and "host issue time" in text and "unavailable" in text
    assert c.time_split.text.split(";")[0] in text
    assert any("GPU-busy time unavailable: ran on the CPU" in n for n in c.notes)


def test_compare_not_timed_says_so():
    c = compare("cholesky", spd(6), timing=False, provenance=False)
    d = c.to_dict()
    assert {v["reason"] for v in d["replay"]["timing"].values()} == {"not timed (timing=False)"}
    assert d["time_split"]["kind"] == "not-timed"
    c = compare("cholesky", spd(6), repeat=0, provenance=False)
    assert c.torch.times()["events"].reason == "not timed (repeat = 0)"


def test_cli_summary_has_the_three_times_and_the_split(capsys, tmp_path):
    out = tmp_path / "c.json"
    assert main(["compare", "--op", "cholesky", "--n", "8,9", "--repeat", "2", "--device", "cpu",
                 "--summary-only", "--json", str(out)]) == 0
    text = capsys.readouterr().out
    # on the CPU: the timing thread's CPU time; the GPU-busy and host columns, all "—", are
    # left out of the table (the JSON says why each is unavailable)
    for col in ("torch CPU", "replay CPU", "replay/torch", "difference"):
        assert col in text
    for col in ("torch GPU", "torch host", "replay GPU", "replay host"):
        assert col not in text
    data = json.loads(out.read_text())
    assert all(d["schema"] == "cusolver-trace/comparison/4" for d in data)


@pytest.mark.parametrize("bad", [["--trace-timeout", "0"], ["--trace-timeout", "-1"],
                                 ["--trace-timeout", "nan"], ["--trace-timeout", "abc"],
                                 ["--trace=yes"]])
def test_cli_trace_flags_are_strict(bad, capsys):
    with pytest.raises(SystemExit) as e:
        main(["compare", "--op", "cholesky", "--n", "4", "--device", "cpu", *bad])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.strip()


# --------------------------------------------------------------------------- --trace
def _found(section_a, section_b):
    log = load_log(DATA / "trace-stdout.log.gz")
    return {"torch": (log.section(section_a).calls, [], None),
            "replay": (log.section(section_b).calls, [], None)}


def _path(bitwise):
    return ops.TorchPath("cholesky_inverse", "cusolver" if bitwise else "magma", ("x",), "r",
                         bitwise, "rule", "" if bitwise else "torch runs MAGMA here")


def test_call_sequences_equal_on_the_same_calls():
    changed = call_sequences(_found(B1, "cholesky_solve nrhs=4 dtype=float64 n=256 batch=1 "
                                           "upper=False"), _path(True))
    assert changed.first_difference.startswith("torch's call 1 vs the replay's call 1: nrhs: 256 -> 4")
    cs = call_sequences(_found(B1, B1), _path(True))
    assert cs.equal is True and cs.answer == "yes" and not cs.counts_as_mismatch
    assert cs.calls_torch == cs.calls_replay == 3
    assert cs.torch_calls[0].startswith("cusolverDnXpotrs  uplo=LOWER n=256 nrhs=256")
    d = cs.to_dict()
    assert d["traced"] and d["equal"] and d["first_difference"] is None


def test_unequal_calls_count_as_mismatch_only_where_the_replay_is_exact():
    # the 2.11 MAGMA section logs no compute call; the batch-1 section logs Xpotrs + 2 trsm
    exact = call_sequences(_found(B3, B1), _path(True))
    assert exact.equal is False and exact.counts_as_mismatch and "MISMATCH" in exact.detail
    assert exact.first_difference.startswith("the replay's call 1 is not in torch's: "
                                             "cusolverDnXpotrs  uplo=LOWER n=256")
    magma = call_sequences(_found(B3, B1), _path(False))
    assert magma.equal is False and not magma.counts_as_mismatch
    assert "not a MISMATCH" in magma.reason and "MAGMA" in magma.reason
    assert "not a MISMATCH" in magma.detail


def test_untraced_side_is_reported_not_compared():
    cs = call_sequences({"torch": (None, ["the API child stopped before the traced call"], None),
                         "replay": ([], [], None)}, _path(True))
    assert cs.equal is None and cs.answer == "not traced" and not cs.counts_as_mismatch
    assert "stopped before" in cs.reason and cs.to_dict()["traced"] is False


def test_verdict_calls_differ_is_a_mismatch():
    kw = dict(bitwise=True, info_agree=True, info_failed=False, torch_raised=False,
              fails_on_info=False, factor_failed=False, nonfinite_alike=True, nonfinite=False,
              nan_mismatches=0, rel_diff=0.0, tolerance=1e-13, torch_passes=True,
              replay_passes=True)
    assert _verdict(**kw) == "bitwise-equal"
    assert _verdict(**kw, calls_differ=True) == "MISMATCH"


def test_compare_trace_on_the_cpu_is_not_traced(capsys):
    c = compare("cholesky_inverse", spd(5), trace=True, timing=False, provenance=False)
    assert c.call_sequences.equal is None and "CPU" in c.call_sequences.reason
    assert c.verdict != "MISMATCH" and c.to_dict()["call_sequences"]["traced"] is False
    assert "call sequences equal: not traced" in str(c)
    assert main(["compare", "--op", "cholesky", "--n", "6", "--repeat", "0", "--device", "cpu",
                 "--trace"]) == 0
    assert "call sequences equal: yes 0, no 0, not traced 1" in capsys.readouterr().out
    with pytest.raises(ValueError):
        compare("cholesky", spd(3), trace=True, trace_timeout=0)


def test_api_calls_many_runs_each_call_in_its_own_section():
    """The tracing child (one process, two labelled calls) on CPU inputs: both sections are
    reached, LAPACK logs nothing."""
    from cusolver_trace.tracing.profile import api_calls_many

    L = torch.linalg.cholesky(spd(4))
    inputs = ops.Inputs(L, L)
    name = "cusolver_trace.compare.run_side"
    found = api_calls_many([(s, name, ("cholesky_inverse", s, inputs, False), {})
                            for s in ("torch", "replay")], None, timeout=120)
    assert set(found) == {"torch", "replay"}
    for calls, notes, outside in found.values():
        assert calls == [] and notes == [] and outside is None
    with pytest.raises(ValueError):
        api_calls_many([("a", name, (), {}), ("a", name, (), {})], None)


# --------------------------------------------------------------------------- NVTX
class Recorder:
    def __init__(self):
        self.log = []

    def push_range(self, message, domain, color=None):
        self.log.append(("push", message, domain))

    def pop_range(self, domain):
        self.log.append(("pop", domain))


@pytest.fixture
def recorder():
    rec = Recorder()
    old = set_nvtx_recorder(rec)
    try:
        yield rec
    finally:
        set_nvtx_recorder(old)


def _balanced(log):
    """Every push is popped before the next push (no nesting here), in order."""
    depth = 0
    for entry in log:
        depth += 1 if entry[0] == "push" else -1
        assert depth in (0, 1), log
    assert depth == 0
    return [e[1] for e in log if e[0] == "push"]


def test_compare_pushes_and_pops_a_named_range_per_call(recorder):
    compare("cholesky_solve", spd(6), repeat=2, warmup=1, provenance=False)
    names = _balanced(recorder.log)
    torch_ranges = [n for n in names if n.startswith("torch ")]
    replay_ranges = [n for n in names if n.startswith("replay ")]
    assert len(torch_ranges) + len(replay_ranges) == len(names)
    # one run each, then warm-up, and each of the 2 CPU samples after an untimed call (short
    # calls, timed interleaved on one thread: timing.WARM_EACH_MAX_S)
    assert len(torch_ranges) == len(replay_ranges) == 1 + 1 + 2 * 2
    assert set(replay_ranges) == {"replay cholesky_solve: LAPACK dpotrs × batch n=6 batch=1 nrhs=1"}
    assert set(torch_ranges) == {"torch torch.cholesky_solve n=6 batch=1 nrhs=1"}
    assert all(e[-1] == "cusolver-trace" for e in recorder.log)


def test_replay_and_run_side_ranges(recorder):
    L = torch.linalg.cholesky(spd(5))
    replay("cholesky_inverse", L)
    run_side("cholesky_inverse", "torch", ops.Inputs(L, L))
    assert _balanced(recorder.log) == [
        "replay cholesky_inverse: LAPACK dpotri → mirror triangle n=5 batch=1",
        "torch torch.cholesky_inverse n=5 batch=1"]
    with pytest.raises(ValueError):
        run_side("cholesky_inverse", "neither", ops.Inputs(L, L))


def test_range_is_popped_when_the_body_raises(recorder):
    with pytest.raises(ZeroDivisionError):
        with nvtx_range("boom"):
            1 / 0
    assert recorder.log == [("push", "boom", "cusolver-trace"), ("pop", "cusolver-trace")]


@pytest.mark.skipif(nvtx_available(), reason="the nvtx package is installed here")
def test_without_nvtx_the_range_is_one_shared_no_op():
    assert nvtx_range("a") is nvtx_range("b")
    with nvtx_range("a") as v:
        assert v is None


def test_time_module_exports():
    for name in ("Unavailable", "time_gpu_busy", "time_host", "TimeSplit", "time_split"):
        assert name in timing.__all__
    assert math.isclose(timing.GPU_SHARE, 0.75)


def test_time_calls_runs_calls_per_sample_consecutive_calls_and_reports_per_call():
    from cusolver_trace.timing import time_calls

    count = {"a": 0, "b": 0}
    order = []

    def make(name):
        def fn():
            count[name] += 1
            order.append(name)
        return fn

    t = time_calls({"a": make("a"), "b": make("b")}, warmup=1, repeat=4, calls_per_sample=3)
    # the CPU clock, one thread: warm-up, then 4 rounds that interleave the callables, each
    # sample of 3 calls after an untimed call of the same callable (short calls)
    assert count == {"a": 1 + 4 * (1 + 3), "b": 1 + 4 * (1 + 3)}
    assert order == ["a", "b"] + (["a"] * 4 + ["b"] * 4) * 4
    t2 = time_calls({"a": make("a"), "b": make("b")}, warmup=0, repeat=2, calls_per_sample=3,
                    threads=2)
    # more threads: one block per callable (one untimed call, then its samples)
    assert order[-14:] == ["a"] * 7 + ["b"] * 7 and set(t2) == {"a", "b"}
    assert set(t) == {"a", "b"} and all(v.median_ms >= 0 for v in t.values())
    with pytest.raises(ValueError, match="calls_per_sample"):
        time_calls({"a": make("a")}, calls_per_sample=0)


@settings(max_examples=60, deadline=None)
@given(st.one_of(st.integers(max_value=0), st.floats(allow_nan=True), st.booleans(), st.text(max_size=3),
                 st.none()))
def test_property_calls_per_sample_takes_a_positive_int_only(value):
    """Anything but an int >= 1 (floats, bools, strings, None, 0, negatives) is a ValueError
    before any call runs; the callables dict is left as it was."""
    from cusolver_trace.timing import time_calls

    calls = []
    fns = {"a": lambda: calls.append(1)}
    before = dict(fns)
    with pytest.raises(ValueError, match="calls_per_sample"):
        time_calls(fns, repeat=1, warmup=0, calls_per_sample=value)
    assert calls == [] and fns == before


def test_verdict_failures_at_different_minors():
    """Both sides fail on the same matrices: failed-alike where two libraries run (they may
    stop at different minors of a matrix singular to working precision), MISMATCH where the
    replay runs torch's own routine; different matrices failing is a MISMATCH anywhere."""
    kw = dict(bitwise=False, info_agree=False, info_failed=True, torch_raised=False,
              fails_on_info=True, factor_failed=False, nonfinite_alike=True, nonfinite=False,
              nan_mismatches=0, rel_diff=0.0, tolerance=1e-13, torch_passes=False,
              replay_passes=False)
    assert _verdict(**kw, exact_path=False, failures_agree=True) == "failed-alike"
    assert _verdict(**kw, exact_path=True, failures_agree=True) == "MISMATCH"
    assert _verdict(**kw, exact_path=False, failures_agree=False) == "MISMATCH"
    assert _verdict(**{**kw, "info_agree": True}, exact_path=True) == "failed-alike"


def test_verdict_both_sides_failing_the_ratio_but_agreeing():
    kw = dict(bitwise=False, info_agree=True, info_failed=False, torch_raised=False,
              fails_on_info=False, factor_failed=False, nonfinite_alike=True, nonfinite=False,
              nan_mismatches=0, rel_diff=0.0, tolerance=1e-13)
    assert _verdict(**kw, torch_passes=False, replay_passes=False) == "failed-alike"
    assert _verdict(**{**kw, "rel_diff": 1e-3}, torch_passes=False, replay_passes=False) == "MISMATCH"
    assert _verdict(**kw, torch_passes=True, replay_passes=False) == "MISMATCH"
    assert _verdict(**kw, torch_passes=False, replay_passes=True) == "MISMATCH"


def test_compare_cpu_singular_float32_and_a_foreign_factor_are_failed_alike():
    import torch

    # singular to float32 working precision: torch's LAPACK and scipy's stop at minors 31 / 30
    # on the machine this was found on; the verdict must not depend on which
    assert main(["compare", "--op", "cholesky", "--n", "64", "--matrix", "random:cond=1e16",
                 "--dtype", "float32", "--upper", "--repeat", "0"]) == 0
    c = compare("cholesky_inverse", spd(4), factor=torch.eye(4, dtype=torch.float64),
                timing=False, provenance=False)
    assert c.verdict == "failed-alike"
    assert any("both sides fail LAPACK's pot03 ratio" in n for n in c.notes)


def test_verdict_exact_path_not_bitwise_is_a_mismatch():
    """Where the replay runs torch's own routine, other bits are a MISMATCH even when both
    sides pass LAPACK's ratio (a wrong dispatch row would only change the rounding)."""
    kw = dict(bitwise=False, info_agree=True, info_failed=False, torch_raised=False,
              fails_on_info=False, factor_failed=False, nonfinite_alike=True, nonfinite=False,
              nan_mismatches=0, rel_diff=1e-15, tolerance=1e-13)
    assert _verdict(**kw, torch_passes=True, replay_passes=True) == "within-tolerance"
    assert _verdict(**kw, torch_passes=True, replay_passes=True, exact_path=True) == "MISMATCH"
    assert _verdict(**kw, torch_passes=False, replay_passes=False, exact_path=True) == "MISMATCH"
    assert _verdict(**{**kw, "bitwise": True}, torch_passes=True, replay_passes=True,
                   exact_path=True) == "bitwise-equal"


def test_compare_judges_the_healthy_members_of_a_batch_with_a_failing_one(monkeypatch):
    """One matrix of the batch is not positive definite: the others are still compared, so a
    replay that corrupts them is a MISMATCH, not failed-alike."""
    import torch

    from cusolver_trace.backends import cpu as cpub

    A = spd(4, batch=3)
    A[1] = -A[1]
    c = compare("cholesky", A, timing=False, provenance=False)
    assert c.verdict == "failed-alike" and c.torch.info == c.replay.info
    real = cpub.potrf

    def corrupting(x, upper):
        out, info = real(x, upper)
        out = out.copy()
        out[0] *= 2
        return out, info

    monkeypatch.setattr(cpub, "potrf", corrupting)
    c = compare("cholesky", A, timing=False, provenance=False)
    assert c.verdict == "MISMATCH"
    assert torch.equal(A[1], -spd(4, batch=3)[1])   # the input was left as it was


@pytest.mark.parametrize("op", ["cholesky_inverse", "cholesky_solve"])
def test_compare_judges_the_finite_members_beside_one_with_nan_input(op, monkeypatch):
    """NaN in one member's factor leaves that member unspecified, not the batch: a replay
    that corrupts another member is a MISMATCH."""
    import torch

    A = spd(5, batch=3)
    L = torch.linalg.cholesky(A)
    L[1, 2, 1] = float("nan")
    B = torch.randn(3, 5, 2, dtype=torch.float64) if op == "cholesky_solve" else None
    assert compare(op, A, B, factor=L, timing=False, provenance=False).verdict == "failed-alike"
    from cusolver_trace.backends import cpu as cpub

    name = "potri" if op == "cholesky_inverse" else "potrs"   # what the op's CPU replay calls
    real = getattr(cpub, name)

    def corrupting(*args):
        out, info = real(*args)
        out = out.copy()
        out[0] *= 1000
        return out, info

    monkeypatch.setattr(cpub, name, corrupting)
    assert compare(op, A, B, factor=L, timing=False, provenance=False).verdict == "MISMATCH"


def test_compare_a_failing_member_beside_one_with_an_infinite_pivot_is_failed_alike():
    import torch

    A = spd(4, batch=2, seed=2).clone()
    A[0] = -A[0]
    A[1, 0, 0] = float("inf")
    c = compare("cholesky", A, timing=False, provenance=False)
    assert c.verdict == "failed-alike" and torch.isinf(A[1, 0, 0])


def test_compare_one_library_failing_a_numerically_singular_minor_is_failed_alike(monkeypatch):
    """Two LAPACKs: one fails a matrix singular to float32 precision, the other passes a
    pivot at the rounding level: failed-alike (exit 0). A failure reported where the other
    side's pivot is healthy stays a MISMATCH."""
    import numpy as np

    from cusolver_trace.backends import cpu as cpub

    assert main(["compare", "--op", "cholesky", "--matrix", "random:cond=1e9", "--dtype",
                 "float32", "--batch", "3", "--n", "16", "--seed", "1", "--repeat", "0"]) == 0
    A = spd(6, batch=3, cond=10.0)
    assert compare("cholesky", A, timing=False, provenance=False).verdict != "MISMATCH"
    real = cpub.potrf

    def failing_a_healthy_matrix(x, upper):
        out, info = real(x, upper)
        info = np.array(info, copy=True)
        info.reshape(-1)[1] = 3      # claims minor 3 of a well-conditioned matrix fails
        return out, info

    monkeypatch.setattr(cpub, "potrf", failing_a_healthy_matrix)
    assert compare("cholesky", A, timing=False, provenance=False).verdict == "MISMATCH"


@pytest.fixture
def cuda_log(monkeypatch):
    """torch.cuda's events, synchronize and device switch replaced by stand-ins (CPU) that
    append "record" / "sync" to the list returned; an event's time is its place in it."""
    import contextlib

    import torch as _torch

    log = []

    class Ev:
        def __init__(self, enable_timing=False):
            self.t = None

        def record(self):
            log.append("record")
            self.t = len(log)

        def elapsed_time(self, other):
            return float(other.t - self.t)

    monkeypatch.setattr(_torch.cuda, "Event", Ev)
    monkeypatch.setattr(_torch.cuda, "synchronize", lambda dev=None: log.append("sync"))
    monkeypatch.setattr(_torch.cuda, "device", lambda dev: contextlib.nullcontext())
    return log


def test_time_calls_idle_start_synchronizes_before_each_cuda_sample(cuda_log):
    """idle_start=True (compare's timing): a synchronize right before every sample's start
    event, so no sample starts behind another's queued work; without it only the one before
    the loop and the one after it. Recorded with stand-ins for torch.cuda's events (CPU)."""
    from cusolver_trace import timing

    log = cuda_log
    fns = {"a": lambda: log.append("call a"), "b": lambda: log.append("call b")}
    for idle in (True, False):
        log.clear()
        t = timing.time_calls(fns, device="cuda:0", warmup=0, repeat=3, idle_start=idle)
        assert t["a"].clock == "cuda-events" and t["a"].median_ms > 0
        starts = [i for i, x in enumerate(log) if x == "record" and log[i + 1].startswith("call")]
        assert len(starts) == 6
        synced = [log[i - 1] == "sync" for i in starts]
        assert all(synced) if idle else synced == [True] + [False] * 5
        assert log.count("sync") == (8 if idle else 2)   # + the one before the loop, after it
    with pytest.raises(TypeError, match="idle_start"):
        timing.time_calls(fns, device="cuda:0", repeat=1, idle_start=1)


def test_fewer_than_three_samples_are_never_a_trusted_spread():
    """One sample has an IQR of 0, which compare reported as 'not noisy' (--repeat 1): with
    fewer than 3 samples a timing is flagged noisy; from 3 on the IQR rule decides."""
    from cusolver_trace.timing import Timing

    assert Timing.from_samples([1.0], "x").noisy and Timing.from_samples([1.0], "x").iqr_ms == 0
    assert Timing.from_samples([1.0, 1.0], "x").noisy
    assert not Timing.from_samples([1.0, 1.0, 1.0], "x").noisy
    assert Timing.from_samples([1.0, 1.0, 2.0, 2.0], "x").noisy


def test_time_split_gives_no_verdict_from_fewer_than_three_samples():
    """With 1 or 2 samples the spread is unknown (IQR 0): a difference beyond 5 % is 'noisy'
    (it was split into GPU work / issue overhead from one sample); 'alike' still holds."""
    from cusolver_trace.timing import time_split

    assert time_split((1, 2), (0.9, 1.9), (0.05, 0.05)).kind == "gpu-work"
    few = time_split((1, 2), (0.9, 1.9), (0.05, 0.05), samples=1)
    assert few.kind == "noisy" and "too few samples" in few.text
    assert time_split((1, 2), (0.9, 1.9), (0.05, 0.05), samples=3).kind == "gpu-work"
    assert time_split((1, 1.01), (0.9, 0.9), (0.05, 0.05), samples=1).kind == "alike"


def test_time_calls_and_time_host_warm_each_call_once_untimed_before_each_sample(cuda_log):
    """warm_each=True (compare's timing): each CUDA sample is preceded by an untimed call of
    the same callable, then the synchronize, then the sample's start event (time_calls) or
    clock (time_host); without it no call comes between the synchronize and the sample of
    another callable. Recorded with stand-ins for torch.cuda's events (CPU)."""
    from cusolver_trace import timing

    log = cuda_log
    fns = {"a": lambda: log.append("call a"), "b": lambda: log.append("call b")}
    for warm in (True, False):
        log.clear()
        t = timing.time_calls(fns, device="cuda:0", warmup=0, repeat=3, idle_start=True,
                              warm_each=warm)
        assert t["a"].median_ms > 0 and t["b"].median_ms > 0
        # a start event: a record right after a synchronize (idle_start)
        starts = [i for i, x in enumerate(log) if x == "record" and log[i - 1] == "sync"]
        assert len(starts) == 6 and all(log[i + 1].startswith("call") and log[i + 2] == "record"
                                        for i in starts)
        for i in starts:
            timed = log[i + 1]
            before = log[i - 2:i]
            # without warm_each, the previous sample's end event (or the first synchronize)
            assert before[1] == "sync"
            assert before[0] == timed if warm else before[0] in ("record", "sync")
        assert log.count("call a") == (6 if warm else 3)
        log.clear()
        h = timing.time_host(fns, device="cuda:0", repeat=3, warm_each=warm)
        assert h["a"].clock == "host-perf_counter"
        assert log == ([x for _ in range(3) for c in ("call a", "call b")
                        for x in (c, "sync", c)] if warm else
                       [x for _ in range(3) for c in ("call a", "call b") for x in ("sync", c)]
                       ) + ["sync"]
    for fn in (lambda: timing.time_calls(fns, device="cuda:0", repeat=1, warm_each=1),
               lambda: timing.time_host(fns, device="cuda:0", repeat=1, warm_each="yes")):
        with pytest.raises(TypeError, match="warm_each"):
            fn()


def test_compare_command_times_every_point_before_it_profiles_any(monkeypatch, capsys):
    """torch.profiler slows every later call in its process, so the command takes every
    point's event and host times first, then the GPU-busy times, on the same inputs made
    again (checked here on the CPU with the GPU ordering forced on: time_calls / time_host
    of every point come before the first time_gpu_busy, each point is profiled once, in
    order, on inputs equal to the ones it was timed on, and the verdicts are the same as
    with one pass)."""
    import importlib

    from cusolver_trace.cli import main

    cmp = importlib.import_module("cusolver_trace.compare")   # the package, not the function
    run = importlib.import_module("cusolver_trace.compare.run")
    cli_compare = importlib.import_module("cusolver_trace.cli.compare")

    log = []
    for mod, name in ((run, "time_calls"), (run, "time_host"), (run, "time_gpu_busy"),
                      (cmp, "time_gpu_busy")):   # where each is looked up
        orig = getattr(mod, name)

        def wrapped(fns, *a, _orig=orig, _name=name, **kw):
            x = fns["torch"]()
            log.append((_name, tuple(x[0].shape) if isinstance(x, tuple) else None,
                        float(x[0].sum()) if isinstance(x, tuple) else None))
            return _orig(fns, *a, **kw)
        monkeypatch.setattr(mod, name, wrapped)
    argv = ["compare", "--op", "cholesky_solve", "--n", "5,7", "--uplo", "L,U", "--repeat", "3",
            "--warmup", "0", "--device", "cpu"]
    assert main(argv) == 0
    one_pass = capsys.readouterr().out
    assert [e[0] for e in log] == ["time_calls", "time_host", "time_gpu_busy"] * 4
    log.clear()
    monkeypatch.setattr(cli_compare, "_profile_last", lambda device, repeat: True)
    assert main(argv) == 0
    two_pass = capsys.readouterr().out
    kinds = [e[0] for e in log]
    assert kinds == ["time_calls", "time_host"] * 4 + ["time_gpu_busy"] * 4
    timed = [e[1:] for e in log if e[0] == "time_calls"]
    profiled = [e[1:] for e in log if e[0] == "time_gpu_busy"]
    assert profiled == timed                       # the same inputs, in the same order
    assert "then their GPU-busy time" in two_pass
    verdicts = [ln for ln in one_pass.splitlines() if ln.startswith("verdict")]
    assert verdicts and verdicts == [ln for ln in two_pass.splitlines() if ln.startswith("verdict")]
    assert "GPU-busy time unavailable: ran on the CPU" in two_pass
    assert "not measured yet" not in two_pass


@settings(max_examples=15, deadline=None)
@given(op=st.sampled_from(["cholesky", "cholesky_inverse", "cholesky_solve"]),
       n=st.integers(1, 6), other_n=st.integers(1, 6), upper=st.booleans(),
       bad_flag=st.sampled_from(["False", 0, 1, None, 1.0]))
def test_property_with_gpu_busy_inputs_and_flag(op, n, other_n, upper, bad_flag):
    """compare(..., gpu_busy=False) then with_gpu_busy on the same inputs: the same verdict
    and times, the GPU-busy time now measured (on the CPU: unavailable, with its note), the
    inputs unchanged; other inputs (shape, values, a factor compare did not have) are a
    ValueError, timed or not, a second with_gpu_busy too, anything but a bool for gpu_busy a
    TypeError."""
    import cusolver_trace as ct
    from cusolver_trace.matrices import spd

    A = spd(n, seed=n)
    before = A.clone()
    with pytest.raises(TypeError, match="must be True or False"):
        ct.compare(op, A, gpu_busy=bad_flag, timing=False, provenance=False)
    c = ct.compare(op, A, upper=upper, repeat=3, warmup=0, gpu_busy=False, provenance=False)
    assert all(s.gpu_busy.reason.startswith("not measured yet") for s in (c.torch, c.replay))
    assert not any("not measured yet" in x for x in c.notes)
    d = ct.with_gpu_busy(c, A)
    assert torch.equal(A, before)
    assert d.verdict == c.verdict and d.torch.timing is c.torch.timing
    assert all(s.gpu_busy.reason.startswith("ran on the CPU") for s in (d.torch, d.replay))
    assert d.notes[:len(c.notes)] == c.notes and "GPU-busy time unavailable" in d.notes[-1]
    # which of the three depends on the measured times (never asserted on): only a difference
    # beyond the samples' spread is "not separated", and then the reason is given
    assert d.time_split.kind in ("alike", "noisy", "not-separated")
    assert d.time_split.kind != "not-separated" or "ran on the CPU" in d.time_split.text
    with pytest.raises(ValueError, match="not waiting"):
        ct.with_gpu_busy(d, A)
    with pytest.raises(ValueError, match="not waiting"):
        ct.with_gpu_busy(ct.compare(op, A, repeat=2, provenance=False), A)
    others = [(2 * A, {}, "values")]
    if op == "cholesky":   # an op on A takes no factor at all
        with pytest.raises(TypeError, match="unexpected keyword 'factor'"):
            ct.with_gpu_busy(c, A, factor=torch.linalg.cholesky(A))
    else:
        others.append((A, {"factor": torch.linalg.cholesky(A)}, "factor was not given"))
    if other_n != n:
        others.append((spd(other_n), {}, "shape"))
    if n >= 2:   # same sum, other values: a change moved between the triangles, a permutation
        moved = A.clone()
        moved[n - 1, 0] += 1
        moved[0, n - 1] -= 1
        perm = torch.roll(torch.arange(n), 1)
        others += [(moved, {}, "values"), (A[perm][:, perm], {}, "values")]
    for X, kw, why in others:
        with pytest.raises(ValueError, match=why):
            ct.with_gpu_busy(c, X, **kw)
    with pytest.raises(TypeError, match="Comparison"):
        ct.with_gpu_busy(c.to_dict(), A)
    untimed = ct.compare(op, A, timing=False, gpu_busy=False, provenance=False)
    with pytest.raises(ValueError, match="values"):
        ct.with_gpu_busy(untimed, 2 * A)
    with pytest.raises(TypeError, match="expected numbers"):
        ct.with_gpu_busy(untimed, "x")
    assert ct.with_gpu_busy(untimed, A) is untimed
    assert torch.equal(A, before)
