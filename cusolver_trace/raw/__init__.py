"""Layer 1: raw cuSOLVER / cuBLAS calls, 1:1 with the C API (device pointers as ints).

:mod:`.cusolver` — ``cusolverDn*`` (CuPy where it binds the routine, nvmath-python
elsewhere); :mod:`.cublas` — ``cublas*``. Importing this package imports neither
CuPy nor nvmath; the first call does.
"""
from . import cublas, cusolver

__all__ = ["cusolver", "cublas"]
