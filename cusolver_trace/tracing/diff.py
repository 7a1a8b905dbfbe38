"""Compare two traces call by call (``cusolver-trace diff A.json B.json``).

A trace JSON (``cusolver-trace trace --json``, any of its forms and schemas, or
``Trace.to_dict()``; docs/reading-a-trace.md, "JSON") is expanded into the sequence of API
calls it stands for (:func:`flatten`). Each call is compared by library, function, nesting
depth and every typed (non-pointer) argument; setup calls are left out unless ``all=True``.
The two sequences are aligned in near-linear time (:func:`align`: common head and tail,
patience anchors, Myers' O((N+M)D) search between them, a stretch of more than
:data:`MAX_EDITS` edits paired up in order). What is compared and how, with the figures:
docs/tracing-programs.md, "cusolver-trace diff A.json B.json".
"""
from __future__ import annotations

import bisect
import json
import math
import os
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from ._hook import call_kind
from .events import library_of
from .model import SCHEMA

__all__ = ["TraceInputError", "FlatCall", "CallDifference", "TraceDiff", "load_trace_json",
           "flatten", "diff_traces", "calls_equal", "MAX_EDITS"]

_SCHEMA_PREFIX = "cusolver-trace/trace/"
_MAX_CALLS = 5_000_000
_MAX_COUNT = 10_000_000
#: Differences kept one by one in a :class:`TraceDiff` (the counts cover all of them).
MAX_SHOWN = 10_000
#: Edits Myers' search may spend on one stretch between anchors before pairing it up in order.
MAX_EDITS = 1000


class TraceInputError(ValueError):
    """A file or object that is not a usable trace JSON; the message is one line."""


class _Json(str):
    """An argument value that is not a string or an integer, as its JSON text: ``1.0``,
    ``true``, ``[1, 2]`` compare unequal to ``1``, ``"true"`` and to each other's text."""

    __slots__ = ()

    def __eq__(self, other):
        return type(other) is _Json and str.__eq__(self, other)

    def __ne__(self, other):
        return not self.__eq__(other)

    def __hash__(self):
        return hash(("json", str(self)))


def _value(v: Any) -> Any:
    return v if type(v) in (str, int) else _Json(json.dumps(v, sort_keys=True))


@dataclass(frozen=True)
class FlatCall:
    """One API call of a flattened trace. ``args``: ``((name, value), ...)`` in logged order,
    strings and integers as they are, other values as their JSON text."""

    library: str
    function: str
    depth: int
    args: tuple
    section: str | None = field(default=None, compare=False)
    gpu_ms: float | None = field(default=None, compare=False)

    @property
    def key(self) -> tuple:
        return (self.library, self.function, self.depth, self.args)

    def label(self) -> str:
        args = " ".join(f"{k}={v}" for k, v in self.args)
        return f"{'  ' * self.depth}{self.function}  {args}".rstrip()


@dataclass
class CallDifference:
    """One place where two call sequences differ.

    Attributes
    ----------
    index_a, index_b : int        positions in the flattened sequences (0-based)
    a, b : FlatCall | None        the calls there (``None``: only in the other one)
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


def _nodes(obj, where: str) -> list:
    if not isinstance(obj, dict) or not str(obj.get("schema", "")).startswith(_SCHEMA_PREFIX):
        raise TraceInputError(f"{where}: not a cusolver-trace trace JSON (no "
                              f"'{_SCHEMA_PREFIX}…' schema)")
    version = str(obj["schema"])[len(_SCHEMA_PREFIX):]
    newest = int(SCHEMA[len(_SCHEMA_PREFIX):])
    if not (version.isascii() and version.isdigit() and 1 <= int(version) <= newest):
        raise TraceInputError(f"{where}: schema {obj['schema']!r} is not one this cusolver-trace "
                              f"reads ({_SCHEMA_PREFIX}1 to {SCHEMA}; a newer release wrote it?)")
    calls = obj.get("calls")
    if calls is None:
        raise TraceInputError(f"{where}: this trace has no API calls (calls is null: the API "
                              f"part was not traced)")
    if not isinstance(calls, list):
        raise TraceInputError(f"{where}: 'calls' is not a list")
    return calls


def _compact_keys(trace: dict, where: str) -> tuple[bool, int]:
    """``(call_times, number of sources)`` of a compact trace JSON (``(False, 0)`` for the
    other forms), checked."""
    timed, sources = trace.get("call_times", False), trace.get("sources", [])
    if type(timed) is not bool:
        raise TraceInputError(f"{where}: 'call_times' is not true or false")
    if not isinstance(sources, list) or any(
            type(x) is not dict or any(type(v) is not str for v in x.values()) for x in sources):
        raise TraceInputError(f"{where}: 'sources' is not a list of {{op, where, code}} objects")
    return timed, len(sources)


_KINDS = (None, "compute", "query", "setup")   # a node's kind, where written


def _count(value, what: str, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise TraceInputError(f"{where}: malformed {what} (needs a whole number >= 0)")
    if value > _MAX_COUNT:
        shown = value if value < 10 ** 30 else (
            f"an integer of about {int(value.bit_length() * 0.30103) + 1} digits")
        raise TraceInputError(f"{where}: implausible call count ({shown}; at most "
                              f"{_MAX_COUNT})")
    return value


class _Flat:
    """A trace expanded into its call sequence: ``calls`` (FlatCall) and ``ids`` (one integer
    per distinct call, shared by both sides through ``intern``)."""

    def __init__(self, trace: Any, intern: dict, *, all: bool, section: str | None, where: str):
        if hasattr(trace, "to_dict") and not isinstance(trace, dict):
            trace = trace.to_dict()
        nodes = _nodes(trace, where)
        if section is not None:
            sections = trace.get("sections")
            sections = [] if sections is None else sections
            if not isinstance(sections, list) or any(not isinstance(x, str) for x in sections):
                raise TraceInputError(f"{where}: 'sections' is not a list of section labels")
            if section not in sections:
                known = "; ".join(sections) or "(none)"
                raise TraceInputError(f"{where}: no section {section!r} (sections: {known})")
        self.intern, self.all, self.section, self.where = intern, all, section, where
        self._calls: dict = {}
        self.compact_times, self.sources = _compact_keys(trace, where)
        try:
            self.calls, self.ids = self._expand(nodes, 0, 1, None)
        except RecursionError:
            raise TraceInputError(f"{where}: call nodes nested too deeply") from None

    def _expand(self, items: list, depth: int, mult: int, within) -> tuple[list, list]:
        calls: list = []
        ids: list = []
        where, memo, intern = self.where, self._calls, self.intern
        for node in items:
            if type(node) is not dict:
                raise TraceInputError(f"{where}: a call node is not an object")
            if "function" not in node and ("repeat" in node or "section" in node):
                body = node.get("calls")  # a folded loop, or the calls of a section
                if not isinstance(body, list) or "repeat" in node and "section" in node:
                    raise TraceInputError(f"{where}: malformed block (needs repeat or section, "
                                          f"and calls)")
                k = _count(node.get("repeat", 1), "repeat count", where)
                label = node.get("section", within)
                if not isinstance(label, (str, type(None))):
                    raise TraceInputError(f"{where}: a section label is not a string")
                sub_calls, sub_ids = self._expand(body, depth, mult * max(k, 1), label)
                self._grow(len(calls) + len(sub_calls) * k)
                calls += sub_calls * k
                ids += sub_ids * k
                continue
            fn, args, children = node.get("function"), node.get("args", {}), node.get("children", ())
            lib = node.get("library")
            if lib is None and type(fn) is str and "library" not in node:
                lib = library_of(fn)
            if type(fn) is not str or type(lib) is not str or type(args) is not dict \
                    or not isinstance(children, (list, tuple)):
                raise TraceInputError(f"{where}: malformed call node (needs function, library "
                                      f"unless the function's name says it, args, children)")
            count = node.get("count", 1)
            if type(count) is not int or not 0 <= count <= _MAX_COUNT:
                count = _count(count, "call node (count)", where)
            src = node.get("src")
            if src is not None and (type(src) is not int or not 0 <= src < self.sources):
                raise TraceInputError(f"{where}: a call node's src is not an index into the "
                                      f"sources table ({self.sources} entries)")
            if self.compact_times:
                self_ms = self._self_ms(node, children)
            elif (self_ms := node.get("self_gpu_ms")) is not None:   # null: not measured
                self_ms = _ms(self_ms, f"{where}: self_gpu_ms", strict=True)
            section = node.get("section", within)
            kind = node.get("kind")
            if not isinstance(section, (str, type(None))) or kind not in _KINDS:
                raise TraceInputError(f"{where}: a call node's section is not a string or its "
                                      f"kind not one of compute, query, setup")
            if (self.section is not None and section != self.section) or (
                    not self.all and (kind or call_kind(fn)) == "setup"):
                if children:  # left out, and checked all the same
                    self._expand(children, depth + 1, mult, section)
                continue
            per = self_ms / (count * mult) if self_ms is not None and count else None
            # one dictionary look-up per node: the argument values with their types (1,
            # 1.0 and true are equal in Python, not in the trace)
            values = tuple(args.values())
            try:
                quick = (lib, fn, depth, tuple(args), values, tuple(map(type, values)), section, per)
                fc, ident = memo[quick]
            except TypeError:  # an unhashable value (a list): through its JSON text
                quick = None
                fc = None
            except KeyError:
                fc = None
            if fc is None:
                key = (lib, fn, depth, tuple((str(k), _value(v)) for k, v in args.items()))
                ident = intern.setdefault(key, len(intern))
                fc = FlatCall(lib, fn, depth, key[3], section, per)
                if quick is not None:
                    memo[quick] = (fc, ident)
            if not children:
                if count == 1:
                    calls.append(fc)
                    ids.append(ident)
                    continue
                self._grow(len(calls) + count)
                calls += [fc] * count
                ids += [ident] * count
                continue
            ch_calls, ch_ids = self._expand(children, depth + 1, mult * max(count, 1), section)
            self._grow(len(calls) + (1 + len(ch_calls)) * count)
            calls += ([fc] + ch_calls) * count
            ids += ([ident] + ch_ids) * count
        self._grow(len(calls))
        return calls, ids

    def _self_ms(self, node: dict, children) -> float | None:
        """The own GPU ms of a node of the compact form with times (``call_times``): absent
        times are 0 (no kernel), absent own times equal the totals of a node without nested
        calls, else 0; ``"gpu_ms": null``: not measured."""
        where = self.where
        for key in ("kernels", "self_kernels"):
            k = node.get(key, 0)
            if type(k) is not int or k < 0:
                raise TraceInputError(f"{where}: a call node's {key} is not a whole number >= 0")
        total = node.get("gpu_ms", 0.0)
        if total is None:
            return None
        total = _ms(total, f"{where}: gpu_ms", strict=True)
        if "self_gpu_ms" in node:
            return _ms(node["self_gpu_ms"], f"{where}: self_gpu_ms", strict=True)
        return 0.0 if children else total

    def _grow(self, n: int) -> None:
        if n > _MAX_CALLS:
            raise TraceInputError(f"{self.where}: more than {_MAX_CALLS} calls once the counts "
                                  f"are expanded; not a plausible trace")


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
    >>> t = {"schema": "cusolver-trace/trace/3", "calls": [
    ...     {"function": "cusolverDnXpotrs", "count": 2, "args": {"n": 4}}]}
    >>> [c.function for c in flatten(t)]
    ['cusolverDnXpotrs', 'cusolverDnXpotrs']
    """
    return _Flat(trace, {}, all=all, section=section, where=where).calls


#: A GPU time above this (ms; about 30 years) is not a measurement.
_MAX_MS = 1e12


def _ms(value: Any, what: str, *, strict: bool = False) -> float | None:
    """A GPU time in ms from a trace JSON: ``None`` when absent or not a number (without
    ``strict``), else a float.

    Raises
    ------
    TraceInputError
        For a number that is negative, not finite, or too large to be a time
        (``10**400``, ``1e999``), and with ``strict`` for a value that is not a number
        (``None`` included): one line naming it.
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        if strict:
            raise TraceInputError(f"{what} is not a GPU time in ms (not a number)")
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
    differences : list[CallDifference]  the differences in order (the first
                                 :data:`MAX_SHOWN`; the counts cover all)
    added, removed, changed : int
    by_routine : dict            routine -> {"calls_a", "calls_b", "gpu_ms_a", "gpu_ms_b"}
    outside : dict or None       GPU time outside any library call (torch's ATen kernels,
                                 MAGMA's): {"gpu_ms_a", "gpu_ms_b", "kernels_a", "kernels_b"},
                                 from the traces' summaries; None when neither has one
    approximate : bool           a stretch differed in more than :data:`MAX_EDITS` calls and
                                 was paired up in order, without a search
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
    approximate: bool = False

    @property
    def first(self) -> CallDifference | None:
        return self.differences[0] if self.differences else None

    def to_dict(self, limit: int | None = None) -> dict:
        diffs = self.differences if limit is None else self.differences[:limit]
        return {"equal": self.equal, "calls_a": self.calls_a, "calls_b": self.calls_b,
                "added": self.added, "removed": self.removed, "changed": self.changed,
                "differences": [d.to_dict() for d in diffs], "by_routine": self.by_routine,
                "outside": self.outside, "approximate": self.approximate}

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
            n = self.added + self.removed + self.changed
            parts.append(Text(f"first differences (of {n}):"))
            for d in self.differences[:limit]:
                parts.append(Text("  " + str(d)))
            if self.approximate:
                parts.append(Text(f"note: a stretch differed in more than {MAX_EDITS} calls; its "
                                  f"calls were paired up in order, without searching for the "
                                  f"smallest set of changes", style="yellow"))
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
        # the same FlatCall object stands for every repeat of a node: count objects
        per_object: dict = {}
        for c in calls:
            entry = per_object.get(id(c))
            if entry is None:
                per_object[id(c)] = [c, 1]
            else:
                entry[1] += 1
        for c, n in per_object.values():
            r = out.setdefault(c.function, {"calls_a": 0, "calls_b": 0, "gpu_ms_a": None,
                                            "gpu_ms_b": None})
            r[f"calls_{side}"] += n
            if c.gpu_ms is not None:
                r[f"gpu_ms_{side}"] = (r[f"gpu_ms_{side}"] or 0.0) + c.gpu_ms * n
    return dict(sorted(out.items(), key=lambda kv: (-max(kv[1]["gpu_ms_a"] or 0, kv[1]["gpu_ms_b"] or 0),
                                                     -max(kv[1]["calls_a"], kv[1]["calls_b"]), kv[0])))


def _common_head(a: list, ai: int, ahi: int, b: list, bi: int, bhi: int) -> int:
    """Length of the common start of ``a[ai:ahi]`` and ``b[bi:bhi]`` (compared in chunks)."""
    n, step = 0, 256
    limit = min(ahi - ai, bhi - bi)
    while n < limit:
        s = min(step, limit - n)
        if a[ai + n:ai + n + s] == b[bi + n:bi + n + s]:
            n += s
            step *= 2
        elif s <= 8:
            while n < limit and a[ai + n] == b[bi + n]:
                n += 1
            return n
        else:
            step = max(s // 8, 1)
    return n


def _common_tail(a: list, alo: int, ai: int, b: list, blo: int, bi: int) -> int:
    """Length of the common end of ``a[alo:ai]`` and ``b[blo:bi]``."""
    n, limit = 0, min(ai - alo, bi - blo)
    while n < limit and a[ai - 1 - n] == b[bi - 1 - n]:
        n += 1
    return n


def _anchors(a: list, alo: int, ahi: int, b: list, blo: int, bhi: int) -> list[tuple[int, int]]:
    """Patience anchors: calls that occur once in each stretch, the longest run of them in
    the same order on both sides (``(i, j)`` pairs, increasing)."""
    ca, cb = Counter(a[alo:ahi]), Counter(b[blo:bhi])
    unique = {v for v, n in ca.items() if n == 1 and cb.get(v) == 1}
    if not unique:
        return []
    where_b = {b[j]: j for j in range(blo, bhi) if b[j] in unique}
    pairs = [(i, where_b[a[i]]) for i in range(alo, ahi) if a[i] in unique]
    # longest increasing subsequence of the j's (patience sorting)
    tails: list[int] = []
    tail_at: list[int] = []
    back = [-1] * len(pairs)
    for p, (_i, j) in enumerate(pairs):
        k = bisect.bisect_left(tails, j)
        if k == len(tails):
            tails.append(j)
            tail_at.append(p)
        else:
            tails[k], tail_at[k] = j, p
        back[p] = tail_at[k - 1] if k else -1
    out, p = [], tail_at[-1] if tail_at else -1
    while p >= 0:
        out.append(pairs[p])
        p = back[p]
    return out[::-1]


def _myers(a: list, alo: int, ahi: int, b: list, blo: int, bhi: int, max_d: int):
    """Shortest edit script of ``a[alo:ahi]`` -> ``b[blo:bhi]`` (Myers 1986, greedy forward
    search) as ``(tag, i1, i2, j1, j2)`` opcodes, or ``None`` beyond ``max_d`` edits."""
    n, m = ahi - alo, bhi - blo
    v = {1: 0}
    trace = []
    for d in range(min(n + m, max_d) + 1):
        trace.append(v.copy())
        for k in range(-d, d + 1, 2):
            if k == -d or (k != d and v[k - 1] < v[k + 1]):
                x = v[k + 1]
            else:
                x = v[k - 1] + 1
            y = x - k
            if x < n and y < m and a[alo + x] == b[blo + y]:
                run = _common_head(a, alo + x, ahi, b, blo + y, bhi)
                x, y = x + run, y + run
            v[k] = x
            if x >= n and y >= m:
                return _script(trace, v, k, d, alo, blo)
    return None


def _script(trace: list, v: dict, k: int, d: int, alo: int, blo: int) -> list:
    """Opcodes from Myers' search history (walked back from the end)."""
    x, y = v[k], v[k] - k
    steps = []
    for dd in range(d, 0, -1):
        vp = trace[dd]
        if k == -dd or (k != dd and vp[k - 1] < vp[k + 1]):
            pk = k + 1
            px = vp[pk]
            py = px - pk
            steps.append(("insert", px, py, x, y))   # down: b[py] added, then a snake
        else:
            pk = k - 1
            px = vp[pk]
            py = px - pk
            steps.append(("delete", px, py, x, y))   # right: a[px] removed, then a snake
        x, y, k = px, py, pk
    ops: list = []
    if x > 0:
        ops.append(("equal", alo, alo + x, blo, blo + y))
    for tag, px, py, ex, ey in reversed(steps):
        if tag == "insert":
            ops.append(("insert", alo + px, alo + px, blo + py, blo + py + 1))
            sx, sy = px, py + 1
        else:
            ops.append(("delete", alo + px, alo + px + 1, blo + py, blo + py))
            sx, sy = px + 1, py
        if ex > sx:
            ops.append(("equal", alo + sx, alo + ex, blo + sy, blo + ey))
    return ops


def align(a: list, b: list, *, max_edits: int = MAX_EDITS) -> tuple[list, bool]:
    """Align two sequences of hashable items in near-linear time (see the module docstring).

    Parameters
    ----------
    a, b : list
        Typically one integer per call.
    max_edits : int
        Myers' search gives up on a stretch between anchors that needs more edits; that
        stretch is then paired up in order (``replace``).

    Returns
    -------
    (list of tuple, bool)
        Opcodes ``(tag, i1, i2, j1, j2)`` as :meth:`difflib.SequenceMatcher.get_opcodes`
        gives them (``equal``, ``replace``, ``delete``, ``insert``), in order, and whether a
        stretch was paired up without a search.

    Examples
    --------
    >>> align([1, 2, 3, 4], [1, 3, 4, 5])[0]
    [('equal', 0, 1, 0, 1), ('delete', 1, 2, 1, 1), ('equal', 2, 4, 1, 3), ('insert', 4, 4, 3, 4)]
    """
    ops: list = []
    approximate = False
    todo = [(0, len(a), 0, len(b))]
    while todo:
        alo, ahi, blo, bhi = todo.pop()
        head = _common_head(a, alo, ahi, b, blo, bhi)
        tail = _common_tail(a, alo + head, ahi, b, blo + head, bhi)
        if head:
            ops.append(("equal", alo, alo + head, blo, blo + head))
        if tail:
            ops.append(("equal", ahi - tail, ahi, bhi - tail, bhi))
        alo, blo, ahi, bhi = alo + head, blo + head, ahi - tail, bhi - tail
        if alo == ahi or blo == bhi:
            if alo < ahi or blo < bhi:
                ops.append(("delete" if alo < ahi else "insert", alo, ahi, blo, bhi))
            continue
        anchors = _anchors(a, alo, ahi, b, blo, bhi)
        if anchors:
            i0, j0 = alo, blo
            for i, j in anchors:
                todo.append((i0, i, j0, j))
                ops.append(("equal", i, i + 1, j, j + 1))
                i0, j0 = i + 1, j + 1
            todo.append((i0, ahi, j0, bhi))
            continue
        script = _myers(a, alo, ahi, b, blo, bhi, max_edits)
        if script is None:
            approximate = True
            script = [("replace", alo, ahi, blo, bhi)]
        ops.extend(script)
    ops.sort(key=lambda o: (o[1], o[3], o[0] != "delete"))
    return _merged(ops), approximate


def _merged(ops: list) -> list:
    """Neighbouring opcodes of one tag joined; a delete next to an insert is a replace."""
    out: list = []
    for op in ops:
        if op[1] == op[2] and op[3] == op[4]:
            continue
        if out:
            tag, i1, i2, j1, j2 = out[-1]
            if tag == op[0] or (tag != "equal" and op[0] != "equal"):
                new = "equal" if tag == "equal" else (
                    tag if tag == op[0] and tag != "replace" else "replace")
                out[-1] = (new, i1, op[2], j1, op[4])
                continue
        out.append(op)
    return out


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
    >>> t = {"schema": "cusolver-trace/trace/3", "calls": [
    ...     {"function": "cublasDtrsm_v2", "args": {"m": 4}}]}
    >>> diff_traces(t, t).equal
    True
    """
    intern: dict = {}
    fa = _Flat(a, intern, all=all, section=section_a, where="A")
    fb = _Flat(b, intern, all=all, section=section_b, where="B")
    ops, approximate = align(fa.ids, fb.ids)
    diffs: list[CallDifference] = []
    added = removed = changed = 0
    for tag, i1, i2, j1, j2 in ops:
        if tag == "equal":
            continue
        pairs = min(i2 - i1, j2 - j1)
        changed += pairs
        removed += (i2 - i1) - pairs
        added += (j2 - j1) - pairs
        if len(diffs) >= MAX_SHOWN:
            continue
        for k in range(min(pairs, MAX_SHOWN - len(diffs))):
            x, y = fa.calls[i1 + k], fb.calls[j1 + k]
            diffs.append(CallDifference(i1 + k, j1 + k, x, y, "changed", _fields(x, y)))
        for i in range(i1 + pairs, min(i2, i1 + pairs + MAX_SHOWN - len(diffs))):
            diffs.append(CallDifference(i, j1 + pairs, fa.calls[i], None, "removed"))
        for j in range(j1 + pairs, min(j2, j1 + pairs + MAX_SHOWN - len(diffs))):
            diffs.append(CallDifference(i1 + pairs, j, None, fb.calls[j], "added"))
    outside = None
    if section_a is None and section_b is None:  # summaries cover whole traces only
        oa, ob = _outside(a, "A"), _outside(b, "B")
        if oa != (None, None) or ob != (None, None):
            outside = {"gpu_ms_a": oa[0], "gpu_ms_b": ob[0], "kernels_a": oa[1],
                       "kernels_b": ob[1]}
    equal = not (added or removed or changed)
    return TraceDiff(equal, len(fa.ids), len(fb.ids), diffs, added, removed, changed,
                     _by_routine(fa.calls, fb.calls), outside, approximate)


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
