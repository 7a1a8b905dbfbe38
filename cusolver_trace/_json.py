"""Strict JSON for every file and stream this package writes for a reader.

Python's :mod:`json` writes a non-finite float as a bare ``NaN`` / ``Infinity``, which is
not JSON: strict parsers (JavaScript's ``JSON.parse``, Go, serde, Python's own with
``parse_constant``) refuse the whole file. Here such a number becomes ``null``; what made it
non-finite is said next to it (a ``nonfinite`` count, a note).

Examples
--------
>>> dumps({"asymmetry": float("nan"), "ms": [1.5, float("inf")]})
'{"asymmetry": null, "ms": [1.5, null]}'
"""
from __future__ import annotations

import json
import math


def finite(obj):
    """``obj`` with every non-finite float (NaN, ±Inf) in its dicts, lists and tuples
    replaced by None (tuples become lists, as JSON has them)."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [finite(v) for v in obj]
    return obj


def dumps(obj, **kw) -> str:
    """:func:`json.dumps` of :func:`finite` ``(obj)``, never writing NaN / Infinity
    (``allow_nan=False``); other objects as ``str`` unless ``default`` is given."""
    kw.setdefault("default", str)
    try:   # the common case, in one pass: nothing non-finite
        return json.dumps(obj, allow_nan=False, **kw)
    except ValueError:   # a NaN / Inf somewhere (or a cycle, which raises again below)
        return json.dumps(finite(obj), allow_nan=False, **kw)
