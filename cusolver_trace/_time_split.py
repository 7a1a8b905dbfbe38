"""Whether the time difference of two calls is GPU work or issue overhead: :func:`time_split`,
a pure function of three times per side (re-exported by :mod:`cusolver_trace.timing`)."""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass


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
