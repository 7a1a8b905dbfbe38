"""The public API is typed: the package ships ``py.typed`` (PEP 561), and every public
function annotates its parameters and its result (array arguments with
``cusolver_trace._arrays.ArrayLike``, results with ``Array``)."""
from __future__ import annotations

import inspect
import pathlib

import pytest

import cusolver_trace as ct

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_py_typed_is_shipped():
    assert (ROOT / "cusolver_trace" / "py.typed").exists()
    text = (ROOT / "pyproject.toml").read_text()
    assert 'cusolver_trace = ["py.typed"]' in text


def _functions():
    out = []
    for name in ct.__all__:
        obj = getattr(ct, name)
        if inspect.isfunction(obj):
            out.append(pytest.param(name, id=name))
    return out


@pytest.mark.parametrize("name", _functions())
def test_public_function_is_annotated(name):
    sig = inspect.signature(getattr(ct, name))
    missing = [p.name for p in sig.parameters.values()
               if p.annotation is inspect.Parameter.empty
               and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    assert not missing, f"{name}: parameters without a type: {missing}"
    assert sig.return_annotation is not inspect.Signature.empty, f"{name}: no return type"


def test_array_aliases_name_every_accepted_kind():
    from cusolver_trace._arrays import Array, ArrayLike

    text = repr(ArrayLike)
    assert "ndarray" in text and "torch.Tensor" in text and "cupy.ndarray" in text
    assert "Sequence" in text and "Sequence" not in repr(Array)
