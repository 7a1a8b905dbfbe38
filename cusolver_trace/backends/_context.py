"""Handles, streams and memory for the CUDA backend.

* One cuSOLVER handle, one cuBLAS handle and one ``cusolverDnParams_t`` per
  (device, thread), created on first use and reused (destroyed when the thread
  ends).
* Every call runs on **torch's current stream** of the tensor's device: the
  handles are bound to it with ``cusolverDnSetStream`` / ``cublasSetStream``,
  and torch's stream is made CuPy's current stream around the call (CuPy's
  bindings reset the handle's stream to CuPy's current stream on every call).
* Workspaces come from torch's caching allocator (``torch.empty`` of bytes),
  so they are stream-ordered and reused like torch's own.
* Device pointers are taken from the tensors (``data_ptr()``): no copies.
"""
from __future__ import annotations

import contextlib
import threading

from ..raw import _load
from ..raw import cublas as _cublas
from ..raw import cusolver as _cusolver

_local = threading.local()


class GpuContext:
    """Library handles for one (device, thread). Use :func:`on_device` to get one."""

    def __init__(self, device_index: int):
        self.device_index = device_index
        self.solver = _cusolver.create()
        self.blas = _cublas.create()
        self.params = _cusolver.createParams()
        self._device = None

    @property
    def device(self):
        if self._device is None:
            import torch

            self._device = torch.device("cuda", self.device_index)
        return self._device

    def bind(self, stream_ptr: int) -> None:
        _cusolver.setStream(self.solver, stream_ptr)
        _cublas.setStream(self.blas, stream_ptr)

    def workspace(self, nbytes: int):
        """Device workspace of ``nbytes`` bytes from torch's caching allocator (at least 1 byte)."""
        import torch

        return torch.empty(max(int(nbytes), 1), dtype=torch.uint8, device=self.device)

    def close(self) -> None:
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


def handle_count() -> int:
    """Number of (device) contexts this thread holds (tests check handles are reused)."""
    return len(_contexts())


def cupy_stream(cp, torch_stream, device_index):
    """Make torch's stream CuPy's current stream (CuPy >= 14: ``Stream.from_external``)."""
    from_external = getattr(cp.cuda.Stream, "from_external", None)
    if from_external is not None:
        return from_external(torch_stream)
    return cp.cuda.ExternalStream(torch_stream.cuda_stream, device_index)


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
        stream = torch.cuda.current_stream(idx)
        ctxs = _contexts()
        ctx = ctxs.get(idx)
        if ctx is None:
            ctx = ctxs[idx] = GpuContext(idx)
        with cupy_stream(cp, stream, idx):
            ctx.bind(stream.cuda_stream)
            yield ctx


def pointer_array(t):
    """Device array (int64) of the addresses of the matrices of a contiguous ``(batch, r, c)`` tensor.

    This is the ``Aarray`` / ``Barray`` argument of ``potrfBatched``,
    ``potrsBatched`` and ``trsmBatched``.
    """
    import torch

    step = t.stride(0) * t.element_size()
    return t.data_ptr() + step * torch.arange(t.shape[0], dtype=torch.int64, device=t.device)
