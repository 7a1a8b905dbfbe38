"""Layer 1: raw cuSOLVER / cuBLAS calls, 1:1 with the C API (device pointers as ints).

:mod:`.cusolver` — ``cusolverDn*`` (CuPy where it binds the routine, nvmath-python
elsewhere); :mod:`.cusolver_eig` — the symmetric / Hermitian eigensolvers (``cusolverDn*syev*`` /
``*heev*``, nvmath); :mod:`.cublas` — ``cublas*``. Importing this package imports neither
CuPy nor nvmath; the first call does.
"""
from . import cublas, cusolver, cusolver_eig

__all__ = ["cusolver", "cusolver_eig", "cublas"]
