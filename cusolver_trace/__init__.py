"""cusolver-trace: call cuSOLVER directly, replay torch's linear-algebra ops, compare.

Layers (each imports only the ones below it in this list):

1. ``cusolver_trace.raw``       raw cuSOLVER / cuBLAS bindings, 1:1 with the C API
2. ``cusolver_trace.backends``  ``cuda`` (cuSOLVER / cuBLAS on torch's stream and allocator;
                                the only importer of ``raw``) and ``cpu`` (scipy LAPACK)
3. ``cusolver_trace.routines``  one public entry point per operation (potrf, potrs, potri,
                                trtri, cholesky_inverse, spd_inverse, getrf, getrs, lu_solve,
                                solve, inv, eigh, eigvalsh), each with one
                                implementation table (plans: ``plans``)
4. ``cusolver_trace.ops``       the op registry: one module per torch op (options, inputs,
                                dispatch rules per version, replay, judgement, flop count,
                                methods)
5. tools: ``checks`` (LAPACK ratios), ``matrices``, ``timing``, ``replay``, ``compare``,
   ``sweep``, ``workflow``, ``tracing``
6. ``cusolver_trace.cli``       the ``cusolver-trace`` command, one module per subcommand

``import cusolver_trace`` imports nothing heavy: each public name below is imported on its
first use (``ct.potrf`` imports the routines, and with them torch, numpy and scipy), so that
the command line's ``--help`` and ``--version`` start at once. CuPy and nvmath-python load on
the first GPU call.
"""
from __future__ import annotations

import importlib
import sys
import types

__version__ = "0.1.0"

#: Every public name, and the module that defines it (imported on first use): ``_PUBLIC``,
#: written inside ``__all__``'s assignment (names there are function names, not op keys).
__all__ = list(_PUBLIC := {
    "potrf": "routines", "potrs": "routines", "potri": "routines", "trtri": "routines",
    "cholesky_inverse": "routines", "inverse_method": "routines",
    "INVERSE_METHODS": "routines", "spd_inverse": "routines",
    "spd_inverse_method": "routines", "SPD_INVERSE_METHODS": "routines",
    "getrf": "routines", "getrs": "routines", "lu_solve": "routines", "solve": "routines",
    "inv": "routines", "eigh": "routines", "eigvalsh": "routines",
    "compare": "compare", "with_gpu_busy": "compare", "Comparison": "compare",
    "replay": "replay", "torch_path": "replay", "versions": "versions",
    "trace": "tracing", "Trace": "tracing",
    "dtype_info": "_dtypes", "SUPPORTED_DTYPES": "_dtypes",
    "NotPositiveDefiniteError": "errors", "SingularFactorError": "errors",
    "SingularMatrixError": "errors",
    "NonFiniteError": "errors", "IllegalArgumentError": "errors",
    "NoConvergenceError": "errors",
    "LibraryStatusError": "errors", "CuSolverStatusError": "errors",
    "CuBlasStatusError": "errors", "GPUUnavailableError": "errors",
    "CompileWarning": "errors", "warmup": "backends.fused",
})


def _load(name: str):
    return getattr(importlib.import_module(f"{__name__}.{_PUBLIC[name]}"), name)


class _Shadowed:
    """A public name that is also the name of a submodule (``compare``, ``replay``,
    ``versions``): importing the submodule sets the package's attribute to the module, which
    would hide the function. As a data descriptor of the package's class it always gives the
    function (or what a user assigned, such as a test's stand-in) and ignores the module."""

    def __init__(self, name: str):
        self.name = name

    def __get__(self, module, owner=None):
        if module is None:
            return self
        over = module.__dict__.get("_overrides", {})
        if self.name in over:
            return over[self.name]
        return _load(self.name)

    def __set__(self, module, value):
        if isinstance(value, types.ModuleType) and value.__name__ == f"{__name__}.{self.name}":
            return   # the import system binding the submodule: the function stays
        module.__dict__.setdefault("_overrides", {})[self.name] = value

    def __delete__(self, module):
        module.__dict__.get("_overrides", {}).pop(self.name, None)


class _Package(types.ModuleType):
    def __getattr__(self, name):
        if name in _PUBLIC:
            value = _load(name)
            setattr(self, name, value)   # later lookups are plain attribute lookups
            return value
        try:   # ``cusolver_trace.routines`` after a bare ``import cusolver_trace``
            return importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"{__name__}.{name}":
                raise
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(_PUBLIC))


for _name in ("compare", "replay", "versions"):
    setattr(_Package, _name, _Shadowed(_name))
sys.modules[__name__].__class__ = _Package
del _name
