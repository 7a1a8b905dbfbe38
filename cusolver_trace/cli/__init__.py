"""The ``cusolver-trace`` command (also ``python3 -m cusolver_trace``).

One module per subcommand: ``info`` (versions, libraries, GPU), ``compare`` (torch vs
the replay of its library calls), ``devices`` (the hello_cholesky workflow or one op on
every GPU), ``sweep`` (timing sweeps of the methods), ``trace`` (which cuSOLVER / cuBLAS
calls a program makes). Exit status: 0 = done / agreement, 1 = a MISMATCH (or a
method that FAILED its check), 2 = bad usage or bad input (one line on stderr, never a
traceback), 3 = an internal error (a bug: the traceback is shown). ``trace`` running a
program passes the program's own exit status through.
"""
from __future__ import annotations

import argparse
import sys

from ._common import EXIT_INTERNAL, EXIT_MISMATCH, EXIT_OK, EXIT_USAGE, Parser

__all__ = ["main", "build_parser", "EXIT_OK", "EXIT_MISMATCH", "EXIT_USAGE", "EXIT_INTERNAL"]


def build_parser() -> argparse.ArgumentParser:
    """The parser of every subcommand.

    Returns
    -------
    argparse.ArgumentParser
    """
    from .. import __version__
    from . import compare, devices, diff, info, sweep, trace

    parser = Parser(
        prog="cusolver-trace",
        description="Call cuSOLVER directly, replay the calls torch makes for its Cholesky family, "
                    "and check results and timing against torch.")
    parser.add_argument("--version", action="version", version=f"cusolver-trace {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    for mod in (info, compare, devices, sweep, trace, diff):
        mod.register(sub)
    return parser


def _predictable(exc: BaseException) -> str | None:
    """One line for a failure a user can cause (bad value, bad file, no GPU, out of memory);
    None for anything else (a bug)."""
    import numpy as np

    from ..errors import GPUUnavailableError, LibraryStatusError

    if isinstance(exc, MemoryError):
        return "out of memory: the inputs do not fit in this machine's memory"
    if isinstance(exc, (KeyError, IndexError)):  # bugs, not inputs
        return None
    if isinstance(exc, (ValueError, TypeError, GPUUnavailableError, LookupError,
                        np.linalg.LinAlgError)):
        return str(exc) or type(exc).__name__
    if isinstance(exc, OSError):
        where = f": {exc.filename}" if getattr(exc, "filename", None) else ""
        return f"{exc.strerror or exc}{where}"
    if isinstance(exc, LibraryStatusError):
        return str(exc)
    name = type(exc).__name__
    text = str(exc)
    if name == "OutOfMemoryError" or "out of memory" in text.lower() or "can't allocate" in text:
        return "out of memory: " + text.splitlines()[0][:300]
    return None


def main(argv=None) -> int:
    """Run the command line ``argv`` (default ``sys.argv[1:]``); returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        print(f"cusolver-trace {args.command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader went away (`| head`): no message, the shell's status
        import os

        from .._console import EXIT_BROKEN_PIPE

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
    except Exception as exc:
        line = _predictable(exc)
        if line is None:
            import traceback

            traceback.print_exc()
            print(f"cusolver-trace {args.command}: internal error (a bug; please report it with "
                  "the traceback above)", file=sys.stderr)
            return EXIT_INTERNAL
        print(f"cusolver-trace {args.command}: error: {line}", file=sys.stderr)
        return EXIT_USAGE


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
