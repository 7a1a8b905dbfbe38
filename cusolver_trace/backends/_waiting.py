"""Host work deferred to the next time the host waits for the GPU.

A checked call ends in one stream synchronization (:func:`.cuda.finish_check`) while its check
kernel runs; host work queued here with :func:`defer` runs there, before the wait, so the GPU's
work hides its cost. What is deferred: the queue put with which the first ``auto`` call of a
new shape asks the background thread for its fused kernel (waking that thread costs ~14 µs of
host time on the H200's host, development data from a timer around the put: a part of a first
call that runs torch's path). Whatever is still queued runs at the next :func:`run` (the
next readiness question or query); nothing here is ever dropped.
"""
from __future__ import annotations

import collections
import warnings

#: Callables waiting for the next wait (appended and popped from any thread: ``deque`` is
#: thread-safe for both).
PENDING: collections.deque = collections.deque()


def defer(fn) -> None:
    """Run ``fn()`` at the next :func:`run` (before the next wait for the GPU)."""
    PENDING.append(fn)


def run() -> None:
    """Run every deferred callable, oldest first, each once (whichever thread runs it). One
    that raises an ``Exception`` is reported as a ``RuntimeWarning``, never raised into the
    call that happens to wait here (for the fused kernels' asks: ``auto`` keeps running its
    next rule, as for a build that failed).

    Examples
    --------
    >>> done = []
    >>> defer(lambda: done.append("asked"))
    >>> done
    []
    >>> run(); run(); done
    ['asked']
    """
    while PENDING:
        try:
            fn = PENDING.popleft()
        except IndexError:   # another thread took the last one
            return
        try:
            fn()
        except Exception as exc:   # never the failure of the call that happens to wait here
            warnings.warn(f"cusolver-trace: deferred host work failed ({type(exc).__name__}: "
                          f"{exc})", RuntimeWarning, stacklevel=2)
