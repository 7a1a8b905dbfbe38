"""The Examples sections of the package's docstrings run and print what they show (a stale
one -- inverse_plan's buffer count after a default changed -- once went unnoticed because
nothing ran them). Modules that run a program on import (``__main__``, the tracing child
bootstraps) are left out."""
from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import cusolver_trace

_SKIP = {"cusolver_trace.__main__", "cusolver_trace.tracing.__main__",
         "cusolver_trace.tracing._progboot", "cusolver_trace.tracing._child",
         "cusolver_trace.tracing._hook"}
MODULES = sorted(m.name for m in pkgutil.walk_packages(cusolver_trace.__path__, "cusolver_trace.")
                 if m.name not in _SKIP)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    try:
        module = importlib.import_module(name)
    except ImportError as exc:  # an optional dependency of that module is missing here
        pytest.skip(f"{name} cannot be imported here: {exc}")
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE,
                             verbose=False)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples failed in {name}"
