"""``cusolver-trace trace``: see :mod:`cusolver_trace.tracing.command`."""
from __future__ import annotations


def register(sub) -> None:
    """Add ``trace`` to the subparsers."""
    from ..tracing import command

    command.register(sub)
