"""One rich Console factory for the CLI and the trace command."""
from __future__ import annotations

import sys


def console(*, stderr: bool = False, piped_width: int = 200, **kw):
    """Rich console on stdout (or stderr). When that stream is not a terminal (a file,
    a pipe, CI) use a wide fixed width, so tables, calls and section labels stay on one
    line instead of wrapping at rich's 80-column default."""
    from rich.console import Console

    stream = sys.stderr if stderr else sys.stdout
    if not stream.isatty():
        kw.setdefault("width", piped_width)
    return Console(stderr=stderr, **kw)
