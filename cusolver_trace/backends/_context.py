"""Handles, streams and memory for the CUDA backend.

* One cuSOLVER handle, one cuBLAS handle and one ``cusolverDnParams_t`` per
  (device, thread), created on first use and reused (destroyed when the thread
  ends).
* Every call runs on **torch's current stream** of the tensor's device: the
  handles are bound to it with ``cusolverDnSetStream`` / ``cublasSetStream``,
  which are called only when that stream differs from the one the handles were
  last bound to (:class:`StreamBinding`). Routines bound through CuPy (which
  resets the handle's stream to CuPy's current stream on every call) run with
  torch's stream made CuPy's current stream (:meth:`GpuContext.cupy_stream`, one
  cached CuPy stream object per torch stream).
* Workspaces come from torch's caching allocator (``torch.empty`` of bytes),
  so they are stream-ordered and reused like torch's own; the single-call
  routines keep one grow-only workspace per (thread, device) for the stream it
  was allocated on (:class:`Scratch`) instead of a fresh tensor per call.
* ``bufferSize`` answers of routines torch does not call itself are cached per
  (routine, dtype, uplo, n, lda) (:class:`SizeCache`): they are host-side queries
  whose answer depends on nothing else for a given device and library. The
  queries torch makes on every call (``cusolverDnXpotrf_bufferSize``) are made on
  every call here too: they are part of the call sequence a trace compares.
* Device pointers are taken from the tensors (``data_ptr()``): no copies.

:func:`bound` is the fast path of the backend's routines (the caller has made the
device current); :func:`on_device` is the context manager for everything else
(it also makes the device current in torch and CuPy and torch's stream CuPy's
current stream).

The cache classes here are plain Python over injected callables, so their keys
and invalidation rules are tested without a GPU.
"""
from __future__ import annotations

import contextlib
import functools
import threading

from ..raw import _load
from ..raw import cublas as _cublas
from ..raw import cusolver as _cusolver

_local = threading.local()


# --------------------------------------------------------------------------- pure caches
class StreamBinding:
    """Which stream a pair of library handles is bound to; rebinds only on a change.

    ``bind(ptr)`` calls every setter (``cusolverDnSetStream``, ``cublasSetStream``)
    with ``ptr`` when ``ptr`` differs from the stream bound last, and returns whether it
    did. Nothing else may change the handles' stream behind its back: CuPy-bound
    routines run with CuPy's current stream equal to the bound one.

    Examples
    --------
    >>> calls = []
    >>> b = StreamBinding(calls.append)
    >>> b.bind(7), b.bind(7), b.bind(9), calls
    (True, False, True, [7, 9])
    """

    __slots__ = ("_setters", "stream")

    def __init__(self, *setters):
        self._setters = setters
        self.stream = None

    def bind(self, ptr: int) -> bool:
        if ptr == self.stream:
            return False
        for set_stream in self._setters:
            set_stream(ptr)
        self.stream = ptr
        return True


class SizeCache(dict):
    """``bufferSize`` answers: ``key -> size``; :meth:`get_or` asks the library on a miss only.

    Keys come from :func:`size_key`. One cache lives in each (thread, device) context,
    so the device (SM count, library build) is part of the key by construction.

    Examples
    --------
    >>> c = SizeCache()
    >>> asked = []
    >>> ask = lambda: asked.append(1) or (128, 0)
    >>> c.get_or(size_key("potri", "d", 0, 64, 64), ask), c.get_or(size_key("potri", "d", 0, 64, 64), ask)
    ((128, 0), (128, 0))
    >>> len(asked)
    1
    """

    def get_or(self, key, ask):
        try:
            return self[key]
        except KeyError:
            val = self[key] = ask()
            return val


def size_key(routine: str, dtype, uplo: int, n: int, lda: int, *extra) -> tuple:
    """The key of one ``bufferSize`` answer: routine, dtype (type letter or
    ``cudaDataType``), fill mode, order, leading dimension and any other argument that
    the size depends on (``diag`` for trtri).

    Examples
    --------
    >>> size_key("potri", "d", 0, 256, 256)
    ('potri', 'd', 0, 256, 256)
    """
    return (routine, dtype, int(uplo), int(n), int(lda), *extra)


class Scratch:
    """One grow-only device workspace for the stream it was allocated on.

    ``get(nbytes, stream)`` returns the cached buffer when it was allocated for ``stream``
    and holds at least ``nbytes`` bytes; otherwise it drops it (the caching allocator
    reuses a freed block only in stream order, as for torch's own workspaces) and calls
    ``alloc(nbytes)`` while ``stream`` is current, as torch allocates its cuSOLVER
    workspaces. Work that uses the buffer is issued on ``stream`` only, so calls that
    share it are ordered. ``minimum``: the fewest bytes it allocates (so that calls of
    growing size do not each allocate anew).

    Examples
    --------
    >>> s = Scratch(lambda nbytes: bytearray(nbytes))
    >>> a = s.get(16, stream=1); b = s.get(8, stream=1); c = s.get(32, stream=1)
    >>> a is b, len(c), s.get(8, stream=2) is c
    (True, 32, False)
    >>> len(Scratch(lambda nbytes: bytearray(nbytes), minimum=64).get(8, stream=1))
    64
    """

    __slots__ = ("_alloc", "stream", "buf", "nbytes", "minimum")

    def __init__(self, alloc, minimum: int = 1):
        self._alloc, self.minimum = alloc, max(int(minimum), 1)
        self.stream, self.buf, self.nbytes = None, None, 0

    def get(self, nbytes: int, stream: int):
        nbytes = max(int(nbytes), self.minimum)
        if self.buf is None or stream != self.stream or nbytes > self.nbytes:
            self.buf = None  # free first: the allocator may hand the same block back
            self.buf = self._alloc(nbytes)
            self.stream, self.nbytes = stream, nbytes
        return self.buf

    def clear(self) -> None:
        self.stream, self.buf, self.nbytes = None, None, 0


class LaunchArgs:
    """A kernel's argument struct of ``nfields`` int64 on the host (``values``), and the
    one-entry ``void*`` array a driver launch takes as ``kernelParams``, pointing at it
    (``params_ptr``; ``cuLaunchKernel`` copies the struct at launch, so one per thread
    serves every call). The struct is passed by value: one conversion per launch instead of
    one per argument, which CuPy's ``Function.__call__`` pays. The launches of
    :mod:`.cuda_copy`, :mod:`.fused` and the check kernel (:mod:`.cuda`) use it.

    Examples
    --------
    >>> import ctypes
    >>> a = LaunchArgs(3)
    >>> ctypes.c_void_p.from_address(a.params_ptr).value == a.values.ctypes.data
    True
    """

    __slots__ = ("values", "params", "params_ptr", "last")

    def __init__(self, nfields: int):
        import numpy as np

        self.last = None  # for its user: the kind of launch whose constant fields values holds
        self.values = np.zeros(nfields, dtype=np.int64)
        self.params = np.array([self.values.ctypes.data], dtype=np.uintp)   # kept alive here
        self.params_ptr = self.params.ctypes.data


class StreamRef:
    """An object with a ``ptr`` attribute, what CuPy's kernel launch takes as ``stream=``
    (``cupy.cuda.function.Function.__call__`` reads only ``stream.ptr``)."""

    __slots__ = ("ptr",)

    def __init__(self, ptr: int):
        self.ptr = ptr


# --------------------------------------------------------------------------- contexts
def _set_solver_stream(handle, ptr):
    _cusolver.setStream(handle, ptr)


def _set_blas_stream(handle, ptr):
    _cublas.setStream(handle, ptr)


def device_bytes(device_index: int, nbytes: int):
    """``nbytes`` (at least 1) of device memory from torch's caching allocator, on torch's
    current stream of ``device_index``."""
    import torch

    return torch.empty(max(int(nbytes), 1), dtype=torch.uint8, device=torch.device("cuda", device_index))


class GpuContext:
    """Library handles for one (device, thread). Use :func:`bound` or :func:`on_device`."""

    def __init__(self, device_index: int):
        self.device_index = device_index
        self.solver = self.blas = self.params = None
        self.solver = _cusolver.create()
        self.blas = _cublas.create()
        self.params = _cusolver.createParams()
        self._device = None
        # no reference back to self (setters over the handles, the allocator over the device
        # index): a context of an ended thread is freed, its memory returned, at once
        self.binding = StreamBinding(functools.partial(_set_solver_stream, self.solver),
                                     functools.partial(_set_blas_stream, self.blas))
        self.stream_ref = StreamRef(0)
        self.sizes = SizeCache()
        self.scratch = Scratch(functools.partial(device_bytes, device_index))
        self._cupy_streams: dict = {}  # torch stream pointer -> CuPy stream object
        self.check_state = None        # the check kernel's counter, record, summary word (cuda.py)
        self.status_args = None        # the check kernel's argument buffer (cuda.py)

    @property
    def device(self):
        if self._device is None:
            import torch

            self._device = torch.device("cuda", self.device_index)
        return self._device

    @property
    def stream(self):
        """The stream pointer the handles are bound to (None before the first bind)."""
        return self.binding.stream

    def bind(self, stream_ptr: int) -> None:
        """Bind both handles to ``stream_ptr`` (no library call when already bound to it)."""
        if self.binding.bind(stream_ptr):
            self.stream_ref = StreamRef(stream_ptr)

    def workspace(self, nbytes: int):
        """A fresh device workspace of ``nbytes`` bytes from torch's caching allocator
        (at least 1 byte), on torch's current stream."""
        return device_bytes(self.device_index, nbytes)

    def cupy_stream(self):
        """CuPy's stream object for the bound stream (cached); ``with ctx.cupy_stream():``
        around CuPy-bound routines, which reset the handle's stream to CuPy's current one."""
        ptr = self.binding.stream
        st = self._cupy_streams.get(ptr)
        if st is None:
            import torch

            if len(self._cupy_streams) >= 16:  # streams come and go: keep a few
                self._cupy_streams.clear()
            st = self._cupy_streams[ptr] = cupy_stream(
                _load.cupy(), torch.cuda.current_stream(self.device_index), self.device_index)
        return st

    def close(self) -> None:
        self.scratch.clear()
        state, self.check_state = self.check_state, None
        if state is not None:
            try:
                state.close()
            except Exception:  # interpreter shutdown, context already gone
                pass
        for fn, h in ((_cusolver.destroyParams, "params"), (_cusolver.destroy, "solver"),
                      (_cublas.destroy, "blas")):
            val = getattr(self, h, None)
            if val:
                try:
                    fn(val)
                except Exception:  # interpreter shutdown, context already gone
                    pass
                setattr(self, h, None)


class _PerThread(dict):
    def __del__(self):  # the thread ended: give its handles back
        try:
            for ctx in self.values():
                ctx.close()
        except Exception:  # interpreter shutdown: module globals already cleared
            pass


def _contexts() -> _PerThread:
    ctxs = getattr(_local, "ctxs", None)
    if ctxs is None:
        ctxs = _local.ctxs = _PerThread()
    return ctxs


def context_for(ctxs: dict, device_index: int, make=GpuContext):
    """The context of ``device_index`` in a thread's ``ctxs`` (made on first use): one
    per device, so that a handle is never used on a device it was not created on.

    Examples
    --------
    >>> ctxs = {}
    >>> a = context_for(ctxs, 0, make=lambda i: ("ctx", i))
    >>> a is context_for(ctxs, 0, make=None), context_for(ctxs, 1, make=lambda i: ("ctx", i))
    (True, ('ctx', 1))
    """
    ctx = ctxs.get(device_index)
    if ctx is None:
        ctx = ctxs[device_index] = make(device_index)
    return ctx


def handle_count() -> int:
    """Number of (device) contexts this thread holds (tests check handles are reused)."""
    return len(_contexts())


def cupy_stream(cp, torch_stream, device_index):
    """Make torch's stream CuPy's current stream (CuPy >= 14: ``Stream.from_external``)."""
    from_external = getattr(cp.cuda.Stream, "from_external", None)
    if from_external is not None:
        return from_external(torch_stream)
    return cp.cuda.ExternalStream(torch_stream.cuda_stream, device_index)


def _raw_stream_getter():
    """``device_index -> torch's current stream pointer`` without building a Stream object
    (``torch._C._cuda_getCurrentRawStream``, what torch's own generated code calls; the
    public ``torch.cuda.current_stream(i).cuda_stream`` where a build lacks it)."""
    import torch

    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    if raw is not None:
        return raw
    return lambda idx: torch.cuda.current_stream(idx).cuda_stream


_current_raw_stream = None


def current_stream_ptr(device_index: int) -> int:
    """torch's current stream on ``device_index``, as a pointer."""
    global _current_raw_stream
    if _current_raw_stream is None:
        _current_raw_stream = _raw_stream_getter()
    return _current_raw_stream(device_index)


def current_device() -> int:
    """torch's current CUDA device: ``torch._C._cuda_getDevice`` (what
    ``torch.cuda.current_device`` calls after its lazy-init check, which a CUDA tensor in hand
    has passed; ~0.5 µs against ~2.5 µs per call on the H200), the public call where a build
    lacks it."""
    global _current_device
    if _current_device is None:
        import torch

        _current_device = getattr(torch._C, "_cuda_getDevice", None) or torch.cuda.current_device
    return _current_device()


_current_device = None


def context(device_index: int) -> GpuContext:
    """This thread's context for ``device_index`` (made on first use), its handles' stream
    left as it is."""
    return context_for(_contexts(), device_index)


def bound(device_index: int) -> GpuContext:
    """This thread's context for ``device_index``, its handles bound to torch's current
    stream there (a ``SetStream`` call only when that stream changed).

    The fast path: the caller has made ``device_index`` the current device (see
    :func:`cusolver_trace.backends.cuda.on_tensor_device`). CuPy's current stream is
    not touched; wrap CuPy-bound routines in ``ctx.cupy_stream()``.
    """
    ctx = context_for(_contexts(), device_index)
    ctx.bind(current_stream_ptr(device_index))
    return ctx


@contextlib.contextmanager
def on_device(device):
    """Context for cuSOLVER/cuBLAS calls on ``device`` (a ``torch.device`` of type cuda).

    Yields the :class:`GpuContext` of this thread and device, with its handles
    bound to torch's current stream on that device, that stream current in
    CuPy, and the device current in torch and CuPy.
    """
    torch = _load.torch_cuda()
    cp = _load.cupy()
    idx = device.index if device.index is not None else torch.cuda.current_device()
    with torch.cuda.device(idx), cp.cuda.Device(idx):
        ctx = bound(idx)
        with ctx.cupy_stream():
            yield ctx


def pointer_array(t):
    """Device array (int64) of the addresses of the matrices of a contiguous ``(batch, r, c)`` tensor.

    This is the ``Aarray`` / ``Barray`` argument of ``potrfBatched``,
    ``potrsBatched`` and ``trsmBatched``: one ``arange`` on the device, as torch's
    ``get_device_pointers`` makes it (one kernel; the addresses are exact in int64).
    """
    import torch

    step = t.stride(0) * t.element_size()
    p0 = t.data_ptr()
    return torch.arange(p0, p0 + step * t.shape[0], step, dtype=torch.int64, device=t.device)
