"""Which kernel a call needs, and building it (no GPU needed).

:func:`make_key` picks one kernel's :class:`FusedKey` from a :class:`Request` (the tuned
choice of :data:`TUNED`, else cuSOLVERDx's suggestion); :func:`cached` finds a built kernel
(in this process's builds, then in the disk cache); :func:`build` compiles one and stores it.
:func:`ready` is what ``method="auto"`` asks of a kernel: whether it can be loaded now.
The calling thread only looks in memory: a kernel asked for the first time is queued for
one background thread (started once the extra is found available), which looks in the disk
cache and otherwise hands the build to one build process (:func:`build_in_child`, a
:class:`Child`), one kernel after the other; a failed build is remembered and ``ready``
stays False for it. :func:`mark_ready` records a kernel built or found another way (warm-up,
an explicit ``fused`` call). :func:`take_over` hands a queued build to a call that needs
the kernel now; within :func:`builds_awaited`, ``ready`` waits for the build (measuring
``auto`` as it runs once built). A process that exits while a kernel is
being compiled waits for that one compile (it lands in the disk cache) and drops the queued
ones. Every public name is imported from :mod:`cusolver_trace.backends.fused`.
"""
from __future__ import annotations

import atexit
import contextlib
import functools
import queue
import threading
import time
from concurrent.futures import CancelledError, Future
from typing import NamedTuple

from . import _fused_toolchain as _toolchain
from . import _waiting
from ._fused_layout import CUSOLVERDX_STATIC_SMEM, SMEM_LIMIT, FusedKey, rhs_chunk
from ._fused_source import DiskCache, cache_key


class Request(NamedTuple):
    """One kernel as a call asks for it: :func:`make_key`'s arguments (the launch shape is
    not decided yet: it may need cuSOLVERDx's suggestion). ``sm`` and ``limit`` are the
    GPU's compute capability and shared memory per block."""

    op: str
    n: int
    nrhs: int
    dtype: str
    upper: bool
    arr_a: str
    arr_b: str
    sm: tuple
    limit: int = SMEM_LIMIT
    batches_per_block: int | None = None
    block: tuple | None = None
    conj: bool = False
    pad: int | None = None
    check: bool = False


def make_key(op: str, n: int, nrhs: int, dtype: str, upper: bool, arr_a: str, arr_b: str,
             sm: tuple, limit: int = SMEM_LIMIT, batches_per_block: int | None = None,
             block: tuple | None = None, conj: bool = False, pad: int | None = None,
             check: bool = False, *, ask: bool = True) -> FusedKey | None:
    """The :class:`FusedKey` for one call: batches per block, block size and padding as
    given, else the tuned choice of :data:`TUNED` for ``(op, n, dtype)`` where there is one,
    else cuSOLVERDx's suggestion (padding 0); batches per block lowered until the block fits
    in ``limit`` bytes of shared memory (less :data:`CUSOLVERDX_STATIC_SMEM`). ``ask=False``:
    None where the suggestion is needed and not yet known (libmathdx is not asked: that
    takes ~0.3 s)."""
    limit = limit - CUSOLVERDX_STATIC_SMEM
    t_bpb, t_block, t_pad = TUNED.get((op, n, dtype), (None, None, 0))
    pad = t_pad if pad is None else pad
    if batches_per_block is None or block is None:
        if batches_per_block is None and block is None and t_bpb is not None:
            s_bpb, s_block = t_bpb, t_block
        else:
            hint = _toolchain.suggested(op, n, nrhs, dtype, upper, sm, ask=ask)
            if hint is None:
                return None
            s_bpb, s_block = hint
        batches_per_block = batches_per_block or s_bpb
        block = tuple(block) if block is not None else tuple(s_block)
    bpb = int(batches_per_block)
    while True:
        try:
            kc = rhs_chunk(op, n, nrhs, dtype, bpb, limit, pad, arr_b)
            if op == "potrf" or kc == nrhs or bpb == 1:
                break
        except ValueError:
            if bpb == 1:
                raise
        bpb = max(1, bpb // 2)
    block = tuple(int(b) for b in block) + (1,) * (3 - len(block))
    return FusedKey(op, n, nrhs if op != "potrf" else 0, kc, dtype, bool(upper), arr_a, arr_b,
                    bpb, block, tuple(sm), bool(conj), int(pad), bool(check))


#: Tuned ``(batches_per_block, block, pad)`` per ``(op, n, dtype)``: the fastest candidate of
#: ``devrun/fused/cases.py``'s TUNE list (CUDA-event medians, H200, torch 2.11, 2026-12-01;
#: batches 100000 x 4, 10000 x 8, 100000 x 16, 1000 x 32, 1000 x 64, 100 x 128, the inverse
#: from a column-major factor, A -> A^-1 from a row-major A), kept where it beat
#: cuSOLVERDx's suggestion by more than 3 %. ``(None, None, pad)``: the suggestion with that
#: padding. Shapes not listed (other n, the complex types, potrf, solve) use the suggestion.
#: Reproduce with ``bash devrun/fused/run.sh timing float64,float32``.
TUNED: dict = {
    ("inverse", 4, "float64"): (32, (32,), 1),       # 0.0321 ms vs 0.0355 suggested
    ("inverse", 8, "float64"): (4, (32,), 0),        # 0.0278 vs 0.0286
    ("inverse", 16, "float64"): (4, (64,), 0),       # 0.1615 vs 0.1996
    ("inverse", 32, "float64"): (4, (128,), 0),      # 0.0320 vs 0.0581
    ("inverse", 64, "float64"): (None, None, 1),     # 0.0750 vs 0.0852
    ("inverse", 4, "float32"): (32, (32,), 1),       # 0.0275 vs 0.0371
    ("inverse", 16, "float32"): (4, (64,), 0),       # 0.1240 vs 0.1437
    ("inverse", 32, "float32"): (4, (128,), 0),      # 0.0314 vs 0.0337
    ("inverse", 64, "float32"): (1, (256,), 0),      # 0.1096 vs 0.2463
    ("inverse", 128, "float32"): (1, (256,), 0),     # 0.0769 vs 0.2866
    ("potrf_inverse", 8, "float64"): (8, (64,), 1),  # 0.0258
    ("potrf_inverse", 16, "float64"): (4, (64,), 0),  # 0.2679
    ("potrf_inverse", 32, "float64"): (1, (128,), 1),  # 0.0321
    ("potrf_inverse", 64, "float64"): (None, None, 1),  # 0.1297 vs 0.2157
    ("potrf_inverse", 128, "float64"): (1, (256,), 0),  # 0.3081 vs 1.3160 (second run)
    ("potrf_inverse", 4, "float32"): (32, (32,), 1),  # 0.0270
    ("potrf_inverse", 8, "float32"): (8, (64,), 0),  # 0.0264
    ("potrf_inverse", 16, "float32"): (4, (64,), 0),  # 0.1802
    ("potrf_inverse", 64, "float32"): (1, (256,), 0),  # 0.2194 vs 0.3137
    ("potrf_inverse", 128, "float32"): (1, (256,), 0),  # 0.1361 vs 0.5981
}


def digest(key: FusedKey) -> str:
    """The disk-cache name of ``key``'s kernel with this process's library versions."""
    return cache_key(key, _toolchain.versions())


def cached(key: FusedKey):
    """``(cubin, meta)`` of ``key``'s kernel where it is built (by this process, or in the
    disk cache), else None."""
    name = digest(key)
    hit = _BUILT.get(name)
    return hit if hit is not None else DiskCache().load(name)


def build(key: FusedKey) -> tuple[bytes, dict]:
    """Compile ``key``'s kernel (:func:`compile_kernel`) and keep it: on disk and in this
    process (so that a disk that cannot be written does not make it compile again).

    Raises
    ------
    FusedUnavailableError, RuntimeError
        As :func:`compile_kernel`.
    """
    cubin, meta = _toolchain.compile_kernel(key)
    name = digest(key)
    DiskCache().store(name, cubin, meta)
    keep(name, cubin, meta)
    return cubin, meta


def keep(name: str, cubin: bytes, meta: dict) -> None:
    """Hold a kernel built here (or by a warm-up worker process) for :func:`cached`."""
    _BUILT[name] = (cubin, meta)


_BUILT: dict = {}   # digest -> (cubin, meta): the kernels this process built


# --------------------------------------------------------------------------- background builds
def ready(req: Request) -> bool:
    """Whether ``req``'s kernel can be loaded now without compiling. A kernel asked for the
    first time is queued for the background thread (once: later calls find it queued,
    running, built or failed) and the answer is False until the thread has found it in the
    disk cache or built it; a build that failed stays False (the error is kept in
    :data:`_JOBS`). The calling thread only looks in memory and queues: the launch shape,
    the disk cache, libmathdx and the compilers are the background thread's (a call that
    asks for a new kernel costs tens of µs more, not the ~0.3 ms of a disk lookup). Waits
    only within :func:`builds_awaited`."""
    job = _JOBS.get(req)
    if job is None:
        job, new = _register(req)
        if new:
            _QUEUE.put((req, job))
            start_worker()
            if not awaiting():
                return False   # this call runs the next rule, however soon the build ends
    if not job.done():
        if not awaiting():
            return False   # queued or building: the calls meanwhile cost this much
        with contextlib.suppress(CancelledError):
            job.exception()   # waits for the build
    return not job.cancelled() and job.exception() is None


@contextlib.contextmanager
def builds_awaited():
    """Within this block (on this thread), :func:`ready` waits for the build it starts or
    finds under way instead of answering False: ``auto`` then runs what it runs once its
    kernels are built. For measuring ``auto`` (``cusolver-trace sweep``), not for serving
    calls.

    Examples
    --------
    >>> with builds_awaited():   # doctest: +SKIP
    ...     ct.cholesky_inverse(L, method="auto")   # compiles first where it must
    """
    before = awaiting()
    _AWAIT.on = True
    try:
        yield
    finally:
        _AWAIT.on = before


_AWAIT = threading.local()


def take_over(req: Request) -> Future | None:
    """For a call that needs ``req``'s kernel now: a build of it still queued is cancelled
    and forgotten (the caller compiles it itself); a running one is returned, to wait on;
    None when there is nothing to wait for."""
    with _JOBS_LOCK:
        job = _JOBS.get(req)
        if job is None or job.done():
            return None
        if job.cancel():
            del _JOBS[req]
            return None
        return job


def mark_ready(req: Request) -> None:
    """Record that ``req``'s kernel can be loaded without compiling (:func:`warmup` or an
    explicit ``fused`` call has built or found it): :func:`ready` says yes at once, a failed
    background build of it is forgotten. A build queued or running is left to finish."""
    global MARKED
    with _JOBS_LOCK:
        MARKED = True
        job = _JOBS.get(req)
        if job is None or job.cancelled() or (job.done() and job.exception() is not None):
            done = _JOBS[req] = Future()
            done.set_result(None)


#: Whether :func:`mark_ready` has run in this process (a warm-up or an explicit ``fused``
#: call): the first ``auto`` call of a shape then makes its Request itself, so that a kernel
#: built ahead runs at once (not after one call on the next rule).
MARKED = False


def _work(jobs: queue.SimpleQueue) -> None:
    """The background thread: for each item queued on ``jobs``, after :data:`DELAY` seconds,
    a request :func:`ask` queued is made (its plan, the device's facts) and registered, then,
    for it or a ``(request, job)`` that :func:`ready` queued, the kernel's key and the disk
    cache, then, where it is not there, its build (through :data:`_BUILD_IN`), one after the
    other."""
    while True:
        item = jobs.get()
        # The call that queued the item is still running on another thread, holding the
        # GIL; this thread's Python (the lookups, starting the build process) would take the
        # GIL from it for about a millisecond. Waiting lets that call end first.
        time.sleep(DELAY)
        if item[0] is _ASK:
            _, make, then, memo = item
            try:   # at exit, none: no build starts
                req = None if _CLOSING else make(memo)
            except BaseException:   # no kernel for it: the caller's auto keeps its next rule
                req = None
            if req is None:
                then(memo, None)
                continue
            # registered before it is published: a call that finds the Request never
            # queues the build a second time
            job, new = _register(req)
            then(memo, req)
            if not new:   # queued, running, built or failed already
                continue
        else:
            req, job = item
        _run(req, job)


def _run(req: Request, job: Future) -> None:
    """The background thread's handling of one registered request: its key, the disk cache,
    else the build; the outcome in ``job``."""
    if _CLOSING or not job.set_running_or_notify_cancel():
        job.cancel()
        return
    try:
        key = make_key(*req, ask=False)
        if key is None or cached(key) is None:
            key = _BUILD_IN(req)
    except BaseException as exc:   # remembered, never raised in a caller's thread; the
        job.set_exception(exc)     # thread lives on (no job is left running forever)
    else:
        job.set_result(key)


def _register(req: Request) -> tuple:
    """``(job, new)``: ``req``'s job in :data:`_JOBS`, made now (``new``) unless one is
    queued, running, built or failed already. Under the lock: one job per request, whichever
    thread asks first."""
    with _JOBS_LOCK:
        job = _JOBS.get(req)
        if job is not None:
            return job, False
        job = _JOBS[req] = Future()
        return job, True


def ask(make, then, memo, *, defer: bool = False) -> None:
    """Queue ``memo`` for the background thread, which makes its :class:`Request`
    (``make(memo)``, None where that raises), registers its build as :func:`ready` does (once
    per request), then hands it to ``then(memo, request)``. What the first ``auto``
    call of a new shape does on the calling thread: one put, nothing else (the plan, the
    device's facts, the job are the thread's: each costs tens of µs on a first call). With
    ``defer`` (a checked call, which ends waiting for its check kernel) the put waits for
    that wait (:mod:`._waiting`): it wakes the background thread, ~14 µs of host time."""
    if defer:
        _waiting.defer(functools.partial(_put, (_ASK, make, then, memo)))
    else:
        _put((_ASK, make, then, memo))


def _put(item) -> None:
    _QUEUE.put(item)
    if _WORKER is None:
        start_worker()


def awaiting() -> bool:
    """Whether this thread is within :func:`builds_awaited`."""
    return getattr(_AWAIT, "on", False)


_ASK = object()   # marks an item of :func:`ask` on the queue


#: Seconds the background thread waits before it handles a request (see :func:`_work`).
DELAY = 0.02


def build_here(req: Request) -> FusedKey:
    """Build ``req``'s kernel in this process: its key (asking libmathdx where needed), then
    the compile unless it is cached. Returns the key."""
    key = make_key(*req)
    if cached(key) is None:
        build(key)
    return key


def build_in_child(req: Request) -> FusedKey:
    """Build ``req``'s kernel in the build process (a :class:`Child`), keep the cubin here
    (:func:`keep`) and take its cuSOLVERDx suggestions; returns the key.

    A separate process rather than this one's background thread: nvmath-python's and
    libmathdx's front ends run Python and hold the GIL for stretches of milliseconds, which
    the calls served meanwhile would wait for (a thread made the first call of a new shape
    about ten times slower than torch's on the H200).

    Raises
    ------
    RuntimeError
        The build failed in the child (its message), or the child died.
    """
    global _CHILD
    with _CHILD_LOCK:
        if _CHILD is None or not _CHILD.alive():
            _CHILD = Child()
        key, cubin, meta, hints = _CHILD.call(child_build, tuple(req))
    keep(digest(key), cubin, meta)
    _toolchain._SUGGESTED.update(hints)
    return key


def child_build(req: tuple):
    """In a build process: ``(key, cubin, meta, suggestions)`` of ``req``'s kernel, compiled
    unless it is cached (what :func:`build_in_child` asks for)."""
    key = build_here(req)
    cubin, meta = cached(key)
    return key, cubin, meta, dict(_toolchain._SUGGESTED)


#: How the background thread builds a kernel: :func:`build_in_child` (tests: :func:`build_here`).
_BUILD_IN = build_in_child

_CHILD_MAIN = r"""
import importlib, os, pickle, sys
with os.fdopen(int(sys.argv[1]), "rb") as inp, os.fdopen(int(sys.argv[2]), "wb") as out:
    while True:
        try:
            module, name, args = pickle.load(inp)
        except EOFError:
            break
        try:
            fn = importlib.import_module(module)
            for part in name.split("."):
                fn = getattr(fn, part)
            data = pickle.dumps(("ok", fn(*args)))
        except BaseException as exc:
            data = pickle.dumps(("error", f"{type(exc).__name__}: {exc}"))
        out.write(data)
        out.flush()
"""


class Child:
    """A build process: ``python3 -c`` :data:`_CHILD_MAIN` with this process's ``sys.path``,
    fed pickled ``(module, function, args)`` on one pipe, answering ``fn(*args)`` on another
    (its stdout and stderr go nowhere: native libraries may print). Not
    :mod:`multiprocessing`: its spawn start re-imports the user's main script, running any top
    level not under ``if __name__ == "__main__"`` (a script that calls ``ct.warmup()`` would
    run again in every worker). Ends when :meth:`close` closes its request pipe, or with
    this process."""

    def __init__(self):
        import os
        import subprocess
        import sys

        req_r, self._req_w = os.pipe()
        self._res_r, res_w = os.pipe()
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-c", _CHILD_MAIN, str(req_r), str(res_w)],
                pass_fds=(req_r, res_w), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL, env=env)
        finally:
            os.close(req_r)
            os.close(res_w)
        self._out = os.fdopen(self._req_w, "wb")
        self._in = os.fdopen(self._res_r, "rb")

    def alive(self) -> bool:
        return self.proc.poll() is None

    def call(self, fn, *args):
        """``fn(*args)`` in the child (``fn`` a module-level function; its arguments and
        result picklable).

        Raises
        ------
        RuntimeError
            ``fn`` raised (its type and message), or the child died.
        """
        import pickle

        try:
            pickle.dump((fn.__module__, fn.__qualname__, args), self._out)
            self._out.flush()
            status, value = pickle.load(self._in)
        except (EOFError, OSError, pickle.UnpicklingError) as exc:
            self.proc.kill()
            raise RuntimeError(f"the fused build process ended ({type(exc).__name__}: {exc}; "
                               f"exit status {self.proc.wait()})") from None
        if status != "ok":
            raise RuntimeError(value)
        return value

    def close(self) -> int:
        """Close the request pipe and wait for the child to end; its exit status."""
        self._out.close()
        status = self.proc.wait()
        self._in.close()
        return status


def start_worker() -> None:
    """Start the background thread unless it runs (``auto`` calls this once the extra is found
    available, so that the first call of a new shape does not wait for a thread's start)."""
    global _WORKER
    if _WORKER is None or not _WORKER.is_alive():
        # a daemon thread, stopped by _at_exit: ThreadPoolExecutor's would be joined at exit,
        # after every queued build
        _WORKER = threading.Thread(target=_work, args=(_QUEUE,), daemon=True,
                                   name="cusolver-trace fused builds")
        _WORKER.start()
        if not _EXIT_HOOK:
            atexit.register(_at_exit)
            _EXIT_HOOK.append(True)


def _at_exit() -> None:
    """At interpreter exit: the queued builds are dropped and the running one, if any, is
    waited for (at most one compile), so that the compilers' native libraries are never torn
    down under a build; that kernel is then in the disk cache for the next process."""
    global _CLOSING
    _CLOSING = True
    for job in list(_JOBS.values()):
        job.cancel()   # the queued ones; a running build cannot be cancelled
    for job in list(_JOBS.values()):
        if job.running():
            job.exception()


_CLOSING = False   # set at exit: the worker starts no further build
_EXIT_HOOK: list = []


_CHILD: Child | None = None   # the build process, once started
_CHILD_LOCK = threading.Lock()
_JOBS: dict = {}   # Request -> Future: the FusedKey once built, or the build's exception
_JOBS_LOCK = threading.Lock()
_QUEUE: queue.SimpleQueue = queue.SimpleQueue()
_WORKER: threading.Thread | None = None
