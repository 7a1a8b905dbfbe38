"""GPU timing the way the field does it: CUDA events, warm-up, repeats, median and IQR.

One module serves compare, sweeps and benchmarks. On CUDA every sample is the
elapsed time between two CUDA events recorded on torch's current stream
around one call (no host clock), and several callables are timed
*interleaved* (A, B, A, B, ...) in one run so that drift (clocks, thermals)
hits all of them alike, and their ratio is reported. On the CPU,
``time.perf_counter``, one block of samples per callable (interleaving two
libraries' thread pools there measures their contention, not the routines).

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

import math
import statistics
import time
import warnings
from dataclasses import asdict, dataclass, field

__all__ = ["Timing", "time_calls", "l2_flush_buffer", "NOISY_IQR", "cpu_threads", "Unavailable",
           "time_gpu_busy", "time_host", "TimeSplit", "time_split", "TIME_SPLIT_KINDS",
           "ALIKE_FRACTION", "GPU_SHARE"]

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

    @property
    def iqr_ms(self) -> float:
        return self.q3_ms - self.q1_ms

    @property
    def noisy(self) -> bool:
        """The IQR exceeds 20 % of the median, or there are fewer than 3 samples (their
        quartiles say nothing of the spread: one sample has an IQR of 0): the figure should
        not be trusted alone."""
        return self.repeat < 3 or self.iqr_ms > NOISY_IQR * self.median_ms

    @classmethod
    def from_samples(cls, samples, clock):
        s = sorted(samples)
        if len(s) >= 2:
            q1, _, q3 = statistics.quantiles(s, n=4, method="inclusive")
        else:
            q1 = q3 = s[0]
        return cls(statistics.median(s), q1, q3, s[0], s[-1], len(s), clock, list(samples))

    def to_dict(self, samples: bool = False) -> dict:
        d = asdict(self)
        d["iqr_ms"] = self.iqr_ms
        d["noisy"] = self.noisy
        if not samples:
            d.pop("samples_ms")
        return d

    def gflops(self, flop_count: float) -> float:
        """GFLOP/s at the median time for ``flop_count`` flops."""
        return flop_count / (self.median_ms * 1e-3) / 1e9


def l2_flush_buffer(device, nbytes: int = 256 * 2**20):
    """A buffer whose ``zero_()`` evicts the L2 cache (60 MB on an H200); 256 MB as triton's do_bench."""
    import torch

    return torch.empty(nbytes, dtype=torch.uint8, device=device)


def time_calls(fns: dict, *, device=None, warmup: int = 3, repeat: int = 20, flush_l2: bool = False,
               calls_per_sample: int = 1, idle_start: bool = False, warm_each: bool = False):
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

    Examples
    --------
    >>> t = time_calls({"sum": lambda: sum(range(100))}, repeat=3, warmup=0, calls_per_sample=5)
    >>> t["sum"].clock, t["sum"].median_ms > 0
    ('perf_counter', True)
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
    else:
        # On the CPU, one block per callable: alternating torch (OpenMP / its BLAS) with
        # scipy (OpenBLAS) makes their spinning thread pools contend and adds milliseconds.
        for name, fn in fns.items():
            fn()
            for _ in range(repeat):
                t0 = time.perf_counter()
                for _ in range(k):
                    fn()
                samples[name].append((time.perf_counter() - t0) * 1e3 / k)
        clock = "perf_counter"
    return {k: Timing.from_samples(v, clock) for k, v in samples.items()}


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
        if tick.startswith("s") and tick[1:].isdigit() and int(tick[1:]) < len(names):
            samples[names[int(tick[1:])]].append(sum(ms for _k, ms in kernels))
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


#: Event times within this fraction of each other are "alike" (no difference to explain).
ALIKE_FRACTION = 0.05
#: A difference is "GPU work" when the GPU-busy difference makes at least this share of
#: it, "issue overhead" when at most 1 − this share, both in between.
GPU_SHARE = 0.75
TIME_SPLIT_KINDS = ("alike", "noisy", "gpu-work", "issue-overhead", "gpu-work-and-issue-overhead",
                    "not-separated", "not-timed")


@dataclass(frozen=True)
class TimeSplit:
    """What a difference between two event times is made of (see :func:`time_split`).

    Attributes
    ----------
    kind : str
        One of :data:`TIME_SPLIT_KINDS`.
    text : str
        The verdict line, in words.
    ratio : float or None
        Event time of the second / the first.
    delta_ms : float or None
        Event time difference, second − first (ms).
    gpu_delta_ms : float or None
        GPU-busy difference (ms): the GPU work.
    idle_delta_ms : float or None
        ``delta_ms − gpu_delta_ms``: the difference in GPU idle time inside the calls, the
        GPU waiting for the host to issue launches (ms).
    host_delta_ms : float or None
        Host issue time difference (ms).
    gpu_share : float or None
        ``gpu_delta_ms / delta_ms``.
    """

    kind: str
    text: str
    ratio: float | None = None
    delta_ms: float | None = None
    gpu_delta_ms: float | None = None
    idle_delta_ms: float | None = None
    host_delta_ms: float | None = None
    gpu_share: float | None = None

    def to_dict(self) -> dict:
        return asdict(self)


def _ms(x: float) -> str:
    return f"{x:.4g}"


def _signed(x: float) -> str:
    return ("+" if x >= 0 else "−") + _ms(abs(x))


def _ok(x) -> bool:
    return x is not None and isinstance(x, (int, float)) and math.isfinite(x) and x >= 0


def time_split(event_ms, gpu_ms, host_ms, *, names=("torch", "replay"), noise_ms: float = 0.0,
               why_no_event: str | None = None, why_no_gpu: str | None = None,
               why_no_host: str | None = None, samples: int | None = None) -> TimeSplit:
    """Is the difference between two calls' event times GPU work or issue overhead? (pure)

    A call's event time is its GPU-busy time plus the time the GPU sat idle inside the
    call, waiting for the host to issue the next launch. So the difference of two event
    times splits into the difference of GPU work and the difference of that idle time
    (issue overhead); the host issue times say how long each host took to issue.

    Parameters
    ----------
    event_ms, gpu_ms, host_ms : (float or None, float or None)
        Median event time, GPU-busy time and host issue time (ms) of the first and the
        second call; None where it is unavailable.
    names : (str, str)
        What the two are called in the text (default ``("torch", "replay")``).
    noise_ms : float
        A difference up to this (e.g. the mean of the two IQRs, ms) is noise: "noisy" (no
        verdict) unless it is also within 5 % ("alike").
    why_no_event, why_no_gpu, why_no_host : str, optional
        Why a time is unavailable, for the text.
    samples : int, optional
        The fewer of the two sides' event samples: below 3 their spread is unknown, so a
        difference beyond 5 % is "noisy" (no verdict) whatever ``noise_ms`` says.

    Returns
    -------
    TimeSplit
        ``alike``: the event times differ by at most :data:`ALIKE_FRACTION` (5 %) of the
        larger; ``noisy``: by more, but by at most ``noise_ms`` (inside the samples'
        spread: no verdict). Otherwise, with both GPU-busy times:
        ``gpu-work`` when the GPU-busy difference is at least :data:`GPU_SHARE` (75 %) of
        the event difference, ``issue-overhead`` when it is at most 25 % (the GPU did the
        same work and waited longer for launches), else ``gpu-work-and-issue-overhead``.
        ``not-separated`` without GPU-busy times, ``not-timed`` without event times.

    Examples
    --------
    >>> time_split((0.025, 0.045), (0.020, 0.020), (0.018, 0.041)).kind
    'issue-overhead'
    >>> time_split((33.3, 23.1), (33.0, 22.9), (0.05, 0.3)).kind
    'gpu-work'
    >>> time_split((1.0, 1.01), (None, None), (None, None)).kind
    'alike'
    """
    a, b = names
    (te, re_), (tg, rg), (th, rh) = event_ms, gpu_ms, host_ms
    if not (_ok(te) and _ok(re_)):
        return TimeSplit("not-timed", f"time: {why_no_event}" if why_no_event
                         else "time: not measured (no event times)")
    d = re_ - te
    ratio = re_ / te if te > 0 else None
    head = f"{b}/{a} {ratio:.3g}" if ratio is not None else f"{b} − {a} {_signed(d)} ms"
    host_d = rh - th if _ok(th) and _ok(rh) else None
    host = (f"host issue time {_ms(rh)} vs {_ms(th)} ms" if host_d is not None else
            f"host issue time unavailable ({why_no_host or 'not measured'})")
    both_gpu = _ok(tg) and _ok(rg)
    gpu_d = rg - tg if both_gpu else None
    idle_d = d - gpu_d if both_gpu else None
    busy = f"GPU busy {_ms(rg)} vs {_ms(tg)} ms" if both_gpu else ""
    noise = noise_ms if _ok(noise_ms) else 0.0
    if abs(d) <= ALIKE_FRACTION * max(te, re_):
        text = f"time alike: {head} (difference {_signed(d)} ms, within 5 %)"
        if busy:
            text += f"; {busy}"
        return TimeSplit("alike", text, ratio, d, gpu_d, idle_d, host_d, None)
    if samples is not None and samples < 3:
        text = (f"time: {head} (difference {_signed(d)} ms), too few samples to tell "
                f"({samples}: their spread is unknown); re-run with --repeat 3 or more")
        if busy:
            text += f"; {busy}"
        return TimeSplit("noisy", text, ratio, d, gpu_d, idle_d, host_d, None)
    if abs(d) <= noise:
        # more than 5 % apart but inside the spread of the samples: neither "alike" (a 5x
        # difference with wide IQRs is not alike) nor a split worth stating
        text = (f"time: {head} (difference {_signed(d)} ms), too noisy to tell: the IQRs "
                f"average {_ms(noise)} ms; re-run with more --repeat on an idle machine")
        if busy:
            text += f"; {busy}"
        return TimeSplit("noisy", text, ratio, d, gpu_d, idle_d, host_d, None)
    if not both_gpu:
        return TimeSplit("not-separated",
                         f"time: {head} (difference {_signed(d)} ms); not split into GPU work "
                         f"and issue overhead: GPU-busy time unavailable "
                         f"({why_no_gpu or 'not measured'})",
                         ratio, d, None, None, host_d, None)
    share = gpu_d / d
    if share >= GPU_SHARE:
        kind = "gpu-work"
        what = f"the difference ({_signed(d)} ms) is GPU work: {busy}; {host}"
    elif share <= 1 - GPU_SHARE:
        kind = "issue-overhead"
        what = (f"the difference ({_signed(d)} ms) is issue overhead: the GPU work is "
                f"{'alike' if abs(gpu_d) <= ALIKE_FRACTION * max(tg, rg, 1e-300) else 'close'} "
                f"({busy}) and the GPU {'waits longer' if idle_d > 0 else 'waits less'} for "
                f"launches on the {b} side ({_signed(idle_d)} ms idle); {host}")
    else:
        kind = "gpu-work-and-issue-overhead"
        what = (f"the difference ({_signed(d)} ms) is GPU work ({_signed(gpu_d)} ms, "
                f"{100 * share:.0f} %) and issue overhead ({_signed(idle_d)} ms of GPU idle "
                f"time, {100 * (1 - share):.0f} %): {busy}; {host}")
    return TimeSplit(kind, f"time: {head}; {what}", ratio, d, gpu_d, idle_d, host_d, share)


def cpu_threads() -> str:
    """How many threads each library uses on the CPU, in one line: torch's intra-op pool and
    the BLAS / OpenMP pools loaded in this process (``threadpoolctl``), e.g.
    ``"torch 2; openblas 2 (scipy_openblas), openmp 2"``. CPU timings depend on these."""
    import torch

    parts = [f"torch {torch.get_num_threads()}"]
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
