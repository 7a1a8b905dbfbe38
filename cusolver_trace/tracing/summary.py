"""The summary table of a trace: calls and GPU time per library routine.

:func:`summarize` is a pure function of the parsed records (each with the kernels it
launched, when measured), the kernels that ran outside any library call, and the program's
wall time. Rows group the calls by the keys in ``by`` (:data:`BY_KEYS`: ``routine``,
``shape``, ``op``, ``line``); the GPU time of a row is that of the kernels its calls launched
themselves, so the rows add up without double counting. What each column and line means:
docs/tracing-programs.md, "The summary" and "--by".
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Sequence

__all__ = ["BY_KEYS", "SIZE_ARGS", "SummaryRow", "Summary", "summarize", "parse_by", "shape_of",
           "short_routine"]

#: Grouping keys accepted by ``--by`` (comma-separated).
BY_KEYS = ("routine", "shape", "op", "line")
#: Arguments that make up a call's "shape" (in this order when present).
SIZE_ARGS = ("m", "n", "k", "nrhs", "batchSize", "batchCount", "lda")
_NO_OP = "(no torch op)"
_NO_LINE = "(no Python line)"


def parse_by(text: str) -> tuple[str, ...]:
    """Parse a ``--by`` value: comma-separated keys from :data:`BY_KEYS`.

    Parameters
    ----------
    text : str
        E.g. ``"routine"``, ``"routine,shape"``, ``"op"``, ``"line"``.

    Returns
    -------
    tuple of str
        The keys in canonical order, ``routine`` always included.

    Raises
    ------
    ValueError
        For an empty value, an unknown key or a key given twice.

    Examples
    --------
    >>> parse_by("shape,routine")
    ('routine', 'shape')
    >>> parse_by("op")
    ('routine', 'op')
    """
    keys = [k.strip() for k in str(text).split(",")]
    if not text or any(not k for k in keys):
        raise ValueError(f"expected comma-separated keys from {', '.join(BY_KEYS)}, got {text!r}")
    bad = [k for k in keys if k not in BY_KEYS]
    if bad:
        raise ValueError(f"unknown --by key {bad[0]!r}; choose from {', '.join(BY_KEYS)}")
    twice = sorted({k for k in keys if keys.count(k) > 1})
    if twice:
        raise ValueError(f"--by key {twice[0]!r} given twice")
    return tuple(k for k in BY_KEYS if k in keys or k == "routine")


def shape_of(args: dict) -> str:
    """The size arguments of a call as text: ``"n=256 nrhs=4 lda=256"`` (``"-"`` if none).

    Parameters
    ----------
    args : dict
        A call's typed arguments (``ApiCall.args`` / ``values()``).

    Returns
    -------
    str

    Examples
    --------
    >>> shape_of({"uplo": "LOWER", "n": 256, "nrhs": 4, "lda": 256, "ldb": 256})
    'n=256 nrhs=4 lda=256'
    """
    parts = [f"{k}={args[k]}" for k in SIZE_ARGS if k in args]
    return " ".join(parts) or "-"


@dataclass
class SummaryRow:
    """One row: a routine (and shape / op / line, per ``by``) with its calls and GPU time.

    ``total_ms`` / ``mean_ms`` / ``max_ms`` are ``None`` without GPU times;
    ``pct_all`` is the share of all GPU time (library + outside), ``pct_library``
    of the library calls' GPU time.
    """

    key: dict
    library: str
    calls: int
    total_ms: float | None = None
    mean_ms: float | None = None
    max_ms: float | None = None
    pct_all: float | None = None
    pct_library: float | None = None

    def to_dict(self) -> dict:
        return {**self.key, "library": self.library, "calls": self.calls,
                "total_ms": self.total_ms, "mean_ms": self.mean_ms, "max_ms": self.max_ms,
                "pct_all": self.pct_all, "pct_library": self.pct_library}


@dataclass
class Summary:
    """Result of :func:`summarize`; render with :meth:`renderable`, serialise with :meth:`to_dict`.

    Attributes
    ----------
    by : tuple of str           grouping keys
    rows : list[SummaryRow]     sorted by GPU time (then calls), largest first
    timed : bool                GPU times are known
    library_ms, outside_ms, total_ms : float | None
                                GPU ms in library calls / outside them (ATen and other) / all
    outside_kernels : int       GPU activities outside any library call
    attributed_kernels : int    GPU activities launched by the library calls counted
    unattributed_library_kernels : int  activities outside every call but named like
                                cuSOLVER / cuBLAS kernels
    calls : int                 library calls counted
    setup_calls : int           setup calls left out (handles, streams, params)
    wall_s : float | None       the program's wall time (profiled run)
    wall_s_unprofiled : float | None  wall time of a run without the profiler (``--overhead``)
    why_no_times : str | None   why there are no GPU times
    """

    by: tuple
    rows: list[SummaryRow]
    timed: bool
    library_ms: float | None = None
    outside_ms: float | None = None
    total_ms: float | None = None
    outside_kernels: int = 0
    calls: int = 0
    setup_calls: int = 0
    wall_s: float | None = None
    wall_s_unprofiled: float | None = None
    why_no_times: str | None = None
    notes: list[str] = field(default_factory=list)
    attributed_kernels: int = 0
    unattributed_library_kernels: int = 0

    def to_dict(self) -> dict:
        """JSON-ready dict (the ``summary`` key of a trace JSON).

        Returns
        -------
        dict

        Examples
        --------
        >>> summarize([], by=("routine",)).to_dict()["rows"]
        []
        """
        return {"by": list(self.by), "timed": self.timed, "calls": self.calls,
                "setup_calls": self.setup_calls, "library_gpu_ms": self.library_ms,
                "outside_gpu_ms": self.outside_ms, "outside_kernels": self.outside_kernels,
                "attributed_kernels": self.attributed_kernels,
                "unattributed_library_kernels": self.unattributed_library_kernels,
                "total_gpu_ms": self.total_ms, "wall_s": self.wall_s,
                "wall_s_unprofiled": self.wall_s_unprofiled,
                "why_no_times": self.why_no_times,
                "rows": [r.to_dict() for r in self.rows]}

    def renderable(self, *, title: str = "Summary", max_rows: int | None = 40):
        """A rich renderable: the table, then the outside / wall-time lines.

        Parameters
        ----------
        title : str
        max_rows : int or None
            Rows shown (the rest are counted in one line); ``None``: all.

        Returns
        -------
        rich.console.Group
        """
        from rich.console import Group
        from rich.table import Table
        from rich.text import Text

        t = Table(show_edge=False, pad_edge=False)
        t.add_column("library")
        for k in self.by:
            t.add_column(k, overflow="fold")
        t.add_column("calls", justify="right")
        if self.timed:
            for name in ("total GPU ms", "mean ms", "max ms", "% all GPU", "% library"):
                t.add_column(name, justify="right")
        rows = self.rows if max_rows is None else self.rows[:max_rows]
        for r in rows:
            cells = [r.library] + [short_routine(r.key["routine"]) if k == "routine"
                                   else str(r.key.get(k, "")) for k in self.by]
            cells.append(str(r.calls))
            if self.timed:
                cells += [_ms(r.total_ms), _ms(r.mean_ms), _ms(r.max_ms), _pct(r.pct_all),
                          _pct(r.pct_library)]
            t.add_row(*(Text(c) for c in cells))
        parts: list = [Text(f"{title}: calls per {', '.join(self.by)}", style="bold"), t]
        if len(rows) < len(self.rows):
            parts.append(Text(f"… {len(self.rows) - len(rows)} more rows (all of them in the JSON)",
                              style="dim"))
        if not self.rows:
            parts.append(Text("no cuSOLVER / cuBLAS call", style="italic"))
        if self.timed:
            parts.append(Text(
                f"GPU time: {_ms(self.library_ms)} ms in library calls ({self.attributed_kernels} "
                f"kernels), {_ms(self.outside_ms)} ms outside any library call (ATen and other, "
                f"{self.outside_kernels} kernels), {_ms(self.total_ms)} ms in all"))
            u = self.unattributed_library_kernels
            parts.append(Text(f"library kernels outside every logged call: {u}" + (
                " (named like cuSOLVER / cuBLAS kernels: cuBLASLt, which is not logged, or an "
                "attribution that failed)" if u else ""), style="yellow" if u else ""))
        else:
            parts.append(Text(f"no GPU times: {self.why_no_times or 'not measured'}",
                              style="yellow"))
        parts.append(Text(_wall_text(self.wall_s, self.wall_s_unprofiled)))
        if self.setup_calls:
            parts.append(Text(f"({self.setup_calls} setup calls not counted: handles, streams, "
                              f"params)", style="dim"))
        for n in self.notes:
            parts.append(Text("note: " + n, style="yellow"))
        return Group(*parts)


_PREFIXES = ("cusolverDn", "cublas")


def short_routine(function: str) -> str:
    """A routine's name without its library prefix, as the summary table shows it
    (next to a ``library`` column): ``cusolverDnXpotrs`` -> ``Xpotrs``,
    ``cublasDtrsm_v2_64`` -> ``Dtrsm_v2_64``.

    Parameters
    ----------
    function : str

    Returns
    -------
    str

    Examples
    --------
    >>> short_routine("cusolverDnXpotrf_bufferSize"), short_routine("cublasSetStream_v2")
    ('Xpotrf_bufferSize', 'SetStream_v2')
    """
    for p in _PREFIXES:
        if function.startswith(p) and len(function) > len(p):
            return function[len(p):]
    return function


def _ms(v: float | None) -> str:
    return "-" if v is None else f"{v:.4f}"


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{v:.1f}%"


def _wall_text(wall: float | None, unprofiled: float | None) -> str:
    if wall is None:
        return "wall time: not known (a captured log)"
    text = f"wall time: {wall:.3f} s"
    if unprofiled is not None:
        over = (wall / unprofiled - 1.0) * 100.0 if unprofiled > 0 else float("nan")
        text = (f"wall time: {wall:.3f} s with the profiler, {unprofiled:.3f} s without "
                f"(profiling overhead {over:+.0f}%)")
    return text


def _key(r, by: Sequence[str]) -> dict:
    key = {"routine": r.function}
    if "shape" in by:
        key["shape"] = shape_of(r.values())
    if "op" in by:
        key["op"] = r.op or _NO_OP
    if "line" in by:
        where = getattr(r, "where", None)
        key["line"] = f"{where}  {r.code}" if where and r.code else (where or _NO_LINE)
    return key


def summarize(records: Iterable, *, by: Sequence[str] = ("routine",),
              outside_kernels: Sequence | None = None,
              wall_s: float | None = None, wall_s_unprofiled: float | None = None,
              include_setup: bool = False, why_no_times: str | None = None) -> Summary:
    """Build the summary table from parsed records and their kernel attribution.

    Parameters
    ----------
    records : iterable of ApiCall
        Every record, flat (``ParsedLog.records``), in any order. A record's
        ``kernels`` (the activity events it launched itself) give its GPU time; ``None``
        means not measured.
    by : sequence of str
        Grouping keys (see :func:`parse_by`); ``routine`` is always used.
    outside_kernels : sequence of Event, optional
        GPU activities launched outside any library call (torch's own); ``None`` when not
        measured.
    wall_s, wall_s_unprofiled : float, optional
        The program's wall time with and without the profiler.
    include_setup : bool
        Also count setup calls (handles, streams, params, math mode).
    why_no_times : str, optional
        Shown when no record has GPU times.

    Returns
    -------
    Summary
        Timed when at least one counted record has ``kernels`` measured, or when there is
        no counted record and ``outside_kernels`` was measured (a MAGMA-only program).

    Raises
    ------
    ValueError
        If ``by`` holds an unknown key.

    Examples
    --------
    >>> from cusolver_trace.tracing import parse_log
    >>> log = parse_log("[2026-11-30 02:17:18][cusolverDn][1][Api][cusolverDnXpotrf] n=8 lda=8")
    >>> s = summarize(log.records)
    >>> (s.rows[0].key, s.rows[0].calls, s.timed)
    ({'routine': 'cusolverDnXpotrf'}, 1, False)
    """
    by = tuple(k for k in BY_KEYS if k in set(by) | {"routine"})
    unknown = set(by) - set(BY_KEYS)
    if unknown:
        raise ValueError(f"unknown summary key(s): {sorted(unknown)}")
    rows: dict[tuple, dict] = {}
    setup = 0
    counted = 0
    attributed = 0
    timed = False
    for r in records:
        if r.kind == "setup" and not include_setup:
            setup += 1
            attributed += len(r.kernels or ())
            continue
        counted += 1
        key = _key(r, by)
        row = rows.setdefault(tuple(key.items()), {"key": key, "library": r.library, "calls": 0,
                                                   "times": []})
        row["calls"] += 1
        if r.kernels is not None:
            timed = True
            attributed += len(r.kernels)
            row["times"].append(sum(k.dur_us or 0.0 for k in r.kernels) / 1e3)
    if not timed and counted == 0 and outside_kernels is not None and why_no_times is None:
        # no library call at all, but the kernels were measured: a path that logs nothing
        # (MAGMA, ATen) still has its GPU time, all of it outside library calls
        timed = True
    library_ms = sum(sum(r["times"]) for r in rows.values()) if timed else None
    outside_ms = None
    n_out = stray = 0
    if timed:
        from .kernels import classify_kernel

        outside = list(outside_kernels or [])
        outside_ms = sum(a.dur_us or 0.0 for a in outside) / 1e3
        n_out = len(outside)
        stray = sum(1 for a in outside if classify_kernel(a.name) in ("cuSOLVER", "cuBLAS"))
    total = None if library_ms is None else library_ms + (outside_ms or 0.0)
    out_rows = []
    for r in rows.values():
        row = SummaryRow(r["key"], r["library"], r["calls"])
        if timed:
            times = r["times"]
            row.total_ms = sum(times)
            row.mean_ms = row.total_ms / r["calls"]
            row.max_ms = max(times, default=0.0)
            row.pct_all = 100.0 * row.total_ms / total if total else 0.0
            row.pct_library = 100.0 * row.total_ms / library_ms if library_ms else 0.0
        out_rows.append(row)
    out_rows.sort(key=lambda r: (-(r.total_ms or 0.0), -r.calls, tuple(str(v) for v in r.key.values())))
    why = None if timed else (why_no_times or "no call has measured kernels")
    return Summary(by, out_rows, timed, library_ms, outside_ms, total, n_out, counted, setup,
                   wall_s, wall_s_unprofiled, why, attributed_kernels=attributed if timed else 0,
                   unattributed_library_kernels=stray)
