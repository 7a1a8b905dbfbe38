"""Fused backend: one cuSOLVERDx kernel per call for batches of small matrices.

cuSOLVERDx is cuSOLVER's device-side library: ``potrf`` / ``potrs`` run inside a
kernel, on matrices in shared memory, ``batches_per_block`` matrices per thread block.
The backend builds one kernel per (operation, n, nrhs, dtype, fill mode, layouts,
batches per block, block size, GPU architecture):

1. ``nvmath.device.Solver`` (nvmath-python's front end to libmathdx) generates the
   cuSOLVERDx device functions (``potrf``, ``potrs``) as LTO-IR with a C ABI;
2. NVRTC compiles the kernel below (global ↔ shared copies, the calls, info) to LTO-IR;
3. nvJitLink links both with cuSOLVERDx's universal fatbin into one cubin.

The cubin is cached in memory and on disk (``$XDG_CACHE_HOME/cusolver_trace/fused``,
keyed by every input above plus the versions of nvmath-python, libmathdx, NVRTC and
nvJitLink and the kernel source), so a new process loads it without compiling. Compiling
takes seconds to tens of seconds per kernel: an explicit ``method="fused"`` call that must
compile says so once (:class:`~cusolver_trace.errors.CompileWarning`); ``method="auto"``
asks :func:`ready` and runs torch's path while the kernel is built on a background thread;
:func:`warmup` (``cusolver-trace warmup``) builds a list of kernels ahead of time. It is
launched through CuPy on torch's current stream. The kernel is written in CUDA C++
rather than as a numba-cuda kernel because its launch must cost a few µs from Python:
a CuPy ``Function`` call takes raw pointers, while a numba kernel call goes through
numba's argument marshalling (tens of µs); numba-cuda is still needed, as
``nvmath.device`` imports it.

Layout (:func:`plan_call`). Inputs are torch tensors ``(..., n, n)`` whose matrices are
contiguous either row by row (``stride(-1) == 1``, torch's default) or column by column
(``.mT`` contiguous, as ``torch.linalg.cholesky`` returns); any other stride pattern is
first copied with ``.contiguous()``. Each block copies its matrices to shared memory
element for element, in the same order (coalesced, no transposition), and cuSOLVERDx is
told how to read them: ``layout="native"`` declares the buffer's own order
(``arrangement`` ``col_major`` for a column-major tensor) with the caller's fill mode;
``layout="row_major"`` (the default: cuSOLVERDx's row-major kernels measured faster on an
H200) reads a column-major buffer as the row-major buffer of the transpose, so the fill
mode flips (a column-major L is a row-major Lᵀ, upper). For complex matrices that
transpose is the conjugate of the factor cuSOLVERDx expects, which makes it solve with
conj(A): harmless for the inverse (conj(A)⁻¹ read back transposed is A⁻¹, A being
Hermitian) and for potrf (the factor of conj(A), read back transposed, is A's), and undone
in ``solve`` by conjugating B on load and X on store. Results come back in the input's
memory order.

This module holds the routines (:func:`potrf`, :func:`potrs`, :func:`cholesky_inverse`,
:func:`potrf_inverse` and the ``_checked`` variants) and is where every public name is
imported from; the rest lives in private modules, each depending only on those before it:

- :mod:`._fused_layout`: shapes and keys (:func:`arrangement_of`, :func:`shared_bytes`,
  :func:`rhs_chunk`, :func:`fits`, :class:`FusedKey`, :func:`plan_call`);
- :mod:`._fused_source`: the kernel's CUDA C++ source (:func:`kernel_source`), its cache key
  and the disk cache (:func:`cache_key`, :class:`DiskCache`);
- :mod:`._fused_toolchain`: the extra (:data:`EXTRA`, :func:`available`,
  :class:`FusedUnavailableError`), the library versions, cuSOLVERDx's suggestion and
  :func:`compile_kernel` (needs the extra, not a GPU; the seconds of each stage in its meta);
- :mod:`._fused_build`: :func:`make_key`, :data:`TUNED`, finding and building a kernel, and
  the background builds behind ``auto`` (no GPU);
- :mod:`._fused_launch`: :func:`kernel`, :func:`ready` and the launch;
- :mod:`._fused_warmup`: :func:`warmup`.

The first two are pure Python and are tested without a GPU; the rest with the compiler and
CuPy replaced by fakes (``tests/test_fused_background.py``).
"""
from __future__ import annotations

from ._fused_build import TUNED, Request, builds_awaited, make_key, start_worker  # noqa: F401
from ._fused_launch import _arg_buffer, _device_facts, _run, kernel, ready  # noqa: F401
from ._fused_layout import (CUSOLVERDX_STATIC_SMEM, LAYOUT, LAYOUTS, OPS,  # noqa: F401
                            SMEM_LIMIT, FusedKey, arrangement_of, fits, grid_size, plan_call,
                            rhs_chunk, shared_bytes, tail)
from ._fused_source import (_KERNEL, DiskCache, cache_key, default_cache_dir,  # noqa: F401
                            kernel_source)
from ._fused_toolchain import (EXTRA, FusedUnavailableError, _tools,  # noqa: F401
                               compile_kernel, missing_extra_message, suggested, versions)
from ._fused_toolchain import available as _available
from ._fused_warmup import ROUTINES, parse_sm, warmup  # noqa: F401

__all__ = ["EXTRA", "FusedUnavailableError", "FusedKey", "OPS", "arrangement_of", "rhs_chunk",
           "shared_bytes", "grid_size", "kernel_source", "cache_key", "DiskCache", "fits",
           "available", "potrf", "potrs", "cholesky_inverse", "potrf_inverse", "SMEM_LIMIT",
           "plan_call", "LAYOUT", "LAYOUTS", "ready", "warmup", "builds_awaited"]


def available() -> str | None:
    """None when the fused method can run here, else the reason (one line); a yes is
    remembered for the process. Once it is yes, the background thread that finds and
    builds the kernels ``auto`` asks for (:func:`ready`) is started, idle until then, and
    the current device's facts (compute capability, shared memory) are read: the first call
    of a new shape then only queues its kernel.

    Examples
    --------
    >>> available() is None or "pip install" in available() or "GPU" in available()
    True
    """
    global _PREPARED
    why = _available()
    if why is None and not _PREPARED:
        import torch

        start_worker()
        _device_facts(torch.cuda.current_device())   # the first call of a shape needs them
        _PREPARED = True
    return why


_PREPARED = False


# --------------------------------------------------------------------------- backend routines
def potrf(a, upper: bool, *, batches_per_block=None, block=None, layout=None,
        pad=None):
    """Cholesky factors of a batch of small matrices, one cuSOLVERDx ``potrf`` kernel.

    Parameters
    ----------
    a : torch CUDA tensor (..., n, n)
        Hermitian positive definite; only the ``upper`` / lower triangle is read.
        float32, float64, complex64, complex128.
    upper : bool
        A = Uᴴ·U instead of L·Lᴴ.
    batches_per_block, block : int, tuple of int, optional
        Override cuSOLVERDx's suggestion (tuning).
    layout : {"row_major", "native"}, optional
        How a column-major input is read (:func:`plan_call`; default :data:`LAYOUT`).
    pad : int, optional
        Shared-memory padding of the leading dimensions (:class:`FusedKey`; tuning).

    Returns
    -------
    L : tensor (..., n, n)
        The factor, the other triangle zeroed; same memory order as ``a``.
    info : int32 tensor (batch,)
        Per matrix, as ``cusolverDn<t>potrfBatched``: 0, or the order of the first
        leading minor that is not positive definite.

    Raises
    ------
    FusedUnavailableError
        The extra :data:`EXTRA` is missing.
    ValueError
        n too large for shared memory.

    Mirrors ``torch.linalg.cholesky_ex(a, upper)`` (``potrfBatched``'s info). No
    synchronization; launched on torch's current stream.

    Examples
    --------
    >>> L, info = potrf(A, False)   # doctest: +SKIP
    """
    return _run("potrf", a, None, upper, True, batches_per_block, block, layout, pad)


def potrs(c, b, upper: bool, *, batches_per_block=None, block=None, layout=None,
        pad=None):
    """Solve A·X = B from A's Cholesky factor for a batch of small systems, one kernel.

    Parameters
    ----------
    c : torch CUDA tensor (..., n, n)
        The factor (L, or U with ``upper``); only that triangle is read. float32, float64,
        complex64, complex128.
    b : torch CUDA tensor (..., n, nrhs), same batch shape and dtype
        Right-hand sides, any nrhs >= 1 (solved ``kc`` columns per cuSOLVERDx ``potrs``
        call, as many as shared memory holds).
    upper : bool
        A = Uᴴ·U instead of L·Lᴴ.
    batches_per_block, block : int, tuple of int, optional
        Override cuSOLVERDx's suggestion (tuning).
    layout : {"row_major", "native"}, optional
        How a column-major input is read (:func:`plan_call`; default :data:`LAYOUT`).
    pad : int, optional
        Shared-memory padding of the leading dimensions (:class:`FusedKey`; tuning).

    Returns
    -------
    X : tensor (..., n, nrhs)
        In ``b``'s memory order (row- or column-major).
    info : int32 tensor (batch,)
        All zeros: potrs reports nothing (as ``cusolverDn<t>potrs``).

    Raises
    ------
    FusedUnavailableError
        The extra :data:`EXTRA` is missing.
    ValueError
        n too large for shared memory.

    Mirrors ``torch.cholesky_solve(b, c, upper)``. No synchronization.

    Examples
    --------
    >>> X, _ = potrs(torch.linalg.cholesky(A), B, False)   # doctest: +SKIP
    """
    return _run("solve", c, b, upper, True, batches_per_block, block, layout, pad)


def cholesky_inverse(c, upper: bool, *, batches_per_block=None, block=None, layout=None,
        pad=None):
    """A⁻¹ from A's Cholesky factor for a batch of small matrices, one kernel: cuSOLVERDx
    ``potrs`` on an identity built in shared memory (never read from global memory).

    Parameters
    ----------
    c : torch CUDA tensor (..., n, n)
        The factor; only its lower (or ``upper``) triangle is read. float32, float64,
        complex64, complex128.
    upper : bool
        A = Uᴴ·U instead of L·Lᴴ.
    batches_per_block, block : int, tuple of int, optional
        Override cuSOLVERDx's suggestion (tuning).
    layout : {"row_major", "native"}, optional
        How a column-major input is read (:func:`plan_call`; default :data:`LAYOUT`).
    pad : int, optional
        Shared-memory padding of the leading dimensions (:class:`FusedKey`; tuning).

    Returns
    -------
    Ainv : tensor (..., n, n)
        In ``c``'s memory order; Hermitian up to rounding (as torch's CUDA path).
    info : None

    Raises
    ------
    FusedUnavailableError
        The extra :data:`EXTRA` is missing.
    ValueError
        n too large for shared memory: the largest n on an H200 (227 KiB per block) is
        240 (float32), 169 (float64, complex64), 119 (complex128).

    Mirrors ``torch.cholesky_inverse(c, upper)``. The row of
    :data:`cusolver_trace.routines.INVERSE_METHODS` named ``"fused"``.

    Examples
    --------
    >>> Ainv, _ = cholesky_inverse(torch.linalg.cholesky(A), False)   # doctest: +SKIP
    """
    x, _ = _run("inverse", c, None, upper, False, batches_per_block, block, layout, pad)
    return x, None


def cholesky_inverse_checked(c, upper: bool, **tuning):
    """:func:`cholesky_inverse` with the check computed inside the same kernel: the factor's
    triangle (non-finite entries, exact zeros on the diagonal) and the result (non-finite
    entries), reduced to one summary word in host-mapped memory; one synchronization.

    Returns
    -------
    Ainv : tensor (..., n, n)
    record : ndarray (batch, 3) int32 or None
        None when nothing is to report; else, per matrix, the record of
        :func:`cusolver_trace.backends.cuda.inverse_status` (info column 0).

    Examples
    --------
    >>> Ainv, record = cholesky_inverse_checked(torch.linalg.cholesky(A), False)  # doctest: +SKIP
    """
    x, _, record = _run("inverse", c, None, upper, False, tuning.get("batches_per_block"),
                        tuning.get("block"), tuning.get("layout"), tuning.get("pad"), True)
    return x, record


def potrf_inverse(a, upper: bool, *, batches_per_block=None, block=None, layout=None,
        pad=None):
    """A → A⁻¹ for a batch of small Hermitian positive definite matrices in one kernel:
    cuSOLVERDx ``potrf``, then ``potrs`` on the identity; the factor never leaves shared
    memory.

    Parameters
    ----------
    a : torch CUDA tensor (..., n, n)
        Only the lower (or ``upper``) triangle is read.
    upper : bool
        Factor the upper triangle.
    batches_per_block, block : int, tuple of int, optional
        Override cuSOLVERDx's suggestion (tuning).
    layout : {"row_major", "native"}, optional
        How a column-major input is read (:func:`plan_call`; default :data:`LAYOUT`).
    pad : int, optional
        Shared-memory padding of the leading dimensions (:class:`FusedKey`; tuning).

    Returns
    -------
    Ainv : tensor (..., n, n)
        In ``a``'s memory order; garbage where ``info != 0``.
    info : int32 tensor (batch,)
        As ``cusolverDn<t>potrfBatched``: 0, or the order of the first leading minor that
        is not positive definite.

    Raises
    ------
    FusedUnavailableError, ValueError
        As :func:`cholesky_inverse`.

    Mirrors ``torch.cholesky_inverse(torch.linalg.cholesky_ex(a, upper)[0], upper)``.

    Examples
    --------
    >>> Ainv, info = potrf_inverse(A, False)   # doctest: +SKIP
    """
    return _run("potrf_inverse", a, None, upper, True, batches_per_block, block, layout, pad)


def potrf_inverse_checked(a, upper: bool, **tuning):
    """:func:`potrf_inverse` with the check computed inside the same kernel (A's triangle,
    the result, potrf's info, a NaN pivot reported as Reference LAPACK's ``?potrf``
    does); one synchronization.

    Returns
    -------
    Ainv : tensor (..., n, n)
    info : int32 tensor (batch,)
        potrf's own info (as :func:`potrf_inverse`).
    record : ndarray (batch, 3) int32 or None
        None when nothing is to report; else per matrix: ``n - i`` of the first exact zero
        on A's diagonal, flags (1: A's triangle non-finite, 2: the result), and potrf's info
        with the first NaN pivot flagged.

    Examples
    --------
    >>> Ainv, info, record = potrf_inverse_checked(A, False)   # doctest: +SKIP
    """
    return _run("potrf_inverse", a, None, upper, True, tuning.get("batches_per_block"),
                tuning.get("block"), tuning.get("layout"), tuning.get("pad"), True)
