"""Raw cuBLAS math-mode and emulation calls, 1:1 with the C API (through ``nvmath.bindings.cublas``).

``cublasSetMathMode`` / ``cublasGetMathMode`` and, from cuBLAS 13.0 on,
``cublasSetEmulationStrategy`` / ``cublasGetEmulationStrategy``. With the math mode
``CUBLAS_FP64_EMULATED_FIXEDPOINT_MATH`` cuBLAS may run FP64 GEMM-class routines on
fixed-point (integer tensor-core) emulation; ``CUBLAS_EMULATION_STRATEGY_EAGER`` asks it
to emulate whenever it can. The enum values are read from the binding (never hard-coded);
:func:`emulation_available` says whether this cuBLAS binding has them at all.
"""
from __future__ import annotations

from . import _load
from ._status import blas as _blas


def _nv():
    return _load.nvmath_cublas()


def emulation_available() -> str | None:
    """None when the binding exposes FP64 emulation (math mode + strategy), else why not."""
    nv = _nv()
    if not hasattr(nv, "set_emulation_strategy") or not hasattr(
            getattr(nv, "Math", None), "FP64_EMULATED_FIXEDPOINT_MATH"):
        return "nvmath.bindings.cublas has no FP64 emulation (needs cuBLAS >= 13 bindings)"
    return None


def math_mode(name: str) -> int:
    """``cublasMath_t`` value by binding name (``"DEFAULT_MATH"``, ``"FP64_EMULATED_FIXEDPOINT_MATH"``)."""
    return int(getattr(_nv().Math, name))


def emulation_strategy(name: str) -> int:
    """``cublasEmulationStrategy_t`` value by binding name (``"DEFAULT"``, ``"EAGER"``, ``"PERFORMANT"``)."""
    return int(getattr(_nv().EmulationStrategy, name))


def setMathMode(handle: int, mode: int) -> None:
    """``cublasSetMathMode``."""
    _blas("cublasSetMathMode", _nv().set_math_mode, handle, mode)


def getMathMode(handle: int) -> int:
    """``cublasGetMathMode`` -> mode."""
    return int(_blas("cublasGetMathMode", _nv().get_math_mode, handle))


def setEmulationStrategy(handle: int, strategy: int) -> None:
    """``cublasSetEmulationStrategy``."""
    _blas("cublasSetEmulationStrategy", _nv().set_emulation_strategy, handle, strategy)


def getEmulationStrategy(handle: int) -> int:
    """``cublasGetEmulationStrategy`` -> strategy."""
    return int(_blas("cublasGetEmulationStrategy", _nv().get_emulation_strategy, handle))
