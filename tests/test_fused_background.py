"""The fused method's compile stall, without a GPU: ``auto`` never waits for a kernel (it
runs the next rule while the kernel is built on the background thread, once per kernel, and
switches when it is built; a failed build is remembered, not raised), an explicit ``fused``
call warns once per kernel it compiles, ``compile_kernel`` times its stages, and
``warmup`` (Python and ``cusolver-trace warmup``) builds ahead and reports each kernel.

libmathdx, NVRTC, nvJitLink and CuPy are replaced by fakes; a "CUDA tensor" is
:class:`FakeCuda` (what the readiness check reads of one), handed to the routines through a
fake operand. Nothing here times anything: waits are on events, with generous timeouts that
only a hang reaches.
"""
from __future__ import annotations

import contextlib
import dataclasses
import json
import subprocess
import sys
import threading
import time
import warnings
from pathlib import Path
from concurrent.futures import CancelledError
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cusolver_trace import routines
from cusolver_trace._arrays import Operand
from cusolver_trace._dtypes import dtype_info
from cusolver_trace.backends import _fused_build as B
from cusolver_trace.backends import _fused_launch as L
from cusolver_trace.backends import _fused_toolchain as T
from cusolver_trace.backends import _fused_warmup as W
from cusolver_trace.backends import _waiting as W_
from cusolver_trace.backends import fused as F
from cusolver_trace.cli import main
from cusolver_trace.errors import CompileWarning
from cusolver_trace.routines import inverse as inverse_mod
from cusolver_trace.routines import spd as spd_mod

SM = (9, 0)
LIMIT = 227 * 1024
WAIT = 60   # seconds: only a hang waits this long


class FakeCuda:
    """What ``fused.ready`` reads of a torch CUDA tensor: dtype, shape, memory order, device."""

    def __init__(self, n, dtype=torch.float64, order="col_major", batch=1000, device=0):
        self.shape = (batch, n, n)
        self.dtype, self.order, self.device_index = dtype, order, device

    def stride(self):
        batch, n, _ = self.shape
        return (n * n, n, 1) if self.order == "row_major" else (n * n, 1, n)

    def get_device(self):
        return self.device_index


class FakeCompiler:
    """``compile_kernel``: records each key; blocks while ``gate`` is closed for the keys whose
    n is in ``hold``; raises ``fail`` when set."""

    def __init__(self):
        self.keys, self.gate, self.hold, self.fail = [], threading.Event(), set(), None
        self.entered = threading.Event()
        self.gate.set()
        self.started = []   # perf_counter() at each compile

    def __call__(self, key):
        self.started.append(time.perf_counter())
        self.keys.append(key)
        self.entered.set()
        if key.n in self.hold:
            assert self.gate.wait(WAIT), "the test never opened the gate"
        if self.fail is not None:
            raise self.fail
        return (f"cubin {key.op} {key.n} {key.dtype} {key.check}".encode(),
                {"kernel": key.kernel_name, "seconds": {"libmathdx_potrs": 0.5, "nvrtc": 1.0,
                                                        "fatbin": 0.0, "nvjitlink": 2.0}})

    def count(self, **match):
        return sum(all(getattr(k, f) == v for f, v in match.items()) for k in self.keys)


class CountingQueue(B.queue.Queue):
    """The background queue, counting the builds put on it."""

    def __init__(self):
        super().__init__()
        self.puts = 0

    def put(self, item, *a, **kw):
        self.puts += 1
        super().put(item, *a, **kw)


@pytest.fixture
def fake(monkeypatch, tmp_path):
    """The extra and a GPU faked: no compiler, a fresh disk cache and fresh process state."""
    monkeypatch.delenv("CUSOLVER_TRACE_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    compiler = FakeCompiler()
    monkeypatch.setattr(T, "_tools", lambda: {})
    monkeypatch.setattr(T, "_TOOLS", {})
    monkeypatch.setattr(T, "versions", lambda: {"fake": "1"})
    monkeypatch.setattr(T, "_ask_suggested", lambda *a: (2, (64,)))
    monkeypatch.setattr(T, "_SUGGESTED", {})
    monkeypatch.setattr(T, "compile_kernel", compiler)
    monkeypatch.setattr(F, "available", lambda: None)
    for name, value in (("_JOBS", {}), ("_BUILT", {}), ("_WORKER", None), ("_CLOSING", False),
                        ("MARKED", False)):
        monkeypatch.setattr(B, name, value)
    monkeypatch.setattr(B, "_QUEUE", CountingQueue())
    monkeypatch.setattr(W_, "PENDING", type(W_.PENDING)())
    monkeypatch.setattr(B, "_BUILD_IN", B.build_here)   # the fakes live in this process
    monkeypatch.setattr(B, "DELAY", 0.0)
    for name in ("_MODULES", "_CALLS", "_WARNED", "_REQUESTS"):
        monkeypatch.setattr(L, name, type(getattr(L, name))())
    monkeypatch.setattr(L, "_DEVICE", {0: (SM, LIMIT), 1: (SM, LIMIT)})
    yield compiler
    compiler.gate.set()   # never leave the background thread blocked,
    drain()               # nor building this test's kernels in the next test


def ready_then_wait(*args):
    """``fused.ready(*args)`` followed by what a real call does next: its wait for the GPU,
    where a checked call's deferred ask is put on the queue (:mod:`._waiting`)."""
    answer = F.ready(*args)
    W_.run()
    return answer


def settle():
    """Wait until the background thread has made every Request that ``ready`` asked it for
    (and registered its build)."""
    deadline = time.monotonic() + WAIT
    while any(v is L._ASKED for v in list(L._REQUESTS.values())):
        assert time.monotonic() < deadline, "the background thread never took the ask"
        time.sleep(0.001)


def drain():
    """Wait until every background build has finished."""
    settle()
    for job in list(B._JOBS.values()):
        with contextlib.suppress(CancelledError):
            job.exception(timeout=WAIT)


@pytest.fixture
def fake_cupy(monkeypatch):
    """CuPy's module loading, faked: the cubins loaded, in order."""
    loads = []

    class Module:
        def load(self, cubin):
            loads.append(cubin)

        def get_function(self, name):
            return SimpleNamespace(ptr=1, shared_size_bytes=0)

    cuda = SimpleNamespace(Device=lambda idx: contextlib.nullcontext(),
                           function=SimpleNamespace(Module=Module),
                           driver=SimpleNamespace(funcSetAttribute=lambda *a: None))
    monkeypatch.setitem(sys.modules, "cupy", SimpleNamespace(cuda=cuda))
    return loads


def _operand(x):
    return Operand("torch", x, dtype_info(x.dtype), True, x.shape)


@pytest.fixture
def fake_rows(monkeypatch):
    """The torch and fused rows of cholesky_inverse / spd_inverse return their names (their
    readiness stays the real one); the routines take FakeCuda inputs as CUDA operands."""
    monkeypatch.setattr(inverse_mod, "factor_operand",
                        lambda L, name="L": (_operand(L), L.shape[-1], L.shape[0]))
    monkeypatch.setattr(spd_mod, "operand", lambda A, name="A": _operand(A))
    for table, kind in ((routines.CHOLESKY_INVERSE, "inverse"),
                        (routines.SPD_INVERSE_TABLE, "spd")):
        for name in ("torch", "fused"):
            row = table.rows[name]

            def run(*a, _name=name, _kind=kind):
                W_.run()   # as a real row's call does in its wait for the GPU (checked or not)
                return (_name, None) if _kind == "inverse" else (_name, None, None)
            monkeypatch.setitem(table.rows, name, dataclasses.replace(row, cuda=run,
                                                                      cuda_checked=run))


def test_a_checked_calls_ask_is_put_in_its_wait_an_unchecked_one_at_once(fake):
    """The first checked call of a new kernel only defers its ask (waking the background
    thread is a system call of host time): the put happens in the call's wait for its check
    kernel, or at the next readiness question or query where that wait never came. An
    unchecked call has no wait: its ask is put at once. Either way, once."""
    assert F.ready("inverse", FakeCuda(16), False, True) is False
    assert B._QUEUE.puts == 0 and len(W_.PENDING) == 1
    W_.run()                                   # the checked call's wait
    assert B._QUEUE.puts == 1 and not W_.PENDING
    assert F.ready("inverse", FakeCuda(17), False, False) is False
    assert B._QUEUE.puts == 2 and not W_.PENDING
    assert F.ready("inverse", FakeCuda(18), False, True) is False   # its wait never comes:
    assert F.ready("inverse", FakeCuda(18), False, True) is False   # the next question puts it
    assert B._QUEUE.puts == 3 and not W_.PENDING
    assert F.ready("inverse", FakeCuda(19), False, True) is False
    assert B._QUEUE.puts == 3 and len(W_.PENDING) == 1
    W_.run()
    drain()
    assert sorted(k.n for k in fake.keys) == [16, 17, 18, 19]


def test_a_query_hands_its_ask_over_before_it_returns(fake, fake_rows):
    """inverse_method / spd_inverse_method ask as a checked call does but wait for nothing:
    the ask is put before they return."""
    assert routines.inverse_method(FakeCuda(20), "auto") == "torch"
    assert B._QUEUE.puts == 1 and not W_.PENDING
    assert routines.spd_inverse_method(FakeCuda(20, order="row_major"), "auto") == "torch"
    assert B._QUEUE.puts == 2 and not W_.PENDING


# --------------------------------------------------------------------------- the table
def test_table_auto_runs_the_next_rule_while_a_row_is_not_ready():
    """Readiness is asked per call, outside the memo: the same shape gets the first rule's
    row when it is ready and the next one's when not; without a call, the rules alone."""
    state = {"ready": False, "asked": 0}

    def ready(x, upper, check):
        state["asked"] += 1
        assert (x, upper, check) == ("X", False, True)
        return state["ready"]

    rows = {"fast": routines.Impl("fast", "", lambda *a: None, None, "", "", ready=ready),
            "slow": routines.Impl("slow", "", lambda *a: None, None, "", "")}
    t = routines.Table("t", rows, {"a": routines.AutoRule("fast", batch_min=2),
                                   "b": routines.AutoRule("slow")})
    call = ("X", False, True)
    assert t.resolve("auto", 8, 10, "float64", "cuda", call=call) == "slow"
    assert t.resolve("auto", 8, 10, "float64", "cuda") == "fast"          # the rules alone
    state["ready"] = True
    assert t.resolve("auto", 8, 10, "float64", "cuda", call=call) == "fast"
    assert state["asked"] == 2
    assert t.resolve("auto", 8, 1, "float64", "cuda", call=call) == "slow"   # rule a fails
    assert t.resolve("auto", 0, 10, "float64", "cuda", call=call) == "fast"  # empty: not asked
    assert t.resolve("auto", 8, 0, "float64", "cuda", call=call) == "slow"   # batch 0: not asked
    assert state["asked"] == 2
    assert t.resolve("fast", 8, 10, "float64", "cuda", call=call) == "fast"  # explicit: never
    state["ready"] = False
    only = routines.Table("t", rows, {"a": routines.AutoRule("fast")})
    assert only.resolve("auto", 8, 10, "float64", "cuda", call=call) == "fast"  # nothing else


# --------------------------------------------------------------------------- auto and the build
def test_auto_serves_torch_and_builds_once_then_switches(fake, fake_rows):
    """The first auto calls of a new shape run torch's path and queue one build of the exact
    kernel the call needs (the inverse from a column-major lower factor, with the check), for
    any number of calls from any number of threads; once it is built, auto runs fused."""
    fake.hold.add(64)
    fake.gate.clear()
    L64 = FakeCuda(64)
    assert routines.cholesky_inverse(L64, method="auto") == "torch"
    assert fake.entered.wait(WAIT)
    results = []

    def calls():
        for _ in range(25):
            results.append(routines.cholesky_inverse(L64, method="auto"))
            results.append(routines.inverse_method(L64, "auto"))
    threads = [threading.Thread(target=calls) for _ in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(WAIT)
    assert set(results) == {"torch"} and len(results) == 400
    assert len(fake.keys) == 1 and B._QUEUE.puts == 1      # one build, queued once
    key = fake.keys[0]
    assert (key.op, key.n, key.dtype, key.check) == ("inverse", 64, "float64", True)
    assert (key.upper, key.arr_a) == (True, "row_major")   # L column-major lower = Lᵀ row-major
    fake.gate.set()
    drain()
    assert routines.inverse_method(L64, "auto") == "fused"
    assert routines.cholesky_inverse(L64, method="auto") == "fused"
    assert len(fake.keys) == 1
    # another kernel of the same shape (no check, a row-major factor) is another build
    assert routines.cholesky_inverse(L64, method="auto", check=False) == "torch"
    assert routines.inverse_method(FakeCuda(64, order="row_major"), "auto") == "torch"
    drain()
    assert len(fake.keys) == 3 == B._QUEUE.puts and fake.count(check=False) == 1
    assert routines.cholesky_inverse(L64, method="auto", check=False) == "fused"
    # the rules alone still say fused; other shapes keep their rules (torch, not fused)
    assert routines.resolve_method("auto", 33, 1000, "float64", "cuda") == "fused"
    assert routines.inverse_method(FakeCuda(8, batch=10), "auto") == "torch"
    assert len(fake.keys) == 3


def test_spd_inverse_auto_builds_its_own_kernel(fake, fake_rows):
    """spd_inverse takes auto's rules from cholesky_inverse, but its fused row is another
    kernel (A -> A^-1 from a row-major A): built for itself, torch's path until then."""
    fake.hold.add(16)
    fake.gate.clear()
    A = FakeCuda(16, dtype=torch.float32, order="row_major")
    assert routines.spd_inverse(A) == "torch"
    assert routines.spd_inverse_method(A) == "torch"
    fake.gate.set()
    drain()
    assert routines.spd_inverse(A) == "fused" and routines.spd_inverse_method(A) == "fused"
    assert [(k.op, k.n, k.dtype, k.upper, k.arr_a, k.check) for k in fake.keys] == [
        ("potrf_inverse", 16, "float32", False, "row_major", True)]
    assert routines.inverse_method(A, "auto") == "torch"   # the inverse kernel is not built


def test_a_failed_build_is_remembered_and_never_raised_by_auto(fake, fake_rows, fake_cupy):
    fake.fail = RuntimeError("NVRTC failed on the fused inverse kernel: error: boom")
    L32 = FakeCuda(32)
    for _ in range(3):
        assert routines.cholesky_inverse(L32, method="auto") == "torch"
        drain()
    assert len(fake.keys) == 1                       # not retried on every call
    assert isinstance(next(iter(B._JOBS.values())).exception(), RuntimeError)
    assert routines.inverse_method(L32, "auto") == "torch"
    # an explicit fused call compiles it itself, and raises the compiler's error
    with pytest.warns(CompileWarning), pytest.raises(RuntimeError, match="boom"):
        F.kernel(0, "inverse", 32, 32, "float64", True, "row_major", "row_major", check=True)
    assert len(fake.keys) == 2


def test_a_kernel_in_the_disk_cache_is_found_by_the_background_thread(fake, fake_rows):
    """A kernel another process built: the calling thread only queues it (no disk lookup on
    the call); the background thread finds it on disk, nothing is compiled, and the next
    call runs it."""
    key = F.make_key("inverse", 8, 8, "float64", True, "row_major", "row_major", SM, LIMIT,
                     check=True)
    F.DiskCache().store(B.digest(key), b"cubin from another process", {})
    assert routines.cholesky_inverse(FakeCuda(8), method="auto") == "torch"
    drain()
    assert routines.cholesky_inverse(FakeCuda(8), method="auto") == "fused"
    assert fake.keys == [] and B._QUEUE.puts == 1


def test_the_background_thread_waits_before_it_handles_a_request(fake, monkeypatch):
    """The call that queued a kernel is not competing with the thread for the GIL: nothing
    is planned, looked up or built before DELAY has passed; the calling thread only queued
    the call's memo (one put)."""
    monkeypatch.setattr(B, "DELAY", 0.3)
    plans = []
    real = L.plan_call
    monkeypatch.setattr(L, "plan_call", lambda *a: plans.append(time.perf_counter()) or real(*a))
    t = time.perf_counter()
    assert ready_then_wait("inverse", FakeCuda(16), False, True) is False
    assert B._QUEUE.puts == 1
    settle()
    assert plans[0] - t >= 0.3
    (job,) = B._JOBS.values()
    job.exception(timeout=WAIT)
    assert fake.started[0] - t >= 0.3 and len(fake.keys) == 1


def test_calls_while_a_kernel_builds_reuse_its_request(fake, monkeypatch):
    """The calls ``auto`` serves while a kernel is built ask for it again each time: the
    plan and the Request are made once per kind of call, and the answer stays False until
    the build ends, then True."""
    gate = threading.Event()
    monkeypatch.setattr(B, "_BUILD_IN", lambda req: (gate.wait(WAIT), B.build_here(req))[1])
    plans = []
    real = L.plan_call
    monkeypatch.setattr(L, "plan_call", lambda *a: plans.append(a) or real(*a))
    x = FakeCuda(16)
    assert [ready_then_wait("inverse", x, False, True) for _ in range(5)] == [False] * 5
    settle()
    assert [ready_then_wait("inverse", x, False, True) for _ in range(5)] == [False] * 5
    assert len(plans) == 1 and len(B._JOBS) == 1 and B._QUEUE.puts == 1
    gate.set()
    drain()
    assert ready_then_wait("inverse", x, False, True) is True and len(plans) == 1
    assert ready_then_wait("inverse", FakeCuda(16), True, True) is False   # upper: another kernel
    settle()
    assert len(plans) == 2


def test_the_thread_starts_once_the_extra_is_available(monkeypatch):
    """``fused.available()`` saying yes starts the idle background thread, so that the first
    call of a new shape does not wait for a thread's start."""
    monkeypatch.setattr(B, "_WORKER", None)
    monkeypatch.setattr(B, "_QUEUE", CountingQueue())
    monkeypatch.setattr(T, "_AVAILABLE", True)
    monkeypatch.setattr(F, "_PREPARED", False)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(L, "_DEVICE", {0: (SM, LIMIT)})   # the facts are read (here: known)
    assert F.available() is None
    assert B._WORKER is not None and B._WORKER.is_alive() and B._QUEUE.puts == 0
    monkeypatch.setattr(F, "_PREPARED", False)
    monkeypatch.setattr(T, "_AVAILABLE", False)
    monkeypatch.setattr(T, "_tools", lambda: (_ for _ in ()).throw(
        T.FusedUnavailableError("no extra")))
    monkeypatch.setattr(B, "_WORKER", None)
    assert F.available() == "no extra" and B._WORKER is None


def test_a_shape_needing_the_suggestion_asks_libmathdx_only_in_the_background(fake, monkeypatch):
    """n = 33 is not in TUNED: its launch shape is cuSOLVERDx's suggestion, asked (~0.3 s)
    on the background thread, never on the calling thread."""
    asked = []
    main_thread = threading.current_thread()

    def ask(*args):
        asked.append(threading.current_thread() is main_thread)
        return (1, (64,))
    monkeypatch.setattr(T, "_ask_suggested", ask)
    assert ("inverse", 33, "float64") not in F.TUNED
    assert ready_then_wait("inverse", FakeCuda(33), False, True) is False
    drain()
    assert asked == [False] and len(fake.keys) == 1
    assert ready_then_wait("inverse", FakeCuda(33), False, True) is True
    assert asked == [False]


# --------------------------------------------------------------------------- explicit fused
def _kernel(n=8, idx=0, check=True):
    return F.kernel(idx, "inverse", n, n, "float64", True, "row_major", "row_major", check=check)


def test_explicit_fused_warns_once_per_kernel_it_compiles(fake, fake_cupy):
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        _kernel(8)
        _kernel(8, idx=1)      # another device, same kernel: loaded, not compiled again
    assert len(fake.keys) == 1 and len(fake_cupy) == 2
    (w,) = [w for w in seen if issubclass(w.category, CompileWarning)]
    text = str(w.message)
    for part in ("'inverse'", "n = 8", "float64", "cuSOLVERDx", "NVRTC", "nvJitLink",
                 "10-30 s", str(F.default_cache_dir()), "cusolver-trace warmup",
                 "cusolver_trace.warmup()"):
        assert part in text, part
    assert w.filename == __file__   # points at the caller, not into the package
    # a new process (nothing in memory) finds it on disk: no warning, no compile
    for name in ("_MODULES", "_WARNED"):
        getattr(L, name).clear()
    B._BUILT.clear()
    with warnings.catch_warnings():
        warnings.simplefilter("error", CompileWarning)
        _kernel(8)
    assert len(fake.keys) == 1


def test_explicit_fused_after_a_background_build_loads_it_silently(fake, fake_cupy):
    assert ready_then_wait("inverse", FakeCuda(16), False, True) is False
    drain()
    with warnings.catch_warnings():
        warnings.simplefilter("error", CompileWarning)
        fn, key, mod = _kernel(16)
    assert len(fake.keys) == 1 and fake_cupy == [b"cubin inverse 16 float64 True"]
    assert key == fake.keys[0]


def test_explicit_fused_waits_for_a_running_build_and_takes_over_a_queued_one(fake, fake_cupy):
    fake.hold.add(64)
    fake.gate.clear()
    assert ready_then_wait("inverse", FakeCuda(64), False, True) is False     # running, held
    assert fake.entered.wait(WAIT)
    assert ready_then_wait("inverse", FakeCuda(32), False, True) is False     # queued behind it
    # the queued one: compiled by the caller at once (not after the held one)
    with pytest.warns(CompileWarning, match="n = 32"):
        _kernel(32)
    assert fake.count(n=32) == 1
    # the running one: waited for, not compiled twice
    threading.Timer(0.05, fake.gate.set).start()
    with pytest.warns(CompileWarning, match="n = 64"):
        _kernel(64)
    drain()
    assert fake.count(n=64) == 1 and fake.count(n=32) == 1
    assert ready_then_wait("inverse", FakeCuda(32), False, True) is True


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(calls=st.lists(st.tuples(st.sampled_from([4, 8, 16, 33]),
                                st.sampled_from(["float32", "float64"]),
                                st.sampled_from(["row_major", "col_major"]), st.booleans(),
                                st.booleans()), min_size=1, max_size=30))
def test_property_one_build_per_kernel(fake, calls):
    """Any sequence of calls: exactly one build per distinct kernel, one put per distinct
    kind of call (two kinds may need one kernel: a column-major lower factor is a row-major
    upper one), and every kernel asked for is ready once the builds are done."""
    B._JOBS.clear()
    B._BUILT.clear()
    L._CALLS.clear()
    L._REQUESTS.clear()
    fake.keys.clear()
    B._QUEUE.puts = 0
    import shutil

    shutil.rmtree(F.default_cache_dir(), ignore_errors=True)
    for n, dt, order, upper, check in calls:
        ready_then_wait("inverse", FakeCuda(n, getattr(torch, dt), order), upper, check)
    drain()
    distinct = {F.make_key(*r) for r in B._JOBS}
    assert len(fake.keys) == len(set(fake.keys)) == len(distinct)
    assert B._QUEUE.puts == len(set(calls))
    assert all(ready_then_wait("inverse", FakeCuda(n, getattr(torch, dt), order), upper, check)
               for n, dt, order, upper, check in calls)


# --------------------------------------------------------------------------- compile_kernel
class FakeToolkit:
    """libmathdx, NVRTC and nvJitLink as compile_kernel calls them; counts fatbin fetches."""

    def __init__(self):
        self.fatbins, self.linked = 0, []
        tk = self

        class nvrtc:
            nvrtcCreateProgram = staticmethod(lambda *a: (0, "prog"))
            nvrtcCompileProgram = staticmethod(lambda *a: (0,))
            nvrtcGetLTOIRSize = staticmethod(lambda prog: (0, 2))
            nvrtcGetLTOIR = staticmethod(lambda prog, buf: (0,))
            nvrtcDestroyProgram = staticmethod(lambda prog: (0,))

        class nvjitlink:
            InputType = SimpleNamespace(LTOIR="ltoir", FATBIN="fatbin")
            create = staticmethod(lambda n, opts: "h")
            add_data = staticmethod(lambda h, kind, data, size, name:
                                    tk.linked.append((kind, name)))
            complete = staticmethod(lambda h: None)
            get_linked_cubin_size = staticmethod(lambda h: 4)
            get_linked_cubin = staticmethod(lambda h, out: out.__setitem__(slice(0, 4), b"CUBN"))
            destroy = staticmethod(lambda h: None)

        def fetch(h, size, buf):
            tk.fatbins += 1
            buf[:] = b"FAT"

        mathdx = SimpleNamespace(cusolverdx_create_descriptor=lambda: 1,
                                 cusolverdx_get_universal_fatbin_size=lambda h: 3,
                                 cusolverdx_get_universal_fatbin=fetch,
                                 cusolverdx_destroy_descriptor=lambda h: None)
        self.tools = {"np": np, "Solver": lambda **kw: SimpleNamespace(**kw), "CC": lambda *sm: sm,
                      "mathdx": mathdx, "nvrtc": nvrtc, "nvjitlink": nvjitlink,
                      "compile": lambda s, target, api: (SimpleNamespace(data=b"IR"),
                                                         f"sym_{s.function}")}


def test_compile_kernel_times_each_stage_and_fetches_the_fatbin_once(monkeypatch):
    tk = FakeToolkit()
    monkeypatch.setattr(T, "_tools", lambda: tk.tools)
    monkeypatch.setattr(T, "_FATBIN", None)
    k1 = F.make_key("potrf_inverse", 8, 8, "float64", False, "row_major", "row_major", SM,
                    batches_per_block=2, block=(64,), check=True)
    k2 = F.make_key("inverse", 8, 8, "float32", True, "row_major", "row_major", SM,
                    batches_per_block=2, block=(64,))
    cubin, meta = T.compile_kernel(k1)
    assert cubin == b"CUBN" and meta["symbols"] == {"potrf": "sym_potrf", "potrs": "sym_potrs"}
    assert list(meta["seconds"]) == ["libmathdx_potrf", "libmathdx_potrs", "nvrtc", "fatbin",
                                     "nvjitlink"]
    assert all(isinstance(v, float) and v >= 0 for v in meta["seconds"].values())
    _, meta2 = T.compile_kernel(k2)
    assert list(meta2["seconds"]) == ["libmathdx_potrs", "nvrtc", "fatbin", "nvjitlink"]
    assert tk.fatbins == 1                                   # once per process
    assert tk.linked.count(("fatbin", "cusolverdx_universal.fatbin")) == 2   # in every link


# --------------------------------------------------------------------------- warmup
def test_warmup_default_list_and_cached_then_compiled(fake):
    """The default list: both routines, n of TUNED, float32 and float64, lower, checked (24
    kernels, what auto runs); compiled once, cached the next time; auto uses them at once."""
    assert W.DEFAULT_N == (4, 8, 16, 32, 64, 128) and W.DEFAULT_DTYPES == ("float32", "float64")
    seen = []
    records = F.warmup(sm="9.0", workers=1, progress=seen.append)
    assert len(records) == 24 == len(fake.keys) == len(seen)
    assert {(r["op"], r["kernel"]) for r in records} == {("cholesky_inverse", "inverse"),
                                                        ("spd_inverse", "potrf_inverse")}
    assert all(r["status"] == "compiled" and r["upper"] is False and r["check"] is True
               and r["sm"] == "9.0" and r["error"] is None for r in records)
    assert records[0]["stages"] == {"libmathdx_potrs": 0.5, "nvrtc": 1.0, "fatbin": 0.0,
                                    "nvjitlink": 2.0}
    # the kernels auto runs: column-major lower factors, row-major A
    assert {(k.op, k.upper, k.arr_a) for k in fake.keys} == {("inverse", True, "row_major"),
                                                             ("potrf_inverse", False, "row_major")}
    again = F.warmup(sm=(9, 0), workers=1)
    assert [r["status"] for r in again] == ["cached"] * 24 and len(fake.keys) == 24
    assert all(r["stages"] == {} for r in again)
    assert ready_then_wait("inverse", FakeCuda(128, torch.float32), False, True) is True
    assert ready_then_wait("potrf_inverse", FakeCuda(8, order="row_major"), False, True) is True
    assert len(fake.keys) == 24


def test_warmup_choices_and_a_failure_recorded(fake):
    fake.fail = RuntimeError("nvJitLink failed on the fused kernel: ERROR 4")
    records = F.warmup(["cholesky_inverse"], [16], ["complex64"], upper=[False, True],
                       check=[True, False], sm="9.0", workers=1)
    assert [(r["upper"], r["check"]) for r in records] == [(False, True), (False, False),
                                                            (True, True), (True, False)]
    assert all(r["status"] == "failed" and "nvJitLink failed" in r["error"] for r in records)
    fake.fail = None
    assert [r["status"] for r in F.warmup("cholesky_inverse", 16, "complex64", sm="9.0",
                                          workers=1)] == ["compiled"]


def test_warmup_clears_a_failed_background_build(fake):
    fake.fail = RuntimeError("transient")
    assert ready_then_wait("inverse", FakeCuda(4), False, True) is False
    drain()
    assert ready_then_wait("inverse", FakeCuda(4), False, True) is False      # remembered
    fake.fail = None
    F.warmup(["cholesky_inverse"], [4], ["float64"], sm="9.0", workers=1)
    assert ready_then_wait("inverse", FakeCuda(4), False, True) is True


@pytest.mark.parametrize("kw,err,match", [
    (dict(ops=["potrf"]), ValueError, "unknown op"), (dict(n=[0]), ValueError, "n must be"),
    (dict(n=[True]), ValueError, "n must be"), (dict(n=[]), ValueError, "empty"),
    (dict(n=[200], dtypes=["complex128"]), ValueError, "shared memory"),
    (dict(dtypes=["float16"]), TypeError, "dtype"), (dict(upper=["L"]), TypeError, "bool"),
    (dict(sm="9"), ValueError, "MAJOR.MINOR"), (dict(sm="6.1"), ValueError, "7.0"),
    (dict(sm=(9, 0, 0)), ValueError, "sm"), (dict(workers=0), ValueError, "workers"),
])
def test_warmup_refuses_bad_arguments(fake, kw, err, match):
    with pytest.raises(err, match=match):
        F.warmup(**{"sm": "9.0", **kw})
    assert fake.keys == []


def test_warmup_needs_a_gpu_or_sm(fake, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    from cusolver_trace.errors import GPUUnavailableError

    with pytest.raises(GPUUnavailableError, match="sm"):
        F.warmup(workers=1)


def _build_in_child(req):
    """The warm-up worker in a spawned process, with the compiler faked there too."""
    T._tools = lambda: {}
    T.versions = lambda: {"fake": "1"}
    T._ask_suggested = lambda *a: (2, (64,))
    T.compile_kernel = lambda key: (f"child {key.n}".encode(), {"seconds": {"nvrtc": 0.1}})
    return W._build_one(req)   # in the child: the module's own, not this stand-in


def test_warmup_in_processes(fake, monkeypatch):
    """More than one kernel to compile and workers > 1: spawned processes build them; the
    cubins come back to this process (kept, also where the disk cannot be written)."""
    monkeypatch.setattr(W, "_build_one", _build_in_child)
    seen = []
    records = F.warmup(["spd_inverse"], [8, 33], ["float64"], sm="9.0", workers=2,
                       progress=seen.append)
    assert [r["status"] for r in records] == ["compiled", "compiled"], records
    assert sorted(r["n"] for r in seen) == [8, 33]
    assert records[1]["stages"] == {"nvrtc": 0.1} and fake.keys == []   # not compiled here
    assert sorted(B._BUILT.values()) == [(b"child 33", {"seconds": {"nvrtc": 0.1}}),
                                         (b"child 8", {"seconds": {"nvrtc": 0.1}})]
    assert [r["status"] for r in F.warmup(["spd_inverse"], [8, 33], ["float64"], sm="9.0")] == [
        "cached", "cached"]


# --------------------------------------------------------------------------- the command
def test_cli_warmup_reports_cached_and_compiled(fake, capsys, tmp_path):
    out = tmp_path / "w.json"
    assert main(["warmup", "--sm", "9.0", "--workers", "1", "--n", "8,32", "--dtype", "float64",
                 "--op", "cholesky_inverse", "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "compiled" in text and "nvjitlink" in text and "2 compiled" in text
    data = json.loads(out.read_text())
    assert [(k["n"], k["status"]) for k in data["kernels"]] == [(8, "compiled"), (32, "compiled")]
    assert data["cache"] == str(F.default_cache_dir())
    assert main(["warmup", "--sm", "9.0", "--n", "8,32,64", "--dtype", "float64", "--op",
                 "cholesky_inverse", "--workers", "1", "--format", "csv"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0].startswith("op,n,dtype,uplo,check,sm,status")
    assert [ln.split(",")[6] for ln in lines[1:]] == ["cached", "cached", "compiled"]
    assert main(["warmup", "--sm", "9.0", "--n", "16", "--uplo", "U", "--unchecked",
                 "--workers", "1", "--json", "-"]) == 0
    got = json.loads(capsys.readouterr().out)["kernels"]
    assert {(k["op"], k["dtype"], k["upper"], k["check"]) for k in got} == {
        (op, dt, True, chk) for op in W.ROUTINES for dt in ("float32", "float64")
        for chk in (True, False)}


def test_cli_warmup_compile_failure_is_exit_3(fake, capsys):
    fake.fail = RuntimeError("NVRTC failed on the fused inverse kernel: bad")
    assert main(["warmup", "--sm", "9.0", "--n", "4", "--dtype", "float64", "--workers", "1",
                 "--op", "cholesky_inverse"]) == 3
    out = capsys.readouterr().out
    assert "NVRTC failed" in out and "1 kernel(s) failed to compile" in out


@pytest.mark.parametrize("argv,match", [
    (["--n", "0"], "--n: must be >= 1"), (["--n", "4,4"], "listed twice"),
    (["--n", "1_0"], "expected an integer"), (["--sm", "9"], "MAJOR.MINOR"),
    (["--sm", "6.0"], "7.0 and newer"), (["--dtype", "float16"], "unknown dtype"),
    (["--op", "potrf"], "unknown op"), (["--uplo", "L,lower"], "listed twice"),
    (["--uplo", "up"], "expected L, U"), (["--workers", "0"], "--workers: must be >= 1"),
    (["--n", "200", "--dtype", "complex128"], "shared memory"),
    (["--json", "-", "--format", "csv"], "both write to stdout"),
])
def test_cli_warmup_bad_input_is_one_line_exit_2(fake, capsys, argv, match):
    try:
        code = main(["warmup", "--sm", "9.0", "--workers", "1", *argv])
    except SystemExit as e:   # argparse's own refusals
        code = e.code
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and match in err[0], err
    assert fake.keys == []


def test_cli_warmup_without_the_extra_or_a_gpu_is_exit_2(tmp_path):
    env = {"XDG_CACHE_HOME": str(tmp_path), "CUDA_VISIBLE_DEVICES": ""}
    code = ("import sys; sys.modules['nvmath'] = None; from cusolver_trace.cli import main; "
            "sys.exit(main(sys.argv[1:]))")
    import os

    p = subprocess.run([sys.executable, "-c", code, "warmup", "--sm", "9.0"], capture_output=True,
                       text=True, timeout=300, env=dict(os.environ, **env))
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert "pip install 'cusolver-trace[cuda13-fused]'" in p.stderr


def test_cli_warmup_without_a_gpu_needs_sm(fake, capsys, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert main(["warmup", "--workers", "1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--sm 9.0" in err[0]


def test_builds_awaited_makes_auto_wait_for_its_kernel(fake, fake_rows):
    """What the sweep measures ``auto`` under: the first call waits for the build and runs
    fused; a failed build is still not raised (torch's path runs)."""
    with F.builds_awaited():
        assert routines.cholesky_inverse(FakeCuda(8), method="auto") == "fused"
        assert routines.inverse_method(FakeCuda(8), "auto", check=False) == "fused"
        fake.fail = RuntimeError("boom")
        assert routines.cholesky_inverse(FakeCuda(16), method="auto") == "torch"
    assert len(fake.keys) == 3
    assert routines.cholesky_inverse(FakeCuda(32), method="auto") == "torch"   # outside: no wait


@pytest.mark.parametrize("marked", [False, True])
def test_at_exit_the_running_build_finishes_and_the_queued_ones_are_dropped(fake, monkeypatch,
                                                                            marked):
    """A process exiting while a kernel compiles waits for that one build (the compilers'
    libraries are not torn down under it; the kernel lands on disk) and starts no other:
    neither a queued ask (``marked`` False) nor a queued job (True: kernels were built
    ahead, the calling thread makes the Request and queues its job)."""
    monkeypatch.setattr(B, "MARKED", marked)
    fake.hold.add(64)
    fake.gate.clear()
    assert ready_then_wait("inverse", FakeCuda(64), False, True) is False
    assert fake.entered.wait(WAIT)
    assert ready_then_wait("inverse", FakeCuda(32), False, True) is False     # queued
    threading.Timer(0.05, fake.gate.set).start()
    B._at_exit()
    drain()
    jobs = sorted(B._JOBS.items(), key=lambda item: -item[0].n)
    assert len(jobs) == 1 + marked   # an ask queued at exit never becomes a job
    assert jobs[0][1].done() and jobs[0][1].exception() is None
    assert not marked or jobs[1][1].cancelled()
    assert [k.n for k in fake.keys] == [64]
    assert ready_then_wait("inverse", FakeCuda(16), False, True) is False     # queued, never started
    assert not any(k.n == 16 for k in fake.keys)


def test_the_build_process_answers_and_is_reused_and_replaced(monkeypatch, tmp_path):
    """The real build process (no fakes reach it): here, without the extra, its build fails
    with the missing extra's message, the same process serves the next request, and a build
    process that died is replaced."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setattr(B, "_CHILD", None)
    if T.available() is None:
        pytest.skip("the extra is installed here: a real build would compile")
    req = B.Request("inverse", 8, 8, "float64", False, "row_major", "row_major", SM, LIMIT)
    with pytest.raises(RuntimeError, match="cuda13-fused"):
        B.build_in_child(req)
    first = B._CHILD.proc.pid
    with pytest.raises(RuntimeError, match="cuda13-fused"):
        B.build_in_child(req)
    assert B._CHILD.proc.pid == first
    B._CHILD.proc.kill()
    B._CHILD.proc.wait()
    with pytest.raises(RuntimeError, match="cuda13-fused"):
        B.build_in_child(req)
    assert B._CHILD.proc.pid != first
    assert B._CHILD.close() == 0   # the child ends when its request pipe closes


def test_warmup_refuses_a_bad_sm_or_n_before_asking_for_the_extra():
    """A fresh user's report: a bad ``sm`` raised FusedUnavailableError (install the extra)
    instead of the documented ValueError; a non-sequence n a bare TypeError."""
    import cusolver_trace as ct

    for sm in ("6.0", "9", (9,), "x.y"):
        with pytest.raises(ValueError, match="sm"):
            ct.warmup(sm=sm)
    for n in (4.0, None):
        with pytest.raises(TypeError, match="n must be"):
            ct.warmup(n=n, sm="9.0")


def test_a_build_process_does_not_run_the_users_main_script_again(tmp_path):
    """multiprocessing's spawn start (what warmup's workers were) re-imports the main script:
    a script calling ``ct.warmup()`` at top level without a main guard ran again in every
    worker. A build process (:class:`Child`) runs only what it is asked."""
    marker = tmp_path / "runs.txt"
    prog = tmp_path / "prog.py"
    prog.write_text(
        "import os, sys\n"
        f"sys.path.insert(0, {str(Path(__file__).resolve().parents[1])!r})\n"
        f"open({str(marker)!r}, 'a').write('top level\\n')\n"
        "from cusolver_trace.backends import _fused_build as B\n"
        "child = B.Child()\n"
        "pid = child.call(os.getpid)\n"
        "assert pid == child.proc.pid and pid != os.getpid(), pid\n"
        "assert child.close() == 0\n"
        "print('ok')\n")
    done = subprocess.run([sys.executable, str(prog)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr
    assert marker.read_text() == "top level\n"


def test_deferred_work_that_fails_warns_and_never_fails_the_waiting_call():
    """A deferred callable that raises (say the background thread cannot start) is a
    RuntimeWarning of the call that waits, which goes on; the work after it still runs."""
    done = []

    def boom():
        raise RuntimeError("can't start new thread")
    W_.defer(boom)
    W_.defer(lambda: done.append(1))
    with pytest.warns(RuntimeWarning, match="deferred host work failed .RuntimeError: can't"):
        W_.run()
    assert done == [1] and not W_.PENDING
