"""Running a comparison: the inputs read as tensors, both sides run (and timed, interleaved)
on the same inputs, the inputs' fingerprint for :func:`~cusolver_trace.compare.with_gpu_busy`,
and the time split of the two sides."""
from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from .. import checks, ops
from .._dtypes import dtype_info
from ..errors import LibraryStatusError
from ..replay import nvtx_labels
from ..timing import (Timing, TimeSplit, Unavailable, time_calls, time_gpu_busy, time_host,
                      time_split)
from ..tracing.nvtx import nvtx_range
from .report import GPU_BUSY_LATER, Side

#: Profiled calls per side for the GPU-busy time, at most (the profiler keeps every event).
GPU_BUSY_MAX_CALLS = 50


def as_input(x, name: str):
    """A torch tensor for :func:`compare` from a tensor or array-like, handled the way the
    array routines handle inputs: ``requires_grad`` read through ``detach()``; conjugate and
    negative views, negative strides and non-native byte order materialized; meta and
    sparse tensors refused.

    Raises
    ------
    TypeError
        Unsupported dtype or kind.
    ValueError
        A meta / sparse tensor, or fewer than 2 dimensions.
    """
    import torch

    if isinstance(x, torch.Tensor):
        if x.device.type == "meta":
            raise ValueError(f"{name} is a meta tensor: it holds no values to compare")
        if x.layout != torch.strided:
            raise TypeError(f"{name}: sparse or non-strided tensors are not supported")
        if x.device.type not in ("cpu", "cuda"):
            raise ValueError(f"{name}: device {x.device} is not supported (use cuda or cpu)")
        t = x.detach()
    else:
        try:
            arr = np.asarray(x)
        except Exception as exc:
            raise TypeError(f"{name}: cannot read {type(x).__name__} as an array: {exc}") from None
        if arr.dtype.kind not in "biufc":   # text, bytes, objects: not numbers at all
            raise TypeError(f"{name}: expected numbers, got {type(x).__name__} read as "
                            f"{arr.dtype}")
        t = checks.as_tensor(arr)
    dtype_info(t.dtype)
    if t.ndim < 2:
        raise ValueError(f"{name}: expected a matrix or a batch of matrices (at least 2-D), got "
                         f"shape {tuple(t.shape)}")
    return t.resolve_conj().resolve_neg()


@dataclass
class Run:
    """What the two sides returned (torch may raise instead), and their timings."""

    t_out: object
    t_info: object
    t_error: str | None
    r_out: object
    r_info: object
    timings: dict
    gpu_busy: dict = field(default_factory=dict)
    host: dict = field(default_factory=dict)
    why_not_timed: str | None = None
    r_error: str | None = None
    status_error: bool = False


#: The library status names in torch's and the raw layer's error messages.
_STATUS = re.compile(r"\b(CUSOLVER|CUBLAS)_STATUS_[A-Z_]+")


def library_status(text: str) -> str | None:
    """The cuSOLVER / cuBLAS status an error message names (``CUSOLVER_STATUS_INTERNAL_ERROR``),
    or None.

    Examples
    --------
    >>> library_status("cusolver error: CUSOLVER_STATUS_INTERNAL_ERROR, when calling ...")
    'CUSOLVER_STATUS_INTERNAL_ERROR'
    """
    m = _STATUS.search(str(text))
    return m.group(0) if m else None


def sides(o, inputs, opts, path):
    """torch's call and the replay as zero-argument callables, each inside its NVTX range,
    the replay's decisions taken once (not in a timing loop)."""
    t_label, r_label = nvtx_labels(o, inputs, path)

    def torch_side():
        with nvtx_range(t_label):
            return o.torch_call(inputs, opts)

    replay = o.replay_call(inputs, opts, path)   # decided once, not in the timing loop

    def replay_side():
        with nvtx_range(r_label, color="green"):
            return replay()
    return torch_side, replay_side


def run_both(o, inputs, opts, path, preferred, *, repeat: int, warmup: int,
              gpu_busy: bool = True) -> Run:
    """Run torch's call and the replay on the same inputs (and time both, interleaved, when
    ``repeat`` > 0), under the backend preference given; the GPU-busy time last, or not at
    all (``gpu_busy=False``)."""
    import torch

    device = inputs.x.device
    t_error, timings, gpu, host = None, {}, {}, {}
    torch_side, replay_side = sides(o, inputs, opts, path)
    with ops.preferred_library(preferred if device.type == "cuda" else None):
        status_error, r_error = False, None
        try:
            t_out, t_info = torch_side()
        except torch.linalg.LinAlgError as exc:  # torch's CPU potri path raises for a zero pivot
            t_error, t_out, t_info = str(exc), None, None
        except RuntimeError as exc:   # a library status (torch's XsyevBatched from 65,536 on)
            if library_status(str(exc)) is None:
                raise
            t_error, t_out, t_info, status_error = str(exc), None, None, True
        try:
            r_out, r_info, _ = replay_side()
        except LibraryStatusError as exc:   # the same call as torch's, failing the same way
            if not status_error:
                raise
            r_error, r_out, r_info = str(exc), None, None
        if repeat > 0 and t_error is None:
            fns = {"torch": torch_side, "replay": replay_side}
            dev = device if device.type == "cuda" else None
            # each sample from an idle GPU: a single call of tens of µs would otherwise start
            # behind the other side's queued work, and the ratio swing with the interleaving;
            # and right after an untimed call of the same side, so that neither side's sample
            # pays for the other side's call having pushed its host path out of the caches
            timings = time_calls(fns, device=dev, warmup=warmup, repeat=repeat, idle_start=True,
                                 warm_each=True)
            host = time_host(fns, device=dev, repeat=repeat, warm_each=True)
            # the profiler last: once it has run, every later call in this process is slower
            # (see with_gpu_busy)
            gpu = (time_gpu_busy(fns, device=dev, repeat=min(repeat, GPU_BUSY_MAX_CALLS))
                   if gpu_busy else {k: Unavailable(GPU_BUSY_LATER) for k in fns})
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    run = Run(t_out, t_info, t_error, r_out, r_info, timings, gpu, host, r_error=r_error,
              status_error=status_error)
    if t_error is not None:
        run.why_not_timed = "not timed: torch raised"
    return run


def split_times(ts: Side, rs: Side) -> TimeSplit:
    """:func:`~.timing.time_split` of the two sides' medians (unavailable ones as None)."""
    def med(t):
        return t.median_ms if isinstance(t, Timing) and not t.oversubscribed else None

    def why(t):
        if isinstance(t, Timing) and t.oversubscribed:
            return ("timed while the CPU's cores were oversubscribed (another job), so the "
                    "difference measures the contention")
        return t.reason if isinstance(t, Unavailable) else None

    tt, rt = ts.times(), rs.times()
    noise, samples = 0.0, None
    if isinstance(tt["events"], Timing) and isinstance(rt["events"], Timing):
        noise = (tt["events"].iqr_ms + rt["events"].iqr_ms) / 2
        samples = min(tt["events"].repeat, rt["events"].repeat)
    return time_split(*((med(tt[k]), med(rt[k])) for k in ("events", "gpu_busy", "host")),
                      noise_ms=noise, why_no_event=why(tt["events"]) or why(rt["events"]),
                      why_no_gpu=why(tt["gpu_busy"]) or why(rt["gpu_busy"]),
                      why_no_host=why(tt["host"]) or why(rt["host"]), samples=samples)


def fingerprint(**given) -> tuple:
    """Per input (the inputs compare was handed, by name; None where not given): its shape, dtype, device
    and ``wᵀ·[uᵀ X_b v]_b`` for fixed random vectors ``u``, ``v``, ``w`` (complex for complex
    inputs), NaN / ±Inf first replaced by three constants, as bytes. A plain sum missed
    swapped entries, a permutation, a change moved between the triangles, a conjugate and
    NaN at other places; weighting every entry by its own random ``u_i v_j w_b`` does not.
    One copy, three scalings and one sum per input, and one transfer of the results:
    what :func:`with_gpu_busy` checks that it was handed the same inputs with, without
    keeping them alive between the two calls."""
    import struct

    import torch

    forms = {}
    for k, t in given.items():
        if t is None or not t.numel():
            continue
        dt = torch.complex128 if t.is_complex() else torch.float64
        # a new tensor (nan_to_num is out of place): the products below may work in place
        x = t.reshape(-1, *t.shape[-2:]).to(dt).nan_to_num(nan=0.5772156649015329,
                                                            posinf=1.618033988749895,
                                                            neginf=-2.718281828459045)
        g = torch.Generator().manual_seed(20261202)
        u, v, w = (torch.randn(m, generator=g, dtype=dt).to(t.device)
                   for m in (x.shape[1], x.shape[2], x.shape[0]))
        # elementwise products and one sum, not matrix-vector products: a sum's order is
        # fixed on a given device, so the same input gives the same bits on both calls
        forms[k] = x.mul_(u[:, None]).mul_(v).mul_(w[:, None, None]).sum()
    host = dict(zip(forms, torch.stack([f.to(torch.complex128) for f in forms.values()])
                    .cpu().tolist())) if forms else {}
    out = []
    for k, t in given.items():
        if t is None:
            out.append((k, None))
            continue
        z = complex(host.get(k, 0))
        out.append((k, (tuple(t.shape), str(t.dtype), str(t.device),
                        struct.pack("<dd", z.real, z.imag))))
    return tuple(out)


def fingerprint_difference(was: tuple, now: tuple) -> str:
    """What differs between two :func:`fingerprint` results, in words."""
    for (k, a), (_, b) in zip(was, now):
        if a == b:
            continue
        if a is None or b is None:
            return f"{k} was {'not ' if a is None else ''}given to compare but is " \
                   f"{'now' if a is None else 'not now'}"
        for i, what in enumerate(("shape", "dtype", "device")):
            if a[i] != b[i]:
                return f"{k}'s {what} is {b[i]}, compare had {a[i]}"
        return f"{k}'s values are not the ones compare had"
    return "they differ"
