"""Parse cuSOLVER / cuBLAS API logs into API-call :class:`~.events.Event` s (``ApiCall``).

The two loggers (enabled by ``CUSOLVERDN_LOG_LEVEL=5`` and ``CUBLAS_LOGINFO_DBG=1``)
write different formats:

cuSOLVER, one line per call::

    [2026-11-30 02:17:18][cusolverDn][423][Api][cusolverDnXpotrs] handle=0x2d48d7a0 uplo=0 n=256 ...

cuBLAS, a header line, one indented line per argument, then three trailer lines::

    I! cuBLAS (v13.1.0) function cublasStatus_t cublasDtrsm_v2_64(cublasHandle_t, ...) called:
    i!  side: type=cublasSideMode_t; val=CUBLAS_SIDE_LEFT(0)
    i!  m: type=long; val=256
    i! Time: 2026-11-30T02:17:18 elapsed from start 0.066667 minutes or 4.000000 seconds
    i!Process=423; Thread=140627230728512; GPU=0; Handle=POINTER (IN HEX:0x0x2d4d3b50); ...
    i! COMPILED WITH: GNU GCC/G++ / 8.5.0 20210514 (Red Hat 8.5.0-26)

Anything else is the traced program's own output, except section markers
``#### <label>`` / ``#### end <label>`` which label the records between them. Records are
recognised strictly, and a cuBLAS record made inside a cuSOLVER call is nested under it:
docs/reading-a-trace.md, "How the API part is obtained" ("Strict records", "Nesting rule").
A value that cannot be converted (an integer longer than Python's int-string limit) is kept
as the text logged; :func:`load_log` refuses only files that are not text logs at all
(:class:`LogReadError`).
"""
from __future__ import annotations

import gzip
import io
import math
import os
import re
import zlib
from dataclasses import dataclass
from typing import Any, Iterator

from ._hook import call_kind
from .events import ApiCall, Pointer

__all__ = ["ApiCall", "LOG_HEADER", "OutputLine", "LogReadError", "ParsedLog", "Pointer",
           "parse_log", "load_log", "read_log", "call_kind", "render_enum"]


class LogReadError(ValueError):
    """A file given as a log cannot be read as one: binary (non-text) content,
    or gzip data that is damaged, truncated or not gzip at all. The message is
    one line that names the file."""


# ---------------------------------------------------------------------------
# One table for enum renderings: argument name -> (cuBLAS enum-name prefix,
# names by integer value).  cuSOLVER prints these as integers (uplo=0), cuBLAS
# as names with the value in parentheses (CUBLAS_FILL_MODE_LOWER(0)).
_ENUMS: dict[str, tuple[str, tuple[str, ...]]] = {
    "uplo": ("CUBLAS_FILL_MODE_", ("LOWER", "UPPER", "FULL")),
    "side": ("CUBLAS_SIDE_", ("LEFT", "RIGHT")),
    "trans": ("CUBLAS_OP_", ("N", "T", "C")),
    "diag": ("CUBLAS_DIAG_", ("NON_UNIT", "UNIT")),
}
_ENUM_ALIASES = {"transa": "trans", "transb": "trans", "transA": "trans",
                 "transB": "trans", "fillMode": "uplo"}


def render_enum(arg: str, value: Any) -> Any:
    """Render an enum argument the way this package shows it.

    ``uplo`` 0/1 (cublasFillMode_t) -> ``"LOWER"``/``"UPPER"``; ``side`` ->
    ``"LEFT"``/``"RIGHT"``; ``trans``/``transa``/``transb`` -> ``"N"``/``"T"``/``"C"``;
    ``diag`` -> ``"NON_UNIT"``/``"UNIT"``.  Accepts the integer cuSOLVER prints or
    the enum name cuBLAS prints (``CUBLAS_FILL_MODE_LOWER``).  Other arguments
    and unknown values are returned unchanged.
    """
    spec = _ENUMS.get(_ENUM_ALIASES.get(arg, arg))
    if spec is None:
        return value
    prefix, names = spec
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < len(names):
        return names[value]
    if isinstance(value, str) and value.startswith(prefix):
        return value[len(prefix):]
    return value


@dataclass
class OutputLine:
    """A line of the traced program's own output (not a log record)."""

    line: int
    text: str
    section: str | None = None


@dataclass
class ParsedLog:
    """Result of :func:`parse_log`.

    Attributes
    ----------
    calls : list[ApiCall]   top-level calls in log order; cuBLAS calls issued by a
                            cuSOLVER call are in its ``children`` instead
    records : list[ApiCall] every record in log order (flat); ``correlation`` is the index
    output : list[OutputLine]  the program's own lines, in order
    messages : list[str]    cuSOLVER logger lines that are not API records
                            (``[Error]``, ``[Trace]``, ``[Hint]`` ...)
    sections : list[str]    section labels in order of appearance
    ordered : bool          both libraries in one stream (so nesting was possible)
    """

    calls: list[ApiCall]
    records: list[ApiCall]
    output: list[OutputLine]
    messages: list[str]
    sections: list[str]
    ordered: bool

    def section(self, label: str) -> "ParsedLog":
        """The part of the log inside section ``label``.

        Raises ``KeyError`` (listing the known labels) if there is no such section.
        """
        if label not in self.sections:
            shown = ", ".join(repr(s) for s in self.sections[:3])
            more = f" and {len(self.sections) - 3} more" if len(self.sections) > 3 else ""
            known = f"{len(self.sections)} sections: {shown}{more}" if self.sections else \
                "it has no sections"
            raise KeyError(f"no section {label!r} in this log ({known}; the tree without "
                           "--section names them all)")
        return ParsedLog(
            calls=[c for c in self.calls if c.section == label],
            records=[r for r in self.records if r.section == label],
            output=[o for o in self.output if o.section == label],
            messages=list(self.messages),
            sections=[label],
            ordered=self.ordered,
        )

    @property
    def libraries(self) -> set[str]:
        return {r.library for r in self.records}


# ---------------------------------------------------------------------------
# Record grammar (strict).
_SOLVER_RE = re.compile(
    r"^\[(?P<time>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?)\]\[cusolverDn\]"
    r"\[(?P<pid>\d+)\]\[(?P<tag>[A-Za-z]+)\]\[(?P<name>\w+)\](?: (?P<rest>.*))?$"
)
_SOLVER_ARGS_RE = re.compile(r"^(?:\w+=\S+)(?: \w+=\S+)*$")
_BLAS_HEAD_RE = re.compile(
    r"^I! cuBLAS \(v[\d.]+\) function (?P<ret>\w+) (?P<name>cublas\w+)\((?P<sig>[^()]*)\) called:$"
)
_BLAS_ARG_RE = re.compile(r"^i!  (?P<name>\w+): type=(?P<type>[^;]*); val=(?P<val>.*)$")
_BLAS_TIME_RE = re.compile(r"^i! Time: (?P<time>\S+) elapsed from start .*$")
_BLAS_PROC_RE = re.compile(r"^i!Process=(?P<pid>\d+); Thread=\d+; GPU=-?\d+; .*$")
_BLAS_COMPILED_RE = re.compile(r"^i! COMPILED WITH: .*$")
_BLAS_PTR_RE = re.compile(r"^POINTER \(IN HEX:(?:0x)?(?P<hex>0x[0-9a-fA-F]+|\(nil\))\)$")
_BLAS_ENUM_RE = re.compile(r"^(?P<name>[A-Z][A-Z0-9_]*)\((?P<value>-?\d+)\)$")
_HEX_RE = re.compile(r"^0x[0-9a-fA-F]+$")
_INT_RE = re.compile(r"^-?\d+$")
_FLOAT_RE = re.compile(r"^-?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?$")
_MARK_END = "#### end "
_MARK = "#### "


def _pointer(text: str) -> Pointer:
    return Pointer("0x0" if text == "(nil)" else hex(int(text, 16)))


def _int(text: str) -> int | str:
    """``int(text)``, or ``text`` itself when Python refuses the conversion (more
    digits than ``sys.get_int_max_str_digits()``): the logged value is kept."""
    try:
        return int(text)
    except ValueError:
        return text


def _scalar(text: str) -> Any:
    """Typed value of a cuSOLVER ``key=value`` token or a cuBLAS plain ``val=``.

    Pointers (hex) become :class:`Pointer`, integers ``int``, finite floats
    ``float``; anything else -- including an integer too long to convert and a
    float that overflows to infinity -- stays the logged text.
    """
    if _HEX_RE.match(text):
        return _pointer(text)
    if _INT_RE.match(text):
        return _int(text)
    if _FLOAT_RE.match(text):
        value = float(text)
        return value if math.isfinite(value) else text
    return text


def _blas_value(text: str) -> Any:
    m = _BLAS_PTR_RE.match(text)
    if m:
        return _pointer(m.group("hex"))
    m = _BLAS_ENUM_RE.match(text)
    if m:
        return m.group("name")
    return _scalar(text)


class _Values(dict):
    """Memo of typed argument values by (argument, logged text): a log repeats the same
    sizes, enums and handles thousands of times. Cleared when it grows large (pointers
    to fresh buffers are mostly new)."""

    def get_value(self, name: str, text: str, parse) -> Any:
        key = (name, text)
        try:
            return self[key]
        except KeyError:
            pass
        if len(self) > 50_000:
            self.clear()
        value = parse(text)
        if name in _ENUMS or name in _ENUM_ALIASES:
            value = render_enum(name, value)
        self[key] = value
        return value


def _lines(source) -> Iterator[str]:
    if isinstance(source, str):
        yield from source.splitlines()
    else:
        for line in source:
            yield line.rstrip("\r\n")


def parse_log(source, *, nest: bool = True) -> ParsedLog:
    """Parse a log into records, program output and sections.

    Parameters
    ----------
    source : str or iterable of str
        The whole text, or lines (an open text file streams: it is read once,
        line by line). Either both loggers on one stream (records in call order)
        or a single logger's file.
    nest : bool
        Place cuBLAS calls under the cuSOLVER call that issued them
        (docs/reading-a-trace.md, "Nesting rule"). Only applies when both libraries appear
        in the one stream; separate-file logs are not mutually ordered.

    Returns
    -------
    ParsedLog

    Examples
    --------
    >>> log = parse_log("[2026-11-30 02:17:18][cusolverDn][1][Api][cusolverDnXpotrf] uplo=0 n=8")
    >>> r = log.records[0]
    >>> (r.function, r.library, r.args, r.line)
    ('cusolverDnXpotrf', 'cuSOLVER', {'uplo': 'LOWER', 'n': 8}, 1)
    """
    it = iter(_lines(source))
    records: list[ApiCall] = []
    output: list[OutputLine] = []
    messages: list[str] = []
    sections: list[str] = []
    open_sections: list[str] = []
    breaks_before: list[bool] = []  # per record: a non-record line came right before it
    brk = True
    values = _Values()
    section = None
    lineno = 0
    pending: str | None = None  # a line read ahead (the end of a cuBLAS block)

    def record(call: ApiCall) -> None:
        nonlocal brk
        call.correlation = len(records)
        records.append(call)
        breaks_before.append(brk)
        brk = False

    while True:
        if pending is not None:
            line, pending = pending, None
        else:
            line = next(it, None)
            if line is None:
                break
        lineno += 1
        first = line[:1]
        if first == "[":
            m = _SOLVER_RE.match(line)
            if m:
                rest = m.group("rest") or ""
                if m.group("tag") == "Api" and m.group("name").startswith("cusolver") and (
                        rest == "" or _SOLVER_ARGS_RE.match(rest)):
                    args = {}
                    for tok in rest.split():
                        k, v = tok.split("=", 1)
                        args[k] = values.get_value(k, v, _scalar)
                    record(ApiCall(m.group("name"), library="cuSOLVER", args=args, line=lineno,
                                   section=section, pid=_int(m.group("pid")),
                                   time=m.group("time")))
                    continue
                if m.group("tag") != "Api":
                    messages.append(line)
                    continue
        elif first == "I" and line.startswith("I! cuBLAS"):
            m = _BLAS_HEAD_RE.match(line)
            if m:
                # header, argument lines, then the Time and Process trailer lines (and
                # usually COMPILED WITH); a block that is not a well-formed record is
                # program output -- except at the end of the log, where a record cut
                # short by a crash is kept, flagged truncated
                block, args, found = [line], {}, {}
                nxt = next(it, None)
                while nxt is not None and nxt.startswith("i!  ") and (a := _BLAS_ARG_RE.match(nxt)):
                    name = a.group("name")
                    args[name] = values.get_value(name, a.group("val"), _blas_value)
                    block.append(nxt)
                    nxt = next(it, None)
                ok = True
                for key, rx in (("time", _BLAS_TIME_RE), ("pid", _BLAS_PROC_RE)):
                    if nxt is None:
                        break
                    t = rx.match(nxt)
                    if not t:
                        ok = False
                        break
                    found[key] = t.group(key)
                    block.append(nxt)
                    nxt = next(it, None)
                if ok and nxt is not None and _BLAS_COMPILED_RE.match(nxt):
                    block.append(nxt)
                    nxt = None
                pending = nxt
                if ok:
                    pid = found.get("pid")
                    record(ApiCall(m.group("name"), library="cuBLAS", args=args, line=lineno,
                                   section=section, pid=None if pid is None else _int(pid),
                                   time=found.get("time"), truncated=len(found) < 2))
                    lineno += len(block) - 1
                    continue
                for i, text in enumerate(block):  # not a record: its lines are program output
                    output.append(OutputLine(lineno + i, text, section))
                lineno += len(block) - 1
                brk = True
                continue
        elif first == "#":
            if lineno == 1 and line.startswith(_HEADER_TEXT):
                continue  # run_traced's own first line: not the program's
            if line.startswith(_MARK):
                if line.startswith(_MARK_END):
                    label = line[len(_MARK_END):]
                    if label in open_sections:
                        while open_sections and open_sections.pop() != label:
                            pass
                        section = open_sections[-1] if open_sections else None
                    else:
                        output.append(OutputLine(lineno, line, section))
                else:
                    label = line[len(_MARK):]
                    open_sections.append(label)
                    section = label
                    if label not in sections:
                        sections.append(label)
                brk = True
                continue
        output.append(OutputLine(lineno, line, section))
        brk = True

    ordered = len({r.library for r in records}) > 1
    calls = _nest(records, breaks_before) if (nest and ordered) else list(records)
    return ParsedLog(calls, records, output, messages, sections, ordered)


def _nest(records: list[ApiCall], breaks_before: list[bool]) -> list[ApiCall]:
    """Attach cuBLAS records to the cuSOLVER record that issued them (docs/reading-a-trace.md,
    "Nesting rule")."""
    owned: set[str] = set()
    for i, r in enumerate(records):
        if r.library == "cuSOLVER":
            if r.handle:
                owned.add(r.handle)
            nxt = records[i + 1] if i + 1 < len(records) else None
            if (r.name == "cusolverDnSetStream" and nxt is not None
                    and nxt.library == "cuBLAS" and not breaks_before[i + 1] and nxt.handle):
                owned.add(nxt.handle)
    know_owner = any(r.name == "cusolverDnSetStream" for r in records)
    top: list[ApiCall] = []
    parent: ApiCall | None = None
    for r, brk in zip(records, breaks_before):
        if brk:
            parent = None
        if r.library == "cuSOLVER":
            parent = r
            top.append(r)
        elif parent is not None and (not know_owner or r.handle is None or r.handle in owned):
            parent.children.append(r)
            r.parent = parent
        else:
            top.append(r)
    return top


#: Bytes that do not occur in a text log: C0 control characters other than
#: tab, newlines, vertical tab, form feed, BEL, backspace and ESC (programs print
#: ANSI colours, progress bars, bells). NUL is the classic mark of a binary file.
_BINARY_BYTES_RE = re.compile(rb"[\x00-\x06\x0e-\x1a\x1c-\x1f]")
#: C1 control characters (U+0080..U+009F, properly UTF-8 encoded): not text either.
_BINARY_CHARS_RE = re.compile("[\x80-\x9f]")
_GZIP_MAGIC = b"\x1f\x8b"
#: First bytes of a log that :func:`~.runner.run_traced` wrote (``--keep-log``): the rest of
#: that line is the command as JSON, then comes the program's stdout byte for byte. Such a
#: file is read whatever it holds (a program may print NUL bytes): it is a log by origin.
LOG_HEADER = b"#cusolver-trace-log 1: "
_HEADER_TEXT = LOG_HEADER.decode()


class _Guarded(io.RawIOBase):
    """Raw byte stream over a (possibly gzip) file that turns damaged gzip data into
    :class:`LogReadError` and, with ``text_only``, refuses binary bytes as soon as
    they are read (so ``/dev/zero`` or a huge binary file fails at once)."""

    def __init__(self, src, name: str, text_only: bool):
        super().__init__()
        self._src, self._name, self._text_only, self.offset = src, name, text_only, 0

    def readable(self) -> bool:
        return True

    def readinto(self, buf) -> int:
        try:
            data = self._src.read(len(buf))
        except (EOFError, gzip.BadGzipFile, zlib.error) as e:
            raise _gzip_error(self._name, e) from None
        if self._text_only:
            m = _BINARY_BYTES_RE.search(data)
            if m:
                raise LogReadError(
                    f"{self._name}: not a text log (binary byte 0x{data[m.start()]:02x} at "
                    f"offset {self.offset + m.start()})")
        buf[:len(data)] = data
        self.offset += len(data)
        return len(data)


def _gzip_error(name: str, e: Exception) -> LogReadError:
    """The one line for gzip data that cannot be read (``EOFError``: it ends early)."""
    if isinstance(e, EOFError):
        return LogReadError(f"{name}: truncated gzip file (the compressed data ends before its "
                            f"end marker)")
    return LogReadError(f"{name}: damaged gzip data ({e})")


def _checked_lines(fh, name: str) -> Iterator[str]:
    for n, line in enumerate(fh, 1):
        m = _BINARY_CHARS_RE.search(line)
        if m:
            raise LogReadError(f"{name}: not a text log (control character "
                               f"U+{ord(m.group()):04X} on line {n})")
        yield line


def read_log(fh, *, name: str = "log", nest: bool = True, text_only: bool = True,
             decompress: bool = True) -> ParsedLog:
    """Parse a log from an open binary file, streaming it.

    Parameters
    ----------
    fh : binary file object
        Read from its current position to the end. Bytes are decoded as UTF-8, invalid sequences
        replaced; lines end at ``\\n``, ``\\r\\n`` or ``\\r``. A file that starts with
        :data:`LOG_HEADER` (written by :func:`~.runner.run_traced`) is read as text whatever it
        holds; its header line is not program output.
    name : str
        What to call the file in error messages.
    nest : bool
        See :func:`parse_log`.
    text_only : bool
        Refuse binary content (:class:`LogReadError`). ``False`` parses whatever
        is there (the runner reads a program's stdout this way).
    decompress : bool
        Decompress gzip data (recognised by its magic bytes).

    Returns
    -------
    ParsedLog

    Raises
    ------
    LogReadError
        Binary content (with ``text_only``) or damaged gzip data.
    OSError
        If reading fails.
    """
    buffered = fh if hasattr(fh, "peek") else io.BufferedReader(fh)
    src = buffered
    if decompress and buffered.peek(2)[:2] == _GZIP_MAGIC:
        src = io.BufferedReader(gzip.GzipFile(fileobj=buffered, mode="rb"))
    try:
        if src.peek(len(LOG_HEADER))[:len(LOG_HEADER)] == LOG_HEADER:
            text_only = False  # a captured stdout: whatever the program printed is kept
    except (EOFError, gzip.BadGzipFile, zlib.error) as e:
        # said here: after a failed read, gzip's reader answers later reads with no data,
        # which would look like an empty log
        raise _gzip_error(name, e) from None
    raw = _Guarded(src, name, text_only)
    text = io.TextIOWrapper(io.BufferedReader(raw), encoding="utf-8", errors="replace",
                            newline="")
    return parse_log(_checked_lines(text, name) if text_only else text, nest=nest)


def load_log(path: str | os.PathLike, *, nest: bool = True, text_only: bool = True) -> ParsedLog:
    """Parse a log file (gzip accepted), streaming it line by line.

    Parameters
    ----------
    path : path
        The log. A name ending in ``.gz`` must hold gzip data; gzip data under
        another name is recognised by its magic bytes.
    nest : bool
        See :func:`parse_log`.
    text_only : bool
        Refuse a file with binary content (see :func:`read_log`).

    Returns
    -------
    ParsedLog

    Raises
    ------
    FileNotFoundError, IsADirectoryError, PermissionError, OSError
        If the file cannot be opened or read.
    LogReadError
        If it is not a text log: binary content, or a ``.gz`` file that is not
        gzip, is truncated or is damaged.
    """
    path = os.fspath(path)
    with open(path, "rb") as fh:
        if path.endswith(".gz") and fh.peek(2)[:2] != _GZIP_MAGIC:
            raise LogReadError(f"{path}: not a gzip file (the name ends in .gz)")
        return read_log(fh, name=path, nest=nest, text_only=text_only)
