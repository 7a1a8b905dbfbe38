"""NVTX ranges for Nsight Systems: :func:`nvtx_range` marks a stretch of work by name.

Uses the ``nvtx`` package when it is importable, else every range is a no-op (one shared
``contextlib.nullcontext``, cheap enough for timed loops; :func:`nvtx_note` says why);
:func:`set_nvtx_recorder` sends the ranges to an object of your own. See
docs/tracing-programs.md, "NVTX".
"""
from __future__ import annotations

import contextlib

__all__ = ["nvtx_range", "nvtx_available", "nvtx_note", "set_nvtx_recorder", "nvtx_enabled"]

_NULL = contextlib.nullcontext()
_recorder = None

try:  # pragma: no cover - depends on the machine
    import nvtx as _nvtx
except Exception:  # ImportError, or a broken install
    _nvtx = None


def nvtx_available() -> bool:
    """Whether :func:`nvtx_range` emits real NVTX ranges.

    Returns
    -------
    bool

    Examples
    --------
    >>> isinstance(nvtx_available(), bool)
    True
    """
    return _nvtx is not None


def nvtx_note() -> str | None:
    """One sentence for a report when NVTX ranges are skipped, else ``None``.

    Returns
    -------
    str or None

    Examples
    --------
    >>> nvtx_note() is None or "nvtx" in nvtx_note()
    True
    """
    return None if _nvtx is not None else \
        "NVTX ranges skipped: the 'nvtx' package is not importable (pip install nvtx)"


def set_nvtx_recorder(recorder):
    """Send :func:`nvtx_range`'s ranges to ``recorder`` instead of ``nvtx``; ``None`` restores.

    Parameters
    ----------
    recorder : object or None
        Has ``push_range(message=str, domain=str, color=str or None)`` and
        ``pop_range(domain=str)``, as the ``nvtx`` module has.

    Returns
    -------
    object or None
        The recorder that was set before (to restore it).

    Examples
    --------
    >>> class Rec:
    ...     def __init__(self): self.log = []
    ...     def push_range(self, message, domain, color=None): self.log.append(("push", message))
    ...     def pop_range(self, domain): self.log.append(("pop",))
    >>> rec = Rec(); old = set_nvtx_recorder(rec)
    >>> with nvtx_range("a"):
    ...     pass
    >>> _ = set_nvtx_recorder(old); rec.log
    [('push', 'a'), ('pop',)]
    """
    global _recorder
    old, _recorder = _recorder, recorder
    return old


def nvtx_enabled() -> bool:
    """Whether :func:`nvtx_range` does anything now (``nvtx`` importable or a recorder set).

    Returns
    -------
    bool

    Examples
    --------
    >>> nvtx_enabled() == (nvtx_available() or _recorder is not None)
    True
    """
    return _recorder is not None or _nvtx is not None


class _Range:
    __slots__ = ("_to", "_kw", "_domain")

    def __init__(self, to, kw, domain):
        self._to, self._kw, self._domain = to, kw, domain

    def __enter__(self):
        self._to.push_range(**self._kw)
        return None

    def __exit__(self, *exc):
        self._to.pop_range(domain=self._domain)
        return False


def nvtx_range(name: str, *, color: str | None = None, domain: str = "cusolver-trace"):
    """Context manager: an NVTX push/pop range named ``name`` (no-op without ``nvtx``).

    Parameters
    ----------
    name : str
        The range's message, e.g. ``"cusolverDnXpotrs n=256"``.
    color : str, optional
        An ``nvtx`` colour name (``"green"``).
    domain : str
        The NVTX domain (default ``"cusolver-trace"``).

    Returns
    -------
    context manager
        Its ``with`` yields ``None``; the range is popped when the block is left, also
        by an exception (which propagates). Without ``nvtx`` and without a recorder
        (:func:`set_nvtx_recorder`), a shared no-op context.

    Examples
    --------
    >>> with nvtx_range("step 1"):
    ...     x = 1 + 1
    >>> x
    2
    """
    to = _recorder if _recorder is not None else _nvtx
    if to is None:
        return _NULL
    kw = {"message": str(name), "domain": domain}
    if color:
        kw["color"] = color
    return _Range(to, kw, domain)
