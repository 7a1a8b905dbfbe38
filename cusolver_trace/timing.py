"""GPU timing the way the field does it: CUDA events, warm-up, repeats, median and IQR.

One module serves compare, sweeps and benchmarks. On CUDA every sample is the
elapsed time between two CUDA events recorded on torch's current stream
around one call (no host clock), and several callables are timed
*interleaved* (A, B, A, B, ...) in one run so that drift (clocks, thermals)
hits all of them alike, and their ratio is reported. On the CPU,
``time.perf_counter``, one block of samples per callable (interleaving two
libraries' thread pools there measures their contention, not the routines).
"""
from __future__ import annotations

import statistics
import time
from dataclasses import asdict, dataclass, field

__all__ = ["Timing", "time_calls", "l2_flush_buffer", "NOISY_IQR", "cpu_threads"]

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
        """The IQR exceeds 20 % of the median: the figure should not be trusted alone."""
        return self.iqr_ms > NOISY_IQR * self.median_ms

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


def time_calls(fns: dict, *, device=None, warmup: int = 3, repeat: int = 20, flush_l2: bool = False):
    """Time several zero-argument callables interleaved; returns ``{name: Timing}``.

    Parameters
    ----------
    fns : dict[str, callable]
        What to time; each call is one sample.
    device : torch.device or str or None
        A CUDA device → CUDA events on torch's current stream of that device;
        ``None`` / CPU → ``time.perf_counter`` (after a synchronize-free call).
    warmup : int
        Untimed calls of each callable first (library load, handles, workspaces).
    repeat : int
        Timed samples per callable.
    flush_l2 : bool
        Zero a 256 MB buffer before each sample (inputs that fit in L2).
    """
    import torch

    if int(repeat) < 1 or int(warmup) < 0:
        raise ValueError(f"time_calls needs repeat >= 1 and warmup >= 0, got repeat={repeat} "
                         f"warmup={warmup}")
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
                    if flush is not None:
                        flush.zero_()
                    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                    start.record()
                    fn()
                    end.record()
                    pairs[name].append((start, end))
            torch.cuda.synchronize(dev)
            for name, evs in pairs.items():
                samples[name] = [s.elapsed_time(e) for s, e in evs]
        clock = "cuda-events"
    else:
        # On the CPU, one block per callable: alternating torch (OpenMP / its BLAS) with
        # scipy (OpenBLAS) makes their spinning thread pools contend and adds milliseconds.
        for name, fn in fns.items():
            fn()
            for _ in range(repeat):
                t0 = time.perf_counter()
                fn()
                samples[name].append((time.perf_counter() - t0) * 1e3)
        clock = "perf_counter"
    return {k: Timing.from_samples(v, clock) for k, v in samples.items()}


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
