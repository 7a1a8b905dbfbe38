"""NVTX ranges for Nsight Systems: :func:`nvtx_range` marks a stretch of work by name.

Uses the ``nvtx`` package when it is importable; otherwise every range is a
no-op (:func:`nvtx_note` says why), so callers need no checks of their own::

    from cusolver_trace.tracing import nvtx_range
    with nvtx_range("replay cusolverDnXpotrs n=256"):
        ...
"""
from __future__ import annotations

import contextlib
from typing import Iterator

__all__ = ["nvtx_range", "nvtx_available", "nvtx_note"]

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


@contextlib.contextmanager
def nvtx_range(name: str, *, color: str | None = None, domain: str = "cusolver-trace") -> Iterator[None]:
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
    contextmanager
        Yields ``None``.

    Raises
    ------
    Whatever the body raises (the range is closed first).

    Examples
    --------
    >>> with nvtx_range("step 1"):
    ...     x = 1 + 1
    >>> x
    2
    """
    if _nvtx is None:
        yield
        return
    kw = {"message": str(name), "domain": domain}
    if color:
        kw["color"] = color
    _nvtx.push_range(**kw)
    try:
        yield
    finally:
        _nvtx.pop_range(domain=domain)
