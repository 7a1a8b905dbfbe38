"""``cusolver-trace diff A.json B.json``: compare two trace JSONs call by call.

Exit status: 0 the call sequences are equal, 1 they differ, 2 bad usage or bad
input (a file that is missing, unreadable or not a trace JSON: one line on
stderr, no traceback), 3 an internal error (a bug: the traceback is shown).
The logic is in :mod:`cusolver_trace.tracing.diff`.
"""
from __future__ import annotations

import argparse
import sys
import traceback

from .. import _json
from ._common import integer

__all__ = ["register", "run"]

_EPILOG = (
    "examples:\n"
    "  cusolver-trace diff before.json after.json\n"
    "  cusolver-trace diff a.json b.json --section-a 'cholesky_inverse batch=1' "
    "--section-b 'cholesky_inverse batch=4'\n"
    "  cusolver-trace diff a.json b.json --json -   # the comparison as JSON on stdout")


def register(sub) -> argparse.ArgumentParser:
    """Add the ``diff`` subcommand to an argparse subparsers object.

    Parameters
    ----------
    sub
        What ``ArgumentParser.add_subparsers()`` returned.

    Returns
    -------
    argparse.ArgumentParser
        The subparser (defaults carry ``func=run``).

    Examples
    --------
    >>> import argparse
    >>> p = argparse.ArgumentParser(); s = p.add_subparsers()
    >>> _ = register(s)
    >>> p.parse_args(["diff", "a.json", "b.json"]).limit
    10
    """
    p = sub.add_parser(
        "diff", help="compare two trace JSONs call by call (exit 0 equal, 1 different)",
        description="Compare two `cusolver-trace trace --json` files call by call: routine, "
                    "nesting and every typed argument (pointers, line numbers, section labels "
                    "and times are not compared). Prints the first differences, counts of "
                    "added / removed / changed calls and calls and GPU time per routine side "
                    "by side.",
        epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("a", metavar="A.json")
    p.add_argument("b", metavar="B.json")
    p.add_argument("--all", action="store_true", help="compare setup calls too")
    p.add_argument("--section-a", metavar="LABEL", help="only this section of A")
    p.add_argument("--section-b", metavar="LABEL", help="only this section of B")
    p.add_argument("--limit", type=integer(1), default=10, metavar="N",
                   help="differences to print (default 10)")
    p.add_argument("--json", metavar="PATH", help="also write the comparison as JSON ('-': stdout)")
    p.set_defaults(func=run)
    return p


def run(args: argparse.Namespace) -> int:
    """Carry out ``cusolver-trace diff``.

    Parameters
    ----------
    args : argparse.Namespace
        From the ``diff`` subparser.

    Returns
    -------
    int
        0 equal, 1 different, 2 bad input (after one line on stderr), 3 internal error.

    Examples
    --------
    >>> import argparse
    >>> run(argparse.Namespace(a="/nonexistent", b="/nonexistent", all=False, section_a=None,
    ...                        section_b=None, limit=10, json=None))
    2
    """
    from .._paths import same_file
    from ..tracing.command import whole_writes
    from ..tracing.diff import TraceInputError
    from ._common import UsageError, output_path

    def fail(msg: str) -> int:
        print(f"cusolver-trace diff: error: {msg}", file=sys.stderr)
        return 2

    for name, path in (("A.json", args.a), ("B.json", args.b)):
        if not path:
            return fail(f"{name}: empty file name")
    try:
        output_path(args.json, "--json")  # before any work, as the other subcommands do
    except UsageError as e:
        return fail(str(e))
    for name, path in (("A", args.a), ("B", args.b)):
        if args.json not in (None, "-") and same_file(args.json, path):
            return fail(f"--json {args.json} is the input {name}; it would be overwritten")
    try:
        with whole_writes():
            return _run(args, fail)
    except TraceInputError as e:
        return fail(str(e))
    except MemoryError:   # the traces' calls do not fit: the user's input, not a bug
        return fail("out of memory: the traces' expanded calls do not fit in this machine's "
                    "memory")
    except BrokenPipeError:  # the reader went away (`| head`): the shell's status, no message
        import os

        from .._console import EXIT_BROKEN_PIPE

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
    except Exception:
        traceback.print_exc()
        print("cusolver-trace diff: internal error (a bug; please report it with the traceback "
              "above)", file=sys.stderr)
        return 3


def _run(args: argparse.Namespace, fail) -> int:
    """The comparison itself; returns 0 equal, 1 different (2 when the JSON cannot be written)."""
    from .._console import console
    from ..tracing.diff import diff_traces, load_trace_json

    result = diff_traces(load_trace_json(args.a), load_trace_json(args.b), all=args.all,
                         section_a=args.section_a, section_b=args.section_b)
    out = console(highlight=False, stderr=args.json == "-")
    out.print(result.renderable(limit=args.limit), soft_wrap=True)
    if args.json:
        text = _json.dumps(result.to_dict(), indent=1)
        if args.json == "-":
            sys.stdout.write(text + "\n")
        else:
            try:
                with open(args.json, "w", encoding="utf-8") as fh:
                    fh.write(text + "\n")
            except (OSError, ValueError) as e:
                return fail(f"cannot write {args.json}: {getattr(e, 'strerror', None) or e}")
    return 0 if result.equal else 1
