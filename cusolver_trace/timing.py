"""GPU timing the way the field does it: CUDA events, warm-up, repeats, median and IQR.

One module serves compare, sweeps and benchmarks. On CUDA every sample is the
elapsed time between two CUDA events recorded on torch's current stream
around one call (no host clock), and several callables are timed
*interleaved* (A, B, A, B, ...) in one run so that drift (clocks, thermals)
hits all of them alike, and their ratio is reported. On the CPU,
``time.perf_counter``, one block of samples per callable (interleaving two
libraries' thread pools there measures their contention, not the routines).

On the CPU every timing runs with a fixed thread count for every library, as
``torch.utils.benchmark.Timer`` does (its ``num_threads``, default 1): torch's intra-op
pool (``torch.set_num_threads``) and every BLAS / OpenMP pool loaded in the process
(scipy's and numpy's OpenBLAS, torch's OpenMP, through ``threadpoolctl``), restored
afterwards (:func:`pinned_threads`; :data:`CPU_THREADS` by default). Unpinned, torch's
OpenMP pool and OpenBLAS's pool each take every core and compete for them: on a 2-core
machine with one other busy process, a sweep of ``cholesky_inverse`` at n = 256, 512
reported torch at 1737 ms, against 15.5 ms with ``OMP_NUM_THREADS=1`` (issue 25).

With one thread (the default) a sample is the CPU time of the timing thread
(``time.thread_time``, clock ``"thread_time"``): every library computes in that thread,
and the time it spends waiting for a core while other processes run is not in it, so a
busy shared machine does not inflate the figures. With more threads a sample is wall
time (``perf_counter``). Each block of samples records whether it got the cores it asked
for (:class:`CpuLoad`): with one thread, whether any other thread of the process used CPU
time meanwhile (a pool the pinning does not reach); with more, the time its threads
waited for a core (Linux's ``/proc/self/task/*/schedstat``) and its CPU time against wall
time × threads. A block that did not is ``oversubscribed`` (and ``noisy``), and a ratio
taken from it is never reported as a result (:func:`ratio`).

A CUDA-event time mixes two things: the GPU's work and the host's time to issue
it (a GPU left waiting for the next launch is idle inside the event pair). Two
more measurements take them apart:

* :func:`time_gpu_busy` — the sum of the durations of the kernels (and memcpys /
  memsets) each call launched, from ``torch.profiler``, each kernel given to its call
  by correlation id (the project's kernel attribution,
  :func:`cusolver_trace.tracing._hook.attribute`);
* :func:`time_host` — the host's wall time of the call itself, without a synchronize
  after it (the device is synchronized *before* each sample, so a full launch queue
  never blocks the call).

:func:`time_split` (pure) says whether a difference between two callables' event
times is GPU work or issue overhead. A time that cannot be had is an
:class:`Unavailable` with the reason, never a zero.
"""
from __future__ import annotations

import contextlib
import gc
import os
import statistics
import time
import warnings
from dataclasses import asdict, dataclass, field

from ._time_split import ALIKE_FRACTION, GPU_SHARE, TIME_SPLIT_KINDS, TimeSplit, time_split  # noqa: F401

__all__ = ["Timing", "time_calls", "l2_flush_buffer", "NOISY_IQR", "cpu_threads", "Unavailable",
           "time_gpu_busy", "time_host", "TimeSplit", "time_split", "TIME_SPLIT_KINDS",
           "ALIKE_FRACTION", "GPU_SHARE", "CPU_THREADS", "pinned_threads", "CpuLoad", "ratio",
           "available_cores"]

NOISY_IQR = 0.20
"""A timing whose IQR exceeds this fraction of its median is flagged noisy."""


@dataclass
class Timing:
    """Summary of repeated timings, all in milliseconds.

    ``median_ms``, ``q1_ms``, ``q3_ms`` (IQR = q3 − q1), ``min_ms``, ``max_ms``,
    ``repeat`` (number of timed samples), ``clock`` (``"cuda-events"`` or
    ``"perf_counter"``), ``samples_ms``.
    """

    median_ms: float
    q1_ms: float
    q3_ms: float
    min_ms: float
    max_ms: float
    repeat: int
    clock: str
    samples_ms: list = field(default_factory=list, repr=False)
    #: CPU timings: the thread count every library was pinned to, and whether the block got
    #: its cores (None on a GPU clock)
    cpu: "CpuLoad | None" = field(default=None, repr=False)

    @property
    def iqr_ms(self) -> float:
        return self.q3_ms - self.q1_ms

    @property
    def threads(self) -> int | None:
        """The thread count of every library while timing on the CPU (None on a GPU)."""
        return None if self.cpu is None else self.cpu.threads

    @property
    def oversubscribed(self) -> str | None:
        """Why the samples did not get the cores they asked for (None: they did, or a GPU
        clock). A ratio of such a time is not a result (:func:`ratio`)."""
        return None if self.cpu is None else self.cpu.oversubscribed

    @property
    def noisy(self) -> bool:
        """The IQR exceeds 20 % of the median, or there are fewer than 3 samples (their
        quartiles say nothing of the spread: one sample has an IQR of 0), or, on the CPU, the
        samples did not get their cores (:attr:`oversubscribed`): the figure should not be
        trusted alone."""
        return (self.repeat < 3 or self.iqr_ms > NOISY_IQR * self.median_ms
                or self.oversubscribed is not None)

    @classmethod
    def from_samples(cls, samples, clock, cpu: "CpuLoad | None" = None):
        """Median, quartiles (inclusive method), min and max of ``samples`` (ms).

        Examples
        --------
        >>> t = Timing.from_samples([1.0, 2.0, 4.0], "perf_counter")
        >>> t.median_ms, t.iqr_ms, t.noisy
        (2.0, 1.5, True)
        """
        s = sorted(samples)
        if len(s) >= 2:
            q1, _, q3 = statistics.quantiles(s, n=4, method="inclusive")
        else:
            q1 = q3 = s[0]
        return cls(statistics.median(s), q1, q3, s[0], s[-1], len(s), clock, list(samples), cpu)

    def to_dict(self, samples: bool = False) -> dict:
        d = asdict(self)
        d["iqr_ms"] = self.iqr_ms
        d["noisy"] = self.noisy
        d.pop("cpu")
        if self.cpu is not None:
            d["threads"] = self.cpu.threads
            d["oversubscribed"] = self.cpu.oversubscribed
            d["cpu_load"] = self.cpu.to_dict()
        if not samples:
            d.pop("samples_ms")
        return d

    def gflops(self, flop_count: float) -> float:
        """GFLOP/s at the median time for ``flop_count`` flops."""
        return flop_count / (self.median_ms * 1e-3) / 1e9


#: Threads per library while timing on the CPU (torch's intra-op pool, every BLAS / OpenMP
#: pool): 1, as ``torch.utils.benchmark.Timer``'s default ``num_threads``. One thread per
#: library measures the routines, not the machine's other work: with more, the ratio of two
#: libraries moves with the load (on an idle 2-core machine potrs / torch at n = 512 was
#: 2.31 with ``OMP_NUM_THREADS=1`` and 1.35 without, issue 25).
CPU_THREADS = 1
#: A block of CPU samples whose threads waited for a core more than this share of the time
#: (wall time × threads) did not get the cores it asked for: oversubscribed.
WAIT_SHARE_MAX = 0.10
#: ... or whose CPU time exceeded wall time × threads (with one thread: the timing thread's
#: own CPU time) by this factor: more threads ran than were pinned (a pool the pinning does
#: not reach, spinning).
CPU_SHARE_MAX = 1.25
#: CPU time other threads of the process may use during a one-thread block beyond that
#: share (s): a progress bar's refresh thread, the interpreter's housekeeping.
OTHER_THREADS_SLACK_S = 0.005


def available_cores() -> int:
    """The cores this process may run on (its affinity mask; ``os.cpu_count()`` elsewhere)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return os.cpu_count() or 1


@dataclass(frozen=True)
class CpuLoad:
    """Whether a block of CPU samples got the cores it asked for.

    Attributes
    ----------
    threads : int
        The thread count of every library while it ran (:func:`pinned_threads`).
    cores : int
        The cores this process may use.
    wall_s : float
        The block's wall time (s).
    cpu_share : float
        The process's CPU time / (wall time × threads): about 1 or less when the pinned
        threads ran alone; above :data:`CPU_SHARE_MAX` when more threads ran.
    wait_share : float or None
        The time the process's threads waited for a core (run-queue delay, Linux
        schedstat) / (wall time × threads); None where the kernel does not report it.
    oversubscribed : str or None
        Why the block did not get its cores, in words; None when it did.
    thread_cpu_s : float or None
        With one thread: the timing thread's own CPU time over the block (s), the clock of
        its samples; waiting for a core is not in it, so only other threads of the process
        running meanwhile (the process's CPU time beyond it) make the block oversubscribed.

    Examples
    --------
    >>> CpuLoad.judge(threads=2, cores=2, wall_s=1.0, cpu_s=1.96, wait_s=0.02).oversubscribed is None
    True
    >>> CpuLoad.judge(threads=2, cores=2, wall_s=1.0, cpu_s=1.3, wait_s=0.7).oversubscribed
    'its 2 threads waited for a core 35 % of the time (other processes or pools busy on the 2 cores)'
    >>> CpuLoad.judge(threads=4, cores=2, wall_s=1.0, cpu_s=2.0, wait_s=None).oversubscribed
    '4 threads per library on 2 cores'
    >>> one = dict(threads=1, cores=2, wall_s=1.0, wait_s=0.5)   # a busy machine: waits do not count
    >>> CpuLoad.judge(cpu_s=0.5, thread_cpu_s=0.49, **one).oversubscribed is None
    True
    >>> CpuLoad.judge(cpu_s=0.9, thread_cpu_s=0.45, **one).oversubscribed
    "other threads of the process used 0.45 s of CPU time beside the timing thread's 0.45 s: a pool the pinning does not reach was running"
    """

    threads: int
    cores: int
    wall_s: float
    cpu_share: float
    wait_share: float | None
    oversubscribed: str | None
    thread_cpu_s: float | None = None

    @classmethod
    def judge(cls, *, threads: int, cores: int, wall_s: float, cpu_s: float,
              wait_s: float | None, thread_cpu_s: float | None = None) -> "CpuLoad":
        """Judge one block from its measured times (pure); ``thread_cpu_s`` given: the block
        was timed by the one timing thread's CPU time."""
        span = max(wall_s * threads, 1e-12)
        cpu_share = cpu_s / span
        wait_share = None if wait_s is None else wait_s / span
        why = None
        if threads > cores:
            why = f"{threads} threads per library on {cores} cores"
        elif thread_cpu_s is not None:
            other = cpu_s - thread_cpu_s
            if other > (CPU_SHARE_MAX - 1) * thread_cpu_s + OTHER_THREADS_SLACK_S:
                why = (f"other threads of the process used {other:.2f} s of CPU time beside the "
                       f"timing thread's {thread_cpu_s:.2f} s: a pool the pinning does not "
                       "reach was running")
        elif wait_share is not None and wait_share > WAIT_SHARE_MAX:
            why = (f"its {threads} thread{'s' if threads > 1 else ''} waited for a core "
                   f"{100 * wait_share:.0f} % of the time (other processes or pools busy on "
                   f"the {cores} cores)")
        elif cpu_share > CPU_SHARE_MAX:
            why = (f"the process used {cpu_share:.2f}x the CPU time of {threads} busy "
                   f"thread{'s' if threads > 1 else ''}: a thread pool that the pinning does "
                   "not reach was running")
        return cls(threads, cores, wall_s, cpu_share, wait_share, why, thread_cpu_s)

    def to_dict(self) -> dict:
        return asdict(self)


def _run_delay_s() -> float | None:
    """Seconds the process's threads have waited on a run queue so far (the second field of
    ``/proc/self/task/*/schedstat``); None where Linux does not report it. Threads that
    have exited are no longer counted, so only differences over one block mean anything."""
    total = 0
    try:
        tasks = os.listdir("/proc/self/task")
    except OSError:
        return None
    seen = False
    for tid in tasks:
        try:
            with open(f"/proc/self/task/{tid}/schedstat") as fh:
                total += int(fh.read().split()[1])
            seen = True
        except (OSError, IndexError, ValueError):
            continue
    return total * 1e-9 if seen else None


class _CpuProbe:
    """Measures one block of CPU samples: wall time, process CPU time, the timing thread's
    CPU time, run-queue delay."""

    def __init__(self, threads: int):
        self.threads = threads
        self.wait0 = _run_delay_s()
        self.cpu0 = time.process_time()
        self.thread0 = time.thread_time()
        self.wall0 = time.perf_counter()

    def stop(self) -> CpuLoad:
        wall = time.perf_counter() - self.wall0
        own = time.thread_time() - self.thread0
        cpu = time.process_time() - self.cpu0
        wait1 = _run_delay_s()
        wait = None if self.wait0 is None or wait1 is None else max(wait1 - self.wait0, 0.0)
        return CpuLoad.judge(threads=self.threads, cores=available_cores(), wall_s=wall,
                             cpu_s=cpu, wait_s=wait,
                             thread_cpu_s=own if self.threads == 1 else None)


@contextlib.contextmanager
def pinned_threads(threads: int | None = None):
    """Run the block with ``threads`` threads in every library, as
    ``torch.utils.benchmark.Timer(num_threads=...)`` does; restore afterwards.

    torch's intra-op pool through ``torch.set_num_threads``; every BLAS and OpenMP pool
    loaded in the process (scipy's / numpy's OpenBLAS or MKL, torch's OpenMP) through
    ``threadpoolctl.threadpool_limits``. torch's inter-op pool is left alone: torch's linear
    algebra does not use it, and ``torch.set_num_interop_threads`` can be called only once
    per process (it could not be restored).

    Parameters
    ----------
    threads : int, optional
        Default :data:`CPU_THREADS` (1).

    Yields
    ------
    int
        The thread count in force.

    Raises
    ------
    ValueError
        ``threads`` < 1.

    Examples
    --------
    >>> import torch
    >>> before = torch.get_num_threads()
    >>> with pinned_threads(1) as k:
    ...     k, torch.get_num_threads()
    (1, 1)
    >>> torch.get_num_threads() == before
    True
    """
    import torch

    k = CPU_THREADS if threads is None else threads
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"threads must be an int >= 1, got {threads!r}")
    before = torch.get_num_threads()
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - threadpoolctl is a dependency
        limits = contextlib.nullcontext()
    else:
        limits = threadpool_limits(limits=k)
    torch.set_num_threads(k)
    try:
        with limits:
            yield k
    finally:
        torch.set_num_threads(before)


def ratio(t, baseline) -> float | None:
    """``t``'s median / ``baseline``'s, or None where either is missing or was taken while the
    CPU's cores were oversubscribed (such a ratio measures the contention, not the routines).

    Examples
    --------
    >>> a, b = Timing.from_samples([2.0] * 3, "x"), Timing.from_samples([4.0] * 3, "x")
    >>> ratio(b, a)
    2.0
    >>> busy = CpuLoad.judge(threads=1, cores=1, wall_s=1.0, cpu_s=0.5, wait_s=0.5)
    >>> ratio(Timing.from_samples([4.0] * 3, "perf_counter", busy), a) is None
    True
    """
    if not isinstance(t, Timing) or not isinstance(baseline, Timing):
        return None
    if t.oversubscribed or baseline.oversubscribed or not baseline.median_ms > 0:
        return None
    return t.median_ms / baseline.median_ms


def l2_flush_buffer(device, nbytes: int = 256 * 2**20):
    """A buffer whose ``zero_()`` evicts the L2 cache (60 MB on an H200); 256 MB as triton's do_bench."""
    import torch

    return torch.empty(nbytes, dtype=torch.uint8, device=device)


def time_calls(fns: dict, *, device=None, warmup: int = 3, repeat: int = 20, flush_l2: bool = False,
               calls_per_sample: int = 1, idle_start: bool = False, warm_each: bool = False,
               threads: int | None = None):
    """Time several zero-argument callables interleaved; returns ``{name: Timing}``.

    Parameters
    ----------
    fns : dict[str, callable]
        What to time; each call is one sample (``calls_per_sample`` calls with 1 < it).
    device : torch.device or str or None
        A CUDA device → CUDA events on torch's current stream of that device;
        ``None`` / CPU → ``time.perf_counter`` (after a synchronize-free call).
    warmup : int
        Untimed calls of each callable first (library load, handles, workspaces).
    repeat : int
        Timed samples per callable.
    flush_l2 : bool
        Zero a 256 MB buffer before each sample (inputs that fit in L2).
    calls_per_sample : int
        Consecutive calls of the same callable inside one sample; the sample is their time
        divided by this number (ms per call). For calls of tens of µs, one call between two
        events measures the previous callable's tail and this one's host time as much as
        its own cost; a run of calls gives the cost per call in a loop (what a checked
        call's synchronization adds, for instance). Callables stay interleaved between
        samples.
    idle_start : bool
        Synchronize the device before each CUDA sample, so that every sample starts on an
        idle GPU: its event time is then the call's GPU work plus the GPU's idle time
        waiting for the call's launches, whatever the previous sample (of another callable)
        left queued. Without it, samples follow each other without synchronizing, and a
        sample's start event waits behind the previous one's work, which makes single calls
        of tens of µs swing with the interleaving. ``compare`` times with it.
    warm_each : bool
        One untimed call of the same callable right before each of its CUDA samples (before
        ``idle_start``'s synchronize, so the GPU is idle again when the sample starts). With
        callables interleaved, a sample is otherwise the first call after another
        callable's, and pays for bringing its own host path back into the CPU's caches, an
        extra that falls unevenly on the side with more host code. With it, each sample is
        a call as it runs in a user's loop, from an idle GPU. ``compare`` times with it.
        The CPU clock's samples are always warm (one untimed call starts each callable's
        block).
    threads : int, optional
        On the CPU: every library's thread count while timing (:func:`pinned_threads`,
        default :data:`CPU_THREADS`); each Timing records it and whether its block got the
        cores (``Timing.cpu``, ``Timing.oversubscribed``). With 1 the samples are the timing
        thread's CPU time (clock ``"thread_time"``), else wall time. Not used on a GPU.

    Examples
    --------
    >>> t = time_calls({"sum": lambda: sum(range(100))}, repeat=3, warmup=0, calls_per_sample=5)
    >>> t["sum"].clock, t["sum"].threads
    ('thread_time', 1)
    """
    import torch

    if int(repeat) < 1 or int(warmup) < 0:
        raise ValueError(f"time_calls needs repeat >= 1 and warmup >= 0, got repeat={repeat} "
                         f"warmup={warmup}")
    if not isinstance(calls_per_sample, int) or isinstance(calls_per_sample, bool) \
            or calls_per_sample < 1:  # never rounded: 2.5 calls is not a run length
        raise ValueError(f"time_calls needs calls_per_sample, an int >= 1, got "
                         f"{calls_per_sample!r}")
    k = calls_per_sample
    if not isinstance(idle_start, bool):
        raise TypeError(f"time_calls needs idle_start, a bool, got {idle_start!r}")
    if not isinstance(warm_each, bool):
        raise TypeError(f"time_calls needs warm_each, a bool, got {warm_each!r}")
    on_cuda = device is not None and torch.device(device).type == "cuda"
    if not on_cuda:
        return _time_calls_cpu(fns, warmup=warmup, repeat=repeat, k=k, threads=threads)
    for _ in range(warmup):
        for fn in fns.values():
            fn()
    samples = {k: [] for k in fns}
    if on_cuda:
        dev = torch.device(device)
        flush = l2_flush_buffer(dev) if flush_l2 else None
        with torch.cuda.device(dev):
            torch.cuda.synchronize(dev)
            pairs = {k: [] for k in fns}
            for _ in range(repeat):
                for name, fn in fns.items():
                    if warm_each:
                        fn()
                    if flush is not None:
                        flush.zero_()
                    if idle_start:
                        torch.cuda.synchronize(dev)
                    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                    start.record()
                    for _ in range(k):
                        fn()
                    end.record()
                    pairs[name].append((start, end))
            torch.cuda.synchronize(dev)
            for name, evs in pairs.items():
                samples[name] = [s.elapsed_time(e) / k for s, e in evs]
        clock = "cuda-events"
    return {k: Timing.from_samples(v, clock) for k, v in samples.items()}


def _time_calls_cpu(fns: dict, *, warmup: int, repeat: int, k: int, threads: int | None) -> dict:
    """:func:`time_calls` on the CPU: every library pinned to ``threads`` threads, the
    samples judged by :class:`CpuLoad`. One thread: samples of the timing thread's CPU time
    (``thread_time``), interleaved; more: wall time (``perf_counter``), one block per
    callable (alternating torch (OpenMP / its BLAS) with scipy (OpenBLAS) makes their
    spinning pools contend)."""
    samples: dict = {name: [] for name in fns}
    loads: dict = {}
    # the garbage collector off while timing, as timeit and torch.utils.benchmark do: a full
    # collection of this process's heap takes milliseconds of the timing thread's CPU time
    # and lands on whichever sample triggers it (seen: 9 ms in 0.8 ms samples at n = 256)
    gc_was_on = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        return _time_blocks(fns, samples, loads, warmup=warmup, repeat=repeat, k=k,
                            threads=threads)
    finally:
        if gc_was_on:
            gc.enable()


#: With one thread, a callable whose warm-up call took less than this (s) gets one untimed
#: call right before each of its interleaved samples, so that every sample starts warm.
WARM_EACH_MAX_S = 0.05


def _time_blocks(fns, samples, loads, *, warmup, repeat, k, threads) -> dict:
    """The samples: with one thread, interleaved (A, B, A, B, ...: whatever else runs on the
    machine meanwhile, a co-runner on a sibling hyperthread for one, falls on all callables
    alike, and with every pool at one thread none spins against another), each short call
    warmed by an untimed call first; with more threads, one block per callable (interleaving
    would measure the pools' contention)."""
    with pinned_threads(threads) as pinned:
        clock, now = ("thread_time", time.thread_time) if pinned == 1 else (
            "perf_counter", time.perf_counter)
        took = {}
        for _ in range(warmup):
            for name, fn in fns.items():
                t0 = time.perf_counter()
                fn()
                took[name] = time.perf_counter() - t0
        if pinned == 1:
            for name, fn in fns.items():
                if name not in took:
                    t0 = time.perf_counter()
                    fn()
                    took[name] = time.perf_counter() - t0
            probe = _CpuProbe(pinned)
            for _ in range(repeat):
                for name, fn in fns.items():
                    if took[name] < WARM_EACH_MAX_S:
                        fn()
                    t0 = now()
                    for _ in range(k):
                        fn()
                    samples[name].append((now() - t0) * 1e3 / k)
            load = probe.stop()
            loads.update({name: load for name in fns})
        else:
            for name, fn in fns.items():
                fn()
                probe = _CpuProbe(pinned)
                for _ in range(repeat):
                    t0 = now()
                    for _ in range(k):
                        fn()
                    samples[name].append((now() - t0) * 1e3 / k)
                loads[name] = probe.stop()
    return {name: Timing.from_samples(v, clock, loads[name]) for name, v in samples.items()}


@dataclass(frozen=True)
class Unavailable:
    """A time that could not be measured here, and why (reported as such, never as a zero).

    Examples
    --------
    >>> Unavailable("no GPU").to_dict()
    {'available': False, 'reason': 'no GPU'}
    """

    reason: str

    def to_dict(self) -> dict:
        return {"available": False, "reason": self.reason}


#: Why a CPU run has no GPU-busy time.
NO_GPU_BUSY_ON_CPU = "ran on the CPU: no GPU kernels to add up"
#: Why a CPU run has no separate host issue time.
NO_HOST_ON_CPU = ("ran on the CPU: the call computes on the host, so there is no issue time apart "
                  "from the whole run (the time row)")


def time_dict(t) -> dict:
    """JSON form of a :class:`Timing` (``available: true`` added) or an :class:`Unavailable`.

    Examples
    --------
    >>> time_dict(Unavailable("not timed"))["available"]
    False
    >>> time_dict(Timing.from_samples([1.0, 3.0], "x"))["median_ms"]
    2.0
    """
    if isinstance(t, Unavailable):
        return t.to_dict()
    return {"available": True, **t.to_dict()}


def gpu_busy_from_events(events, names) -> dict:
    """GPU-busy ms per call from profiler events with a marker before each call (pure).

    Parameters
    ----------
    events : iterable of (device, start_ns, duration_ns, correlation_id, name)
        As :func:`cusolver_trace.tracing._hook.kineto_events` gives them. Each call was
        preceded by a zero-length marker ``ct_api#<k>:s<j>`` (k: the call's running
        number, j: the index of its callable in ``names``).
    names : sequence of str
        The callables' names, in marker index order.

    Returns
    -------
    dict
        ``name -> Timing`` (clock ``"profiler-kernels"``; one sample per marked call: the
        summed durations, in ms, of the device activities it launched), or ``name ->
        Unavailable`` when the profiler recorded no device activity at all.

    Examples
    --------
    >>> ev = [("cpu", 0, 0, 0, "ct_api#0:s0"), ("cpu", 1, 1, 7, "cudaLaunchKernel"),
    ...       ("cuda", 5, 2_000_000, 7, "k"), ("cpu", 9, 0, 0, "ct_api#1:s1"),
    ...       ("cpu", 10, 1, 8, "cudaLaunchKernel"), ("cuda", 11, 500_000, 8, "k")]
    >>> {k: v.median_ms for k, v in gpu_busy_from_events(ev, ["torch", "replay"]).items()}
    {'torch': 2.0, 'replay': 0.5}
    """
    from .tracing._hook import attribute

    events = list(events)
    names = list(names)
    if not any(e[0] != "cpu" for e in events):
        why = ("torch.profiler recorded no GPU activity (CUPTI unavailable, or the profiler "
               "could not attach)")
        return {k: Unavailable(why) for k in names}
    found = attribute(events)
    samples: dict = {k: [] for k in names}
    for tick, kernels in zip(found.names, found.per_record):
        k = tick[1:]
        if tick.startswith("s") and k.isascii() and k.isdigit() and int(k) < len(names):
            samples[names[int(k)]].append(sum(ms for _k, ms in kernels))
    return {k: (Timing.from_samples(v, "profiler-kernels") if v else
                Unavailable("no marked call of it was recorded by torch.profiler"))
            for k, v in samples.items()}


def time_gpu_busy(fns: dict, *, device=None, repeat: int = 20) -> dict:
    """GPU-busy time of each call: the summed durations of the kernels it launched.

    Each callable is run ``repeat`` times, interleaved, under ``torch.profiler`` (CPU +
    CUDA activities); a zero-length marker before each call lets every kernel, memcpy
    and memset be given to the call whose launch it was (correlation ids, as
    :mod:`cusolver_trace.tracing._hook` does for the API loggers). Why the profiler and
    not a CUDA-graph replay of the same calls: capture refuses calls that synchronize
    (torch's MAGMA paths, its info checks) or allocate outside the capture pool, so it
    would cover some paths only; the profiler measures every path as it runs, and the
    kernels' durations do not include the launch gaps that the host causes. The sum
    is the GPU's busy time when the kernels run one after another on one stream, as
    here. The device is synchronized after each call (outside any kernel's duration).

    Parameters
    ----------
    fns : dict[str, callable]
        What to measure; call them once before (warm-up) — the profiled calls are all
        sampled.
    device : torch.device or str or None
        A CUDA device; anything else returns :class:`Unavailable` for every name.
    repeat : int
        Profiled calls per callable (>= 1).

    Returns
    -------
    dict
        ``name -> Timing`` (ms, clock ``"profiler-kernels"``) or ``name -> Unavailable``
        (no GPU, the profiler failed or recorded no GPU activity).

    Raises
    ------
    ValueError
        ``repeat < 1``.
    """
    import torch

    if int(repeat) < 1:
        raise ValueError(f"time_gpu_busy needs repeat >= 1, got {repeat}")
    if device is None or torch.device(device).type != "cuda":
        return {k: Unavailable(NO_GPU_BUSY_ON_CPU) for k in fns}
    from torch.profiler import ProfilerActivity, profile, record_function

    from .tracing._hook import TICK_PREFIX, kineto_events

    dev = torch.device(device)
    names = list(fns)
    try:
        with torch.cuda.device(dev), warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*[Pp]rofiler clears events.*")
            torch.cuda.synchronize(dev)
            with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
                k = 0
                for _ in range(int(repeat)):
                    for j, name in enumerate(names):
                        with record_function(f"{TICK_PREFIX}{k}:s{j}"):
                            pass
                        fns[name]()
                        # each call's kernels finish before the next marker: a kernel whose
                        # launch record is missing is still placed right by its own start
                        torch.cuda.synchronize(dev)
                        k += 1
            events = kineto_events(prof)
    except Exception as exc:  # a profiler already running, CUPTI missing, ...
        why = f"torch.profiler failed: {type(exc).__name__}: {str(exc).splitlines()[0][:160] if str(exc) else ''}"
        return {k: Unavailable(why.rstrip(": ")) for k in fns}
    return gpu_busy_from_events(events, names)


def time_host(fns: dict, *, device=None, repeat: int = 20, warm_each: bool = False) -> dict:
    """Host time to issue each call: ``time.perf_counter`` around the call itself, with no
    synchronize after it (the device is synchronized *before* each sample, outside the
    measured span, so that a full launch queue never blocks the call). A call that
    synchronizes by itself (an info check) includes its wait for the GPU.

    Parameters
    ----------
    fns : dict[str, callable]
        What to measure (warm them up first); interleaved, one sample per call.
    device : torch.device or str or None
        A CUDA device; on the CPU every name gets :class:`Unavailable` (the call *is* the
        work there).
    repeat : int
        Samples per callable (>= 1).
    warm_each : bool
        One untimed call of the same callable right before each sample (before the
        synchronize), as :func:`time_calls`'s ``warm_each``: each sample is then a call as
        it runs in a loop, not the first after the other callable's.

    Returns
    -------
    dict
        ``name -> Timing`` (ms, clock ``"host-perf_counter"``) or ``name -> Unavailable``.

    Raises
    ------
    ValueError
        ``repeat < 1``.
    TypeError
        ``warm_each`` not a bool.
    """
    import torch

    if int(repeat) < 1:
        raise ValueError(f"time_host needs repeat >= 1, got {repeat}")
    if not isinstance(warm_each, bool):
        raise TypeError(f"time_host needs warm_each, a bool, got {warm_each!r}")
    if device is None or torch.device(device).type != "cuda":
        return {k: Unavailable(NO_HOST_ON_CPU) for k in fns}
    dev = torch.device(device)
    samples: dict = {k: [] for k in fns}
    with torch.cuda.device(dev):
        for _ in range(int(repeat)):
            for name, fn in fns.items():
                if warm_each:
                    fn()
                torch.cuda.synchronize(dev)
                t0 = time.perf_counter()
                fn()
                samples[name].append((time.perf_counter() - t0) * 1e3)
        torch.cuda.synchronize(dev)
    return {k: Timing.from_samples(v, "host-perf_counter") for k, v in samples.items()}


def cpu_threads(threads: int | None = None) -> str:
    """The CPU timing's thread count, then how many threads each library uses outside it, in
    one line: torch's intra-op pool and the BLAS / OpenMP pools loaded in this process
    (``threadpoolctl``), e.g. ``"timed with 1 thread per library (torch, BLAS, OpenMP) on 2
    cores; otherwise torch 2, openblas 2 (scipy_openblas), openmp 2"``.

    Parameters
    ----------
    threads : int, optional
        The timing's thread count (default :data:`CPU_THREADS`).
    """
    import torch

    k = CPU_THREADS if threads is None else threads
    head = (f"timed with {k} thread{'s' if k != 1 else ''} per library (torch, BLAS, OpenMP) on "
            f"{available_cores()} core{'s' if available_cores() != 1 else ''}; otherwise ")
    parts = [head + f"torch {torch.get_num_threads()}"]
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        parts.append("BLAS pools unknown (pip install threadpoolctl)")
    else:
        seen: dict = {}
        for p in threadpool_info():  # numpy and scipy may each carry the same BLAS: count once
            prefix = p.get("prefix", "")
            key = f"{p.get('internal_api', '?')} {p.get('num_threads')}" + (
                f" ({prefix})" if prefix else "")
            seen[key] = seen.get(key, 0) + 1
        parts += [k + (f" ×{c} copies" if c > 1 else "") for k, c in seen.items()]
    return ", ".join(parts)
