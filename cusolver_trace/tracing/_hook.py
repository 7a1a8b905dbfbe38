"""Which kernels did each cuSOLVER / cuBLAS API call launch? (per-call GPU time)

The loggers give the calls, torch.profiler gives the kernels; nothing in either
says which call launched which kernel, and the loggers' timestamps are whole
seconds. This module joins them inside the API child of
:func:`cusolver_trace.tracing.trace`:

1. :func:`install_stdout_hook` — before the libraries load, C ``stdout`` (the
   ``FILE *`` both loggers write to with ``CUSOLVERDN_LOG_LEVEL=5`` and
   ``CUBLAS_LOGDEST_DBG=stdout``) is replaced by an unbuffered glibc
   ``fopencookie`` stream whose write function passes every byte on to file
   descriptor 1 unchanged (the log the parent parses is the same text) and, for
   each record header it sees, drops a zero-length ``torch.profiler``
   ``record_function("ct_api#<i>:<function>")`` marker. The loggers write a
   record when the call is entered, before it launches anything, so the marker
   lands on the profiler's host timeline between the previous call's launches
   and this call's.
2. :func:`attribute` — each kernel (and memcpy / memset) belongs to the last
   marker before its launch (the ``cudaLaunchKernel*`` / ``cuLaunchKernel*``
   runtime event with the same correlation id). Kernels launched before the
   first marker are torch's own (ATen fill / copy kernels); they stay
   unattributed.

Measured on the H200 (torch 2.11.0+cu130): ``torch.cholesky_inverse(L)`` for n =
256 gives ``cusolverDnXpotrs`` one ``copy_info_kernel``, the first
``cublasDtrsm_v2_64`` 4 ``trsm_left_kernel`` + 3 ``gemm`` (nn), the second the
same with the transposed variants (``tests/data/.../kineto-cholesky_inverse.txt``).

Linux / glibc only (``fopencookie``); elsewhere :func:`install_stdout_hook`
returns ``None`` and the trace has no per-call times.
"""
from __future__ import annotations

import bisect
import ctypes
import os
import re
from dataclasses import dataclass, field
from typing import Iterable

__all__ = ["TICK_PREFIX", "RECORD_HEAD_RE", "StdoutHook", "install_stdout_hook",
           "kineto_events", "attribute", "Attribution"]

TICK_PREFIX = "ct_api#"
#: Start of a logged API record, as the two loggers print it (the same shapes as
#: :mod:`cusolver_trace.tracing.logparse` accepts: cuSOLVER ``[Api]`` lines,
#: cuBLAS ``I! cuBLAS (vX) function ... name(...) called:`` heads).
RECORD_HEAD_RE = re.compile(
    rb"^(?:\[[^\]\n]*\]\[cusolverDn\]\[\d+\]\[Api\]\[(?P<solver>cusolver\w+)\]"
    rb"|I! cuBLAS \(v[\d.]+\) function \w+ (?P<blas>cublas\w+)\()", re.M)
_TICK_RE = re.compile(r"^" + re.escape(TICK_PREFIX) + r"(?P<i>\d+):(?P<name>\w+)$")
_LAUNCH_PREFIXES = ("cudaLaunch", "cuLaunch", "cudaMemcpy", "cudaMemset", "cuMemcpy",
                    "cuMemset", "cudaGraphLaunch", "cuGraphLaunch")


class _CookieIO(ctypes.Structure):
    _WRITE = ctypes.CFUNCTYPE(ctypes.c_ssize_t, ctypes.c_void_p, ctypes.POINTER(ctypes.c_char),
                              ctypes.c_size_t)
    _fields_ = [("read", ctypes.c_void_p), ("write", _WRITE), ("seek", ctypes.c_void_p),
                ("close", ctypes.c_void_p)]


@dataclass
class StdoutHook:
    """C ``stdout`` routed through a counting pass-through (see the module docstring).

    ``names`` lists the function of every record header written since the last
    :meth:`reset`; while :attr:`profiling` is true each header also drops a
    ``ct_api#<i>:<function>`` marker on the torch.profiler timeline.
    """

    fd: int = 1
    profiling: bool = False
    names: list[str] = field(default_factory=list)
    #: With :attr:`capture_source`: per record, ``(file, line, code)`` of the user's
    #: Python frame that issued it (frames inside torch, this package and the
    #: bootstrap skipped), or ``None`` (no Python frame: a C++ / autograd thread).
    sources: list = field(default_factory=list)
    capture_source: bool = False
    #: Path prefixes whose frames are never "the user's line".
    skip_prefixes: tuple = ()
    _keep: list = field(default_factory=list, repr=False)

    def reset(self) -> None:
        self.names.clear()
        self.sources.clear()

    def _source(self):
        """``(file, line, code)`` of the innermost frame outside ``skip_prefixes``."""
        import linecache
        import sys as _sys

        try:
            frame = _sys._getframe(2)
        except ValueError:
            return None
        while frame is not None:
            fn = frame.f_code.co_filename
            if not (fn.startswith("<") or fn.startswith(self.skip_prefixes)):
                line = frame.f_lineno
                return (fn, line, linecache.getline(fn, line).strip())
            frame = frame.f_back
        return None

    def _on_write(self, _cookie, buf, size) -> int:
        data = ctypes.string_at(buf, size)
        try:
            for m in RECORD_HEAD_RE.finditer(data):
                name = (m.group("solver") or m.group("blas")).decode()
                i = len(self.names)
                self.names.append(name)
                if self.capture_source:
                    self.sources.append(self._source())
                if self.profiling:
                    from torch.profiler import record_function

                    with record_function(f"{TICK_PREFIX}{i}:{name}"):
                        pass
        except Exception:  # never break the library's stream over bookkeeping
            pass
        view = memoryview(data)
        while view:
            try:
                n = os.write(self.fd, view)
            except InterruptedError:
                continue
            except OSError:
                break
            view = view[n:]
        return size


def install_stdout_hook(fd: int = 1) -> StdoutHook | None:
    """Replace C ``stdout`` with the pass-through stream; ``None`` if this libc
    has no ``fopencookie`` (not glibc). Call it before cuSOLVER / cuBLAS load:
    a library may keep the ``FILE *`` it found at start-up."""
    try:
        libc = ctypes.CDLL(None)
        fopencookie = libc.fopencookie
        stdout_var = ctypes.c_void_p.in_dll(libc, "stdout")
    except (OSError, AttributeError, ValueError):
        return None
    hook = StdoutHook(fd)
    write = _CookieIO._WRITE(hook._on_write)
    fopencookie.restype = ctypes.c_void_p
    fopencookie.argtypes = [ctypes.c_void_p, ctypes.c_char_p, _CookieIO]
    fp = fopencookie(None, b"w", _CookieIO(None, write, None, None))
    if not fp:
        return None
    libc.setvbuf.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_size_t]
    libc.fflush(None)
    libc.setvbuf(fp, None, 2, 0)  # _IONBF: every record reaches the hook at once
    stdout_var.value = fp
    hook._keep[:] = [write, fp]  # the callback must outlive the stream
    return hook


def _annotation(e) -> bool:
    """A ``gpu_user_annotation`` event (a ``record_function`` range such as
    ``Optimizer.step#Adam.step`` on the GPU timeline): it spans kernels, it is not one."""
    try:
        if e.is_user_annotation():
            return True
    except Exception:
        pass
    try:
        return "annotation" in str(e.activity_type()).lower()
    except Exception:
        return False


def kineto_events(prof) -> list[tuple[str, int, int, int, str]]:
    """``(device, start_ns, duration_ns, correlation_id, name)`` for every event of a
    finished ``torch.profiler.profile`` (device ``"cpu"`` / ``"cuda"``), start order."""
    out = []
    for e in prof.profiler.kineto_results.events():
        dev = "cuda" if "CUDA" in str(e.device_type()) else "cpu"
        if dev == "cuda" and _annotation(e):  # a record_function range, not a kernel
            continue
        out.append((dev, int(e.start_ns()), int(e.duration_ns()), int(e.correlation_id()),
                    e.name()))
    out.sort(key=lambda r: r[1])
    return out


@dataclass
class Attribution:
    """Kernels per API record: ``per_record[i]`` lists ``(kernel name, GPU ms)`` of the
    i-th record's launches, in launch order; ``names[i]`` is that record's function
    (from the marker). ``outside`` holds kernels launched before the first record."""

    names: list[str]
    per_record: list[list[tuple[str, float]]]
    outside: list[tuple[str, float]]

    def to_dict(self) -> dict:
        return {"names": self.names, "per_record": self.per_record, "outside": self.outside}

    @classmethod
    def from_dict(cls, d: dict) -> "Attribution":
        return cls(list(d["names"]), [[(k, float(ms)) for k, ms in r] for r in d["per_record"]],
                   [(k, float(ms)) for k, ms in d["outside"]])


def attribute(events: Iterable[tuple[str, int, int, int, str]]) -> Attribution:
    """Assign each device event to the API record whose marker last precedes its launch.

    ``events``: ``(device, start_ns, duration_ns, correlation_id, name)`` as from
    :func:`kineto_events` (or the fixture file). A device event whose launch is
    not among the host events is placed by its own start time.
    """
    events = list(events)
    ticks: list[tuple[int, int, str]] = []
    launch: dict[int, int] = {}
    for dev, start, _dur, corr, name in events:
        if dev != "cpu":
            continue
        m = _TICK_RE.match(name)
        if m:
            ticks.append((start, int(m.group("i")), m.group("name")))
        elif name.startswith(_LAUNCH_PREFIXES):
            launch.setdefault(corr, start)
    ticks.sort()
    starts = [t[0] for t in ticks]
    count = max((t[1] for t in ticks), default=-1) + 1
    names = [""] * count
    for _s, i, name in ticks:
        names[i] = name
    per: list[list[tuple[str, float]]] = [[] for _ in range(count)]
    outside: list[tuple[str, float]] = []
    kernels = sorted(((launch.get(corr, start), name, dur / 1e6)
                      for dev, start, dur, corr, name in events if dev == "cuda"),
                     key=lambda k: k[0])
    for t, name, ms in kernels:
        j = bisect.bisect_right(starts, t) - 1
        (outside if j < 0 else per[ticks[j][1]]).append((name, ms))
    return Attribution(names, per, outside)
