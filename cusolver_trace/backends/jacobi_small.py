"""Eigenvalues and eigenvectors of huge batches of tiny Hermitian matrices (n <= 8) with a
hand-written CUDA kernel: one thread per matrix, cyclic Jacobi.

The workload is 100,000 to 1,000,000 3 x 3 covariance matrices: ``cusolverDnXsyevBatched``
takes ~1.6 ms for 100,000 of them on the H200 and fails from batch 65,536 on; cuSOLVER's
Jacobi (``syevjBatched``) works a block per matrix. Here each CUDA thread diagonalizes one
matrix held in its own registers / local memory:

* **Layout.** The ``upper`` (else lower) triangle of each matrix is read straight from the
  input through its strides (batch dimensions merged; a conjugate / negative view, or batch
  dimensions that do not merge, are resolved into a contiguous copy first); the other
  triangle and the diagonal's imaginary part are never read, the input never written. ``W``
  is ``(..., n)`` of the real dtype, contiguous; ``V`` ``(..., n, n)`` with torch's
  column-major strides ``(n*n, 1, n)`` (eigenvectors as columns); ``info`` int32 ``(batch,)``.
* **Threads.** 256 per block, a block per 256 matrices, no atomics. Where one matrix takes at
  most 192 bytes (n <= 4 in float64, n <= 3 in complex128, n <= 6 in float32, n <= 4 in
  complex64: the 3 x 3 workload) a block stages its matrices through shared memory, so that
  the eigenvectors go out (and a contiguous input, row- or column-major, comes in) in
  coalesced accesses; larger matrices are read and written by each thread directly.
* **Algorithm.** The triangle is scaled by a power of two (exact) so that max |a_ij| lies in
  [1/2, 1); cyclic-by-row sweeps of two-sided rotations (complex: the phase of a_pq factored
  out, then the real rotation, Rutishauser's formulas); pair (p, q) is rotated unless
  ``|a_pq| <= eps·sqrt(|a_pp|·|a_qq|)`` (Demmel–Veselić's relative test) or
  ``|a_pq| <= eps·‖A‖_F / n`` (off(A) negligible, as syevj's ``off(A) <= tol·‖A‖_F``); the
  first sweep that rotates nothing ends the loop. At most :data:`MAX_SWEEPS_REAL` (real) /
  :data:`MAX_SWEEPS_COMPLEX` (complex) sweeps by default; ``info = n + 1`` when the test
  still fails after the last one (cuSOLVER syevj's convention). Then the eigenvalues are
  sorted ascending with V's columns alongside (an exchange sort on constant indices) and
  scaled back.
* **Non-finite input.** A NaN or Inf in the triangle read gives NaN eigenvalues and vectors
  and ``info = n + 1``.

The CUDA C++ source (:mod:`._jacobi_source`) is plain C++ apart from the kernel itself:
``tests/test_jacobi_small_cpu.py`` compiles the same text with g++ and checks the solver
against LAPACK (the LAPACK ``?syt21`` ratios); ``tests/test_gpu_jacobi_small.py`` runs the
kernel against ``torch.linalg.eigh``. One small module per (dtype, n, vectors), compiled with
CuPy's ``RawModule`` on first use per device; launched on torch's current stream; nothing is
synchronized.
"""
from __future__ import annotations

import numpy as np
import torch

from ..raw import _load
from ._context import StreamRef, current_stream_ptr
from ._jacobi_source import STAGE_BYTES, THREADS, kernel_name, kernel_source
from .cuda import _dtype, on_tensor_device
from .cuda_copy import column_major_layout

#: The largest order the kernel takes.
JACOBI_MAX_N = 8

#: Default sweep caps (real, complex).
MAX_SWEEPS_REAL = 15
MAX_SWEEPS_COMPLEX = 20

_SUPPORTED = (torch.float32, torch.float64, torch.complex64, torch.complex128)
_FN: dict = {}        # (device index, type letter, n, vectors) -> CuPy Function
_MODULES: dict = {}   # same key -> the RawModule (kept alive with its function)


def launch_geometry(batch: int) -> tuple:
    """``(grid, block)`` of one launch: one thread per matrix, :data:`THREADS` per block.

    Examples
    --------
    >>> launch_geometry(100_000), launch_geometry(1)
    (((391, 1, 1), (256, 1, 1)), ((1, 1, 1), (256, 1, 1)))
    """
    return (max(1, -(-batch // THREADS)), 1, 1), (THREADS, 1, 1)


def staged(itemsize: int, n: int) -> bool:
    """Whether the kernel stages matrices of ``n x n`` elements of ``itemsize`` bytes through
    shared memory (coalesced V stores, and coalesced loads of a contiguous input).

    Examples
    --------
    >>> staged(8, 3), staged(16, 3), staged(16, 4), staged(4, 7)
    (True, True, False, False)
    """
    return n * n * itemsize <= STAGE_BYTES


def _function(idx: int, prefix: str, n: int, vectors: bool):
    key = (idx, prefix, n, vectors)
    fn = _FN.get(key)
    if fn is None:
        mod = _MODULES.get(key)
        if mod is None:
            mod = _MODULES[key] = _load.cupy().RawModule(
                code=kernel_source(prefix, n, vectors), options=("--std=c++17",))
        kernel = mod.get_function(kernel_name(prefix, n, vectors))
        # the per-device Function behind CuPy's RawKernel: its call takes stream= directly
        fn = _FN[key] = getattr(kernel, "kernel", kernel)
    return fn


def _validate(a, upper, vectors, max_sweeps) -> int:
    if not isinstance(a, torch.Tensor):
        raise TypeError(f"a must be a torch.Tensor, got {type(a).__name__}")
    if a.dtype not in _SUPPORTED:
        raise TypeError(f"syevj_small takes float32, float64, complex64 or complex128, got "
                        f"{a.dtype}")
    if a.dim() < 2 or a.shape[-1] != a.shape[-2]:
        raise ValueError(f"a must be (..., n, n), got shape {tuple(a.shape)}")
    n = a.shape[-1]
    if n > JACOBI_MAX_N:
        raise ValueError(f"syevj_small takes n <= {JACOBI_MAX_N}, got n = {n}")
    for name, val in (("upper", upper), ("vectors", vectors)):
        if not isinstance(val, (bool, np.bool_)):
            raise TypeError(f"{name} must be a bool, got {val!r}")
    if max_sweeps is not None and (isinstance(max_sweeps, bool) or not isinstance(
            max_sweeps, (int, np.integer)) or max_sweeps < 1):
        raise ValueError(f"max_sweeps must be an int >= 1, got {max_sweeps!r}")
    if a.device.type != "cuda":
        raise ValueError(f"syevj_small runs on CUDA tensors, got one on {a.device}")
    return n


@on_tensor_device
def syevj_small(a: torch.Tensor, upper: bool = False, vectors: bool = True, *,
                max_sweeps: int | None = None):
    """Eigenvalues (and eigenvectors) of a batch of tiny Hermitian matrices, one CUDA thread
    per matrix (cyclic Jacobi; the module docstring has the design).

    Parameters
    ----------
    a : torch.Tensor (..., n, n), CUDA, float32 / float64 / complex64 / complex128
        n <= :data:`JACOBI_MAX_N`; any strides and conjugate / negative views. Never written;
        only the ``upper`` / lower triangle is read (and only the real part of the diagonal).
    upper : bool
        Read the upper triangle (torch's ``UPLO="U"``), else the lower one.
    vectors : bool
        Compute the eigenvectors too (else ``V`` is None and the kernel keeps no V).
    max_sweeps : int, optional
        Sweep cap (>= 1); default :data:`MAX_SWEEPS_REAL` for real dtypes,
        :data:`MAX_SWEEPS_COMPLEX` for complex ones.

    Returns
    -------
    W : torch.Tensor (..., n), the real dtype of ``a``, contiguous
        Eigenvalues, ascending.
    V : torch.Tensor (..., n, n) of ``a``'s dtype, or None
        Orthonormal eigenvectors as columns, each matrix column-major (torch's strides
        ``(n*n, 1, n)``): ``A @ V == V * W[..., None, :]``. None for ``vectors=False``.
    info : torch.Tensor int32 (batch,)
        0, or n + 1: not converged within the sweep cap, or NaN / Inf in the triangle read
        (then that matrix's W and V are NaN).

    Raises
    ------
    ValueError
        ``a`` not square or not on a CUDA device; n > :data:`JACOBI_MAX_N`; a bad
        ``max_sweeps``.
    TypeError
        ``a`` not a tensor, or of an unsupported dtype; ``upper`` / ``vectors`` not bools.

    Examples
    --------
    >>> W, V, info = syevj_small(A, upper=False)  # doctest: +SKIP
    """
    n = _validate(a, upper, vectors, max_sweeps)
    dt = _dtype(a.dtype)
    a = a.detach()
    *bshape, _, _ = a.shape
    bshape = tuple(bshape)
    batch = 1
    for d in bshape:
        batch *= d
    real = torch.float64 if a.dtype in (torch.float64, torch.complex128) else torch.float32
    dev = a.device
    W = torch.empty((*bshape, n), dtype=real, device=dev)
    V = None
    if vectors:
        shape, strides = column_major_layout(bshape, n, n)
        V = torch.empty_strided(shape, strides, dtype=a.dtype, device=dev)
    info = torch.empty(batch, dtype=torch.int32, device=dev)
    if batch == 0 or n == 0:
        info.zero_()
        return W, V, info
    if a.is_conj() or a.is_neg():
        a = a.resolve_conj().resolve_neg()      # a new tensor: the input stays unwritten
    try:
        a3 = a.view(batch, n, n)
    except RuntimeError:                        # batch dimensions that do not merge
        a3 = a.reshape(batch, n, n).contiguous()
    sb, sr, sc = a3.stride()
    if batch == 1:
        sb = n * n                              # any stride of a size-1 dimension is valid
    packed = int(sb == n * n and (sr, sc) in ((n, 1), (1, n)) and staged(a.element_size(), n))
    if max_sweeps is None:
        max_sweeps = MAX_SWEEPS_COMPLEX if dt.is_complex else MAX_SWEEPS_REAL
    idx = a.get_device()
    grid, block = launch_geometry(batch)
    _function(idx, dt.prefix, n, bool(vectors))(
        grid, block,
        (a3.data_ptr(), np.int64(batch), np.int64(sb), np.int64(sr), np.int64(sc),
         np.int32(bool(upper)), np.int32(packed), np.int32(max_sweeps), W.data_ptr(),
         0 if V is None else V.data_ptr(), info.data_ptr()),
        stream=StreamRef(current_stream_ptr(idx)))
    # a3 (a possible copy) must outlive the kernel: the caching allocator reuses its memory
    # only in stream order, so dropping the Python reference here is safe
    return W, V, info
