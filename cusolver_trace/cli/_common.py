"""Helpers shared by every subcommand: strict value parsers, the one default-device rule,
output-path checks made before any work, the console, exit codes."""
from __future__ import annotations

import argparse
import math
import os
import re
import sys

from .._argparse import _SEEN, Parser, _StoreOnce  # noqa: F401  (the parser, re-exported)
from .._paths import gpu_absent_reason  # noqa: F401  (re-exported)

EXIT_OK, EXIT_MISMATCH, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3


class UsageError(ValueError):
    """A value the command cannot use (exit 2, one line)."""


def console(*, stderr: bool = False):
    """Rich console as wide as ``COLUMNS``, the terminal, or 100 columns when output goes to
    neither (:func:`cusolver_trace._console.width`); tables are fitted to it when printed
    through :func:`cusolver_trace._console.emit`."""
    from .._console import PIPED_WIDTH, console as make

    return make(stderr=stderr, piped_width=PIPED_WIDTH)


def add_format(p, what: str = "the tables") -> None:
    """Add ``--format table|csv|md|json`` (how to print ``what``) to a subcommand."""
    from .._console import FORMATS

    p.add_argument("--format", type=choice(FORMATS, "format"), default="table",
                   metavar="{" + ",".join(FORMATS) + "}",
                   help=f"how to print {what} on stdout: a table fitted to the terminal's "
                        "width (COLUMNS), or csv / md (Markdown) / json records of the same "
                        "cells; with csv, md or json every other line goes to stderr "
                        "(default: table)")


# --------------------------------------------------------------------------- value parsers
_INT = re.compile(r"-?[0-9]+")   # a sign only to say "must be >= 0"; no "+"


def integer(minimum: int | None = None, maximum: int | None = 2**63 - 1):
    """argparse type: one integer within ``[minimum, maximum]``, written in plain decimal
    digits (no spaces, underscores, ``+`` or other bases); anything else is an error.

    Examples
    --------
    >>> integer(1)("64")
    64
    >>> integer(1)("1_0")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: expected an integer, got '1_0'
    >>> integer(0)("-0")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: expected an integer without a sign, got '-0'
    """
    def parse(text):
        if not _INT.fullmatch(str(text)):
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}")
        if len(str(text).lstrip("-0")) > 40:   # beyond any bound here, and int() refuses
            raise argparse.ArgumentTypeError(f"expected an integer of at most 40 digits, got "
                                             f"{len(str(text))} digits")
        v = int(text)
        if v == 0 and str(text).startswith("-"):   # "-0": a sign that means nothing
            raise argparse.ArgumentTypeError(f"expected an integer without a sign, got {text!r}")
        if minimum is not None and v < minimum:
            raise argparse.ArgumentTypeError(f"must be >= {minimum}, got {v}")
        if maximum is not None and v > maximum:
            raise argparse.ArgumentTypeError(f"must be <= {maximum}, got {v}")
        return v
    return parse


def number(minimum: float | None = None, *, exclusive: bool = False):
    """argparse type: one finite float above ``minimum`` (strictly with ``exclusive``), written
    plainly (:func:`cusolver_trace.matrices.plain_float`: no spaces or underscores)."""
    def parse(text):
        from ..matrices import plain_float

        try:
            v = plain_float(text)
        except ValueError:
            v = math.nan
        if not math.isfinite(v) or (minimum is not None and (v <= minimum if exclusive else v < minimum)):
            raise argparse.ArgumentTypeError(
                f"expected a finite number {'>' if exclusive else '>='} {minimum}, written plainly "
                f"(digits, '.', an exponent), got {text!r}")
        return v
    return parse


def csv_of(kind, name: str = "value"):
    """argparse type: a comma-separated, non-empty list, each item parsed by ``kind`` and
    named once (``--dtype float64,float64`` would run everything twice: an error)."""
    def parse(text):
        items = str(text).split(",")
        if not items or any(v == "" for v in items):
            raise argparse.ArgumentTypeError(f"expected a comma-separated list of {name}s, got {text!r}")
        values = [kind(v) for v in items]
        seen = []
        for raw, v in zip(items, values):
            if v in seen:
                raise argparse.ArgumentTypeError(f"{name} {raw!r} is listed twice in {text!r}")
            seen.append(v)
        return values
    parse.is_list = True   # a list option: the repeated-option error says how to give a list
    return parse


def choice(options, name: str):
    """argparse type: one of ``options`` (exact, case-sensitive)."""
    def parse(text):
        if text not in options:
            raise argparse.ArgumentTypeError(f"unknown {name} {text!r}; choose from {', '.join(options)}")
        return text
    return parse


def dtype_name(text: str) -> str:
    """argparse type: a supported dtype name."""
    from .._dtypes import SUPPORTED_DTYPES

    return choice(tuple(SUPPORTED_DTYPES), "dtype")(text)


# --------------------------------------------------------------------------- op options
def option_dest(flag: str) -> str:
    """The argparse destination of an option flag (ops that share a flag share it)."""
    return "opt_" + flag.lstrip("-").replace("-", "_")


def _sharing(flag: str) -> list:
    """The options of every registered op that use ``flag`` (one per op)."""
    from .. import ops

    return [o for op in ops.all_ops() for o in op.options if o.flag == flag]


def _word(flag: str):
    """argparse type: one word that some op's option with ``flag`` takes (kept as the word,
    lower case; each op parses it into its own value, :func:`option_sets`)."""
    words = {}
    for opt in _sharing(flag):
        words.update(dict.fromkeys(opt.words))

    def parse(text):
        key = str(text).lower()
        if key not in words:
            raise argparse.ArgumentTypeError(f"expected {', '.join(words)}, got {text!r}")
        return key
    return parse


def add_option_flags(p, names=None) -> None:
    """One argument per option flag of the registered ops (a comma-separated list of the
    option's words), and each option's shortcut flag; the op's own are picked out and parsed
    after parsing (:func:`option_sets`). Ops may share a flag (``--uplo`` is ``upper`` for the
    Cholesky family and ``UPLO`` for the eigensolvers): the words are kept as words until then.
    ``names``: the ops the subcommand's ``--op`` takes (default every op), which each flag's
    help lists."""
    from .. import ops

    for flag, opt in ops.all_options().items():
        takers = [o.name for o in ops.all_ops() if (names is None or o.name in names)
                  and any(x.flag == flag for x in o.options)]
        word = opt.flag[2:]
        kind = csv_of(_word(flag), word)
        if opt.shortcut is None:
            p.add_argument(flag, dest=option_dest(flag), type=kind, default=None,
                           metavar=word.upper(), help=f"{opt.help}; ops: {', '.join(takers)}")
            continue
        group = p.add_mutually_exclusive_group()
        group.add_argument(flag, dest=option_dest(flag), type=kind, default=None,
                           metavar=word.upper(), help=f"{opt.help}; ops: {', '.join(takers)}")
        short, value = opt.shortcut
        said = next(w for w, v in opt.words.items() if v == value)
        group.add_argument(short, dest=option_dest(flag), action="store_const", const=[said],
                           help=f"the same as {flag} {opt.labels[value]}")


def given_option_flags(args) -> list:
    """The option flags given on the command line."""
    from .. import ops

    return [f for f in ops.all_options() if getattr(args, option_dest(f), None) is not None]


def option_sets(args, op, *, lists: bool = True) -> list[dict]:
    """The option combinations the command line asks of ``op`` (every combination of the
    lists given; torch's defaults for the flags not given).

    Raises
    ------
    UsageError
        A flag of another op's option, a word the op's option does not take, a value named
        twice, or (``lists=False``) more than one value.
    """
    import itertools

    from .. import ops

    mine = {o.flag: o for o in op.options}
    chosen = {}
    for flag, opt in ops.all_options().items():
        words = getattr(args, option_dest(flag), None)
        if words is None:
            continue
        if flag not in mine:
            shown = flag if opt.shortcut is None else f"{flag} / {opt.shortcut[0]}"
            theirs = ", ".join(o.flag for o in op.options) or "none"
            raise UsageError(f"{shown} is not an option of {op.name} (its options: {theirs})")
        own = mine[flag]
        try:
            values = [own.parse_word(w) for w in words]
        except ValueError as exc:
            raise UsageError(f"{exc} (for {op.name})") from None
        twice = [own.labels[v] for i, v in enumerate(values) if v in values[:i]]
        if twice:
            raise UsageError(f"{flag}: {twice[0]} is listed twice")
        if not lists and len(values) > 1:
            raise UsageError(f"{flag} takes one value here, got {len(values)}")
        chosen[own.name] = values
    names = [o.name for o in op.options]
    lists_ = [chosen.get(n, [op.option(n).default]) for n in names]
    return [dict(zip(names, combo)) for combo in itertools.product(*lists_)]


def options_label(op, options: dict) -> str:
    """The options of one point in a table cell (``L``; ``left N``)."""
    return " ".join(op.option(k).labels[v] for k, v in options.items()) or "—"


def shard(text: str) -> tuple[int, int]:
    """``I/K`` with 0 <= I < K."""
    parts = str(text).split("/")
    if len(parts) != 2 or not all(re.fullmatch(r"[0-9]+", v) for v in parts):
        # plain digits only: int() would take ' 1', '+0' and '1_0' (which ran shard 0/10)
        raise argparse.ArgumentTypeError(f"expected I/K, got {text!r}")
    i, k = int(parts[0]), int(parts[1])
    if not (k >= 1 and 0 <= i < k):
        raise argparse.ArgumentTypeError(f"expected I/K with 0 <= I < K, got {text!r}")
    return i, k


# --------------------------------------------------------------------------- devices
def resolve_device(arg: str | None, *, quiet: bool = False) -> str:
    """The device every command runs on: ``--device`` as given (checked), or ``cuda:0`` when
    torch sees a GPU and the CUDA backend can run, else ``cpu`` (saying why on stderr when a
    GPU is visible but CuPy / nvmath-python are not).

    Raises
    ------
    UsageError
        A device that is not ``cpu`` / ``cuda`` / ``cuda:N``, or that is not here.
    """
    import torch

    from ..routines import default_device

    if arg is None:
        device, why = default_device()
        if why is not None and not quiet:
            print(f"cusolver-trace: a GPU is visible but the raw cuSOLVER layer is not usable "
                  f"({why}); running on the CPU", file=sys.stderr)
        return device
    text = str(arg)
    if text == "cpu":
        return "cpu"
    if text == "cuda":
        text = "cuda:0"
    head, _, idx = text.partition(":")
    if head != "cuda" or not (idx.isascii() and idx.isdigit()):  # not "¹"
        raise UsageError(f"--device must be cpu, cuda or cuda:N, got {arg!r}")
    if not torch.cuda.is_available():
        raise UsageError(f"--device {arg}: no CUDA GPU is visible to torch {torch.__version__}")
    if int(idx) >= torch.cuda.device_count():
        raise UsageError(f"--device {arg}: torch sees {torch.cuda.device_count()} GPU(s)")
    why = default_device()[1]  # the GPU is visible: why the CUDA backend cannot run, if it cannot
    if why is not None:
        raise UsageError(f"--device {arg}: the CUDA backend cannot run ({why})")
    return text


def check_memory(nbytes: float, device: str, what: str) -> None:
    """Refuse, before any work, inputs that cannot fit: ``nbytes`` (the estimate for the
    working set) against the GPU's or the machine's memory.

    Raises
    ------
    UsageError
        It does not fit.
    """
    if device.startswith("cuda"):
        import torch

        total = torch.cuda.get_device_properties(torch.device(device)).total_memory
        where = f"{device} has {total / 2**30:.1f} GiB"
    else:
        try:
            total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        except (ValueError, OSError, AttributeError):
            return
        where = f"this machine has {total / 2**30:.1f} GiB of memory"
    if nbytes > total:
        raise UsageError(f"{what} needs about {nbytes / 2**30:.3g} GiB; {where}")


def output_path(path: str | None, flag: str, *, allow_stdout: bool = True) -> str | None:
    """Check an output path before any work: ``-`` (stdout) where allowed, or a file that can
    be written (:func:`cusolver_trace._paths.output_problem` tries it).

    Raises
    ------
    UsageError
    """
    from .._paths import output_problem

    if path is None or (path == "-" and allow_stdout):
        return path
    if path == "-":
        raise UsageError(f"{flag} - (stdout) is not possible here")
    problem = output_problem(path, flag)
    if problem:
        raise UsageError(problem)
    return path


def write_json(data, path: str, con) -> None:
    """Write ``data`` as JSON to ``path`` (``-``: stdout)."""
    from .._json import dumps

    text = dumps(data, indent=2)   # strict JSON: a non-finite number is null
    if path == "-":
        sys.stdout.write(text + "\n")
        sys.stdout.flush()
        return
    with writing(path, "--json"):
        with open(path, "w") as fh:
            fh.write(text + "\n")
    con.print(f"wrote {path}")


class writing:
    """Context manager: an OSError while writing ``path`` becomes one line naming the flag and
    the path (``--json /dev/full: No space left on device``)."""

    def __init__(self, path: str, flag: str):
        self.path, self.flag = path, flag

    def __enter__(self):
        return self

    def __exit__(self, kind, exc, tb):
        if isinstance(exc, OSError):
            raise UsageError(f"cannot write {self.flag} {self.path}: "
                             f"{exc.strerror or exc}") from None
        return False


def distinct_outputs(**paths) -> None:
    """Refuse two output flags naming one file (the second would overwrite the first).

    Raises
    ------
    UsageError
    """
    from .._paths import same_file

    seen = []
    for flag, path in paths.items():
        if path in (None, "-"):
            continue
        for other, first in seen:
            if same_file(path, other):
                raise UsageError(f"--{first} and --{flag} name the same file {path}")
        seen.append((path, flag))
