"""Turn a binding's status exception into ours, naming the routine and status."""
from __future__ import annotations

from ..errors import CuBlasStatusError, CuSolverStatusError


def _status_of(exc: BaseException):
    status = getattr(exc, "status", None)
    if status is None and exc.args and isinstance(exc.args[0], int):
        status = exc.args[0]
    try:
        return None if status is None else int(status)
    except (TypeError, ValueError):
        return None


def call(error_cls, routine: str, fn, *args):
    """Call a binding ``fn(*args)``; a non-success status becomes ``error_cls(routine, status)``.

    CuPy raises ``CUSOLVERError`` / ``CUBLASError`` and nvmath-python raises
    ``cuSOLVERError`` / ``cuBLASError``; all carry the integer status.
    Exceptions without a status (e.g. a ``TypeError`` from bad Python
    arguments) pass through unchanged.
    """
    try:
        return fn(*args)
    except Exception as exc:
        reraise(error_cls, routine, exc)


def reraise(error_cls, routine: str, exc: BaseException):
    """Raise, for ``exc`` caught from a binding, what :func:`call` raises: ``error_cls(routine,
    status)`` from it when it carries a status, else ``exc`` itself (ours already, or no
    status). The hot wrappers that call their binding directly (one Python frame fewer per
    call) use it in their ``except`` clause."""
    if not isinstance(exc, (CuSolverStatusError, CuBlasStatusError)):
        status = _status_of(exc)
        if status is not None and "rror" in type(exc).__name__:
            raise error_cls(routine, status, str(exc)) from exc
    raise exc


def solver(routine, fn, *args):
    return call(CuSolverStatusError, routine, fn, *args)


def blas(routine, fn, *args):
    return call(CuBlasStatusError, routine, fn, *args)
