"""Compare two traces call by call (``cusolver-trace diff A.json B.json``).

A trace JSON (``cusolver-trace trace --json``, any of its forms, or
``Trace.to_dict()``) is flattened into the sequence of API calls it stands for:
a node with ``count`` k is k calls, cuBLAS calls nested under a cuSOLVER call
follow it (one level deeper). Each call is compared by library, function,
nesting depth and every typed (non-pointer) argument; pointers, log line
numbers, section labels and times are not compared. Setup calls (handles,
streams, params, math mode) are left out unless ``all=True``.

The two sequences are aligned (:class:`difflib.SequenceMatcher`): calls only in
B are *added*, only in A *removed*, and a replaced stretch pairs calls up one to
one as *changed* (the rest added / removed). GPU time per routine is summed
from the nodes' own times (``self_gpu_ms``) when the traces have them.
"""
from __future__ import annotations

import difflib
import json
import math
import os
from dataclasses import dataclass, field
from typing import Any

__all__ = ["TraceInputError", "FlatCall", "CallDifference", "TraceDiff", "load_trace_json",
           "flatten", "diff_traces", "calls_equal"]

_SCHEMA_PREFIX = "cusolver-trace/trace/"
_MAX_CALLS = 5_000_000


class TraceInputError(ValueError):
    """A file or object that is not a usable trace JSON; the message is one line."""


@dataclass(frozen=True)
class FlatCall:
    """One API call of a flattened trace."""

    library: str
    function: str
    depth: int
    args: tuple          # ((name, value), ...) in logged order, values JSON-encoded
    section: str | None = field(default=None, compare=False)
    gpu_ms: float | None = field(default=None, compare=False)

    @property
    def key(self) -> tuple:
        return (self.library, self.function, self.depth, self.args)

    def label(self) -> str:
        args = " ".join(f"{k}={json.loads(v) if v.startswith(chr(34)) else v}" for k, v in self.args)
        return f"{'  ' * self.depth}{self.function}  {args}".rstrip()


@dataclass
class CallDifference:
    """The first place where two call sequences differ.

    Attributes
    ----------
    index_a, index_b : int        positions in the flattened sequences (0-based)
    a, b : FlatCall | None        the calls there (``None``: the sequence ended)
    kind : str                    ``"changed"``, ``"added"`` or ``"removed"``
    fields : list[str]            for ``changed``: what differs (``"n: 256 -> 96"``)
    """

    index_a: int
    index_b: int
    a: FlatCall | None
    b: FlatCall | None
    kind: str
    fields: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        if self.kind == "added":
            return f"call {self.index_b + 1} of B is not in A: {self.b.label().strip()}"
        if self.kind == "removed":
            return f"call {self.index_a + 1} of A is not in B: {self.a.label().strip()}"
        what = "; ".join(self.fields)
        return (f"call {self.index_a + 1} of A vs {self.index_b + 1} of B: {what}  "
                f"(A: {self.a.label().strip()} | B: {self.b.label().strip()})")

    def to_dict(self) -> dict:
        return {"kind": self.kind, "index_a": self.index_a, "index_b": self.index_b,
                "a": None if self.a is None else self.a.label().strip(),
                "b": None if self.b is None else self.b.label().strip(),
                "fields": list(self.fields), "text": str(self)}


def _enc(v: Any) -> str:
    return json.dumps(v, sort_keys=True)


def _nodes(obj, where: str) -> list:
    if not isinstance(obj, dict) or not str(obj.get("schema", "")).startswith(_SCHEMA_PREFIX):
        raise TraceInputError(f"{where}: not a cusolver-trace trace JSON (no "
                              f"'{_SCHEMA_PREFIX}…' schema)")
    calls = obj.get("calls")
    if calls is None:
        raise TraceInputError(f"{where}: this trace has no API calls (calls is null: the API "
                              f"part was not traced)")
    if not isinstance(calls, list):
        raise TraceInputError(f"{where}: 'calls' is not a list")
    return calls


def flatten(trace: Any, *, all: bool = False, section: str | None = None,
            where: str = "trace") -> list[FlatCall]:
    """The call sequence a trace stands for.

    Parameters
    ----------
    trace : dict or Trace
        A trace JSON object (``json.load`` of ``--json`` output) or a
        :class:`~.model.Trace`.
    all : bool
        Keep setup calls too.
    section : str, optional
        Only calls in this ``#### label`` section.
    where : str
        Name used in error messages.

    Returns
    -------
    list of FlatCall

    Raises
    ------
    TraceInputError
        If ``trace`` is not a trace (no schema, ``calls`` missing, null or malformed),
        or ``section`` names no section of it.

    Examples
    --------
    >>> t = {"schema": "cusolver-trace/trace/1", "calls": [
    ...     {"library": "cuSOLVER", "function": "cusolverDnXpotrs", "kind": "compute", "count": 2,
    ...      "args": {"n": 4}, "children": []}]}
    >>> [c.function for c in flatten(t)]
    ['cusolverDnXpotrs', 'cusolverDnXpotrs']
    """
    if hasattr(trace, "to_dict") and not isinstance(trace, dict):
        trace = trace.to_dict(compact=True)
    nodes = _nodes(trace, where)
    if section is not None:
        sections = trace.get("sections")
        sections = [] if sections is None else sections
        if not isinstance(sections, list) or any(not isinstance(x, str) for x in sections):
            raise TraceInputError(f"{where}: 'sections' is not a list of section labels")
        if section not in sections:
            known = "; ".join(map(str, sections)) or "(none)"
            raise TraceInputError(f"{where}: no section {section!r} (sections: {known})")
    out: list[FlatCall] = []

    def walk(node, depth: int) -> None:
        if not isinstance(node, dict):
            raise TraceInputError(f"{where}: a call node is not an object")
        fn, lib = node.get("function"), node.get("library")
        count, args = node.get("count", 1), node.get("args", {})
        children = node.get("children", [])
        if not isinstance(fn, str) or not isinstance(lib, str) or not isinstance(args, dict) \
                or isinstance(count, bool) or not isinstance(count, int) or count < 0 \
                or not isinstance(children, list):
            raise TraceInputError(f"{where}: malformed call node (needs library, function, "
                                  f"count, args, children)")
        if count > 10_000_000:
            raise TraceInputError(f"{where}: implausible call count {count}")
        kind = node.get("kind", "compute")
        if section is not None and node.get("section") != section:
            return
        if kind == "setup" and not all:
            return
        key_args = tuple((str(k), _enc(v)) for k, v in args.items())
        self_ms = _ms(node.get("self_gpu_ms"), f"{where}: self_gpu_ms")
        per = self_ms / count if self_ms is not None and count else None
        for _ in range(count):
            if len(out) >= _MAX_CALLS:
                raise TraceInputError(f"{where}: more than {_MAX_CALLS} calls once the counts "
                                      f"are expanded; not a plausible trace")
            out.append(FlatCall(lib, fn, depth, key_args, node.get("section"), per))
            for ch in children:
                walk(ch, depth + 1)

    try:
        for n in nodes:
            walk(n, 0)
    except RecursionError:
        raise TraceInputError(f"{where}: call nodes nested too deeply") from None
    return out


#: A GPU time above this (ms; about 30 years) is not a measurement.
_MAX_MS = 1e12


def _ms(value: Any, what: str) -> float | None:
    """A GPU time in ms from a trace JSON: ``None`` when absent or not a number, else a float.

    Raises
    ------
    TraceInputError
        For a number that is negative, not finite, or too large to be a time
        (``10**400``, ``1e999``): one line naming it.
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        ms = float(value)
    except OverflowError:
        ms = math.inf
    if not (0.0 <= ms <= _MAX_MS):
        if isinstance(value, float):
            shown = f"{value:.3g}"
        elif abs(value) < 10**20:
            shown = str(value)
        else:  # str() of a huge int may be refused (sys.get_int_max_str_digits)
            shown = f"an integer of about {int(abs(value).bit_length() * 0.30103) + 1} digits"
        raise TraceInputError(f"{what} is {shown}: not a GPU time in ms")
    return ms


def load_trace_json(path: str | os.PathLike) -> dict:
    """Read a trace JSON file.

    Parameters
    ----------
    path : path

    Returns
    -------
    dict

    Raises
    ------
    TraceInputError
        Missing, unreadable, not UTF-8 JSON, or not a trace (one-line message).

    Examples
    --------
    >>> load_trace_json("/nonexistent.json")
    Traceback (most recent call last):
    ...
    cusolver_trace.tracing.diff.TraceInputError: /nonexistent.json: no such file
    """
    path = os.fspath(path)
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
    except FileNotFoundError:
        raise TraceInputError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise TraceInputError(f"{path}: is a folder, not a trace JSON") from None
    except OSError as e:
        raise TraceInputError(f"{path}: cannot read ({e.strerror or e})") from None
    try:
        obj = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        msg = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise TraceInputError(f"{path}: not JSON ({msg[:120]})") from None
    _nodes(obj, path)
    return obj


def _fields(a: FlatCall, b: FlatCall) -> list[str]:
    out = []
    if a.function != b.function:
        out.append(f"routine: {a.function} -> {b.function}")
    if a.depth != b.depth:
        out.append(f"nesting depth: {a.depth} -> {b.depth}")
    da, db = dict(a.args), dict(b.args)
    for k in list(da) + [k for k in db if k not in da]:
        if da.get(k) != db.get(k):
            out.append(f"{k}: {da.get(k, '(absent)')} -> {db.get(k, '(absent)')}")
    return out or ["argument order"]


@dataclass
class TraceDiff:
    """Result of :func:`diff_traces`.

    Attributes
    ----------
    equal : bool                 the two call sequences are the same
    calls_a, calls_b : int       lengths of the sequences
    differences : list[CallDifference]  every difference, in order
    added, removed, changed : int
    by_routine : dict            routine -> {"calls_a", "calls_b", "gpu_ms_a", "gpu_ms_b"}
    outside : dict or None       GPU time outside any library call (torch's ATen kernels,
                                 MAGMA's): {"gpu_ms_a", "gpu_ms_b", "kernels_a", "kernels_b"},
                                 from the traces' summaries; None when neither has one
    """

    equal: bool
    calls_a: int
    calls_b: int
    differences: list[CallDifference]
    added: int
    removed: int
    changed: int
    by_routine: dict
    outside: dict | None = None

    @property
    def first(self) -> CallDifference | None:
        return self.differences[0] if self.differences else None

    def to_dict(self, limit: int | None = None) -> dict:
        diffs = self.differences if limit is None else self.differences[:limit]
        return {"equal": self.equal, "calls_a": self.calls_a, "calls_b": self.calls_b,
                "added": self.added, "removed": self.removed, "changed": self.changed,
                "differences": [d.to_dict() for d in diffs], "by_routine": self.by_routine,
                "outside": self.outside}

    def renderable(self, *, limit: int = 10, name_a: str = "A", name_b: str = "B"):
        """Rich renderable: the first ``limit`` differences, the counts, the per-routine table."""
        from rich.console import Group
        from rich.table import Table
        from rich.text import Text

        parts: list = []
        if self.equal:
            parts.append(Text(f"the call sequences are equal ({self.calls_a} calls)", style="green"))
        else:
            parts.append(Text(f"the call sequences differ: {self.changed} changed, {self.added} "
                              f"added (only in {name_b}), {self.removed} removed (only in "
                              f"{name_a}); {self.calls_a} vs {self.calls_b} calls", style="bold red"))
            parts.append(Text(f"first differences (of {len(self.differences)}):"))
            for d in self.differences[:limit]:
                parts.append(Text("  " + str(d)))
        t = Table(title="calls and GPU time by routine", title_justify="left", show_edge=False,
                  pad_edge=False)
        for col in ("routine", f"calls {name_a}", f"calls {name_b}", f"GPU ms {name_a}",
                    f"GPU ms {name_b}"):
            t.add_column(col, justify="left" if col == "routine" else "right", overflow="fold")

        def ms(v):
            return "-" if v is None else f"{v:.4f}"

        for routine, r in self.by_routine.items():
            style = "" if r["calls_a"] == r["calls_b"] else "yellow"
            t.add_row(routine, str(r["calls_a"]), str(r["calls_b"]), ms(r["gpu_ms_a"]),
                      ms(r["gpu_ms_b"]), style=style)
        if self.outside is not None:
            o = self.outside
            t.add_row("(outside library calls: ATen / MAGMA kernels)",
                      "-" if o["kernels_a"] is None else f"{o['kernels_a']} kernels",
                      "-" if o["kernels_b"] is None else f"{o['kernels_b']} kernels",
                      ms(o["gpu_ms_a"]), ms(o["gpu_ms_b"]), style="dim")
        parts.append(t)
        return Group(*parts)


def _by_routine(a: list[FlatCall], b: list[FlatCall]) -> dict:
    out: dict[str, dict] = {}
    for side, calls in (("a", a), ("b", b)):
        for c in calls:
            r = out.setdefault(c.function, {"calls_a": 0, "calls_b": 0, "gpu_ms_a": None,
                                            "gpu_ms_b": None})
            r[f"calls_{side}"] += 1
            if c.gpu_ms is not None:
                r[f"gpu_ms_{side}"] = (r[f"gpu_ms_{side}"] or 0.0) + c.gpu_ms
    return dict(sorted(out.items(), key=lambda kv: (-max(kv[1]["gpu_ms_a"] or 0, kv[1]["gpu_ms_b"] or 0),
                                                     -max(kv[1]["calls_a"], kv[1]["calls_b"]), kv[0])))


def diff_traces(a: Any, b: Any, *, all: bool = False, section_a: str | None = None,
                section_b: str | None = None) -> TraceDiff:
    """Compare two traces call by call.

    Parameters
    ----------
    a, b : dict or Trace
        Trace JSON objects or :class:`~.model.Trace` objects.
    all : bool
        Compare setup calls too.
    section_a, section_b : str, optional
        Only this section of ``a`` / ``b``.

    Returns
    -------
    TraceDiff

    Raises
    ------
    TraceInputError
        If either is not a trace.

    Examples
    --------
    >>> t = {"schema": "cusolver-trace/trace/1", "calls": [
    ...     {"library": "cuBLAS", "function": "cublasDtrsm_v2", "count": 1, "args": {"m": 4},
    ...      "children": []}]}
    >>> diff_traces(t, t).equal
    True
    """
    fa = flatten(a, all=all, section=section_a, where="A")
    fb = flatten(b, all=all, section=section_b, where="B")
    sm = difflib.SequenceMatcher(None, [c.key for c in fa], [c.key for c in fb], autojunk=False)
    diffs: list[CallDifference] = []
    added = removed = changed = 0
    for op, i1, i2, j1, j2 in sm.get_opcodes():
        if op == "equal":
            continue
        pairs = min(i2 - i1, j2 - j1) if op == "replace" else 0
        for k in range(pairs):
            diffs.append(CallDifference(i1 + k, j1 + k, fa[i1 + k], fb[j1 + k], "changed",
                                        _fields(fa[i1 + k], fb[j1 + k])))
            changed += 1
        for i in range(i1 + pairs, i2):
            diffs.append(CallDifference(i, j1 + pairs, fa[i], None, "removed"))
            removed += 1
        for j in range(j1 + pairs, j2):
            diffs.append(CallDifference(i1 + pairs, j, None, fb[j], "added"))
            added += 1
    outside = None
    if section_a is None and section_b is None:  # summaries cover whole traces only
        oa, ob = _outside(a, "A"), _outside(b, "B")
        if oa != (None, None) or ob != (None, None):
            outside = {"gpu_ms_a": oa[0], "gpu_ms_b": ob[0], "kernels_a": oa[1],
                       "kernels_b": ob[1]}
    return TraceDiff(not diffs, len(fa), len(fb), diffs, added, removed, changed,
                     _by_routine(fa, fb), outside)


def _outside(trace: Any, where: str) -> tuple:
    """``(GPU ms, kernels)`` outside any library call, from a trace JSON's timed summary
    (MAGMA and ATen kernels: what a path that logs no call spends), else ``(None, None)``."""
    summary = trace.get("summary") if isinstance(trace, dict) else None
    if not isinstance(summary, dict) or not summary.get("timed"):
        return None, None
    ms, k = summary.get("outside_gpu_ms"), summary.get("outside_kernels")
    return (_ms(ms, f"{where}: summary.outside_gpu_ms"),
            k if isinstance(k, int) and not isinstance(k, bool) else None)


def calls_equal(trace_a: Any, trace_b: Any, *, all: bool = False) -> tuple[bool, CallDifference | None]:
    """Do two traces make the same API calls, in the same order, with the same arguments?

    Parameters
    ----------
    trace_a, trace_b : Trace, dict or path
        :class:`~.model.Trace` objects, trace JSON objects, or paths of trace JSON files.
    all : bool
        Compare setup calls too.

    Returns
    -------
    (bool, CallDifference or None)
        ``(True, None)`` when equal; otherwise ``False`` and the first difference
        (``str()`` of it is one line).

    Raises
    ------
    TraceInputError
        If either is not a trace (or a path that cannot be read as one).

    Examples
    --------
    >>> t = {"schema": "cusolver-trace/trace/1", "calls": []}
    >>> calls_equal(t, t)
    (True, None)
    """
    def load(x):
        return load_trace_json(x) if isinstance(x, (str, os.PathLike)) else x

    d = diff_traces(load(trace_a), load(trace_b), all=all)
    return d.equal, d.first
