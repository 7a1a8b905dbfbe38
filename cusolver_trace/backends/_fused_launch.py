"""Loading and launching the fused kernels (needs a GPU).

:func:`make_key` picks one call's :class:`FusedKey` (the tuned choice of :data:`TUNED`,
else cuSOLVERDx's suggestion), :func:`kernel` loads its cubin (memory, the disk cache, or
compiled now) as a CuPy function, and :func:`_run` launches it on torch's current stream
with one ``cuLaunchKernel``: the routines of :mod:`cusolver_trace.backends.fused` call
:func:`_run`. Every public name is imported from that module.
"""
from __future__ import annotations

import math
import threading

from .._dtypes import dtype_info
from . import _context
from . import _fused_toolchain as _toolchain
from .cuda_copy import column_major_layout
from ._fused_layout import CUSOLVERDX_STATIC_SMEM, SMEM_LIMIT, FusedKey, plan_call, rhs_chunk
from ._fused_source import DiskCache, cache_key
from ._fused_toolchain import compile_kernel, suggested, versions

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


def make_key(op: str, n: int, nrhs: int, dtype: str, upper: bool, arr_a: str, arr_b: str,
             sm: tuple, limit: int = SMEM_LIMIT, batches_per_block: int | None = None,
             block: tuple | None = None, conj: bool = False, pad: int | None = None,
             check: bool = False) -> FusedKey:
    """The :class:`FusedKey` for one call: batches per block, block size and padding as
    given, else the tuned choice of :data:`TUNED` for ``(op, n, dtype)`` where there is one,
    else cuSOLVERDx's suggestion (padding 0); batches per block lowered until the block fits
    in ``limit`` bytes of shared memory (less :data:`CUSOLVERDX_STATIC_SMEM`)."""
    limit = limit - CUSOLVERDX_STATIC_SMEM
    t_bpb, t_block, t_pad = TUNED.get((op, n, dtype), (None, None, 0))
    pad = t_pad if pad is None else pad
    if batches_per_block is None or block is None:
        if batches_per_block is None and block is None and t_bpb is not None:
            s_bpb, s_block = t_bpb, t_block
        else:
            s_bpb, s_block = suggested(op, n, nrhs, dtype, upper, sm)
        batches_per_block = batches_per_block or s_bpb
        block = tuple(block) if block is not None else tuple(s_block)
    bpb = int(batches_per_block)
    while True:
        try:
            kc = rhs_chunk(op, n, nrhs, dtype, bpb, limit, pad, arr_b)
            if op == "potrf" or kc == nrhs or bpb == 1:
                break
        except ValueError:
            if bpb == 1:
                raise
        bpb = max(1, bpb // 2)
    block = tuple(int(b) for b in block) + (1,) * (3 - len(block))
    return FusedKey(op, n, nrhs if op != "potrf" else 0, kc, dtype, bool(upper), arr_a, arr_b,
                    bpb, block, tuple(sm), bool(conj), int(pad), bool(check))


#: Tuned ``(batches_per_block, block, pad)`` per ``(op, n, dtype)``: the fastest candidate of
#: ``devrun/fused/cases.py``'s TUNE list (CUDA-event medians, H200, torch 2.11, 2026-12-01;
#: batches 100000 x 4, 10000 x 8, 100000 x 16, 1000 x 32, 1000 x 64, 100 x 128, the inverse
#: from a column-major factor, A -> A^-1 from a row-major A), kept where it beat
#: cuSOLVERDx's suggestion by more than 3 %. ``(None, None, pad)``: the suggestion with that
#: padding. Shapes not listed (other n, the complex types, potrf, solve) use the suggestion.
#: Reproduce with ``bash devrun/fused/run.sh timing float64,float32``.
TUNED: dict = {
    ("inverse", 4, "float64"): (32, (32,), 1),       # 0.0321 ms vs 0.0355 suggested
    ("inverse", 8, "float64"): (4, (32,), 0),        # 0.0278 vs 0.0286
    ("inverse", 16, "float64"): (4, (64,), 0),       # 0.1615 vs 0.1996
    ("inverse", 32, "float64"): (4, (128,), 0),      # 0.0320 vs 0.0581
    ("inverse", 64, "float64"): (None, None, 1),     # 0.0750 vs 0.0852
    ("inverse", 4, "float32"): (32, (32,), 1),       # 0.0275 vs 0.0371
    ("inverse", 16, "float32"): (4, (64,), 0),       # 0.1240 vs 0.1437
    ("inverse", 32, "float32"): (4, (128,), 0),      # 0.0314 vs 0.0337
    ("inverse", 64, "float32"): (1, (256,), 0),      # 0.1096 vs 0.2463
    ("inverse", 128, "float32"): (1, (256,), 0),     # 0.0769 vs 0.2866
    ("potrf_inverse", 8, "float64"): (8, (64,), 1),  # 0.0258
    ("potrf_inverse", 16, "float64"): (4, (64,), 0),  # 0.2679
    ("potrf_inverse", 32, "float64"): (1, (128,), 1),  # 0.0321
    ("potrf_inverse", 64, "float64"): (None, None, 1),  # 0.1297 vs 0.2157
    ("potrf_inverse", 128, "float64"): (1, (256,), 0),  # 0.3081 vs 1.3160 (second run)
    ("potrf_inverse", 4, "float32"): (32, (32,), 1),  # 0.0270
    ("potrf_inverse", 8, "float32"): (8, (64,), 0),  # 0.0264
    ("potrf_inverse", 16, "float32"): (4, (64,), 0),  # 0.1802
    ("potrf_inverse", 64, "float32"): (1, (256,), 0),  # 0.2194 vs 0.3137
    ("potrf_inverse", 128, "float32"): (1, (256,), 0),  # 0.1361 vs 0.5981
}


def _load_function(idx: int, key: FusedKey):
    """The CuPy function for ``key`` on device ``idx``: from memory, the disk cache, or
    compiled now (then stored on disk)."""
    import cupy as cp

    digest = cache_key(key, versions())
    cache = DiskCache()
    hit = cache.load(digest)
    if hit is None:
        cubin, meta = compile_kernel(key)
        cache.store(digest, cubin, meta)
    else:
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
            key = make_key(op, n, nrhs, dtype, upper, arr_a, arr_b, sm, limit,
                           batches_per_block, block, conj, pad, check)
            fn, mod = _load_function(idx, key)
            hit = _MODULES[memo] = (fn, key, mod)
    return hit


def _operand(x):
    """``(x, arrangement)``: ``x`` itself when its matrices lie row- or column-major in
    one contiguous buffer, else a contiguous copy (conjugate / negative views resolved)."""
    if x.requires_grad:
        x = x.detach()
    if x.is_conj() or x.is_neg():
        x = x.resolve_conj().resolve_neg()
    if x.is_contiguous():
        return x, "row_major"
    if x.mT.is_contiguous():
        return x, "col_major"
    return x.contiguous(), "row_major"


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
