"""One rich Console factory for the CLI and the trace command."""
from __future__ import annotations

import sys


def console(*, stderr: bool = False, piped_width: int = 200, **kw):
    """Rich console on stdout (or stderr). When that stream is not a terminal (a file,
    a pipe, CI) use a wide fixed width, so tables, calls and section labels stay on one
    line instead of wrapping at rich's 80-column default.

    Examples
    --------
    >>> console(width=60).width
    60
    """
    stream = sys.stderr if stderr else sys.stdout
    if not stream.isatty():
        kw.setdefault("width", piped_width)
    return _console_class()(stderr=stderr, **kw)


#: Exit status when the reader of the output goes away (``cusolver-trace … | head -1``):
#: 128 + SIGPIPE, what a shell reports for a program killed by it; never 1, which means
#: MISMATCH.
EXIT_BROKEN_PIPE = 141

_CLASS = []


def _console_class():
    """rich's Console, except that a broken pipe leaves with :data:`EXIT_BROKEN_PIPE`
    (rich's own handler exits with status 1, the CLI's MISMATCH)."""
    if not _CLASS:
        import os

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
