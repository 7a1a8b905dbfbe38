"""Timeline export: a trace as Chrome-trace / Perfetto JSON (``cusolver-trace trace --chrome PATH``).

Process 1 ``host`` holds the API calls (complete ``"X"`` events, nested as the calls are)
and, on a second track, the ``#### label`` sections (the trace's ``range`` events); process 2 ``GPU`` one track per CUDA stream with the trace's GPU activities (``args.call``:
the call that launched each). ``ts`` / ``dur`` are microseconds from the profiler's first
event; without times (a captured log) the calls are laid out 10 µs apart in log order
(``otherData.synthetic_time``). See docs/tracing-programs.md, "--chrome".
"""
from __future__ import annotations

import json
from typing import Any

__all__ = ["chrome_trace", "write_chrome_trace", "validate_chrome_trace"]

HOST_PID, GPU_PID, API_TID, RANGE_TID = 1, 2, 1, 2
_SLOT_US = 10.0


def _args(call) -> dict:
    a: dict[str, Any] = dict(call.values())
    for key in ("section", "op", "where", "code"):
        v = getattr(call, key, None)
        if v is not None:
            a[key] = v
    if call.kernels is not None:
        a["gpu_ms"] = call.gpu_ms
        a["kernels"] = len(call.kernels)
    return a


def chrome_trace(trace) -> dict:
    """Build the Chrome-trace JSON object of a :class:`~.model.Trace`.

    Parameters
    ----------
    trace : Trace
        With ``calls`` (``None`` is treated as no calls). Uses each call's ``start_us`` /
        ``dur_us`` and ``trace.activities`` when the program was profiled.

    Returns
    -------
    dict
        ``{"traceEvents": [...], "displayTimeUnit": "ms", "otherData": {...}}``.

    Examples
    --------
    >>> from cusolver_trace.tracing import Trace, parse_log
    >>> log = parse_log("[2026-11-30 02:17:18][cusolverDn][1][Api][cusolverDnXpotrf] n=8 lda=8")
    >>> d = chrome_trace(Trace(label="x", calls=log.calls))
    >>> [e["name"] for e in d["traceEvents"] if e["ph"] == "X"]
    ['cusolverDnXpotrf']
    >>> validate_chrome_trace(d)
    []
    """
    records = trace.records()
    timed = bool(records) and all(r.start_us is not None for r in records)
    events: list[dict] = [
        {"ph": "M", "name": "process_name", "pid": HOST_PID, "tid": 0,
         "args": {"name": f"host: {trace.label or 'trace'}"}},
        {"ph": "M", "name": "thread_name", "pid": HOST_PID, "tid": API_TID,
         "args": {"name": "cuSOLVER / cuBLAS API calls"}},
    ]
    spans: dict[int, tuple[float, float]] = {}
    clock = [0.0]

    def lay(c) -> tuple[float, float]:
        """Span of ``c`` enclosing its nested calls (synthetic slots without times)."""
        if timed:
            s, e = c.start_us, c.start_us + (c.dur_us or 0.0)
        else:
            s = clock[0]
            clock[0] += _SLOT_US
        for ch in c.children:
            e_ch = lay(ch)[1]
            if timed:
                e = max(e, e_ch)
        if not timed:
            e = clock[0] - 1.0
        spans[id(c)] = (s, e)
        return s, e

    prev_end = 0.0
    for c in trace.calls or []:  # top-level calls must not overlap each other
        s, e = lay(c)
        s = max(s, prev_end)
        spans[id(c)] = (s, max(e, s))
        prev_end = spans[id(c)][1]
    api = []
    for r in records:
        s, e = spans.get(id(r), (0.0, 0.0))
        api.append({"ph": "X", "name": r.name, "cat": r.library, "pid": HOST_PID,
                    "tid": API_TID, "ts": round(s, 3), "dur": round(max(e - s, 0.0), 3),
                    "args": _args(r)})
    api.sort(key=lambda ev: (ev["ts"], -ev["dur"]))
    events += api
    ranges = trace.ranges()
    if ranges:
        events.append({"ph": "M", "name": "thread_name", "pid": HOST_PID, "tid": RANGE_TID,
                       "args": {"name": "sections (#### label)"}})
    for r in ranges:  # from the first call's start to the last one's end, as drawn above
        s, e = spans[id(r.children[0])][0], spans[id(r.children[-1])][1]
        events.append({"ph": "X", "name": r.name, "cat": "range", "pid": HOST_PID,
                       "tid": RANGE_TID, "ts": round(s, 3), "dur": round(max(e - s, 0.0), 3),
                       "args": {"calls": sum(1 for c in r.children for _ in c.walk())}})
    gpu = list(trace.activities or [])
    if gpu:
        events.append({"ph": "M", "name": "process_name", "pid": GPU_PID, "tid": 0,
                       "args": {"name": "GPU"}})
        for stream in sorted({g.stream or 0 for g in gpu}):
            events.append({"ph": "M", "name": "thread_name", "pid": GPU_PID, "tid": int(stream),
                           "args": {"name": f"stream {stream}"}})
        for g in sorted(gpu, key=lambda g: (g.stream or 0, g.start_us or 0.0)):
            args: dict = {"device": g.device, "activity": g.activity}
            if g.parent is not None:
                args["call"] = g.parent.name
            events.append({"ph": "X", "name": g.name, "cat": g.activity, "pid": GPU_PID,
                           "tid": int(g.stream or 0), "ts": round(max(g.start_us or 0.0, 0.0), 3),
                           "dur": round(max(g.dur_us or 0.0, 0.0), 3), "args": args})
    return {"traceEvents": events, "displayTimeUnit": "ms",
            "otherData": {"label": trace.label, "synthetic_time": not timed,
                          "producer": "cusolver-trace"}}


def write_chrome_trace(trace, path: str) -> dict:
    """Write :func:`chrome_trace` of ``trace`` to ``path``; returns the object written.

    Parameters
    ----------
    trace : Trace
    path : str

    Returns
    -------
    dict

    Raises
    ------
    OSError
        If the file cannot be written.

    Examples
    --------
    >>> import tempfile, os
    >>> from cusolver_trace.tracing import Trace
    >>> p = os.path.join(tempfile.mkdtemp(), "t.json")
    >>> write_chrome_trace(Trace(label="x", calls=[]), p)["displayTimeUnit"]
    'ms'
    """
    obj = chrome_trace(trace)
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(obj, fh)
    return obj


def validate_chrome_trace(obj) -> list[str]:
    """Check a Chrome-trace object's structure; returns the problems found (empty: valid).

    Checked: a ``traceEvents`` list; every event a dict with ``ph`` (str), ``name``
    (str), integer ``pid`` / ``tid``; ``"X"`` events with numeric ``ts`` >= 0 and
    ``dur`` >= 0 and a dict ``args``; ``"M"`` events named ``process_name`` /
    ``thread_name`` with ``args.name``; per (pid, tid) track, ``X`` events in
    non-decreasing ``ts``; every track with X events has a ``thread_name`` and
    every pid a ``process_name``.

    Parameters
    ----------
    obj : object
        What :func:`chrome_trace` returned, or ``json.load`` of a file.

    Returns
    -------
    list of str

    Examples
    --------
    >>> validate_chrome_trace({"traceEvents": [{"ph": "X", "name": "a", "pid": 1, "tid": 1,
    ...                                         "ts": 5, "dur": -1, "args": {}}]})[0]
    'event 0: dur must be a number >= 0'
    """
    problems: list[str] = []
    if not isinstance(obj, dict) or not isinstance(obj.get("traceEvents"), list):
        return ["not an object with a traceEvents list"]
    last_ts: dict[tuple, float] = {}
    named_threads, named_procs, tracks = set(), set(), set()
    num = (int, float)
    for i, e in enumerate(obj["traceEvents"]):
        if not isinstance(e, dict):
            problems.append(f"event {i}: not an object")
            continue
        for key, typ in (("ph", str), ("name", str), ("pid", int), ("tid", int)):
            if not isinstance(e.get(key), typ) or isinstance(e.get(key), bool):
                problems.append(f"event {i}: {key} missing or not {typ.__name__}")
        ph = e.get("ph")
        if ph == "X":
            for key in ("ts", "dur"):
                v = e.get(key)
                if not isinstance(v, num) or isinstance(v, bool) or not v >= 0:
                    problems.append(f"event {i}: {key} must be a number >= 0")
            if not isinstance(e.get("args", {}), dict):
                problems.append(f"event {i}: args must be an object")
            track = (e.get("pid"), e.get("tid"))
            tracks.add(track)
            ts = e.get("ts")
            if isinstance(ts, num) and ts < last_ts.get(track, float("-inf")):
                problems.append(f"event {i}: ts {ts} goes back in time on track {track}")
            if isinstance(ts, num):
                last_ts[track] = ts
        elif ph == "M":
            if e.get("name") not in ("process_name", "thread_name") or \
                    not isinstance(e.get("args"), dict) or not isinstance(e["args"].get("name"), str):
                problems.append(f"event {i}: metadata must be process_name / thread_name with args.name")
            elif e["name"] == "thread_name":
                named_threads.add((e.get("pid"), e.get("tid")))
            else:
                named_procs.add(e.get("pid"))
        else:
            problems.append(f"event {i}: unexpected phase {ph!r}")
    for track in sorted(tracks - named_threads, key=str):
        problems.append(f"track {track}: no thread_name metadata")
    for pid in sorted({t[0] for t in tracks} - named_procs, key=str):
        problems.append(f"pid {pid}: no process_name metadata")
    return problems
