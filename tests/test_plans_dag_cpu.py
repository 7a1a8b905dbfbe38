"""The two-buffer GEMM inverse plan, the stream scheduler and its checker, spd_inverse (CPU).

Plans run through the reference executor (``run_plan_reference``: torch ops on the same
column-major offsets the GPU executor uses). The stream / event programs are checked two
ways: by ``check_schedule`` (vector clocks over CUDA's record / wait semantics), and by
running the calls in random orders that the streams and events allow — a correct program
gives bit-for-bit the sequential result in every such order, and a program with a wait
removed is caught by the checker and, in some order, computes something else.
"""
from __future__ import annotations

import random

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import cusolver_trace as ct
from cusolver_trace import checks, plans, routines
from cusolver_trace.plans import (Call, ScheduleError, access, check_schedule, inverse_plan,
                                  lauum_plan, run_inverse_reference, run_plan_reference,
                                  schedule, transpose_call, trtri_plan)

SMALL = dict(trtri_base=8, block=4, trmm_base=12, lauum_block=9)
DTYPES = [torch.float32, torch.float64, torch.complex64, torch.complex128]


def _spd(n, dtype, seed=0, batch=()):
    g = torch.Generator().manual_seed(seed)
    wide = torch.complex128 if dtype.is_complex else torch.float64
    X = torch.randn(*batch, n, n, dtype=wide, generator=g)
    A = X @ X.mH / n + torch.eye(n, dtype=wide)
    return A.to(dtype)


def _garbage_factor(A, upper):
    """The factor with NaN in the triangle that must not be read."""
    L = torch.linalg.cholesky(A, upper=upper)
    n = A.shape[-1]
    mask = torch.ones(n, n, dtype=torch.bool)
    mask = mask.tril(-1) if upper else mask.triu(1)
    return torch.where(mask, torch.full_like(L, float("nan")), L)


def _tol(dtype):
    return 1e-3 if dtype in (torch.float32, torch.complex64) else 1e-10


# --------------------------------------------------------------------------- the plan computes A⁻¹
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("n", [1, 2, 5, 9, 13, 37])
@pytest.mark.parametrize("opts", [dict(), dict(trmm_kernel="gemm"), dict(lauum_diag="trmm"),
                                  dict(streams=1), dict(streams=3, trmm_kernel="gemm",
                                                        lauum_diag="trmm"),
                                  dict(trtri_scratch=True), dict(trtri_scratch=True,
                                                                 trmm_kernel="gemm"),
                                  dict(trtri_scratch="triangle"),
                                  dict(trtri_scratch="triangle", trmm_kernel="gemm", streams=3),
                                  dict(trtri_batched=True, trtri_base=3, streams=3),
                                  dict(trtri_batched=True, trtri_scratch="triangle",
                                       trtri_base=4)])
def test_inverse_plan_computes_the_inverse(dtype, upper, n, opts):
    A = _spd(n, dtype, seed=n)
    p = inverse_plan(n, upper, dtype=dtype, **{**SMALL, **opts})
    X = run_inverse_reference(p, _garbage_factor(A, upper))
    assert torch.isfinite(X).all(), "read the NaN triangle"
    assert torch.equal(X, X.mH), "not exactly Hermitian"
    ref = torch.linalg.inv(A.to(torch.complex128 if dtype.is_complex else torch.float64))
    assert (X.to(ref.dtype) - ref).abs().max() <= _tol(dtype) * ref.abs().max()


def test_inverse_plan_batches_and_default_blocking():
    A = _spd(40, torch.float64, batch=(2, 3))
    for upper in (False, True):
        X = run_inverse_reference(inverse_plan(40, upper), torch.linalg.cholesky(A, upper=upper))
        assert torch.allclose(X, torch.linalg.inv(A), atol=1e-10)


def test_inverse_plan_work_is_potri_plus_the_wasted_triangles():
    n, lb = 4096, 512
    p = inverse_plan(n, lauum_block=lb, streams=1)
    total = sum(plans.call_flops(c) for c in p.calls)
    assert 2 * n ** 3 / 3 < total < 2 * n ** 3 / 3 * 1.3


@pytest.mark.parametrize("bad", [dict(trmm_kernel="magma"), dict(lauum_diag="syrk"),
                                 dict(trtri_scratch=1), dict(trtri_scratch="x"), dict(fill="copy"), dict(syrk_kernel="x"),
                                 dict(streams=0), dict(lauum_block=True), dict(trtri_base=1.5)])
def test_inverse_plan_rejects_bad_parameters(bad):
    with pytest.raises(ValueError):
        inverse_plan(100, **bad)


def test_inverse_plan_rejects_unknown_parameters():
    with pytest.raises(TypeError, match="unknown inverse_plan parameter"):
        inverse_plan(100, lauum_base=3)


def test_inverse_plan_reads_blocking(monkeypatch):
    table = {k: dict(v) for k, v in plans.BLOCKING["gemm_lauum"].items()}
    table["float32"].update(lauum_block=7, streams=1)
    monkeypatch.setitem(plans.BLOCKING, "gemm_lauum", table)
    p = inverse_plan(30, dtype="float32")
    assert p.streams == 1
    rows = [c for c in p.calls if c.routine == "gemm" and c.beta == 0 and c.c[1] == 0]
    assert [c.c[0] for c in rows] == [0, 7, 14, 21, 28]
    assert inverse_plan(2000, dtype="float64").streams == 4


def test_transpose_call_is_an_involution():
    n = 50
    for c in inverse_plan(n, **SMALL).calls:
        assert transpose_call(transpose_call(c, n), n) == c


def test_syrk_kernel_gemm_in_the_lauum_plan():
    """The rec plans' syrk blocks as GEMM: same result on the triangle that counts."""
    n = 37
    A = _spd(n, torch.complex128, seed=3)
    for upper in (False, True):
        L = torch.linalg.cholesky(A, upper=upper)
        W = torch.linalg.inv(L)
        got = {}
        for kernel in ("syrk", "gemm"):
            plan = lauum_plan(n, upper, base=5, block=4, syrk_base=6, trmm_base=7, syrk_kernel=kernel)
            assert any(c.routine == ("gemm" if kernel == "gemm" else "syrk") for c in plan)
            buf = W.mT.contiguous().reshape(-1).clone()
            run_plan_reference(plan, buf, n)
            X = buf.reshape(n, n).mT
            got[kernel] = X.triu() if upper else X.tril()
        ref = (W @ W.mH) if upper else (W.mH @ W)
        ref = ref.triu() if upper else ref.tril()
        for k in got:
            assert torch.allclose(got[k], ref, atol=1e-12)
    with pytest.raises(ValueError, match="syrk kernel"):
        lauum_plan(10, syrk_kernel="herk")


# --------------------------------------------------------------------------- access regions
def _random_call_cases():
    n = 12
    V = n  # matrix 1 starts at column n
    return n, [
        Call("gemm", "L", 3, 4, (5, 0), k=6, a=(1, V + 2), b=(2, V), trans="C", beta=0.0),
        Call("gemm", "L", 3, 4, (5, 0), k=6, a=(1, V + 2), b=(2, V), transb="C"),
        Call("trmm_out", "L", 4, 3, (6, V), a=(2, V + 2), b=(6, 1), side="L", alpha=-1.0),
        Call("trmm_out", "U", 3, 4, (0, 5), a=(4, V + 4), b=(1, V + 1), side="R", trans="C"),
        Call("trmm", "L", 4, 3, (7, 1), a=(3, V + 3), side="R"),
        Call("trsm", "L", 4, 4, (2, V + 2), a=(2, 2), side="L"),
        Call("trsm", "U", 3, 5, (1, V + 5), a=(3, 3), side="R", trans="C"),
        Call("syrk", "L", 4, 4, (6, 6), k=3, a=(1, V + 6), trans="C"),
        Call("lauum", "U", 5, 5, (3, V + 3)),
        Call("trsm_inv", "L", 4, 4, (4, 4)),
        Call("trsm_batched", "L", 3, 3, (0, V), a=(0, 0), side="L",
             blocks=(((0, V), (0, 0)), ((5, V + 5), (5, 5)), ((9, V + 9), (9, 9)))),
        Call("trsm_batched", "U", 2, 2, (1, V + 1), a=(1, 1), side="R", trans="C",
             blocks=(((1, V + 1), (1, 1)), ((6, V + 6), (6, 6)))),
    ]


def test_access_regions_cover_what_a_call_reads_and_writes():
    """Writes stay inside the write set; changing an element outside the read set changes
    nothing — the two facts the checker and the scheduler rely on."""
    n, cases = _random_call_cases()
    g = torch.Generator().manual_seed(0)

    def inside(rects, i, j):
        return any(r0 <= i < r1 and c0 <= j < c1 for r0, r1, c0, c1 in rects)

    for c in cases:
        reads, writes = access(c)
        base = torch.randn(n, 2 * n, dtype=torch.float64, generator=g)
        base += 4 * torch.eye(n, 2 * n, dtype=torch.float64)  # invertible triangles
        base[:, n:] += 4 * torch.eye(n, dtype=torch.float64)

        def run(m):
            buf = m.mT.contiguous().reshape(-1).clone()
            run_plan_reference([c], buf, n)
            return buf.reshape(2 * n, n).mT

        out = run(base)
        for i in range(n):
            for j in range(2 * n):
                if not inside(writes, i, j):
                    assert out[i, j] == base[i, j], (c, i, j)
        for trial in range(40):
            i, j = random.Random(trial).randrange(n), random.Random(trial + 99).randrange(2 * n)
            if inside(reads, i, j) or inside(writes, i, j):
                continue
            poked = base.clone()
            poked[i, j] = 1e6
            got = run(poked)
            mask = torch.ones_like(got, dtype=torch.bool)
            mask[i, j] = False
            assert torch.equal(got[mask], out[mask]), (c, i, j)


# --------------------------------------------------------------------------- the checker
G = Call("gemm", "L", 2, 2, (0, 0), k=2, a=(0, 4), b=(0, 4), beta=0.0)   # writes (0:2, 0:2)
H = Call("gemm", "L", 2, 2, (0, 2), k=2, a=(0, 0), b=(0, 4), beta=0.0)   # reads (0:2, 0:2)
K = Call("gemm", "L", 2, 2, (2, 0), k=2, a=(0, 4), b=(0, 4), beta=0.0)   # independent of G


def _rec(s, e):
    return Call("record", "L", 0, 0, (0, 0), stream=s, event=e)


def _wait(s, e):
    return Call("wait", "L", 0, 0, (0, 0), stream=s, event=e)


def test_checker_accepts_ordered_programs():
    check_schedule([G, H])                                          # one stream
    check_schedule([_rec(0, 0), _wait(1, 0), G._replace(stream=1), K,
                    _rec(1, 1), _wait(0, 1), H])                    # fork, RAW across, join
    # transitive through a third stream: 1 → 2 → 0
    check_schedule([_rec(0, 0), _wait(1, 0), _wait(2, 0), G._replace(stream=1), _rec(1, 1),
                    _wait(2, 1), K._replace(stream=2), _rec(2, 2), _wait(0, 2), H])


@pytest.mark.parametrize("program, match", [
    ([_rec(0, 0), _wait(1, 0), G._replace(stream=1), H], "may race with call 2"),
    ([G._replace(stream=1)], "before the work issued before the plan"),
    ([_rec(0, 0), _wait(1, 0), K._replace(stream=1)], "not joined back"),
    ([_wait(1, 5), G._replace(stream=1)], "never recorded|no earlier call recorded"),
    # the wait comes before the record: it sees nothing (CUDA: waits on the earlier state)
    ([_rec(0, 0), _wait(1, 0), G._replace(stream=1), _wait(0, 1), _rec(1, 1), H],
     "no earlier call recorded"),
    # re-recorded event: the wait sees the latest record, issued before G finished on stream 1
    ([_rec(0, 0), _wait(1, 0), _rec(1, 1), G._replace(stream=1), _wait(0, 1), H],
     "may race"),
    # write-after-read: H reads G's block on stream 1 while stream 0 overwrites it
    ([_rec(0, 0), _wait(1, 0), H._replace(stream=1), G, _rec(1, 1), _wait(0, 1)], "may race"),
])
def test_checker_rejects_racy_programs(program, match):
    with pytest.raises(ScheduleError, match=match):
        check_schedule(program)


def _schedules():
    n = 70
    yield inverse_plan(n, False, **SMALL, streams=2).calls
    yield inverse_plan(n, True, **SMALL, trmm_kernel="gemm", lauum_diag="trmm", streams=3).calls
    yield tuple(schedule(trtri_plan(n, False, base=8, block=4, trmm_base=12)
                         + lauum_plan(n, False, base=8, block=4, syrk_base=10, trmm_base=12), 2))
    yield tuple(schedule(trtri_plan(n, True, base=8, block=4, trmm_base=12)
                         + lauum_plan(n, True, base=8, block=4, syrk_base=10, trmm_base=12,
                                      syrk_kernel="gemm"), 4))


@pytest.mark.parametrize("k", range(4))
def test_scheduled_plans_pass_the_checker_and_use_the_streams(k):
    calls = list(_schedules())[k]
    check_schedule(calls)
    assert len({c.stream for c in calls if c.routine not in plans.STREAM_CALLS}) >= 2
    assert any(c.routine == "wait" for c in calls)


def test_scheduler_keeps_the_sequential_order_of_matrix_calls():
    seq = inverse_plan(70, **SMALL, streams=1).calls
    par = inverse_plan(70, **SMALL, streams=3).calls
    strip = [c._replace(stream=0, event=-1) for c in par if c.routine not in plans.STREAM_CALLS]
    assert strip == list(seq)


def _graph(calls):
    """Happens-before edges of a stream / event program: stream order, and each wait's
    recorded prefix before everything after the wait on the waiting stream."""
    ops, last_on, events, pending = [], {}, {}, {}
    preds = {}
    for c in calls:
        s = c.stream
        if c.routine == "record":
            events[c.event] = last_on.get(s)
        elif c.routine == "wait":
            if events.get(c.event) is not None:
                pending.setdefault(s, set()).add(events[c.event])
        else:
            i = len(ops)
            ops.append(c)
            preds[i] = set(pending.pop(s, set()))
            if s in last_on:
                preds[i].add(last_on[s])
            last_on[s] = i
    return ops, preds


def _random_order(preds, n, rng):
    done, order = set(), []
    while len(order) < n:
        ready = [i for i in range(n) if i not in done and preds[i] <= done]
        i = rng.choice(ready)
        done.add(i)
        order.append(i)
    return order


def _run_order(ops, order, factor, n, matrices=2):
    buf = torch.zeros((matrices, n, n), dtype=factor.dtype)
    buf[0].copy_(factor.mT)
    buf[1].diagonal().fill_(1)
    flat = buf.reshape(-1)
    run_plan_reference([ops[i] for i in order], flat, n)
    return buf[0].mT.clone()


@pytest.mark.parametrize("scratch,batched", [(False, False), (True, False), ("triangle", False),
                                             ("triangle", True)])
def test_every_order_the_streams_allow_gives_the_sequential_result(scratch, batched):
    n = 40
    A = _spd(n, torch.float64, seed=1)
    L = torch.linalg.cholesky(A)
    p = inverse_plan(n, **SMALL, streams=3, trtri_scratch=scratch, trtri_batched=batched)
    assert p.matrices == (3 if scratch is True else 2)
    ops, preds = _graph(p.calls)
    ref = _run_order(ops, list(range(len(ops))), L, n, p.matrices)
    rng = random.Random(0)
    for _ in range(25):
        assert torch.equal(_run_order(ops, _random_order(preds, len(ops), rng), L, n, p.matrices),
                           ref)


def test_a_broken_schedule_is_caught_and_really_computes_something_else():
    """Drop the waits of the stream that joins last: the checker raises, and some order
    that the broken program allows gives a different matrix."""
    n = 40
    A = _spd(n, torch.float64, seed=2)
    L = torch.linalg.cholesky(A)
    calls = list(inverse_plan(n, **SMALL, streams=2, trtri_scratch=False).calls)  # in place: more hazards
    ops, preds = _graph(calls)
    ref = _run_order(ops, list(range(len(ops))), L, n)
    caught = differs = 0
    waits = [i for i, c in enumerate(calls) if c.routine == "wait"]
    for w in waits:
        broken = calls[:w] + calls[w + 1:]
        try:
            check_schedule(broken)
        except ScheduleError:
            caught += 1
            bops, bpreds = _graph(broken)
            rng = random.Random(w)
            for _ in range(30):
                if not torch.equal(_run_order(bops, _random_order(bpreds, len(bops), rng), L, n),
                                   ref):
                    differs += 1
                    break
    assert caught >= len(waits) // 2 and caught > 0
    assert differs > 0


# --------------------------------------------------------------------------- gemm_lauum method, spd_inverse
@pytest.mark.parametrize("dtype", ["float32", "float64", "complex64", "complex128"])
@pytest.mark.parametrize("upper", [False, True])
def test_gemm_lauum_method_on_the_cpu(dtype, upper):
    A = _spd(70, getattr(torch, dtype), seed=4).numpy()
    L, _ = ct.potrf(A, upper)
    X = ct.cholesky_inverse(L, upper, method="gemm_lauum")
    assert X.dtype == A.dtype and float(checks.pot03(A, X, upper)) < 30
    assert np.array_equal(X, X.conj().T)


def test_gemm_lauum_emu_is_gpu_only():
    assert routines.INVERSE_METHODS["gemm_lauum_emu"].gpu_only
    with pytest.raises(ValueError, match="needs a CUDA input"):
        ct.cholesky_inverse(np.eye(3), method="gemm_lauum_emu")


@pytest.mark.parametrize("method", [m for m in routines.SPD_INVERSE_METHODS
                                    if m in ("torch", "auto")
                                    or (m in routines.INVERSE_METHODS
                                        and not routines.INVERSE_METHODS[m].gpu_only)])
@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("kind", ["numpy", "torch"])
def test_spd_inverse_matches_cholesky_inverse_of_cholesky(method, upper, kind):
    A = _spd(33, torch.complex128, seed=5, batch=(2,))
    ref = torch.cholesky_inverse(torch.linalg.cholesky(A, upper=upper), upper=upper)
    x = A.numpy() if kind == "numpy" else A
    X = ct.spd_inverse(x, upper, method=method)
    assert type(X) is type(x) and X.shape == A.shape
    assert torch.allclose(torch.as_tensor(np.asarray(X)), ref, atol=1e-10)
    assert float(checks.pot03(A, torch.as_tensor(np.asarray(X)), upper)) < 30


def test_spd_inverse_raises_like_potrf():
    A = _spd(20, torch.float64, seed=6, batch=(3,)).numpy()
    A[1, 7, 7] = -5.0
    for method in ("auto", "gemm_lauum", "torch"):
        with pytest.raises(ct.NotPositiveDefiniteError) as e:
            ct.spd_inverse(A, method=method)
        assert "order 8" in str(e.value) and "1" in str(e.value)
    X = ct.spd_inverse(A, method="gemm_lauum", check=False)  # no raise, garbage allowed
    assert X.shape == A.shape
    nan = A.copy()
    nan[0, 3, 3] = np.nan
    with pytest.raises(ct.NotPositiveDefiniteError):
        ct.spd_inverse(nan)


def test_spd_inverse_methods_and_errors():
    assert ct.spd_inverse_method(np.eye(4)) == "potri"
    assert routines.resolve_spd_method("auto", 16384, 1, "float64", "cuda") == \
        routines.resolve_method("auto", 16384, 1, "float64", "cuda")
    assert routines.resolve_spd_method("potrf_trsm_batched", 8, 100, "float64", "cuda") == \
        "potrf_trsm_batched"
    with pytest.raises(ValueError, match="needs a CUDA input"):
        ct.spd_inverse(np.eye(3), method="potrf_trsm_batched")
    with pytest.raises(ValueError, match="method must be one of"):
        ct.spd_inverse(np.eye(3), method="magma")
    with pytest.raises(ValueError):
        ct.spd_inverse(np.ones((2, 3)))
    with pytest.raises(TypeError):
        ct.spd_inverse(np.eye(3), upper=1)
    assert ct.spd_inverse(np.zeros((0, 0))).shape == (0, 0)
    assert ct.spd_inverse(np.zeros((0, 4, 4))).shape == (0, 4, 4)


def test_spd_inverse_op_runs_every_method_through_the_entry_point(monkeypatch):
    from cusolver_trace import ops

    op = ops.get("spd_inverse") if hasattr(ops, "get") else ops.REGISTRY["spd_inverse"]
    seen = []
    real = routines.spd_inverse

    def spy(A, upper=False, *, method="auto", check=True):
        seen.append((method, check))
        return real(A, upper, method=method, check=check)

    monkeypatch.setattr(routines, "spd_inverse", spy)
    assert set(op.methods) >= {"torch", "potrf_trsm_batched", "gemm_lauum", "auto"}
    assert op.methods["potrf_trsm_batched"].gpu_only and op.methods["gemm_lauum_emu"].gpu_only
    A = torch.as_tensor(_spd(12, torch.float64, seed=7).numpy())

    class Inputs:
        x = A

    for name in ("gemm_lauum", "auto", "potri"):
        X = op.methods[name].make(op, Inputs, op.options_from(), True)()
        assert torch.allclose(X, torch.linalg.inv(A), atol=1e-10)
    assert seen == [("gemm_lauum", True), ("auto", True), ("potri", True)]


# --------------------------------------------------------------------------- A → A⁻¹ as one plan
@pytest.mark.parametrize("dtype", [torch.float64, torch.complex64])
@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("n", [1, 6, 29, 61])
@pytest.mark.parametrize("opts", [dict(), dict(syrk_kernel="syrk", streams=3),
                                  dict(trtri_batched=True, trtri_base=5, streams=3)])
def test_spd_inverse_plan_factors_and_inverts(dtype, upper, n, opts):
    A = _spd(n, dtype, seed=n)
    mask = torch.ones(n, n, dtype=torch.bool)
    mask = mask.tril(-1) if upper else mask.triu(1)
    Ag = torch.where(mask, torch.full_like(A, float("nan")), A)   # the other triangle unread
    p = plans.spd_inverse_plan(n, upper, dtype=dtype, **{**SMALL, "potrf_base": 7, **opts})
    check_schedule(p.calls)
    info = []
    X = run_inverse_reference(p, Ag, info)
    assert info == [0] and torch.equal(X, X.mH)
    ref = torch.linalg.inv(A.to(torch.complex128 if dtype.is_complex else torch.float64))
    assert (X.to(ref.dtype) - ref).abs().max() <= _tol(dtype) * ref.abs().max()


def test_spd_inverse_plan_reports_the_failing_minor():
    n = 61
    A = _spd(n, torch.float64, seed=9)
    p = plans.spd_inverse_plan(n, **SMALL, potrf_base=7)
    assert len(p.info_slots) > 4 and p.info_slots[0] == 0
    for bad in (0, 6, 7, 30, 60):
        B = A.clone()
        B[bad, bad] = -1.0
        info = []
        run_inverse_reference(p, B, info)
        assert info == [bad + 1]
    assert plans.first_info([0, -2, 5], (0, 3, 9)) == -2


def test_spd_inverse_plan_overlaps_the_factorization_with_the_inverse():
    """The inverse of the first diagonal block does not wait for the last potrf block: the
    streams and events let the two phases overlap on the GPU (diagonal blocks inverted one
    by one; ``trtri_batched`` inverts them all after the factorization)."""
    p = plans.spd_inverse_plan(4096, potrf_base=512, trtri_base=512, trtri_batched=False)
    ops, preds = _graph(p.calls)
    last_potrf = max(i for i, c in enumerate(ops) if c.routine == "potrf")
    first_trsm = min(i for i, c in enumerate(ops) if c.routine == "trsm" and c.c[1] >= 4096)
    before, todo = set(), [first_trsm]
    while todo:
        for j in preds[todo.pop()]:
            if j not in before:
                before.add(j)
                todo.append(j)
    assert ops[0].routine == "potrf" and 0 in before      # it does wait for its own block
    assert last_potrf not in before
    assert len({c.stream for c in ops}) == p.streams > 1


@pytest.mark.parametrize("upper", [False, True])
def test_spd_inverse_potrf_gemm_lauum_method(upper):
    A = _spd(45, torch.complex128, seed=11, batch=(2,))
    X = ct.spd_inverse(A.numpy(), upper, method="potrf_gemm_lauum")
    assert np.allclose(X, torch.linalg.inv(A).numpy(), atol=1e-10)
    B = A.clone()
    B[1, 20, 20] = -3.0
    with pytest.raises(ct.NotPositiveDefiniteError, match="order 21"):
        ct.spd_inverse(B, upper, method="potrf_gemm_lauum")
    assert ct.spd_inverse_method(A, "potrf_gemm_lauum") == "potrf_gemm_lauum"


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 70), base=st.integers(1, 20), block=st.integers(1, 16),
       upper=st.booleans(), streams=st.integers(1, 4),
       scratch=st.sampled_from([False, True, "triangle"]))
def test_property_batched_diagonal_inversion_is_the_same_plan(n, base, block, upper, streams,
                                                              scratch):
    """``trtri_batched``: every diagonal block of order <= trtri_base in one trsm_batched call
    per order, before the rest; the schedule is proved, the diagonal blocks are each inverted
    once, and the result is the inverse (the factor's other triangle NaN, never read)."""
    A = _spd(n, torch.float64, seed=n + 7 * base)
    p = inverse_plan(n, upper, dtype="float64", trtri_base=base, block=block,
                     trtri_batched=True, streams=streams, trtri_scratch=scratch)
    check_schedule(p.calls)
    diag = [c for c in p.calls if c.routine in ("trsm", "trsm_batched")]
    orders = [c.m for c in diag]
    assert len(orders) == len(set(orders)) and all(m <= base for m in orders)
    leaves = sorted((a[0], c.m) for c in diag for _, a in (c.blocks or ((c.c, c.a),)))
    assert [o for o, _ in leaves] == list(np.cumsum([0] + [m for _, m in leaves]))[:-1]
    assert sum(m for _, m in leaves) == n   # the diagonal, each block once
    F = _garbage_factor(A, upper)
    before = F.clone()
    X = run_inverse_reference(p, F)
    torch.testing.assert_close(F, before, rtol=0, atol=0, equal_nan=True)   # input unchanged
    assert torch.isfinite(X).all() and torch.equal(X, X.mH)
    ref = torch.linalg.inv(A)
    assert (X - ref).abs().max() <= 1e-10 * ref.abs().max()


def test_trtri_batched_must_be_a_bool():
    with pytest.raises(ValueError, match="trtri_batched must be True or False"):
        inverse_plan(10, trtri_batched="yes")


@pytest.mark.parametrize("bad", [-1, 2.7, "5", True, None, "x"])
@pytest.mark.parametrize("make", [inverse_plan, plans.spd_inverse_plan])
def test_plans_refuse_an_order_that_is_not_an_int_at_least_0(make, bad):
    with pytest.raises(ValueError, match="n must be an int >= 0"):
        make(bad)


@pytest.mark.parametrize("shape", [(0, 0), (3, 0, 0), (0, 4, 4)])
@pytest.mark.parametrize("make", [inverse_plan, plans.spd_inverse_plan])
def test_reference_of_an_empty_input_is_empty(make, shape):
    X = run_inverse_reference(make(shape[-1], trtri_batched=True), torch.zeros(shape))
    assert X.shape == shape


@settings(max_examples=60, deadline=None)
@given(n=st.one_of(st.integers(-3, 40), st.floats(allow_nan=True), st.text(max_size=4),
                   st.booleans(), st.none()))
def test_property_plans_take_an_int_order_at_least_0_or_refuse_it(n):
    ok = isinstance(n, int) and not isinstance(n, bool) and n >= 0
    for make in (inverse_plan, plans.spd_inverse_plan):
        if ok:
            assert make(n, trtri_batched=True).n == n
        else:
            with pytest.raises(ValueError, match="n must be an int >= 0"):
                make(n)
