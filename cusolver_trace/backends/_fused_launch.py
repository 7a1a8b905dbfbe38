"""Loading and launching the fused kernels (needs a GPU).

:func:`kernel` loads one call's cubin (memory, this process's builds or the disk cache, or
compiled now, with a :class:`~cusolver_trace.errors.CompileWarning`) as a CuPy function, and
:func:`_run` launches it on torch's current stream with one ``cuLaunchKernel``: the routines
of :mod:`cusolver_trace.backends.fused` call :func:`_run`. :func:`ready` says whether a call's
kernel can run without compiling (starting its build in the background when not): what
``method="auto"`` asks. Every public name is imported from that module.
"""
from __future__ import annotations

import math
import os
import sys
import threading
import warnings

from .._dtypes import dtype_info
from . import _context
from . import _fused_build as _build
from . import _fused_toolchain as _toolchain
from . import _waiting
from .cuda_copy import column_major_layout
from ._fused_build import Request, make_key
from ._fused_layout import SMEM_LIMIT, FusedKey, arrangement_of, plan_call
from ._fused_source import default_cache_dir

_lock = threading.Lock()
_MODULES: dict = {}   # (device index, FusedKey) -> (cupy Function, meta)


def _device_facts(idx: int):
    """``(compute capability, shared memory per block opt-in)`` of CUDA device ``idx``."""
    facts = _DEVICE.get(idx)
    if facts is None:
        import torch

        props = torch.cuda.get_device_properties(idx)
        limit = getattr(props, "shared_memory_per_block_optin", 0) or SMEM_LIMIT
        facts = _DEVICE[idx] = ((props.major, props.minor), int(limit))
    return facts


_DEVICE: dict = {}


def _load_function(idx: int, key: FusedKey):
    """The CuPy function for ``key`` on device ``idx``: built by this process or in the disk
    cache, else compiled now (with a :class:`~cusolver_trace.errors.CompileWarning`, then
    stored on disk)."""
    import cupy as cp

    hit = _build.cached(key)
    if hit is None:
        _warn_compiling(key)
        hit = _build.build(key)
    cubin, meta = hit
    with cp.cuda.Device(idx):
        mod = cp.cuda.function.Module()
        mod.load(cubin)
        fn = mod.get_function(key.kernel_name)
        static = int(getattr(fn, "shared_size_bytes", 0) or 0)
        limit = _device_facts(idx)[1]
        if static + key.shared_bytes > limit:
            raise ValueError(f"fused {key.op} n = {key.n} {key.dtype}: {key.shared_bytes} bytes of "
                             f"shared memory + {static} used by cuSOLVERDx exceed the {limit} a "
                             "block can have on this GPU")
        if key.shared_bytes > 48 * 1024:
            # CuPy's Function has no setter for this (RawKernel has); the driver call it wraps:
            # CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8 in cuda.h
            attr = getattr(cp.cuda.driver, "CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES", 8)
            cp.cuda.driver.funcSetAttribute(fn.ptr, attr, int(key.shared_bytes))
    return fn, mod


def kernel(idx: int, op: str, n: int, nrhs: int, dtype: str, upper: bool, arr_a: str,
           arr_b: str, batches_per_block=None, block=None, conj: bool = False, pad=None,
           check: bool = False):
    """``(CuPy function, FusedKey, CuPy module)`` for one call on device ``idx``, compiled or
    loaded on first use and cached in memory (the hot path is one dict lookup); ``check``
    selects the kernel with the in-kernel check compiled in."""
    memo = (idx, op, n, nrhs, dtype, upper, arr_a, arr_b, batches_per_block,
            None if block is None else tuple(block), conj, pad, check)
    hit = _MODULES.get(memo)
    if hit is not None:
        return hit
    with _lock:
        hit = _MODULES.get(memo)
        if hit is None:
            sm, limit = _device_facts(idx)
            req = Request(op, n, nrhs, dtype, upper, arr_a, arr_b, sm, limit, batches_per_block,
                          None if block is None else tuple(block), conj, pad, check)
            job = _build.take_over(req)   # a build auto queued: compiled here if not started
            if job is not None:   # running on the background thread: waited for
                _warn_compiling(req)
                job.exception()
            key = make_key(*req)
            fn, mod = _load_function(idx, key)
            hit = _MODULES[memo] = (fn, key, mod)
            _build.mark_ready(req)
    return hit


def _warn_compiling(what) -> None:
    """The :class:`~cusolver_trace.errors.CompileWarning` of a call that waits for a kernel's
    compilation, once per kernel (``what``: its :class:`FusedKey` or :class:`Request`)."""
    kernel = (what.op, what.n, what.dtype, what.upper, what.arr_a, what.check, what.sm)
    if kernel in _WARNED:
        return
    _WARNED.add(kernel)
    from ..errors import CompileWarning

    warnings.warn(
        f"compiling the fused kernel {what.op!r} for n = {what.n} {what.dtype} (cuSOLVERDx "
        f"through libmathdx, NVRTC and nvJitLink): about 10-30 s on a cold cache, then cached "
        f"on disk in {default_cache_dir()}; `cusolver-trace warmup` or cusolver_trace.warmup() "
        "compile kernels ahead of time", CompileWarning, stacklevel=_outside_level())


_WARNED: set = set()


def _outside_level() -> int:
    """The ``stacklevel`` that names the first frame outside this package: the user's call
    (counted from the function that calls :func:`warnings.warn`)."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    frame, level = sys._getframe(1), 1   # the caller of warnings.warn is level 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(here):
        frame, level = frame.f_back, level + 1
    return level


def ready(op: str, x, upper: bool, check: bool = False, layout=None) -> bool:
    """Whether the kernel a call of ``op`` on ``x`` needs can run now without compiling:
    loaded in this process, built by it, or in the disk cache. When it cannot, its build
    starts in the background (once; :func:`._fused_build.ready`) and the answer is False
    until it is built, and stays False where the build failed. A ``check`` call's first ask
    is handed to the background thread while that call waits for its check kernel
    (:mod:`._waiting`; a query, :func:`cusolver_trace.routines.inverse_method`, hands it over
    before it returns). What ``method="auto"`` asks
    (:attr:`cusolver_trace.routines.Impl.ready`); the kernel depends on x's dtype, order and
    memory order (row- or column-major), ``upper`` and ``check``.

    Parameters
    ----------
    op : {"inverse", "potrf_inverse"}
        The kernel: A⁻¹ from the factor, or from A.
    x : torch CUDA tensor (..., n, n)
        The factor (``inverse``) or A.
    upper : bool
    check : bool
        The kernel with the in-kernel check (the ``_checked`` routines).
    layout : {"row_major", "native"}, optional
        As the routines' ``layout``.

    Examples
    --------
    >>> ready("inverse", torch.linalg.cholesky(A), False, True)   # doctest: +SKIP
    False
    """
    if op not in ("inverse", "potrf_inverse"):
        raise ValueError(f"ready: op must be 'inverse' or 'potrf_inverse', got {op!r}")
    if _waiting.PENDING:   # an earlier call's deferred ask (its wait never came)
        _waiting.run()
    memo = (op, dtype_info(x.dtype).name, upper, _arrangement(x) or "row_major", None, layout,
            x.shape[-1], x.shape[-1], x.get_device(), None, None, None, bool(check))
    if memo in _CALLS:
        return True
    req = _REQUESTS.get(memo)
    if req.__class__ is Request:
        return _build.ready(req)
    if _build.MARKED or _build.awaiting():   # kernels built ahead / builds_awaited: made here
        req = _REQUESTS[memo] = _request(memo)
        return _build.ready(req)
    if req is None:   # the first time: the background thread makes the Request, keeps it
        if len(_REQUESTS) >= 4096:   # many distinct shapes: start over rather than grow
            _REQUESTS.clear()
        _REQUESTS[memo] = _ASKED
        _build.ask(_request, _publish, memo, defer=bool(check))   # checked: put in its wait
    return False   # asked (the thread has not made its Request yet), or no kernel for it


def _request(memo) -> Request:
    """The :class:`Request` of :func:`ready`'s ``memo`` (the call's plan, the device's facts)."""
    op, dtype, upper, in_a, _, layout, n, _, idx, _, _, _, check = memo
    plan = plan_call(op, dtype, upper, in_a, None, layout)
    sm, limit = _device_facts(idx)
    return Request(op, n, n, dtype, plan["upper"], plan["arr_a"], plan["arr_b"], sm, limit,
                   None, None, plan["conj"], None, check)


def _publish(memo, req) -> None:
    """The background thread's answer to :func:`ready`'s ask: ``memo``'s Request, or
    :data:`_FAILED` (None: :func:`_request` raised; ``auto`` keeps its next rule)."""
    _REQUESTS[memo] = _FAILED if req is None else req


# ready()'s memo -> Request (or _ASKED / _FAILED): the calls made while a kernel is built
_REQUESTS: dict = {}
_ASKED = object()   # queued for the background thread, which has not made the Request yet
_FAILED = object()   # no Request could be made


def _operand(x):
    """``(x, arrangement)``: ``x`` itself when its matrices lie row- or column-major in
    one contiguous buffer, else a contiguous copy (conjugate / negative views resolved:
    their copies keep x's strides)."""
    if x.requires_grad:
        x = x.detach()
    if x.is_conj() or x.is_neg():
        x = x.resolve_conj().resolve_neg()
    arr = _arrangement(x)
    return (x, arr) if arr is not None else (x.contiguous(), "row_major")


def _arrangement(x) -> str | None:
    """``"row_major"`` (``x`` contiguous), ``"col_major"`` (``x.mT`` contiguous), or None:
    neither, :func:`_operand` copies it row-major (:func:`~._fused_layout.arrangement_of`
    of its shape and strides: ``Tensor.is_contiguous`` and ``.mT`` cost tens of µs the
    first time a process calls them, which the first ``auto`` call of a new shape paid on
    the H200)."""
    return arrangement_of(x.shape, x.stride())


def _empty(batch_shape, r, c, arr, like):
    """The output, row- or column-major; ``Tensor.new_empty`` / ``new_empty_strided`` take
    ``like``'s dtype and device without parsing them again (about half the host time of
    ``torch.empty``), and the column-major layout needs no transposed view."""
    if arr == "row_major":
        return like.new_empty((*batch_shape, r, c))
    return like.new_empty_strided(*column_major_layout(batch_shape, r, c))


#: The kernel's argument struct (``FusedArgs`` in :data:`._fused_source._KERNEL`), in field order.
_ARG_FIELDS = ("A", "B", "X", "info", "batch", "rec", "counter", "summary")
_ARGS = threading.local()   # per thread: the struct's buffer and cuLaunchKernel's params array


def _arg_buffer():
    """This thread's ``(values, params)``: 8 int64 holding the struct, and the address of
    ``kernelParams`` for ``cuLaunchKernel`` (:class:`._context.LaunchArgs`)."""
    buf = getattr(_ARGS, "buf", None)
    if buf is None:
        buf = _ARGS.buf = _context.LaunchArgs(len(_ARG_FIELDS))
    return buf.values, buf.params_ptr


class _Prepared:
    """Everything one kind of call needs at launch, decided once (:func:`plan_call`,
    :func:`kernel`) and kept in :data:`_CALLS`: the per-call work is then one dict lookup,
    the output allocation and the launch."""

    __slots__ = ("fn", "key", "mod", "out", "bpb", "block", "smem")

    def __init__(self, fn, key: FusedKey, mod, out: str):
        self.fn, self.key, self.mod, self.out = fn.ptr, key, mod, out
        self.bpb, self.block, self.smem = key.batches_per_block, key.block, key.shared_bytes


_CALLS: dict = {}   # (op, dtype, upper, arrangements, n, nrhs, device, tuning, check) -> _Prepared


def _prepare(op, dtype, upper, in_a, in_b, layout, n, nrhs, idx, batches_per_block, block,
             pad, check) -> _Prepared:
    plan = plan_call(op, dtype, upper, in_a, in_b, layout)
    fn, key, mod = kernel(idx, op, n, nrhs, dtype, plan["upper"], plan["arr_a"], plan["arr_b"],
                          batches_per_block, block, plan["conj"], pad, bool(check))
    return _Prepared(fn, key, mod, plan["out"])


def _run(op, x, b, upper, info_needed, batches_per_block, block, layout, pad=None, check=False):
    """Launch one fused kernel on torch's current stream: ``(out, info)``, or with ``check``
    (the inverses) ``(out, info, record)`` after the call's one synchronization, where
    ``record`` is None when nothing is to report, else the ``(batch, 3)`` host record of
    :func:`cusolver_trace.backends.cuda.inverse_status`."""
    if _toolchain._TOOLS is None:   # read at call time: _tools() sets it once
        _toolchain._tools()   # first: a missing extra is named before anything else fails
    import torch

    dtype = dtype_info(x.dtype).name   # TypeError for a dtype no kernel takes
    x, in_a = _operand(x)
    shape = x.shape
    n = shape[-1]
    batch_shape = shape[:-2]
    batch = math.prod(batch_shape)
    idx = x.get_device()   # an int, without building a torch.device
    if idx < 0:
        raise ValueError(f"fused: needs CUDA tensors, got a tensor on {x.device}")
    in_b = None
    if b is not None:
        b, in_b = _operand(b)
    nrhs = b.shape[-1] if op == "solve" else (0 if op == "potrf" else n)
    memo = (op, dtype, upper, in_a, in_b, layout, n, nrhs, idx, batches_per_block,
            None if block is None else tuple(block), pad, check)
    prep = _CALLS.get(memo)
    if prep is None:
        prep = _CALLS[memo] = _prepare(op, dtype, upper, in_a, in_b, layout, n, nrhs, idx,
                                       batches_per_block, block, pad, check)
    out = _empty(batch_shape, n, nrhs if op == "solve" else n, prep.out, x)
    info = x.new_empty(batch, dtype=torch.int32) if info_needed else None
    if batch == 0:
        return (out, info, None) if check else (out, info)
    if _context.current_device() != idx:
        import cupy as cp

        with torch.cuda.device(idx), cp.cuda.Device(idx):
            return _launch(prep, idx, x, b, out, info, batch, check)
    return _launch(prep, idx, x, b, out, info, batch, check)


def _launch(prep: _Prepared, idx, x, b, out, info, batch, check):
    """One ``cuLaunchKernel`` (CuPy's binding of the driver call) on torch's current stream.
    Hand-written instead of calling CuPy's ``Function``: that wrapper converts every
    argument on each call, and this path's goal is a few microseconds of host time."""
    rec = counter = summary = 0
    if check:
        from . import cuda as _cuda_backend   # the check's state and its one synchronization

        state, acc, stream_ptr, summary = _cuda_backend.self_check_buffers(idx, batch)
        rec, counter = acc.data_ptr(), state.counter_ptr
    else:
        stream_ptr = _context.current_stream_ptr(idx)
    values, params = _arg_buffer()
    values[:] = (x.data_ptr(), 0 if b is None else b.data_ptr(), out.data_ptr(),
                 0 if info is None else info.data_ptr(), batch, rec, counter, summary)
    bx, by, bz = prep.block
    _driver().launchKernel(prep.fn, -(-batch // prep.bpb), 1, 1, bx, by, bz, prep.smem,
                           stream_ptr, params, 0)
    if not check:
        return out, info
    return out, info, _cuda_backend.finish_check(idx, state, acc, stream_ptr, batch)


def _driver():
    global _DRIVER
    if _DRIVER is None:
        from ..raw import _load

        _DRIVER = _load.cupy_driver()
    return _DRIVER


_DRIVER = None
