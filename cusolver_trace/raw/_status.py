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
    except (CuSolverStatusError, CuBlasStatusError):
        raise
    except Exception as exc:
        status = _status_of(exc)
        if status is None or "rror" not in type(exc).__name__:
            raise
        raise error_cls(routine, status, str(exc)) from exc


def translated(error_cls, routine: str, exc: BaseException):
    """What :func:`call` would raise for ``exc`` from a binding: ``error_cls(routine, status)``,
    or None where ``exc`` is to propagate unchanged (ours already, or no status). For the hot
    wrappers that call the binding themselves (one Python frame fewer per call)::

        try:
            return binding(...)
        except Exception as exc:
            err = translated(CuSolverStatusError, "cusolverDnXpotrf", exc)
            if err is None:
                raise
            raise err from exc
    """
    if isinstance(exc, (CuSolverStatusError, CuBlasStatusError)):
        return None
    status = _status_of(exc)
    if status is None or "rror" not in type(exc).__name__:
        return None
    return error_cls(routine, status, str(exc))


def solver(routine, fn, *args):
    return call(CuSolverStatusError, routine, fn, *args)


def blas(routine, fn, *args):
    return call(CuBlasStatusError, routine, fn, *args)
