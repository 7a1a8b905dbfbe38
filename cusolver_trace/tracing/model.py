"""The :class:`Trace` result and its views: the call tree with repeat counts and folded
loops, the kernel tables, JSON.

Rendering: ``rich`` tree for terminals (``__rich__``), HTML for notebooks
(``_repr_html_``), plain text (``__str__``), and ``to_dict`` / ``to_json``.
"""
from __future__ import annotations

import io
from dataclasses import dataclass, field
from typing import Any, Iterable

from .. import _json
from .events import ApiCall, AtenOp, Event, KernelStat, kernel_stats, library_of
from .kernels import LIBRARIES, classify_kernel, short_kernel_name

__all__ = ["CallNode", "RepeatBlock", "CompactForm", "KernelStat", "AtenOp", "Trace",
           "build_tree", "fold_repeats", "round_ms", "SCHEMA"]

SCHEMA = "cusolver-trace/trace/3"
_LIB_STYLE = {"cuSOLVER": "bold magenta", "cuBLAS": "bold cyan"}
#: Kernel names shown in the rendered kernel table (the JSON has every one).
_KERNEL_ROWS = 20


@dataclass
class CallNode:
    """One call, or ``count`` consecutive identical calls (same function, same non-pointer
    arguments, same children, same op and source line), with the calls nested under it.

    ``call`` is the first of the repeats; ``lines`` the log line of each repeat.
    ``self_gpu_ms`` / ``self_kernels``: GPU time (ms) and number of the activities the
    call(s) launched themselves, summed over the repeats, not counting the calls nested
    below; ``None`` / 0 when not measured. :attr:`gpu_ms` includes the nested calls.
    ``sig`` identifies the node's content (equal ``sig``: the same calls).
    """

    call: ApiCall
    count: int = 1
    lines: list[int] = field(default_factory=list)
    children: list["CallNode"] = field(default_factory=list)
    self_gpu_ms: float | None = None
    self_kernels: int = 0
    sig: Any = None

    @property
    def gpu_ms(self) -> float | None:
        """GPU ms of this node's kernels and of all calls nested under it (``None``: not measured)."""
        if self.self_gpu_ms is None:
            return None
        return self.self_gpu_ms + sum(c.gpu_ms or 0.0 for c in self.children)

    @property
    def kernel_count(self) -> int:
        """Activities launched by this node and the calls nested under it."""
        return self.self_kernels + sum(c.kernel_count for c in self.children)

    def timing_text(self) -> str:
        """``"GPU 0.0551 ms, 7 kernels"`` (with ``own …`` for nodes with nested calls); ""
        if not measured or if the call launched no kernel (``*_bufferSize``, setup calls)."""
        if self.gpu_ms is None or not self.kernel_count:
            return ""
        k = self.kernel_count
        text = f"GPU {self.gpu_ms:.4f} ms, {k} kernel{'s' if k != 1 else ''}"
        if self.children:
            text += f" (own {self.self_gpu_ms:.4f} ms, {self.self_kernels})"
        return text

    @property
    def function(self) -> str:
        return self.call.name

    @property
    def library(self) -> str:
        return self.call.library

    @property
    def kind(self) -> str:
        return self.call.kind

    @property
    def args(self) -> dict[str, Any]:
        """Non-pointer arguments (identical over the repeats)."""
        return self.call.values()

    def label(self) -> str:
        """``cusolverDnXpotrs × 64  uplo=LOWER n=32 nrhs=32 ...``"""
        times = f" × {self.count}" if self.count > 1 else ""
        args = " ".join(f"{k}={v}" for k, v in self.args.items())
        return f"{self.function}{times}  {args}".rstrip()

    def to_dict(self, form: "CompactForm | None" = None) -> dict:
        """The node as the trace JSON holds it (docs/reading-a-trace.md, "JSON").

        Parameters
        ----------
        form : CompactForm, optional
            Write the compact form (:class:`CompactForm`). Without it every field is
            written: ``function``, ``library``, ``count``, ``args``, ``line``; ``op`` /
            ``where`` / ``code`` when known, the times when measured, ``children`` when
            there are nested calls.

        Returns
        -------
        dict
        """
        if form is not None:
            return form.node(self)
        c = self.call
        d: dict = {"function": c.name, "library": c.library, "count": self.count,
                   "args": self.args, "line": self.first_line}
        for key in ("op", "where", "code"):
            value = getattr(c, key)
            if value is not None:
                d[key] = value
        if c.truncated:
            d["truncated"] = True
        if self.self_gpu_ms is not None:
            d.update(gpu_ms=self.gpu_ms, self_gpu_ms=self.self_gpu_ms, kernels=self.kernel_count,
                     self_kernels=self.self_kernels)
        if self.children:
            d["children"] = [n.to_dict() for n in self.children]
        return d

    @property
    def first_line(self) -> int | None:
        """The log line of the first repeat."""
        return self.lines[0] if self.lines else self.call.line

    def walk(self) -> Iterable["CallNode"]:
        yield self
        for c in self.children:
            yield from c.walk()


def build_tree(calls: Iterable[ApiCall], *, kinds: Iterable[str] | None = None,
               _intern: dict | None = None) -> list[CallNode]:
    """Collapse consecutive identical calls into :class:`CallNode` s, recursively.

    ``kinds`` keeps only calls of those kinds (``"compute"``, ``"query"``, ``"setup"``;
    see :func:`~._hook.call_kind`) before collapsing, so that hiding ``setup`` calls lets
    e.g. a loop of ``Xpotrs`` separated by ``SetStream`` / ``CreateParams`` collapse into
    one node. ``None`` keeps all.

    Examples
    --------
    >>> from cusolver_trace.tracing import parse_log
    >>> rec = "[2026-11-30 02:17:18][cusolverDn][1][Api][cusolverDnXpotrf] n=8 lda=8"
    >>> [n.label() for n in build_tree(parse_log("\\n".join([rec] * 3)).calls)]
    ['cusolverDnXpotrf × 3  n=8 lda=8']
    """
    keep = None if kinds is None else set(kinds)
    intern = {} if _intern is None else _intern
    nodes: list[CallNode] = []
    for c in calls:
        if keep is not None and c.kind not in keep:
            continue
        children = build_tree(c.children, kinds=kinds, _intern=intern)
        sig = (c.library, c.name, c.section, tuple(c.values().items()),
               tuple(n.sig for n in children), c.op, c.where)
        sig = intern.setdefault(sig, sig)
        own = None if c.kernels is None else sum(k.dur_us or 0.0 for k in c.kernels) / 1e3
        nk = 0 if c.kernels is None else len(c.kernels)
        node = CallNode(c, 1, [c.line], children, own, nk, sig)
        if nodes and nodes[-1].sig is sig:
            _merge(nodes[-1], node)
        else:
            nodes.append(node)
    return nodes


def _merge(into: CallNode, other: CallNode) -> None:
    """Fold a repeat (same signature) into ``into``: counts, lines and GPU times add up."""
    into.count += other.count
    into.lines.extend(other.lines)
    _merge_times(into, other)


def _merge_times(into, other) -> None:
    if isinstance(into, RepeatBlock):
        for a, b in zip(into.nodes, other.nodes):
            _merge_times(a, b)
        return
    if into.self_gpu_ms is not None and other.self_gpu_ms is not None:
        into.self_gpu_ms += other.self_gpu_ms
        into.self_kernels += other.self_kernels
    else:
        into.self_gpu_ms, into.self_kernels = None, 0
    for a, b in zip(into.children, other.children):
        _merge_times(a, b)


def _copy(item):
    """A copy of a node or block deep enough to sum times into (the calls are shared)."""
    if isinstance(item, RepeatBlock):
        return RepeatBlock([_copy(n) for n in item.nodes], item.count, item.sig)
    return CallNode(item.call, item.count, list(item.lines), [_copy(c) for c in item.children],
                    item.self_gpu_ms, item.self_kernels, item.sig)


@dataclass
class RepeatBlock:
    """``count`` back-to-back repeats of the sequence ``nodes`` (calls, or blocks of their
    own) -- a loop in the program such as ``for _ in range(10): cholesky(A);
    cholesky_inverse(L)``. ``nodes`` are the first repeat's, with GPU times summed over all
    repeats."""

    nodes: list
    count: int
    sig: Any = None

    @property
    def gpu_ms(self) -> float | None:
        times = [n.gpu_ms for n in self.nodes]
        return None if any(t is None for t in times) else sum(times)

    @property
    def calls(self) -> int:
        """Calls per repeat (nested calls included, each collapsed node counted once)."""
        return sum(n.calls if isinstance(n, RepeatBlock) else sum(1 for _ in n.walk())
                   for n in self.nodes)

    def to_dict(self, form: "CompactForm | None" = None) -> dict:
        """``{"repeat": count, "calls": [...]}``, the nodes in ``form`` (:meth:`CallNode.to_dict`)."""
        return {"repeat": self.count, "calls": [n.to_dict(form) for n in self.nodes]}


@dataclass
class CompactForm:
    """How the call nodes of one trace are written in the compact (default) JSON: what
    follows from the rest is left out, a node's ``op`` / ``where`` / ``code`` are an entry
    (``src``) of the trace's ``sources`` table, GPU times are rounded to :data:`MS_DIGITS`
    significant digits (the rules: docs/reading-a-trace.md, "JSON").

    Attributes
    ----------
    timed : bool     the calls carry GPU times (the JSON's ``call_times``): a node with no
                     ``gpu_ms`` then launched no kernel, ``"gpu_ms": null`` marks one whose
                     times were not measured
    lines : bool     write each node's log ``line`` (useful where the log is kept)
    sources : dict   ``(op, where, code)`` -> index in the ``sources`` table, filled as the
                     nodes are written
    """

    timed: bool = False
    lines: bool = False
    sources: dict = field(default_factory=dict)

    def node(self, n: CallNode) -> dict:
        """The compact dict of one node (and of the nodes nested under it)."""
        c = n.call
        d: dict = {"function": c.name}
        if c.library != library_of(c.name):
            d["library"] = c.library
        if n.count != 1:
            d["count"] = n.count
        args = n.args
        if args:
            d["args"] = args
        if self.lines:
            d["line"] = n.first_line
        source = (c.op, c.where, c.code)
        if source != (None, None, None):
            d["src"] = self.sources.setdefault(source, len(self.sources))
        if c.truncated:
            d["truncated"] = True
        if self.timed:
            if n.self_gpu_ms is None:
                d["gpu_ms"] = None
            elif n.kernel_count:
                d.update(gpu_ms=round_ms(n.gpu_ms), kernels=n.kernel_count)
                if n.children and n.self_kernels:
                    d.update(self_gpu_ms=round_ms(n.self_gpu_ms), self_kernels=n.self_kernels)
        if n.children:
            d["children"] = [self.node(x) for x in n.children]
        return d

    def table(self) -> list[dict]:
        """The ``sources`` table: ``{"op"?, "where"?, "code"?}`` per index."""
        keys = ("op", "where", "code")
        return [{k: v for k, v in zip(keys, source) if v is not None} for source in self.sources]


#: Significant digits of a GPU time (ms) in the compact JSON.
MS_DIGITS = 6


def round_ms(ms: float) -> float:
    """``ms`` to :data:`MS_DIGITS` significant digits.

    Examples
    --------
    >>> round_ms(0.0027213), round_ms(1234.56789)
    (0.0027213, 1234.57)
    """
    return float(f"{ms:.{MS_DIGITS}g}")


def fold_repeats(nodes: list, *, max_period: int = 64) -> list:
    """Fold runs where the same sequence of 2..``max_period`` items repeats back to back.

    Greedy from the left; at each position the period covering the most items wins (the
    shorter one on ties). Consecutive identical *single* calls are already collapsed by
    :func:`build_tree` (``× k`` on the node). A block's own sequence is folded too, and a
    second pass folds repeats of the folded sequence (loops around loops). Returns a new
    list; the input is not modified.

    Examples
    --------
    >>> from cusolver_trace.tracing import parse_log
    >>> a = "[2026-11-30 02:17:18][cusolverDn][1][Api][cusolverDnXpotrf] n=8"
    >>> b = "[2026-11-30 02:17:18][cusolverDn][1][Api][cusolverDnXpotrs] n=8"
    >>> folded = fold_repeats(build_tree(parse_log("\\n".join([a, b] * 5)).calls))
    >>> [(type(x).__name__, x.count) for x in folded]
    [('RepeatBlock', 5)]
    """
    out = _fold_once(nodes, max_period)
    if len(out) < len(nodes):
        again = _fold_once(out, max_period)
        if len(again) < len(out):
            out = again
    return out


def _fold_once(items: list, max_period: int) -> list:
    intern: dict = {}
    sigs = []
    for x in items:
        s = x.sig if x.sig is not None else ("node", id(x))
        if isinstance(x, CallNode):   # a node stands for `count` calls: [A×4, B] is not [A, B]
            s = (s, x.count)
        sigs.append(intern.setdefault(s, s))
    n = len(items)
    out: list = []
    i = 0
    while i < n:
        best_p, best_k = 0, 1
        head = sigs[i]
        for p in range(2, min(max_period, (n - i) // 2) + 1):
            if sigs[i + p] is not head or sigs[i:i + p] != sigs[i + p:i + 2 * p]:
                continue
            k = 2
            while sigs[i + k * p:i + (k + 1) * p] == sigs[i:i + p]:
                k += 1
            if k * p > best_k * best_p:
                best_p, best_k = p, k
        if not best_p:
            out.append(items[i])
            i += 1
            continue
        block = [_copy(x) for x in items[i:i + best_p]]
        for r in range(1, best_k):
            for a, b in zip(block, items[i + r * best_p:i + (r + 1) * best_p]):
                _merge_times(a, b)
                if isinstance(a, CallNode):
                    a.lines.extend(b.lines)
        inner = _fold_once(block, max_period) if best_p >= 4 else block  # a loop in the loop
        out.append(RepeatBlock(inner, best_k, ("block", best_k, tuple(sigs[i:i + best_p]))))
        i += best_p * best_k
    return out


class ExitStatus:
    """How a traced program ended, from its ``signal`` and ``returncode``."""

    @property
    def signal_name(self) -> str | None:
        """``"SIGSEGV"`` for signal 11; ``None`` when no signal ended the program."""
        if self.signal is None:
            return None
        import signal as _signal

        try:
            return _signal.Signals(self.signal).name
        except ValueError:
            return f"signal {self.signal}"

    @property
    def exit_status(self) -> int | None:
        """Shell-style status: the exit code, or 128 + signal number."""
        return 128 + self.signal if self.signal is not None else self.returncode


@dataclass
class Trace(ExitStatus):
    """What one traced call or program did: its events and their views.

    Attributes
    ----------
    label : str            what was traced (``torch.cholesky_inverse(float64[256, 256] cuda:0)``)
    calls : list[ApiCall]  top-level API-call events in order, cuBLAS calls nested under the
                           cuSOLVER call that issued them; ``None`` if the API part was skipped
    activities : list[Event] | None  GPU kernels / memcpys / memsets in start order, each
                           with the call that launched it as ``parent`` (``None``: torch's own);
                           ``None``: not profiled
    aten_ops : list[AtenOp] | None   aten operators (when every op was recorded)
    notes : list[str]      plain-language remarks (skipped parts, crashes, truncation)
    output : list[str]     the traced program's own stdout lines (runner / CLI)
    stderr : str           the traced program's stderr (runner / CLI)
    returncode : int | None  exit status as the OS reported it (negative: -signal)
    signal : int | None      the signal that killed the program, if any
    sections : list[str]   section labels present in the log
    wall_s : float | None  the program's wall time (traced run)
    wall_s_unprofiled : float | None  wall time of a run without the profiler (``--overhead``)
    why_no_times : str | None  why there are no per-call GPU times (shown in the summary)
    tracing_s : dict       seconds the tracer itself spent, by step (profiler stop,
                           correlation, log parsing ...)
    """

    label: str = ""
    calls: list[ApiCall] | None = None
    activities: list[Event] | None = None
    aten_ops: list[AtenOp] | None = None
    notes: list[str] = field(default_factory=list)
    output: list[str] = field(default_factory=list)
    stderr: str = ""
    returncode: int | None = None
    signal: int | None = None
    sections: list[str] = field(default_factory=list)
    wall_s: float | None = None
    wall_s_unprofiled: float | None = None
    why_no_times: str | None = None
    tracing_s: dict = field(default_factory=dict)

    # -- views --------------------------------------------------------------
    def tree(self, *, all: bool = False) -> list[CallNode]:
        """Collapsed call tree. ``all=False`` hides ``setup`` calls (handles,
        streams, params, math mode); ``query`` calls (``*_bufferSize``) stay."""
        if not self.calls:
            return []
        return build_tree(self.calls, kinds=None if all else ("compute", "query"))

    def records(self) -> list[ApiCall]:
        """Every call, flat, in log order (cuBLAS calls right after the cuSOLVER call
        that issued them)."""
        return [r for c in self.calls or [] for r in c.walk()]

    @property
    def kernels(self) -> list[KernelStat] | None:
        """Every GPU activity, aggregated per name (``None``: not profiled)."""
        return None if self.activities is None else kernel_stats(self.activities)

    @property
    def outside_kernels(self) -> list[Event] | None:
        """The GPU activities that belong to no library call (torch's own; ``None``: not
        profiled, or not attributed to calls)."""
        if self.activities is None or (self.calls and all(
                r.kernels is None for r in self.records())):
            return None
        return [a for a in self.activities if a.parent is None]

    def summary(self, *, by=("routine",), all: bool = False):
        """The summary table (:func:`.summary.summarize`) of this trace.

        Parameters
        ----------
        by : sequence of str
            Grouping keys: ``routine``, ``shape``, ``op``, ``line``.
        all : bool
            Count setup calls too.

        Returns
        -------
        Summary

        Examples
        --------
        >>> Trace(calls=[]).summary().rows
        []
        """
        from .summary import summarize

        why = self.why_no_times
        records = self.records()
        if why is None and not any(r.kernels is not None for r in records):
            why = ("a captured log has calls but no kernel times" if self.wall_s is None
                   else "the program was not profiled")
        return summarize(records, by=by, outside_kernels=self.outside_kernels,
                         wall_s=self.wall_s, wall_s_unprofiled=self.wall_s_unprofiled,
                         include_setup=all, why_no_times=why)

    def find(self, function: str) -> list[CallNode]:
        """All nodes (at any depth, full tree) whose function is ``function``."""
        return [n for top in build_tree(self.calls or []) for n in top.walk()
                if n.function == function]

    def gpu_ms_by_library(self) -> dict[str, float] | None:
        """Summed activity time (ms) per library (by kernel name), or ``None`` if not profiled."""
        if self.activities is None:
            return None
        out: dict[str, float] = {}
        for k in self.kernels:
            out[k.library] = out.get(k.library, 0.0) + k.gpu_ms
        return {lib: out[lib] for lib in LIBRARIES if lib in out}

    def ranges(self) -> list[Event]:
        """The ``#### label`` sections as ``range`` events, one per run of calls in one
        section, with those calls as ``children``; timed from the first call's start to the
        last one's end when the calls are.

        Examples
        --------
        >>> from cusolver_trace.tracing import parse_log
        >>> log = parse_log("#### a\\n[2026-11-30 02:17:18][cusolverDn][1][Api][cusolverDnXpotrf] n=8")
        >>> [(r.name, r.activity, len(r.children)) for r in Trace(calls=log.calls).ranges()]
        [('a', 'range', 1)]
        """
        out: list[Event] = []
        for c in self.calls or []:
            if c.section is None:
                continue
            if not out or out[-1].name != c.section or out[-1].children[-1] is not prev:
                out.append(Event(c.section, "range", children=[]))
            out[-1].children.append(c)
            prev = c
        for r in out:
            first, last = r.children[0], r.children[-1]
            if first.start_us is not None and last.start_us is not None:
                r.start_us = first.start_us
                r.dur_us = max(last.start_us + (last.dur_us or 0.0) - first.start_us, 0.0)
        return out

    def folded(self) -> list[tuple[str | None, list]]:
        """The call tree as the JSON holds it: every call (setup too), identical neighbours
        collapsed, loops folded (:func:`fold_repeats`), per run of one section: a list of
        ``(section label or None, items)``."""
        return [(label, fold_repeats(run))
                for label, run in _runs(build_tree(self.calls or []), _section)]

    # -- serialisation ------------------------------------------------------
    def to_dict(self, *, full: bool = False, summary=None, lines: bool = False) -> dict:
        """JSON-ready dict (schema :data:`SCHEMA`; docs/reading-a-trace.md, "JSON").

        By default (``format: "compact"``): the folded call tree (``calls``: nodes in the
        compact form of :class:`CompactForm`, blocks ``{"repeat": k, "calls": [...]}`` for
        loops, and ``{"section": label, "calls": [...]}`` for the calls of a ``#### label``
        section), the ``sources`` table the nodes point into, the summary, and the
        activities outside library calls aggregated per name (``outside_kernels``: count,
        total and mean ms). ``full`` writes every field of every node instead
        (:meth:`CallNode.to_dict`) and adds every record (``records``, with pointers and
        its activities), every activity (``activities``), all activities per name
        (``kernels``), and the program's output.

        Parameters
        ----------
        full : bool
            Keep every record (``--full``).
        summary : Summary, optional
            The summary to include (default: :meth:`summary`).
        lines : bool
            Compact form: write each node's log ``line`` (where the log is kept).

        Returns
        -------
        dict

        Examples
        --------
        >>> Trace(label="x", calls=[]).to_dict()["calls"]
        []
        """
        summary = self.summary() if summary is None else summary
        outside = self.outside_kernels
        form = None if full else CompactForm(
            timed=any(r.kernels is not None for r in self.records()), lines=lines)
        d = {
            "schema": SCHEMA,
            "format": "full" if full else "compact",
            "label": self.label,
            "calls": None if self.calls is None else _calls_json(self.folded(), form),
        }
        if form is not None:
            d["call_times"] = form.timed
            d["sources"] = form.table()
        d.update({
            "summary": summary.to_dict(),
            "outside_kernels": None if outside is None else
            [k.to_dict() for k in kernel_stats(outside)],
            "gpu_ms_by_library": self.gpu_ms_by_library(),
            "aten_ops": None if self.aten_ops is None else [a.to_dict() for a in self.aten_ops],
            "notes": list(self.notes),
            "sections": list(self.sections),
            "returncode": self.returncode,
            "signal": self.signal,
            "signal_name": self.signal_name,
            "exit_status": self.exit_status,
            "wall_s": self.wall_s,
            "tracing_s": dict(self.tracing_s),
        })
        if full:
            index = {id(r): i for i, r in enumerate(self.records())}
            d["records"] = [_record_dict(r, index) for r in self.records()]
            d["activities"] = None if self.activities is None else [
                {"name": a.name, "activity": a.activity, "start_us": a.start_us,
                 "dur_us": a.dur_us, "stream": a.stream, "device": a.device,
                 "call": index.get(id(a.parent))} for a in self.activities]
            d["kernels"] = None if self.kernels is None else [k.to_dict() for k in self.kernels]
            d["output"], d["stderr"] = list(self.output), self.stderr
        return d

    def to_json(self, *, full: bool = False, summary=None, lines: bool = False, **kw) -> str:
        """:meth:`to_dict` as strict JSON text, without spaces unless ``indent`` is given.

        Parameters
        ----------
        full, summary, lines
            See :meth:`to_dict`.
        **kw
            Passed to :func:`json.dumps`.

        Returns
        -------
        str

        Examples
        --------
        >>> Trace(label="x").to_json().startswith("{")
        True
        """
        kw.setdefault("separators", (",", ":") if kw.get("indent") is None else None)
        return _json.dumps(self.to_dict(full=full, summary=summary, lines=lines), **kw)

    # -- rendering ----------------------------------------------------------
    def renderable(self, *, all: bool = False, fold: bool = True, by=("routine",),
                   tree: bool = True, summary: bool = False):
        """A rich renderable: the summary (optional), the call tree, the kernel table and the notes.

        ``all`` shows setup calls too; ``fold`` folds repeated call sequences
        (:func:`fold_repeats`) into ``× k`` blocks; ``by`` containing ``op`` or
        ``line`` groups the calls under the torch op / source line that issued
        them; ``tree=False`` leaves the tree out; ``summary`` puts the summary
        table first: ``True`` for :meth:`summary` of ``by`` and ``all``, or the
        :class:`~.summary.Summary` to show (one the caller has computed already)."""
        from rich.console import Group
        from rich.table import Table
        from rich.text import Text
        from rich.tree import Tree

        parts: list = []
        if summary is not False and summary is not None:
            table = self.summary(by=by, all=all) if summary is True else summary
            parts.append(table.renderable())
            parts.append(Text(""))
        if tree:
            parts.append(self._tree_renderable(all, fold, _group_key(by)))
        if self.aten_ops:
            parts.append(Text("aten ops: " + ", ".join(
                f"{a.name}" + (f" ×{a.count}" if a.count > 1 else "") for a in self.aten_ops),
                style="dim"))
        kernels = self.kernels
        if kernels:
            t = Table(title="GPU kernels, memcpys and memsets (torch.profiler)", title_justify="left",
                      show_edge=False, pad_edge=False)
            for col, just in (("kernel", "left"), ("library", "left"), ("GPU ms", "right"),
                              ("count", "right")):
                t.add_column(col, justify=just, overflow="fold")
            for k in kernels[:_KERNEL_ROWS]:
                t.add_row(short_kernel_name(k.name), Text(k.library, style=_LIB_STYLE.get(k.library, "")),
                          f"{k.gpu_ms:.4f}", str(k.count))
            parts.append(t)
            if len(kernels) > _KERNEL_ROWS:
                parts.append(Text(f"… {len(kernels) - _KERNEL_ROWS} more names (all of them in "
                                  f"the --full JSON)", style="dim"))
            parts.append(Text("GPU ms by library: " + "  ".join(
                f"{lib} {ms:.4f}" for lib, ms in (self.gpu_ms_by_library() or {}).items())))
        elif kernels is not None:
            parts.append(Text("no CUDA kernels", style="italic"))
        outside = self.outside_kernels
        if outside is not None and self.calls:
            ms = sum(a.dur_us or 0.0 for a in outside) / 1e3
            parts.append(Text(f"{len(outside)} GPU activities ({ms:.4f} ms) ran outside cuSOLVER / "
                              f"cuBLAS calls (torch's own ATen / MAGMA kernels)", style="dim"))
            stray = [a.name for a in outside if classify_kernel(a.name) in ("cuSOLVER", "cuBLAS")]
            if stray:
                parts.append(Text(f"note: {len(stray)} of them are named like cuSOLVER / cuBLAS "
                                  f"kernels but no logged call launched them "
                                  f"({short_kernel_name(stray[0], 60)}{', …' if len(stray) > 1 else ''})",
                                  style="yellow"))
        for note in self.notes:
            parts.append(Text("note: " + note, style="yellow"))
        return Group(*parts)

    def _tree_renderable(self, all: bool, fold: bool, group_key):
        from rich.text import Text
        from rich.tree import Tree

        root = Tree(Text(self.label or "trace", style="bold"))
        if self.calls is None:
            root.add(Text("API calls not traced (see the note below)", style="dim italic"))
            return root
        nodes = self.tree(all=all)
        grouped = len({n.call.section for n in nodes} | set(self.sections)) > 1
        for label, run in _runs(nodes, _section):
            group = root.add(Text(label or "(outside sections)", style="bold yellow")) \
                if grouped else root
            for key, sub in [(None, run)] if group_key is None else _runs(run, group_key):
                parent = group if group_key is None else group.add(Text(key, style="bold blue"))
                for item in (fold_repeats(sub) if fold else sub):
                    _add_item(parent, item)
        empty = [s for s in self.sections if s not in {n.call.section for n in nodes}]
        if grouped and empty:
            branch = root.add(Text("sections with no call shown", style="bold yellow"))
            for s in empty:
                branch.add(Text(s, style="yellow"))
        if not nodes:
            root.add(Text("no cuSOLVER / cuBLAS call" + (" other than setup" if self.calls else ""),
                          style="italic"))
        hidden = sum(1 for r in self.records() if r.kind == "setup")
        if hidden and not all:
            root.add(Text(f"({hidden} setup calls hidden: handles, streams, params; "
                          f"show them with --all / all=True)", style="dim"))
        return root

    def __rich__(self):
        return self.renderable()

    def render_text(self, *, width: int = 120) -> str:
        """The trace as plain text (what ``str()`` gives), ``width`` columns wide.

        Examples
        --------
        >>> from cusolver_trace.tracing import Trace
        >>> "cusolverDn" not in Trace(label="empty").render_text()
        True
        """
        return self._render_text(width=width)

    def _render_text(self, *, html: bool = False, width: int = 120) -> str:
        from rich.console import Console

        from .._console import environ

        console = Console(file=io.StringIO(), width=width, record=True,
                          color_system="truecolor" if html else None, force_terminal=html,
                          force_jupyter=False, _environ=environ())
        console.print(self.renderable())
        if html:
            return console.export_html(inline_styles=True,
                                       code_format="<pre style=\"font-family:monospace\">{code}</pre>")
        return console.export_text()

    def __str__(self) -> str:
        return self._render_text()

    def _repr_html_(self) -> str:
        return self._render_text(html=True)

    def __repr__(self) -> str:
        n = len(self.records())
        k = "-" if self.activities is None else len(self.activities)
        return f"<Trace {self.label!r}: {n} calls, {k} GPU activities>"


def _calls_json(runs: list, form: CompactForm | None) -> list:
    out: list = []
    for label, items in runs:
        body = [x.to_dict(form) for x in items]
        out += body if label is None else [{"section": label, "calls": body}]
    return out


def _record_dict(r: ApiCall, index: dict) -> dict:
    """One record of ``--full`` JSON: everything the log and the profiler said about it."""
    return {"library": r.library, "function": r.name, "kind": r.kind, "args": r.values(),
            "pointers": r.pointers(), "line": r.line, "section": r.section,
            "parent": index.get(id(r.parent)), "pid": r.pid, "time": r.time,
            "truncated": r.truncated, "op": r.op, "where": r.where, "code": r.code,
            "start_us": r.start_us, "dur_us": r.dur_us,
            "kernels": None if r.kernels is None else [[k.name, k.gpu_ms] for k in r.kernels]}


def _short_path(path: str) -> str:
    import os

    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return rel if not rel.startswith(".." + os.sep) else path


def _group_key(by):
    """Key function for grouping the tree by ``op`` / ``line`` (``None``: no grouping)."""
    by = tuple(by or ())
    if "line" in by:
        def key(n: CallNode) -> str:
            if not n.call.where:
                return "(no Python line: a C++ / autograd thread, or not profiled)"
            path, _, line = n.call.where.rpartition(":")
            return f"{_short_path(path)}:{line}" + (f"  {n.call.code}" if n.call.code else "")
        return key
    if "op" in by:
        return lambda n: n.call.op or "(no torch op, or not profiled with --by op)"
    return None


def _runs(items: list, key) -> list[tuple[Any, list]]:
    """``[(key, items), ...]``: the runs of consecutive items with one ``key(item)``."""
    runs: list[tuple[Any, list]] = []
    for x in items:
        k = key(x)
        if not runs or runs[-1][0] != k:
            runs.append((k, []))
        runs[-1][1].append(x)
    return runs


def _section(node: CallNode) -> str | None:
    return node.call.section


def _add_item(parent, item) -> None:
    from rich.text import Text

    if isinstance(item, CallNode):
        _add_node(parent, item)
        return
    text = Text(f"× {item.count}", style="bold")
    nested = " (with the calls under them)" if any(
        isinstance(n, RepeatBlock) or n.children for n in item.nodes) else ""
    text.append(f"  the {len(item.nodes)} calls below{nested}, repeated back to back", style="italic")
    if item.gpu_ms is not None:
        text.append(f"  [GPU {item.gpu_ms:.4f} ms in all]", style="green")
    branch = parent.add(text)
    for node in item.nodes:
        _add_item(branch, node)


def _add_node(parent, node: CallNode) -> None:
    from rich.text import Text

    style = "dim" if node.kind != "compute" else _LIB_STYLE.get(node.library, "")
    text = Text(node.function, style=style)
    if node.count > 1:
        text.append(f" × {node.count}", style="bold")
    if node.args:
        text.append("  " + " ".join(f"{k}={v}" for k, v in node.args.items()),
                    style="dim" if node.kind != "compute" else "")
    if node.call.truncated:
        text.append("  (record cut off)", style="red")
    if node.timing_text():
        text.append(f"  [{node.timing_text()}]", style="green")
    elif node.kind == "compute" and node.self_gpu_ms is not None:
        text.append("  [no kernel attributed]", style="dim yellow")
    branch = parent.add(text)
    for child in node.children:
        _add_node(branch, child)
