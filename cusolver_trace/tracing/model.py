"""The :class:`Trace` result: a call tree with repeat counts, plus kernels and aten ops.

Rendering: ``rich`` tree for terminals (``__rich__``), HTML for notebooks
(``_repr_html_``), plain text (``__str__``), and ``to_dict`` / ``to_json``.
"""
from __future__ import annotations

import io
from dataclasses import dataclass, field
from typing import Any, Iterable

from .. import _json
from .kernels import LIBRARIES, classify_kernel, short_kernel_name
from .logparse import ApiCall

__all__ = ["CallNode", "RepeatBlock", "KernelStat", "AtenOp", "Trace", "build_tree",
           "fold_repeats", "SCHEMA"]

SCHEMA = "cusolver-trace/trace/1"
_LIB_STYLE = {"cuSOLVER": "bold magenta", "cuBLAS": "bold cyan"}


@dataclass
class CallNode:
    """One call, or ``count`` consecutive identical calls (same function, same
    non-pointer arguments, same children), with the cuBLAS calls it issued.

    ``call`` is the first of the repeats; ``lines`` the log line of each repeat.
    ``self_gpu_ms`` / ``self_kernels``: GPU time (ms) and number of the kernels the
    call(s) launched themselves, summed over the repeats, not counting the calls
    nested below; ``None`` / 0 when not measured (only :func:`cusolver_trace.trace`
    of a CUDA call measures them). :attr:`gpu_ms` includes the nested calls.
    """

    call: ApiCall
    count: int = 1
    lines: list[int] = field(default_factory=list)
    children: list["CallNode"] = field(default_factory=list)
    self_gpu_ms: float | None = None
    self_kernels: int = 0

    @property
    def gpu_ms(self) -> float | None:
        """GPU ms of this node's kernels and of all calls nested under it (``None``: not measured)."""
        if self.self_gpu_ms is None:
            return None
        return self.self_gpu_ms + sum(c.gpu_ms or 0.0 for c in self.children)

    @property
    def kernel_count(self) -> int:
        """Kernels launched by this node and the calls nested under it."""
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
        return self.call.function

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

    def to_dict(self) -> dict:
        return {
            "library": self.library,
            "function": self.function,
            "kind": self.kind,
            "count": self.count,
            "args": self.args,
            "pointers": dict(self.call.pointers()),
            "section": self.call.section,
            "lines": list(self.lines),
            "truncated": self.call.truncated,
            "gpu_ms": self.gpu_ms,
            "self_gpu_ms": self.self_gpu_ms,
            "kernels": self.kernel_count if self.self_gpu_ms is not None else None,
            "self_kernels": self.self_kernels if self.self_gpu_ms is not None else None,
            "children": [c.to_dict() for c in self.children],
        }

    def to_compact_dict(self) -> dict:
        """Smaller form for the default JSON: no pointers, the first log line only,
        timing keys only when measured, ``op`` / ``where`` / ``code`` only when known."""
        d = {"library": self.library, "function": self.function, "kind": self.kind,
             "count": self.count, "args": self.args, "section": self.call.section,
             "line": self.lines[0] if self.lines else self.call.line}
        if self.call.truncated:
            d["truncated"] = True
        if self.self_gpu_ms is not None:
            d.update(gpu_ms=self.gpu_ms, self_gpu_ms=self.self_gpu_ms, kernels=self.kernel_count,
                     self_kernels=self.self_kernels)
        for key in ("op", "where", "code"):
            value = getattr(self.call, key, None)
            if value is not None:
                d[key] = value
        d["children"] = [c.to_compact_dict() for c in self.children]
        return d

    def walk(self) -> Iterable["CallNode"]:
        yield self
        for c in self.children:
            yield from c.walk()


def build_tree(calls: Iterable[ApiCall], *, kinds: Iterable[str] | None = None) -> list[CallNode]:
    """Collapse consecutive identical calls into :class:`CallNode` s, recursively.

    ``kinds`` keeps only calls of those kinds (``"compute"``, ``"query"``,
    ``"setup"``; see :func:`~.logparse.call_kind`) before collapsing, so that
    hiding ``setup`` calls lets e.g. a loop of ``Xpotrs`` separated by
    ``SetStream``/``CreateParams`` collapse into one node. ``None`` keeps all.
    """
    keep = None if kinds is None else set(kinds)
    nodes: list[CallNode] = []
    last_sig = None
    for c in calls:
        if keep is not None and c.kind not in keep:
            continue
        children = build_tree(c.children, kinds=kinds)
        sig = (c.library, c.function, c.section, tuple(c.values().items()),
               tuple(_node_sig(n) for n in children), c.op, c.where)
        own = None if c.kernels is None else sum(ms for _k, ms in c.kernels)
        nk = 0 if c.kernels is None else len(c.kernels)
        if nodes and sig == last_sig:
            _merge(nodes[-1], CallNode(c, 1, [c.line], children, own, nk))
        else:
            nodes.append(CallNode(c, 1, [c.line], children, own, nk))
            last_sig = sig
    return nodes


def _merge(into: CallNode, other: CallNode) -> None:
    """Fold a repeat (same signature) into ``into``: counts, lines and GPU times add up."""
    into.count += other.count
    into.lines.extend(other.lines)
    _merge_times(into, other)


def _merge_times(into: CallNode, other: CallNode) -> None:
    if into.self_gpu_ms is not None and other.self_gpu_ms is not None:
        into.self_gpu_ms += other.self_gpu_ms
        into.self_kernels += other.self_kernels
    else:
        into.self_gpu_ms, into.self_kernels = None, 0
    for a, b in zip(into.children, other.children):
        _merge_times(a, b)


def _node_sig(n: CallNode) -> tuple:
    return (n.function, n.count, tuple(n.args.items()), tuple(_node_sig(c) for c in n.children),
            n.call.op, n.call.where)


@dataclass
class RepeatBlock:
    """``count`` back-to-back repeats of the call sequence ``nodes`` — a loop in the
    program such as ``for _ in range(10): cholesky(A); cholesky_inverse(L)``.
    ``nodes`` are the first repeat's, with GPU times summed over all repeats."""

    nodes: list[CallNode]
    count: int

    @property
    def gpu_ms(self) -> float | None:
        times = [n.gpu_ms for n in self.nodes]
        return None if any(t is None for t in times) else sum(times)

    @property
    def calls(self) -> int:
        """Calls per repeat (nested calls included, each collapsed node counted once)."""
        return sum(1 for n in self.nodes for _ in n.walk())


def fold_repeats(nodes: list[CallNode], *, max_period: int = 16) -> list[CallNode | RepeatBlock]:
    """Fold runs where the same sequence of 2..``max_period`` nodes repeats back to back.

    Greedy from the left; at each position the period covering the most nodes wins
    (the shorter one on ties). Consecutive identical *single* calls are already
    collapsed by :func:`build_tree` (``× k`` on the node). Returns a new list; the
    input nodes are not modified.
    """
    import copy

    sigs = [_node_sig(n) for n in nodes]
    out: list[CallNode | RepeatBlock] = []
    i = 0
    while i < len(nodes):
        best_p, best_k = 0, 1
        for p in range(2, max_period + 1):
            if i + 2 * p > len(nodes):
                break
            k = 1
            while sigs[i + k * p:i + (k + 1) * p] == sigs[i:i + p]:
                k += 1
            if k >= 2 and k * p > best_k * best_p:
                best_p, best_k = p, k
        if not best_p:
            out.append(nodes[i])
            i += 1
            continue
        block = [copy.deepcopy(n) for n in nodes[i:i + best_p]]
        for r in range(1, best_k):
            for a, b in zip(block, nodes[i + r * best_p:i + (r + 1) * best_p]):
                _merge_times(a, b)
                a.lines.extend(b.lines)
        out.append(RepeatBlock(block, best_k))
        i += best_p * best_k
    return out


@dataclass
class KernelStat:
    """A CUDA kernel (or memcpy/memset) seen by torch.profiler.

    ``gpu_ms`` is the summed device time of its ``count`` launches, in milliseconds.
    """

    name: str
    library: str
    gpu_ms: float
    count: int

    def to_dict(self) -> dict:
        return {"name": self.name, "library": self.library, "gpu_ms": self.gpu_ms,
                "count": self.count}


@dataclass
class AtenOp:
    """An ``aten::`` operator seen by torch.profiler; ``cpu_ms`` is its summed
    inclusive host time in milliseconds over ``count`` calls."""

    name: str
    count: int
    cpu_ms: float

    def to_dict(self) -> dict:
        return {"name": self.name, "count": self.count, "cpu_ms": self.cpu_ms}


def signal_name(signum: int | None) -> str | None:
    """``11`` -> ``"SIGSEGV"``; None stays None."""
    if signum is None:
        return None
    import signal as _signal

    try:
        return _signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


@dataclass
class Trace:
    """What one traced call or program did.

    Attributes
    ----------
    label : str            what was traced (``torch.cholesky_inverse(float64[256, 256] cuda:0)``)
    calls : list[ApiCall]  top-level API calls in order, cuBLAS calls nested under the
                           cuSOLVER call that issued them; ``None`` if the API part was skipped
    kernels : list[KernelStat] | None   CUDA kernels, first-launch order (None: not profiled)
    aten_ops : list[AtenOp] | None      aten operators (None: not profiled)
    notes : list[str]      plain-language remarks (skipped parts, crashes, truncation)
    output : list[str]     the traced program's own stdout lines (runner / CLI)
    stderr : str           the traced program's stderr (runner / CLI)
    returncode : int | None  exit status as the OS reported it (negative: -signal)
    signal : int | None      the signal that killed the program, if any
    sections : list[str]   section labels present in the log
    outside_kernels : list[tuple[str, float]] | None
                           ``(kernel, GPU ms)`` launched outside any cuSOLVER / cuBLAS
                           call (torch's own ATen kernels) when per-call times were
                           measured (:func:`cusolver_trace.trace` of a CUDA call, or a
                           whole program traced with timing)
    wall_s : float | None  the program's wall time (profiled run)
    wall_s_unprofiled : float | None  wall time of a run without the profiler (``--overhead``)
    gpu_events : list | None  GPU timeline of a profiled program (:class:`.program.GpuEvent`),
                           for :func:`.chrome.chrome_trace`
    why_no_times : str | None  why there are no per-call GPU times (shown in the summary)
    """

    label: str = ""
    calls: list[ApiCall] | None = None
    kernels: list[KernelStat] | None = None
    aten_ops: list[AtenOp] | None = None
    notes: list[str] = field(default_factory=list)
    output: list[str] = field(default_factory=list)
    stderr: str = ""
    returncode: int | None = None
    signal: int | None = None
    sections: list[str] = field(default_factory=list)
    outside_kernels: list[tuple[str, float]] | None = None
    wall_s: float | None = None
    wall_s_unprofiled: float | None = None
    gpu_events: list | None = None
    why_no_times: str | None = None

    # -- queries ------------------------------------------------------------
    def tree(self, *, all: bool = False) -> list[CallNode]:
        """Collapsed call tree. ``all=False`` hides ``setup`` calls (handles,
        streams, params, math mode); ``query`` calls (``*_bufferSize``) stay."""
        if not self.calls:
            return []
        return build_tree(self.calls, kinds=None if all else ("compute", "query"))

    def records(self) -> list[ApiCall]:
        """Every call, flat, in log order (cuBLAS calls right after the cuSOLVER call
        that issued them)."""
        out: list[ApiCall] = []

        def walk(c):
            out.append(c)
            for ch in c.children:
                walk(ch)

        for c in self.calls or []:
            walk(c)
        return out

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
        if why is None and not any(r.kernels is not None for r in self.records()):
            why = ("a captured log has calls but no kernel times" if self.wall_s is None
                   else "the program was not profiled")
        return summarize(self.records(), by=by, outside_kernels=self.outside_kernels,
                         wall_s=self.wall_s, wall_s_unprofiled=self.wall_s_unprofiled,
                         include_setup=all, why_no_times=why)

    def find(self, function: str) -> list[CallNode]:
        """All nodes (at any depth, full tree) whose function is ``function``."""
        return [n for top in build_tree(self.calls or []) for n in top.walk()
                if n.function == function]

    def gpu_ms_by_library(self) -> dict[str, float] | None:
        """Summed kernel time (ms) per library, or ``None`` if not profiled."""
        if self.kernels is None:
            return None
        out: dict[str, float] = {}
        for lib in LIBRARIES:
            times = [k.gpu_ms for k in self.kernels if k.library == lib]
            if times:
                out[lib] = sum(times)
        return out

    @property
    def signal_name(self) -> str | None:
        return signal_name(self.signal)

    @property
    def exit_status(self) -> int | None:
        """Shell-style status: the exit code, or 128 + signal number."""
        if self.signal is not None:
            return 128 + self.signal
        return self.returncode

    # -- serialisation ------------------------------------------------------
    def to_dict(self, *, compact: bool = False, records: bool = False, summary=None) -> dict:
        """JSON-ready dict (schema ``cusolver-trace/trace/1``); the call tree
        includes every kind of call, each node with its ``kind``.

        Parameters
        ----------
        compact : bool
            Smaller nodes (:meth:`CallNode.to_compact_dict`: no pointers, first log
            line only), as ``cusolver-trace trace --json`` writes by default.
        records : bool
            Also a ``records`` list with every record (``--full``).
        summary : Summary, optional
            Added under the ``summary`` key (with ``wall_s``).

        Returns
        -------
        dict

        Examples
        --------
        >>> Trace(label="x", calls=[]).to_dict()["calls"]
        []
        """
        node = CallNode.to_compact_dict if compact else CallNode.to_dict
        d = {
            "schema": SCHEMA,
            "label": self.label,
            "calls": None if self.calls is None else [node(n) for n in build_tree(self.calls)],
            "kernels": None if self.kernels is None else [k.to_dict() for k in self.kernels],
            "gpu_ms_by_library": self.gpu_ms_by_library(),
            "aten_ops": None if self.aten_ops is None else [a.to_dict() for a in self.aten_ops],
            "notes": list(self.notes),
            "sections": list(self.sections),
            "outside_kernels": None if self.outside_kernels is None else
            [{"name": k, "gpu_ms": ms} for k, ms in self.outside_kernels],
            "output": list(self.output),
            "stderr": self.stderr,
            "returncode": self.returncode,
            "signal": self.signal,
            "signal_name": self.signal_name,
            "exit_status": self.exit_status,
        }
        if summary is not None:
            d["summary"] = summary.to_dict()
            d["wall_s"] = self.wall_s
            d["format"] = "full" if records else "compact" if compact else "tree"
        if records:
            d["records"] = [_record_dict(r) for r in self.records()]
        return d

    def to_json(self, *, compact: bool = False, records: bool = False, summary=None, **kw) -> str:
        """:meth:`to_dict` as JSON text (``indent=2``; ``indent=1`` when ``compact``).

        Parameters
        ----------
        compact, records, summary
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
        kw.setdefault("indent", 1 if compact else 2)
        return _json.dumps(self.to_dict(compact=compact, records=records, summary=summary), **kw)

    # -- rendering ----------------------------------------------------------
    def renderable(self, *, all: bool = False, fold: bool = True, by=("routine",),
                   tree: bool = True, summary: bool = False):
        """A rich renderable: the summary (optional), the call tree, the kernel table and the notes.

        ``all`` shows setup calls too; ``fold`` folds repeated call sequences
        (:func:`fold_repeats`) into ``× k`` blocks; ``by`` containing ``op`` or
        ``line`` groups the calls under the torch op / source line that issued
        them; ``tree=False`` leaves the tree out; ``summary`` puts the summary
        table (:meth:`summary`) first."""
        from rich.console import Group
        from rich.table import Table
        from rich.text import Text
        from rich.tree import Tree

        parts: list = []
        if summary:
            parts.append(self.summary(by=by, all=all).renderable())
            parts.append(Text(""))
        group_key = _group_key(by)
        root = Tree(Text(self.label or "trace", style="bold"))
        if self.calls is None:
            root.add(Text("API calls not traced (see the note below)", style="dim italic"))
        else:
            nodes = self.tree(all=all)
            grouped = len({n.call.section for n in nodes} | set(self.sections)) > 1
            runs: list[tuple[Any, list[CallNode]]] = []
            for node in nodes:
                if not runs or runs[-1][0] != node.call.section:
                    runs.append((node.call.section, []))
                runs[-1][1].append(node)
            for label, run in runs:
                group = root.add(Text(label or "(outside sections)", style="bold yellow")) \
                    if grouped else root
                for key, sub in _runs_by(run, group_key):
                    parent = group if group_key is None else group.add(
                        Text(key, style="bold blue"))
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
            hidden = sum(1 for c in self.calls for n in [c, *c.children] if n.kind == "setup")
            if hidden and not all:
                root.add(Text(f"({hidden} setup calls hidden: handles, streams, params; "
                              f"show them with --all / all=True)", style="dim"))
        if tree:
            parts.append(root)
        if self.aten_ops:
            parts.append(Text("aten ops: " + ", ".join(
                f"{a.name}" + (f" ×{a.count}" if a.count > 1 else "") for a in self.aten_ops),
                style="dim"))
        if self.kernels is not None:
            if self.kernels:
                t = Table(title="CUDA kernels (torch.profiler)", title_justify="left",
                          show_edge=False, pad_edge=False)
                t.add_column("kernel", overflow="fold")
                t.add_column("library")
                t.add_column("GPU ms", justify="right")
                t.add_column("count", justify="right")
                for k in self.kernels:
                    t.add_row(short_kernel_name(k.name), Text(k.library, style=_LIB_STYLE.get(k.library, "")),
                              f"{k.gpu_ms:.4f}", str(k.count))
                parts.append(t)
                per = self.gpu_ms_by_library() or {}
                parts.append(Text("GPU ms by library: " + "  ".join(
                    f"{lib} {ms:.4f}" for lib, ms in per.items())))
            else:
                parts.append(Text("no CUDA kernels", style="italic"))
        if self.outside_kernels is not None and self.calls:
            ms = sum(t for _k, t in self.outside_kernels)
            stray = [k for k, _t in self.outside_kernels
                     if classify_kernel(k) in ("cuSOLVER", "cuBLAS")]
            parts.append(Text(f"per-call GPU ms: from torch.profiler in the API child; "
                              f"{len(self.outside_kernels)} kernel"
                              f"{'s' if len(self.outside_kernels) != 1 else ''} ({ms:.4f} ms) ran outside "
                              f"cuSOLVER / cuBLAS calls (torch's own ATen / MAGMA kernels)", style="dim"))
            if stray:
                parts.append(Text(f"note: {len(stray)} of them are named like cuSOLVER / cuBLAS "
                                  f"kernels but were launched outside any logged call's span "
                                  f"({short_kernel_name(stray[0], 60)}{', …' if len(stray) > 1 else ''})",
                                  style="yellow"))
        for note in self.notes:
            parts.append(Text("note: " + note, style="yellow"))
        return Group(*parts)

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

        console = Console(file=io.StringIO(), width=width, record=True,
                          color_system="truecolor" if html else None, force_terminal=html,
                          force_jupyter=False)
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
        n = 0 if not self.calls else sum(1 for top in build_tree(self.calls) for _ in top.walk())
        k = "-" if self.kernels is None else len(self.kernels)
        return f"<Trace {self.label!r}: {n} call nodes, {k} kernels>"


def _record_dict(r: ApiCall) -> dict:
    """One record of ``--full`` JSON: everything the log and the profiler said about it."""
    return {"library": r.library, "function": r.function, "kind": r.kind, "args": r.values(),
            "pointers": dict(r.pointers()), "line": r.line, "section": r.section,
            "pid": r.pid, "time": r.time, "truncated": r.truncated,
            "kernels": None if r.kernels is None else [[k, ms] for k, ms in r.kernels],
            "op": r.op, "where": r.where, "code": r.code,
            "span_us": None if r.span is None else list(r.span)}


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
        return lambda n: n.call.op or "(no torch op, or not profiled)"
    return None


def _runs_by(nodes: list[CallNode], key) -> list[tuple[str | None, list[CallNode]]]:
    if key is None:
        return [(None, nodes)]
    runs: list[tuple[str, list[CallNode]]] = []
    for n in nodes:
        k = key(n)
        if not runs or runs[-1][0] != k:
            runs.append((k, []))
        runs[-1][1].append(n)
    return runs


def _add_item(parent, item: "CallNode | RepeatBlock") -> None:
    from rich.text import Text

    if isinstance(item, CallNode):
        _add_node(parent, item)
        return
    text = Text(f"× {item.count}", style="bold")
    nested = " (with the calls under them)" if any(n.children for n in item.nodes) else ""
    text.append(f"  the {len(item.nodes)} calls below{nested}, repeated back to back", style="italic")
    if item.gpu_ms is not None:
        text.append(f"  [GPU {item.gpu_ms:.4f} ms in all]", style="green")
    branch = parent.add(text)
    for node in item.nodes:
        _add_node(branch, node)


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
