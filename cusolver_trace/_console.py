"""The CLI's output: one rich Console factory, the width it honours, tables that fit it, the
``--format`` of tabular output, and progress lines on stderr.

Every command prints through :func:`console`; every table of a command goes through
:func:`emit`, so that each one honours the terminal's width and ``COLUMNS`` the same way
(:func:`fit`: columns that are all "—" dropped, numbers never cut, a table too wide for the
width split into column groups that repeat the key columns), and ``--format csv|md|json``
gives the same cells as plain records. Nothing here imports torch.
"""
from __future__ import annotations

import csv
import io
import json
import os
import re
import shutil
import sys
import threading
import time

__all__ = ["console", "width", "FORMATS", "emit", "fit", "records", "render_records",
           "progress", "Progress", "EXIT_BROKEN_PIPE"]

#: The ``--format`` choices of tabular output.
FORMATS = ("table", "csv", "md", "json")
#: The width of output that goes to neither a terminal nor ``COLUMNS``: a file, a pipe, CI.
PIPED_WIDTH = 100
#: What a cell holds where there is nothing to say (a time not measured, a ratio withheld).
DASH = "—"


def width(stream=None) -> int:
    """The width output is fitted to: ``COLUMNS`` when set (a positive integer), else the
    terminal's width when ``stream`` (default stdout) is a terminal, else :data:`PIPED_WIDTH`.

    Examples
    --------
    >>> import os
    >>> os.environ["COLUMNS"] = "72"
    >>> width()
    72
    >>> del os.environ["COLUMNS"]
    """
    columns = _columns()
    if columns is not None:
        return columns
    if _is_tty(stream or sys.stdout):
        return shutil.get_terminal_size((PIPED_WIDTH, 24)).columns
    return PIPED_WIDTH


def console(*, stderr: bool = False, piped_width: int = 200, **kw):
    """Rich console on stdout (or stderr), as wide as ``COLUMNS`` when it is set, else the
    terminal, else ``piped_width`` (a file, a pipe, CI: 200 keeps trace's call lines whole and
    greppable; the CLI's tables use :data:`PIPED_WIDTH`).

    Examples
    --------
    >>> console(width=60).width
    60
    """
    stream = sys.stderr if stderr else sys.stdout
    if "width" not in kw:
        if _columns() is not None or _is_tty(stream):
            kw["width"] = width(stream)
        else:
            kw["width"] = piped_width
    kw.setdefault("_environ", environ())
    return _console_class()(stderr=stderr, **kw)


def _columns() -> int | None:
    """``COLUMNS`` when it is a positive ASCII integer, else None (``int`` refuses ``"¹"``,
    which ``str.isdigit`` accepts)."""
    text = os.environ.get("COLUMNS", "").strip()
    return int(text) if text.isascii() and text.isdigit() and int(text) > 0 else None


def environ():
    """What a rich Console is given as its environment (its ``_environ``): ``os.environ``, or
    a copy without a terminal size that rich would fail on. rich reads ``COLUMNS``,
    ``LINES``, ``JUPYTER_COLUMNS`` and ``JUPYTER_LINES`` with ``str.isdigit`` and then
    ``int``, which raises for a digit such as ``"¹"``: such a size is dropped (as if unset)
    rather than failing every command.

    Examples
    --------
    >>> import os
    >>> os.environ["COLUMNS"] = "\u00b9"
    >>> "COLUMNS" in environ()
    False
    >>> del os.environ["COLUMNS"]
    >>> environ() is os.environ
    True
    """
    bad = [k for k in _SIZES if (v := os.environ.get(k)) is not None
           and v.isdigit() and not v.isascii()]
    if not bad:
        return os.environ
    return {k: v for k, v in os.environ.items() if k not in bad}


_SIZES = ("COLUMNS", "LINES", "JUPYTER_COLUMNS", "JUPYTER_LINES")


def _is_tty(stream) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


#: Exit status when the reader of the output goes away (``cusolver-trace … | head -1``):
#: 128 + SIGPIPE, what a shell reports for a program killed by it; never 1, which means
#: MISMATCH.
EXIT_BROKEN_PIPE = 141

_CLASS = []


def _console_class():
    """rich's Console, except that a broken pipe leaves with :data:`EXIT_BROKEN_PIPE`
    (rich's own handler exits with status 1, the CLI's MISMATCH)."""
    if not _CLASS:
        from rich.console import Console

        class PipeAwareConsole(Console):
            def on_broken_pipe(self) -> None:
                # as rich does: stdout to devnull so that the interpreter's final flush
                # raises nothing more, then leave
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, sys.stdout.fileno())
                raise SystemExit(EXIT_BROKEN_PIPE)

        _CLASS.append(PipeAwareConsole)
    return _CLASS[0]


# --------------------------------------------------------------------------- tables
_NUMBER = re.compile(r"[~]?[−+-]?(\d[\d,]*\.?\d*|\.\d+)([eE][+-]?\d+)?(%|x|×|~| ms)?")


def _plain(cell) -> str:
    """A cell's text without markup."""
    from rich.text import Text

    if isinstance(cell, Text):
        return cell.plain
    if isinstance(cell, str):
        return Text.from_markup(cell).plain
    return str(cell)


def records(table) -> tuple[list[str], list[list[str]]]:
    """The headers and the rows of a rich ``Table`` as plain text (markup removed).

    Examples
    --------
    >>> from rich.table import Table
    >>> t = Table("n", "status")
    >>> t.add_row("64", "[green]ok[/]")
    >>> records(t)
    (['n', 'status'], [['64', 'ok']])
    """
    heads = [_plain(c.header) for c in table.columns]
    cols = [[_plain(x) for x in c.cells] for c in table.columns]
    rows = [list(r) for r in zip(*cols)] if cols else []
    return heads, rows


def _is_number(text: str) -> bool:
    return bool(_NUMBER.fullmatch(text.strip()))


def _empty(text: str) -> bool:
    return text.strip() in ("", DASH, "-")


def fit(table, width: int, *, keep: int | None = None) -> list:
    """``table`` (a rich ``Table``) made to fit ``width`` columns, as a list of tables.

    * Columns whose every cell is "—" or empty are dropped (times a CPU run cannot have),
      unless the table has no rows.
    * A column of numbers never wraps or cuts a number (``no_wrap``; ``overflow="fold"``
      where even alone it is wider than the width); other columns wrap at spaces and fold a
      word that is longer than the column, never cutting it with "…".
    * A table still too wide is split into several tables, each with the first ``keep``
      columns (the key columns; default: the leading columns that hold no numbers, at most
      four) and as many of the others as fit.

    Examples
    --------
    >>> from rich.table import Table
    >>> t = Table("dtype", "n", "GPU ms", "median ms", title="t")
    >>> t.add_row("float64", "64", "—", "12.3456")
    >>> [[c.header for c in part.columns] for part in fit(t, 80)]
    [['dtype', 'n', 'median ms']]
    """
    from rich import box
    from rich.console import Console
    from rich.table import Table

    heads = [c.header for c in table.columns]
    cols = [list(c.cells) for c in table.columns]
    plain = [[_plain(x) for x in col] for col in cols]
    nrows = len(plain[0]) if plain else 0
    shown = [i for i in range(len(cols)) if nrows == 0 or not all(_empty(t) for t in plain[i])]
    numeric = {i for i in shown if any(not _empty(t) for t in plain[i])
               and all(_empty(t) or _is_number(t) for t in plain[i])}
    if keep is None:
        keep = 0
        for i in shown:
            if i in numeric and _plain(heads[i]) not in ("n", "batch", "nrhs"):
                break
            keep += 1
            if keep == 4:
                break
    keys, rest = shown[:keep], shown[keep:]
    # measured unconstrained: a table is never measured wider than its console
    measure = Console(width=100_000, file=io.StringIO(), color_system=None, _environ=environ())

    def build(idx, first=True, titled=True):
        t = Table(title=None if not titled else table.title if first else (
                      f"{_plain(table.title)} (continued)" if table.title else None),
                  caption=table.caption if first and titled else None, box=box.SIMPLE_HEAD,
                  show_edge=False, pad_edge=False, padding=(0, 1, 0, 0), expand=False,
                  title_justify="left", caption_justify="left")
        for i in idx:
            src = table.columns[i]
            t.add_column(heads[i], justify=src.justify if src.justify != "left" or i not in numeric
                         else "right", no_wrap=i in numeric, overflow="fold",
                         min_width=max(len(x) for x in plain[i]) if i in numeric and plain[i] else None)
        for r in range(nrows):
            t.add_row(*(cols[i][r] for i in idx))
        return t

    def fits(idx) -> bool:   # whole: no cell wrapped (rich folds text only past this)
        return measure.measure(build(idx, titled=False)).maximum <= width   # titles wrap

    if fits(shown) or not rest:
        return [build(shown)]
    narrowest = min(rest, key=lambda i: measure.measure(build([i], titled=False)).maximum)
    while len(keys) > 1 and not fits(keys + [narrowest]):   # a very narrow terminal: fewer
        keys, rest = keys[:-1], keys[-1:] + rest             # key columns repeated
    groups, current = [], []
    for i in rest:
        if current and not fits(keys + current + [i]):
            groups.append(current)
            current = []
        current.append(i)
    groups.append(current)
    return [build(keys + g, first=(k == 0)) for k, g in enumerate(groups)]


def render_records(table, fmt: str) -> str:
    """A rich ``Table`` as ``csv``, ``md`` (a Markdown table) or ``json`` (a list of objects,
    numbers as numbers, "—" as null) text.

    Examples
    --------
    >>> from rich.table import Table
    >>> t = Table("n", "ms", "note")
    >>> t.add_row("64", "1.5", "—")
    >>> print(render_records(t, "md"))
    | n | ms | note |
    |---|---|---|
    | 64 | 1.5 | — |
    >>> render_records(t, "json")
    '[{"n": 64, "ms": 1.5, "note": null}]'
    """
    heads, rows = records(table)
    if fmt == "csv":
        out = io.StringIO()
        w = csv.writer(out, lineterminator="\n")
        w.writerow(heads)
        w.writerows(rows)
        return out.getvalue().rstrip("\n")
    if fmt == "md":
        def esc(x):
            return x.replace("|", "\\|").replace("\n", " ")
        lines = ["| " + " | ".join(esc(h) for h in heads) + " |",
                 "|" + "---|" * len(heads)]
        lines += ["| " + " | ".join(esc(c) for c in r) + " |" for r in rows]
        return "\n".join(lines)
    if fmt == "json":
        def value(x):
            s = x.strip()
            if _empty(s):
                return None
            if re.fullmatch(r"[+-]?(\d+)", s):
                return int(s)
            if re.fullmatch(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?", s):
                return float(s)
            return s
        return json.dumps([{h: value(c) for h, c in zip(heads, r)} for r in rows],
                          ensure_ascii=False)
    raise ValueError(f"unknown format {fmt!r}; choose from {', '.join(FORMATS)}")


def emit(con, table, fmt: str = "table") -> None:
    """Print ``table`` (a rich ``Table``) on ``con`` as ``fmt``: ``table`` fitted to the
    console's width (:func:`fit`), else :func:`render_records` text on stdout (a table on
    stderr stays a table)."""
    if fmt == "table":
        for k, part in enumerate(fit(table, con.width)):
            if k:
                con.print()
            con.print(part)
        return
    text = render_records(table, fmt)
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


# --------------------------------------------------------------------------- progress
#: A job shows its progress once it has run this long (s).
PROGRESS_AFTER_S = 2.0
#: On a stream that is not a terminal, a line at least this often while a step runs (s).
HEARTBEAT_S = 15.0


class Progress:
    """A progress line on stderr for work that takes more than :data:`PROGRESS_AFTER_S`.

    On a terminal one line is rewritten in place (and cleared at the end); elsewhere (a
    file, CI) a line is written when the first :data:`PROGRESS_AFTER_S` have passed, at
    each later step, and every :data:`HEARTBEAT_S` during a long step. Work that ends
    sooner prints nothing. Use as a context manager, calling :meth:`step` before each part.

    Examples
    --------
    >>> import io
    >>> out = io.StringIO()
    >>> with Progress("compare", total=2, stream=out, after=0.0) as p:
    ...     p.step("n=64")
    ...     p.step("n=128")
    >>> print(out.getvalue().splitlines()[0].split(" (")[0])
    compare: 1/2 n=64
    """

    def __init__(self, label: str, total: int | None = None, *, stream=None,
                 after: float | None = None, heartbeat: float | None = None):
        self.label, self.total = label, total
        self.stream = stream if stream is not None else sys.stderr
        self.after = PROGRESS_AFTER_S if after is None else after
        self.heartbeat = HEARTBEAT_S if heartbeat is None else heartbeat
        self.tty = _is_tty(self.stream)
        self.index, self.what = 0, ""
        self.t0 = time.monotonic()
        self.shown = False
        self._last = 0.0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = None

    def __enter__(self):
        self.t0 = time.monotonic()
        if self.after == float("inf"):   # switched off
            return self
        self._thread = threading.Thread(target=self._run, name="cusolver-trace-progress",
                                        daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        with self._lock:
            if self.shown and self.tty:
                self._write("\r\033[K")
            elif self.shown and exc[0] is None:   # not "done" when it was cut short
                self._write(f"{self.label}: done in {self._elapsed()}\n")
            elif self.shown:
                self._write(f"{self.label}: stopped after {self._elapsed()}\n")
        return False

    def step(self, what: str = "") -> None:
        """Start the next part of the work, described by ``what``."""
        with self._lock:
            self.index += 1
            self.what = what
            if self.shown and not self.tty:
                self._line()
        if self.after <= 0 and not self.shown:
            with self._lock:
                self._line()

    def _elapsed(self) -> str:
        s = time.monotonic() - self.t0
        return f"{s:.0f} s" if s < 120 else f"{s / 60:.1f} min"

    def _text(self) -> str:
        count = f"{self.index}/{self.total}" if self.total else f"{self.index}"
        return f"{self.label}: {count} {self.what} ({self._elapsed()})".replace("  ", " ")

    def _write(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):   # a closed stderr: progress is not worth an error
            pass

    def _line(self) -> None:
        self.shown = True
        self._last = time.monotonic()
        if self.tty:
            self._write("\r\033[K" + self._text()[:max(width(self.stream) - 1, 20)])
        else:
            self._write(self._text() + "\n")

    def clear(self) -> None:
        """Erase the line on a terminal before other output is printed (it is drawn again at
        the next tick)."""
        with self._lock:
            if self.shown and self.tty:
                self._write("\r\033[K")

    def _run(self) -> None:
        if self._stop.wait(self.after):
            return
        while True:
            with self._lock:
                due = self.tty or not self.shown or time.monotonic() - self._last >= self.heartbeat
                if due and self.index > 0:
                    self._line()
            if self._stop.wait(0.5 if self.tty else 1.0):
                return


def progress(label: str, total: int | None = None, **kw) -> Progress:
    """A :class:`Progress` for ``label`` (a context manager)."""
    return Progress(label, total, **kw)
