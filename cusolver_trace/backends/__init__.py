"""Backends: where the array routines run.

* :mod:`.cuda` — cuSOLVER / cuBLAS through :mod:`cusolver_trace.raw` on torch CUDA
  tensors, torch's current stream and caching allocator (:mod:`._context`: handles per
  device and thread). Only the backends import the raw layer.
* :mod:`.cpu` — Reference-LAPACK semantics through ``scipy.linalg.lapack`` on NumPy arrays.

``import cusolver_trace.backends.cpu`` never imports CuPy or nvmath-python;
:mod:`.cuda` loads them on first use.
"""
