"""Plans as a DAG: which blocks each :class:`~cusolver_trace.plans.Call` reads and writes
(:func:`access`), its cost (:func:`call_flops`), the dependencies between calls, and the
spreading of a sequential plan over several CUDA streams with events (:func:`schedule`),
proved equivalent to the sequential order by :func:`check_schedule`.

Pure (numpy only): tested without a GPU.
"""
from __future__ import annotations

import functools

import numpy as np

from ._plan_types import Call

STREAM_CALLS = ("record", "wait")
"""Pseudo-calls that order streams and touch no matrix."""


class ScheduleError(ValueError):
    """A stream / event program that could let a call read or write a block before the call
    it depends on (in the plan's sequential order) is finished."""


def _rect(pos, rows, cols):
    return (int(pos[0]), int(pos[0]) + int(rows), int(pos[1]), int(pos[1]) + int(cols))


def access(c: Call) -> tuple[tuple, tuple]:
    """The blocks a call may read and write: ``(reads, writes)``, each a tuple of half-open
    rectangles ``(row0, row1, col0, col1)`` in the plan's buffer coordinates.

    Triangular operands count as their whole square (a superset: never misses a
    conflict). Stream pseudo-calls touch nothing. A gemm with ``beta == 0`` and
    ``trmm_out`` do not read C.

    Examples
    --------
    >>> access(Call("gemm", "L", 2, 3, (4, 0), k=5, a=(0, 8), b=(0, 0), trans="C", beta=0.0))
    (((0, 5, 8, 10), (0, 5, 0, 3)), ((4, 6, 0, 3),))
    """
    r = c.routine
    if r in STREAM_CALLS:
        return (), ()
    C = _rect(c.c, c.m, c.n)
    if r in ("lauum", "trtri", "trsm_inv", "potrf"):
        return (C,), (C,)
    if r == "syrk":
        A = _rect(c.a, c.k, c.n) if c.trans == "C" else _rect(c.a, c.n, c.k)
        return (A, C), (C,)
    if r == "trsm_batched":
        t = c.m if c.side == "L" else c.n
        Cs = tuple(_rect(ci, c.m, c.n) for ci, _ in c.blocks)
        return tuple(_rect(ai, t, t) for _, ai in c.blocks) + Cs, Cs
    if r in ("trmm", "trsm", "trmm_out"):
        t = c.m if c.side == "L" else c.n
        T = _rect(c.a, t, t)
        if r == "trmm_out":
            return (T, _rect(c.b, c.m, c.n)), (C,)
        return (T, C), (C,)
    if r == "gemm":
        A = _rect(c.a, c.k, c.m) if c.trans == "C" else _rect(c.a, c.m, c.k)
        B = _rect(c.b, c.n, c.k) if c.transb == "C" else _rect(c.b, c.k, c.n)
        return ((A, B, C) if c.beta != 0 else (A, B)), (C,)
    raise ValueError(f"unknown routine {r!r} in plan")


def call_flops(c: Call) -> float:
    """Multiply-adds × 2 (real flops for real types) of one call, for scheduling costs.

    Examples
    --------
    >>> call_flops(Call("gemm", "L", 2, 3, (0, 0), k=4))
    48.0
    """
    r = c.routine
    if r == "gemm":
        return 2.0 * c.m * c.n * c.k
    if r == "syrk":
        return 1.0 * c.n * (c.n + 1) * c.k
    if r in ("trmm", "trsm", "trmm_out", "trsm_batched"):
        t = c.m if c.side == "L" else c.n
        return 1.0 * c.m * c.n * t * (len(c.blocks) if r == "trsm_batched" else 1)
    if r == "trsm_inv":
        return 1.0 * c.n ** 3
    if r in ("lauum", "trtri", "potrf"):
        return c.n ** 3 / 3.0
    return 0.0


def _overlaps(rects: np.ndarray, q) -> np.ndarray:
    return ((rects[:, 0] < q[1]) & (q[0] < rects[:, 1])
            & (rects[:, 2] < q[3]) & (q[2] < rects[:, 3]))


def _dependencies(ops) -> list[list[int]]:
    """For each call, the earlier calls it conflicts with (read-after-write,
    write-after-read, write-after-write on overlapping blocks)."""
    deps = []
    w_rects, w_owner, r_rects, r_owner = [], [], [], []
    for i, c in enumerate(ops):
        reads, writes = access(c)
        found = set()
        if w_rects:
            W, WO = np.asarray(w_rects), np.asarray(w_owner)
            for q in reads + writes:
                found.update(WO[_overlaps(W, q)].tolist())
        if r_rects:
            R, RO = np.asarray(r_rects), np.asarray(r_owner)
            for q in writes:
                found.update(RO[_overlaps(R, q)].tolist())
        deps.append(sorted(found))
        w_rects += writes
        w_owner += [i] * len(writes)
        r_rects += reads
        r_owner += [i] * len(reads)
    return deps


def schedule(calls, streams: int = 2, *, launch: float = 5e8, event_cost: float = 2e8) -> list[Call]:
    """Spread a sequential plan over ``streams`` streams, with events where a call depends
    on a call of another stream.

    The dependencies come from :func:`access` (every pair of calls touching overlapping
    blocks, one of them writing, keeps its order). Each call goes, in list order, to the
    stream where a simple cost model (``call_flops`` + ``launch`` per call, ``event_cost``
    per cross-stream wait; streams independent) lets it start first; ties go to the stream
    of its latest dependency. Then ``"wait"`` pseudo-calls are put before a call for each
    dependency not already ordered before it (vector clocks: waits already made cover
    their stream's earlier calls), a ``"record"`` right after each call waited on, a fork
    (stream 0 records, each side stream waits before its first call) and a join (stream 0
    waits for each side stream's last call). The host issues the calls in the returned
    order, which keeps the original order of the matrix calls; :func:`check_schedule`
    proves the result equivalent to the sequential plan.

    ``streams <= 1`` returns the matrix calls on stream 0, without events. Results are
    cached (plans are pure): the same calls and streams give the same list.
    """
    return list(_schedule(tuple(calls), int(streams), float(launch), float(event_cost)))


@functools.lru_cache(maxsize=64)
def _schedule(calls, streams, launch, event_cost):
    ops = [c for c in calls if c.routine not in STREAM_CALLS]
    if streams <= 1 or len(ops) <= 1:
        return tuple(c._replace(stream=0, event=-1) for c in ops)
    deps = _dependencies(ops)
    cost = [call_flops(c) + launch for c in ops]
    free = [0.0] * streams
    fin, st = [0.0] * len(ops), [0] * len(ops)
    for i in range(len(ops)):
        last = max(deps[i], key=lambda d: fin[d], default=None)
        best = None
        for s in range(streams):
            ready = max((fin[d] + (event_cost if st[d] != s else 0.0) for d in deps[i]),
                        default=0.0)
            start = max(free[s], ready)
            key = (start, 0 if (last is not None and st[last] == s) else 1, s)
            if best is None or key < best[0]:
                best = (key, s, start)
        _, s, start = best
        st[i], fin[i] = s, start + cost[i]
        free[s] = fin[i]
    return tuple(_emit(ops, deps, st, streams))


def _emit(ops, deps, st, streams):
    slots = [[] for _ in ops]
    head, tail = [], []
    vc = [[0] * streams for _ in range(streams)]  # vc[s][t]: stream t's calls known done in s
    count = [0] * streams
    count[0] = vc[0][0] = 1  # the work issued before the plan on stream 0 ("start")
    start_vc = list(vc[0])
    seq, after, event_of = [0] * len(ops), [None] * len(ops), {}
    events = {"start": None}
    nxt = [0]

    def new_event():
        nxt[0] += 1
        return nxt[0] - 1

    def merge(s, other):
        vc[s] = [max(x, y) for x, y in zip(vc[s], other)]

    for i, c in enumerate(ops):
        s = st[i]
        if vc[s][0] < 1:  # a side stream's first call: fork from stream 0
            if events["start"] is None:
                events["start"] = new_event()
                head.append(Call("record", "L", 0, 0, (0, 0), stream=0, event=events["start"]))
            slots[i].append(Call("wait", "L", 0, 0, (0, 0), stream=s, event=events["start"]))
            merge(s, start_vc)
        for d in sorted(deps[i], key=lambda d: -seq[d]):
            t = st[d]
            if vc[s][t] >= seq[d]:
                continue
            if d not in event_of:
                event_of[d] = new_event()
                slots[d].append(Call("record", "L", 0, 0, (0, 0), stream=t, event=event_of[d]))
            slots[i].append(Call("wait", "L", 0, 0, (0, 0), stream=s, event=event_of[d]))
            merge(s, after[d])
        slots[i].append(c._replace(stream=s, event=-1))
        count[s] += 1
        seq[i] = vc[s][s] = count[s]
        after[i] = list(vc[s])
    for s in range(1, streams):  # join: stream 0 waits for each side stream's last call
        if count[s] and vc[0][s] < count[s]:
            last = max(i for i in range(len(ops)) if st[i] == s)
            if last not in event_of:
                event_of[last] = new_event()
                slots[last].append(Call("record", "L", 0, 0, (0, 0), stream=s,
                                        event=event_of[last]))
            tail.append(Call("wait", "L", 0, 0, (0, 0), stream=0, event=event_of[last]))
            merge(0, after[last])
    return head + [c for slot in slots for c in slot] + tail


def _conflict(a_reads, a_writes, b_reads, b_writes) -> bool:
    def hit(p, q):
        return p[0] < q[1] and q[0] < p[1] and p[2] < q[3] and q[2] < p[3]

    return (any(hit(w, x) for w in a_writes for x in b_reads + b_writes)
            or any(hit(r, w) for r in a_reads for w in b_writes))


def check_schedule(calls) -> None:
    """Prove a stream / event program equivalent to its sequential order, or raise.

    CUDA semantics: calls on one stream run in issue order; ``record`` on stream s
    captures everything issued to s so far; ``wait`` on stream s orders everything
    issued to s afterwards after the captured work (of the latest ``record`` of that
    event issued before the wait). The work issued before the plan is a call on stream
    0 writing every block, and the work after it a call on stream 0 reading every block.
    For every pair of calls that touch overlapping blocks with at least one writing
    (:func:`access`), the earlier one (in list order) must happen before the later one.

    Raises
    ------
    ScheduleError
        Naming the two calls that may race (or the call not joined back to stream 0, or
        a wait for an event never recorded).

    Examples
    --------
    >>> g = Call("gemm", "L", 2, 2, (0, 0), k=2, a=(0, 2), b=(0, 2), beta=0.0)
    >>> check_schedule([g, g._replace(stream=0)])          # one stream: always ordered
    >>> check_schedule([g._replace(stream=1)])
    Traceback (most recent call last):
      ...
    cusolver_trace._plan_schedule.ScheduleError: call 0 (gemm on stream 1) may start before the work issued before the plan on stream 0 (no wait on a fork event)
    """
    vc: dict = {0: {0: 1}}
    count = {0: 1}
    events: dict = {}
    done = []  # (index, call, stream, seq, reads, writes)
    for idx, c in enumerate(calls):
        s = c.stream
        clock = vc.setdefault(s, {})
        if c.routine == "record":
            events[c.event] = dict(clock)
            continue
        if c.routine == "wait":
            if c.event not in events:
                raise ScheduleError(f"call {idx} (wait on stream {s}) waits for event {c.event}, "
                                    "which no earlier call recorded")
            for t, q in events[c.event].items():
                clock[t] = max(clock.get(t, 0), q)
            continue
        reads, writes = access(c)
        if clock.get(0, 0) < 1:
            raise ScheduleError(f"call {idx} ({c.routine} on stream {s}) may start before the "
                                "work issued before the plan on stream 0 (no wait on a fork event)")
        for j, cj, t, q, rj, wj in done:
            if clock.get(t, 0) < q and _conflict(rj, wj, reads, writes):
                raise ScheduleError(
                    f"call {idx} ({c.routine} on stream {s}) may race with call {j} "
                    f"({cj.routine} on stream {t}): they touch overlapping blocks and no "
                    "event orders them")
        count[s] = count.get(s, 0) + 1
        clock[s] = count[s]
        done.append((idx, c, s, count[s], reads, writes))
    end = vc[0]
    for j, cj, t, q, _, _ in done:
        if end.get(t, 0) < q:
            raise ScheduleError(f"call {j} ({cj.routine} on stream {t}) is not joined back to "
                                "stream 0 before the plan ends")
