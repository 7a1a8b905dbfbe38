"""The ``cusolver-trace`` command (also ``python3 -m cusolver_trace``).

One module per subcommand: ``info`` (versions, libraries, GPU), ``compare`` (torch vs
the replay of its library calls), ``devices`` (the hello_cholesky workflow or one op on
every GPU), ``sweep`` (timing sweeps of the methods), ``trace`` (which cuSOLVER / cuBLAS
calls a program makes), ``diff`` (two traces call by call), ``warmup`` (compile the fused
kernels ahead of time). Exit status: 0 = done / agreement, 1 = a MISMATCH (or a
method that FAILED its check), 2 = bad usage or bad input (one line on stderr, never a
traceback), 3 = an internal error (a bug: the traceback is shown). ``trace`` running a
program passes the program's own exit status through.
"""
from __future__ import annotations

import argparse
import importlib
import sys

from ._common import EXIT_INTERNAL, EXIT_MISMATCH, EXIT_OK, EXIT_USAGE, Parser

__all__ = ["main", "build_parser", "COMMANDS", "EXIT_OK", "EXIT_MISMATCH", "EXIT_USAGE",
           "EXIT_INTERNAL"]

#: The subcommands, in ``--help``'s order, and their one-line help. A subcommand's module
#: (``cusolver_trace.cli.<name>``) is imported only when that subcommand runs or shows its
#: help: ``cusolver-trace --help``, ``--version``, ``diff`` and ``trace --from-log`` never
#: import torch. ``tests/test_cli_startup.py`` checks these lines against the modules'.
COMMANDS = {
    "info": "versions, loaded libcusolver/libcublas, GPU",
    "compare": "compare torch's op with the replay of its cuSOLVER/cuBLAS calls",
    "devices": "the hello_cholesky workflow (or one op) on every visible GPU",
    "sweep": "time torch against faster methods over n / batch / dtype, checked",
    "trace": "trace cuSOLVER / cuBLAS API calls of a program or log",
    "diff": "compare two trace JSONs call by call (exit 0 equal, 1 different)",
    "warmup": "compile the fused (cuSOLVERDx) kernels ahead of time",
}


def build_parser(commands=None) -> argparse.ArgumentParser:
    """The parser of every subcommand.

    Parameters
    ----------
    commands : iterable of str, optional
        The subcommands to build in full (their modules imported); the others get a parser
        that only names them, with their help line. Default: all of them.

    Returns
    -------
    argparse.ArgumentParser
    """
    from .. import __version__

    full = set(COMMANDS) if commands is None else set(commands)
    parser = Parser(
        prog="cusolver-trace",
        description="Call cuSOLVER directly, replay the calls torch makes for its Cholesky, LU "
                    "and eigh ops, and check results and timing against torch.")
    parser.add_argument("--version", action="version", version=f"cusolver-trace {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND",
                                title="commands (cusolver-trace COMMAND --help for each)")
    for name, line in COMMANDS.items():
        if name in full:
            importlib.import_module(f"{__name__}.{name}").register(sub)
        else:
            sub.add_parser(name, help=line, add_help=False)
    return parser


def _command(argv) -> str | None:
    """The subcommand named on the command line (the first word that is not an option)."""
    for arg in argv:
        if not arg.startswith("-"):
            return arg if arg in COMMANDS else None
    return None


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
    if isinstance(exc, ImportError) and "pip install" in str(exc):   # an optional extra
        return str(exc)
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


def _tolerant_output() -> None:
    """Where stdout / stderr cannot encode every character (``PYTHONIOENCODING=ascii``, a C
    locale), write what they cannot as backslash escapes (``\\u03c3``) instead of failing a
    finished command on its own output (σ, →, ×)."""
    for stream in (sys.stdout, sys.stderr):
        encoding = (getattr(stream, "encoding", None) or "").lower().replace("-", "")
        if encoding not in ("utf8", "utf16", "utf32") and hasattr(stream, "reconfigure"):
            try:
                stream.reconfigure(errors="backslashreplace")
            except (ValueError, OSError):   # a stream that cannot change: left as it is
                pass


def main(argv=None) -> int:
    """Run the command line ``argv`` (default ``sys.argv[1:]``); returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    _tolerant_output()
    name = _command(argv)
    parser = build_parser(() if name is None else (name,))
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
