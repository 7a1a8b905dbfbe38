"""Which kernels did each cuSOLVER / cuBLAS API call launch? The traced process's side.

Standard library only: the children of :func:`cusolver_trace.tracing.trace` and of
``cusolver-trace trace -- python3 prog.py`` load this file by path, before torch (and so
before cuSOLVER / cuBLAS) is loaded, without importing :mod:`cusolver_trace`.

1. :func:`install_stdout_hook` -- C ``stdout``, which both loggers write to, becomes a
   pass-through that drops a ``record_function`` marker ``ct_api#<i>:<function>`` for each
   record header.
2. :class:`Profiler` -- torch's profiler with only what the report needs (CUDA activities,
   the markers; every torch op only when asked).
3. :func:`correlate` -- each GPU activity goes to the call whose marker last precedes its
   launch.

The rules of the join, and what was measured with it on the H200: docs/reading-a-trace.md,
"Per-call GPU time", and docs/tracing-programs.md, "How GPU time per call is measured".
Linux / glibc only (``fopencookie``); elsewhere :func:`install_stdout_hook` returns ``None``.
"""
from __future__ import annotations

import bisect
import ctypes
import functools
import os
import re
import sys

TICK_PREFIX = "ct_api#"
#: Start of a logged API record, as the two loggers print it (the shapes
#: :mod:`cusolver_trace.tracing.logparse` accepts: cuSOLVER ``[Api]`` lines, cuBLAS
#: ``I! cuBLAS (vX) function ... name(...) called:`` heads).
RECORD_HEAD_RE = re.compile(
    rb"^(?:\[[^\]\n]*\]\[cusolverDn\]\[\d+\]\[Api\]\[(?P<solver>cusolver\w+)\]"
    rb"|I! cuBLAS \(v[\d.]+\) function \w+ (?P<blas>cublas\w+)\()", re.M)
_TICK_RE = re.compile(r"^" + re.escape(TICK_PREFIX) + r"(?P<i>\d+):(?P<name>\w+)$")
_QUERY_RE = re.compile(r"_?[bB]ufferSize$")
_SETUP_RE = re.compile(r"^(?:cusolverDn|cublas)(?:Create|Destroy|Set|Get)")
_GET_RE = re.compile(r"^(?:cusolverDn|cublas)Get")
#: Kernels only torch launches: its ATen / c10 templates and MAGMA's (linked into torch).
_TORCH_KERNEL_RE = re.compile(r"\b(?:at|c10)::|magma_|_template_batched_|^(?:void )?kernel_dset_pointer\b"
                              r"|^(?:void )?[sdcz]?displace_pointers_kernel\b"
                              r"|^(?:void )?[sdcz]trsv_\w*_batched\b")
_GPU_KINDS = {"kernel": "kernel", "gpu_memcpy": "memcpy", "gpu_memset": "memset"}
_API_KINDS = ("cuda_runtime", "cuda_driver")
_OP_KINDS = ("cpu_op", "user_annotation")


@functools.lru_cache(maxsize=4096)   # a few hundred distinct names; millions of look-ups
def call_kind(function: str) -> str:
    """``"query"`` (``*_bufferSize``), ``"setup"`` (Create/Destroy/Set*/Get*, e.g.
    ``cusolverDnSetStream``, ``cublasSetMathMode``) or ``"compute"`` (everything else,
    e.g. ``cusolverDnXpotrs``, ``cublasDtrsm_v2_64``)."""
    if _QUERY_RE.search(function):
        return "query"
    if _SETUP_RE.match(function):
        return "setup"
    return "compute"


# --------------------------------------------------------------------------- the stdout hook
class _CookieIO(ctypes.Structure):
    _WRITE = ctypes.CFUNCTYPE(ctypes.c_ssize_t, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t)
    _fields_ = [("read", ctypes.c_void_p), ("write", _WRITE), ("seek", ctypes.c_void_p),
                ("close", ctypes.c_void_p)]


class StdoutHook:
    """C ``stdout`` routed through a counting pass-through (see the module docstring).

    ``names`` lists the function of every record header written since :meth:`reset`; while
    :attr:`profiling` is true each header also drops a ``ct_api#<i>:<function>`` marker. With
    :attr:`capture_source`, ``sources`` gets per record ``(file, line)`` of the innermost
    Python frame outside ``skip_prefixes`` (``None``: no Python frame, e.g. autograd's thread).
    """

    def __init__(self, fd: int = 1):
        self.fd, self.profiling, self.capture_source = fd, False, False
        self.names: list[str] = []
        self.sources: list = []
        self.skip_prefixes: tuple = ()
        self._skip: dict = {}  # file name -> inside skip_prefixes (set them before capturing)
        self._keep: list = []
        self._marker = None

    def reset(self) -> None:
        self.names.clear()
        self.sources.clear()

    def _source(self):
        try:
            frame = sys._getframe(3)
        except ValueError:
            return None
        skip, known = self.skip_prefixes, self._skip
        while frame is not None:
            fn = frame.f_code.co_filename
            skipped = known.get(fn)
            if skipped is None:
                skipped = known[fn] = fn.startswith("<") or fn.startswith(skip)
            if not skipped:
                return (fn, frame.f_lineno)
            frame = frame.f_back
        return None

    def _on_header(self, data: bytes) -> None:
        """Count the record header(s) in ``data``; a marker each while profiling."""
        try:
            for m in RECORD_HEAD_RE.finditer(data):
                name = (m.group("solver") or m.group("blas")).decode()
                i = len(self.names)
                self.names.append(name)
                if self.capture_source:
                    self.sources.append(self._source())
                if self.profiling:
                    if self._marker is None:
                        from torch.profiler import record_function

                        self._marker = record_function
                    with self._marker(f"{TICK_PREFIX}{i}:{name}"):
                        pass
        except Exception:  # never break the library's stream over bookkeeping
            pass

    def writer(self):
        """The stream's write function: every line the loggers write comes through it, so
        it does as little as it can (only a chunk that holds a record header is searched)."""
        fd, header, string_at, write = self.fd, self._on_header, ctypes.string_at, os.write

        def on_write(_cookie, buf, size):
            data = string_at(buf, size)
            if b"[Api][cusolver" in data or b"I! cuBLAS (" in data:
                header(data)
            done = 0
            while done < size:
                try:
                    done += write(fd, data[done:] if done else data)
                except InterruptedError:
                    continue
                except OSError:
                    break
            return size

        return on_write

    def resolved_sources(self) -> list:
        """``[file, line, code]`` (or ``None``) per record, the code read once per line."""
        import linecache

        code: dict = {}
        out = []
        for s in self.sources:
            if s is None:
                out.append(None)
                continue
            if s not in code:
                code[s] = linecache.getline(s[0], s[1]).strip()
            out.append([s[0], s[1], code[s]])
        return out


def install_stdout_hook(fd: int = 1) -> StdoutHook | None:
    """Replace C ``stdout`` with the pass-through stream; ``None`` if this libc has no
    ``fopencookie`` (not glibc). Call it before cuSOLVER / cuBLAS load: a library may keep
    the ``FILE *`` it found at start-up."""
    try:
        libc = ctypes.CDLL(None)
        fopencookie = libc.fopencookie
        stdout_var = ctypes.c_void_p.in_dll(libc, "stdout")
    except (OSError, AttributeError, ValueError):
        return None
    hook = StdoutHook(fd)
    write = _CookieIO._WRITE(hook.writer())
    fopencookie.restype = ctypes.c_void_p
    fopencookie.argtypes = [ctypes.c_void_p, ctypes.c_char_p, _CookieIO]
    fp = fopencookie(None, b"w", _CookieIO(None, write, None, None))
    if not fp:
        return None
    libc.setvbuf.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_size_t]
    libc.fflush(None)
    # _IOLBF: each line reaches the hook when it ends (a record's header line before the call
    # goes on), in one write however many pieces the logger printed it in
    libc.setvbuf(fp, None, 1, 4096)
    stdout_var.value = fp
    hook._keep[:] = [write, fp]  # the callback must outlive the stream
    return hook


# --------------------------------------------------------------------------- the profiler
class Profiler:
    """torch's profiler with CUDA activities and ``record_function`` ranges only, or with
    every op (``all_ops``).

    The op filter uses torch's own scope selection (``RecordScope.USER_SCOPE``) through
    ``torch._C._autograd._enable_profiler``; where that private entry point does not take
    it, :class:`torch.profiler.profile` records every op and :attr:`all_ops` says so.
    """

    def __init__(self, torch, *, cuda: bool, all_ops: bool):
        self.torch, self.cuda, self.all_ops = torch, cuda, all_ops
        self._low, self._prof = False, None

    def start(self) -> None:
        import warnings

        from torch.profiler import ProfilerActivity

        acts = {ProfilerActivity.CPU} | ({ProfilerActivity.CUDA} if self.cuda else set())
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                from torch._C._autograd import _enable_profiler, _prepare_profiler
                from torch._C._profiler import (ProfilerConfig, ProfilerState, RecordScope,
                                                _ExperimentalConfig)

                config = ProfilerConfig(ProfilerState.KINETO, False, False, False, False, False,
                                        _ExperimentalConfig())
                _prepare_profiler(config, acts)
                _enable_profiler(config, acts, set() if self.all_ops else {RecordScope.USER_SCOPE})
                self._low = True
            except Exception:  # another torch: the public profiler, every op recorded
                from torch.profiler import profile

                self._prof = profile(activities=list(acts))
                self._prof.start()
                self.all_ops = True

    def stop(self) -> list[tuple]:
        """Stop and return :func:`kineto_events` of what was recorded; :attr:`read_s` is then
        the seconds of reading the events (the rest of the stop is torch's own)."""
        import time
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if self._low:
                from torch._C._autograd import _disable_profiler

                results = _disable_profiler()
            else:
                self._prof.stop()
                results = self._prof.profiler.kineto_results
            t = time.perf_counter()
            events = kineto_events(results, ops=self.all_ops)
            self.read_s = time.perf_counter() - t
            return events

    read_s = 0.0


def _opt(e, method: str) -> int:
    try:
        return int(getattr(e, method)())
    except Exception:
        return 0


def kineto_events(results, *, ops: bool = True) -> list[tuple]:
    """The events of a finished profile as tuples, in start order.

    Parameters
    ----------
    results
        ``torch._C._autograd._ProfilerResult`` (``prof.profiler.kineto_results``), or a
        finished ``torch.profiler.profile``.
    ops : bool
        Read the fields only op nesting needs (threads, linked correlation ids); without
        them they are 0 and a runtime / driver call's name is ``""`` (reading every field
        of every event is what the tracer's end costs: tens of thousands of launches).

    Returns
    -------
    list of tuple
        ``(device, start_ns, duration_ns, correlation_id, name, thread, device_index,
        stream, linked_correlation_id, activity_type)``; ``device`` is ``"cpu"`` or
        ``"cuda"``. Record-function ranges drawn on the GPU timeline
        (``gpu_user_annotation``) span kernels and are left out.
    """
    if hasattr(results, "profiler"):
        results = results.profiler.kineto_results
    out = []
    # Per activity kind, whether its events are on the GPU and whether they are record-function
    # ranges drawn there (both follow from the kind in torch's KinetoEvent): str() of the
    # device-type enum alone cost 3 µs an event, a third of this loop over ~10⁵ events.
    kinds: dict = {}
    for e in results.events():
        try:
            kind = str(e.activity_type())
        except Exception:
            kind = ""
        if kind in _API_KINDS and not ops:
            out.append(("cpu", e.start_ns(), e.duration_ns(), e.correlation_id(), "", 0, 0, 0, 0,
                        kind))
            continue
        where = kinds.get(kind) if kind else None
        if where is None:
            cuda = "CUDA" in str(e.device_type())
            where = (cuda, cuda and ("annotation" in kind or _is_annotation(e)))
            if kind:
                kinds[kind] = where
        cuda, annotation = where
        if annotation:
            continue
        gpu = cuda or kind in _GPU_KINDS
        try:   # the fields every torch since 2.3 has, read directly
            if gpu:
                out.append(("cuda" if cuda else "cpu", e.start_ns(), e.duration_ns(),
                            e.correlation_id(), e.name(), e.start_thread_id() if ops else 0,
                            e.device_index(), e.device_resource_id(),
                            e.linked_correlation_id() if ops else 0, kind))
            else:
                out.append(("cpu", e.start_ns(), e.duration_ns(), e.correlation_id(), e.name(),
                            e.start_thread_id(), 0, 0,
                            e.linked_correlation_id() if ops else 0, kind))
            continue
        except Exception:   # a field this torch lacks: 0 for it
            pass
        out.append(("cuda" if cuda else "cpu", int(e.start_ns()), int(e.duration_ns()),
                    int(e.correlation_id()), e.name(),
                    _opt(e, "start_thread_id") if ops or not gpu else 0,
                    _opt(e, "device_index") if gpu else 0,
                    _opt(e, "device_resource_id") if gpu else 0,
                    _opt(e, "linked_correlation_id") if ops else 0, kind))
    out.sort(key=lambda r: r[1])
    return out


def _is_annotation(e) -> bool:
    try:
        return bool(e.is_user_annotation())
    except Exception:
        return False


# --------------------------------------------------------------------------- correlation
#: The fields after the first five of a :func:`kineto_events` tuple, where an event has only
#: those five (thread, device index, stream, linked correlation id, activity kind).
_PAD = (0, 0, 0, 0, "")


def _is_api_event(name: str, kind: str) -> bool:
    """A CUDA runtime / driver call (by kineto's activity type, else by its name)."""
    return kind in _API_KINDS or (kind not in _OP_KINDS and name.startswith("cu"))


def correlate(events, *, all_ops: bool | None = None, torch_kernels: bool = True) -> dict:
    """Give every GPU activity to the API call that launched it (docs/reading-a-trace.md,
    "Per-call GPU time", has the rules).

    Parameters
    ----------
    events : iterable of tuple
        As :func:`kineto_events` gives them; the first five fields are enough
        (``(device, start_ns, duration_ns, correlation_id, name)``, as the fixture file).
    all_ops : bool, optional
        Whether every torch op was recorded (then the search for a launch's call stays in
        its op). ``None``: when any ``aten::`` op is among the events.
    torch_kernels : bool
        Leave kernels compiled into torch (ATen, c10, MAGMA) out of every call.

    Returns
    -------
    dict
        JSON-ready: ``names`` (the function of each marker, by record index),
        ``records`` (per record ``[start_us, end_us, op]`` or ``None``: the torch op that
        issued it, outermost ``aten::`` op, ``"aten::x (in XBackward0)"`` in autograd's
        backward; ``None`` without ops), ``kernel_names``, ``activities`` (per GPU activity
        ``[kind, name index, start_us, dur_us, stream, device, record]``, record ``-1``:
        no call's), ``aten`` (``[name, count, cpu_ms]`` per op name, when ops were
        recorded) and ``all_ops``. Times are µs from the first event.

    Examples
    --------
    >>> ev = [("cpu", 100, 0, 1, "ct_api#0:cusolverDnXpotrf"),
    ...       ("cpu", 110, 5, 2, "cudaLaunchKernel"), ("cuda", 120, 2000, 2, "potrf_k")]
    >>> c = correlate(ev)
    >>> c["names"], c["activities"]
    (['cusolverDnXpotrf'], [['kernel', 0, 0.02, 2.0, 0, 0, 0]])
    """
    # every event as the 10 fields of kineto_events (the fixture file's have 5)
    events = [e if len(e) == 10 else (*e, *_PAD[len(e) - 5:]) for e in map(tuple, events)]
    t0 = min((e[1] for e in events), default=0)
    ticks, ops, gpu, launch, api_corr = [], [], [], {}, []
    for e in events:
        dev, start, dur, corr, name, thread, _d, _s, _l, kind = e
        if dev != "cpu":
            gpu.append(e)
            continue
        if not name and kind in _API_KINDS:   # a runtime / driver call read without its name
            launch.setdefault(corr, (start, start + dur))
            api_corr.append((corr, start))
            continue
        m = _TICK_RE.match(name)
        if m:
            ticks.append((start, int(m.group("i")), m.group("name"), thread))
        elif _is_api_event(name, kind):
            launch.setdefault(corr, (start, start + dur))
            api_corr.append((corr, start))
        elif kind in _OP_KINDS or not kind:
            ops.append((start, start + dur, thread, corr, name))
    if all_ops is None:
        all_ops = any(o[4].startswith("aten::") for o in ops)
    count = max((t[1] for t in ticks), default=-1) + 1
    names = [""] * count
    for _s, i, name, _th in ticks:
        names[i] = name
    group, op_text = _enclose(ops, ticks) if all_ops else ({}, {})
    op_ids = {o[3] for o in ops} if all_ops else set()
    if not any(e[8] in op_ids for e in gpu):  # no launch linked to an op: by time
        group, op_ids = {}, set()
    # markers per group, in time order (group 0: outside any recorded op, or no ops at all):
    # all of them, and the compute calls among them
    by_group: dict[int, tuple[list, list, list, list]] = {}
    for start, i, name, _th in sorted(ticks):
        g = by_group.setdefault(group.get(i, 0), ([], [], [], []))
        g[0].append(start)
        g[1].append(i)
        if call_kind(name) == "compute":
            g[2].append(start)
            g[3].append(i)
    api_corr.sort()
    corrs = [c for c, _s in api_corr]
    kernel_names: list[str] = []
    name_index: dict[str, int] = {}
    activities, ends, launched = [], [None] * count, []
    torch_made: dict[str, bool] = {}   # kernel name -> compiled into torch (a regex search)
    for e in sorted(gpu, key=lambda e: e[1]):
        _dev, start, dur, corr, name, _th, device, stream, linked, gkind = e
        ln = launch.get(corr)
        if ln is None:  # no launch event: the API call just before it in correlation order
            j = bisect.bisect_left(corrs, corr) - 1
            t = api_corr[j][1] if j >= 0 else start
        else:
            t = ln[0]
        rec = -1
        if torch_kernels:
            made = torch_made.get(name)
            if made is None:
                made = torch_made[name] = _TORCH_KERNEL_RE.search(name) is not None
            ours = not made
        else:
            ours = True
        if ours:
            g = linked if linked in op_ids else 0
            times, idx, ctimes, cidx = by_group.get(g, ((), (), (), ()))
            if g:  # inside one op: its last compute call before the launch, else its first
                j = bisect.bisect_right(ctimes, t) - 1
                rec = cidx[j] if j >= 0 else (cidx[0] if cidx else -1)
            else:  # by time: a setup call's marker ends the call before it, but a Get* call
                # changes nothing and may come from inside the call (cuBLAS's strided
                # batched GEMM asks cublasGetMathMode after its record, before its launch)
                j = bisect.bisect_right(times, t) - 1
                while j >= 0 and _GET_RE.match(names[idx[j]]):
                    j -= 1
                if j >= 0 and call_kind(names[idx[j]]) == "compute":
                    rec = idx[j]
        if rec >= 0 and ln is not None:
            ends[rec] = max(ends[rec] or 0, ln[1])
        k = name_index.get(name)
        if k is None:
            k = name_index[name] = len(kernel_names)
            kernel_names.append(name)
        kind = _GPU_KINDS.get(gkind, "memcpy" if name.startswith("Memcpy") else
                              "memset" if name.startswith("Memset") else "kernel")
        activities.append([kind, k, round((start - t0) / 1e3, 3), round(dur / 1e3, 3),
                           int(stream), int(device), rec])
        launched.append((t, len(activities) - 1, ours, ln))
    _late_records(ticks, names, activities, launched, ends)
    records: list = [None] * count
    for start, i, _name, _th in ticks:
        s = round((start - t0) / 1e3, 3)
        end = s if ends[i] is None else round((ends[i] - t0) / 1e3, 3)
        records[i] = [s, max(end, s + 1.0), op_text.get(i)]
    aten: dict[str, list] = {}
    for start, end, _th, _corr, name in ops:
        if all_ops and name.startswith("aten::"):
            a = aten.setdefault(name, [name, 0, 0.0])
            a[1] += 1
            a[2] += (end - start) / 1e6
    return {"names": names, "records": records, "kernel_names": kernel_names,
            "activities": activities, "aten": list(aten.values()) if all_ops else None,
            "all_ops": bool(all_ops)}


def _late_records(ticks, names, activities, launched, ends) -> None:
    """A compute call that launched nothing after its marker takes the unclaimed launches
    between the marker before it and its own: a record written after the call's launches.

    cuBLAS's batched GEMMs look logged that way: on the H200 the 424
    ``cublasDgemmStridedBatched`` of a traced BoTorch run (from ``aten::bmm``) and the
    ``cublasDgemmBatched`` of torch's MAGMA ``potrs_batched`` were left without kernels,
    while cuBLAS GEMM kernels ran outside every call.
    """
    got = {a[6] for a in activities if a[6] >= 0}
    order = sorted(ticks)
    times = [t[0] for t in order]
    launched.sort()
    at = [x[0] for x in launched]
    for j, (start, i, name, _th) in enumerate(order):
        if j == 0 or i in got or call_kind(name) != "compute":
            continue
        lo = times[j - 1]
        for t, a, ours, ln in launched[bisect.bisect_right(at, lo):bisect.bisect_right(at, start)]:
            if ours and activities[a][6] < 0:
                activities[a][6] = i
                if ln is not None:
                    ends[i] = max(ends[i] or 0, ln[1])


def _enclose(ops, ticks) -> tuple[dict, dict]:
    """Per marker index: the innermost op open around it on its thread (its correlation
    id) and the op to report (outermost ``aten::`` op; inside autograd's backward,
    ``"aten::x (in XBackward0)"``)."""
    by_thread: dict = {}
    for start, end, th, corr, name in ops:
        by_thread.setdefault(th, []).append((start, 0, -end, corr, name))
    for start, i, _name, th in ticks:
        by_thread.setdefault(th, []).append((start, 1, 0, i, None))
    group, text = {}, {}
    for items in by_thread.values():
        items.sort(key=lambda x: x[:3])
        stack: list = []  # (end, corr, name)
        for start, is_tick, neg_end, val, name in items:
            while stack and stack[-1][0] <= start:
                stack.pop()
            if not is_tick:
                if -neg_end > start:
                    stack.append((-neg_end, val, name))
                continue
            group[val] = stack[-1][1] if stack else 0
            aten = [n for _e, _c, n in stack if n.startswith("aten::")]
            back = [n for _e, _c, n in stack if n.startswith("autograd::engine::evaluate_function")]
            op = aten[0] if aten else (stack[0][2] if stack else None)
            if back and op is not None:
                op = f"{op} (in {back[0].split(':')[-1].strip()})"
            text[val] = op
    return group, text


class Attribution:
    """Per marker, the ``(kernel name, GPU ms)`` it launched: what
    :func:`cusolver_trace.timing.gpu_busy_from_events` sums per marked call.

    ``names[i]`` is the i-th marker's name, ``per_record[i]`` its activities in launch
    order, ``outside`` the activities no marker claimed.
    """

    def __init__(self, names, per_record, outside):
        self.names, self.per_record, self.outside = names, per_record, outside


def attribute(events) -> Attribution:
    """:func:`correlate` of ``events`` with every marker a call (the markers of
    :func:`cusolver_trace.timing.time_gpu_busy` name callables, not library functions),
    as an :class:`Attribution`.

    Parameters
    ----------
    events : iterable of tuple
        As :func:`kineto_events` gives them (five fields are enough).

    Returns
    -------
    Attribution
    """
    events = [tuple(e) for e in events]
    renamed = []
    for e in events:
        m = _TICK_RE.match(e[4]) if e[0] == "cpu" else None
        if m:  # a callable's marker: a "compute call" for the search
            e = (*e[:4], f"{TICK_PREFIX}{m.group('i')}:x{m.group('name')}", *e[5:])
        renamed.append(e)
    c = correlate(renamed, all_ops=False, torch_kernels=False)
    names = [n[1:] for n in c["names"]]
    per: list[list] = [[] for _ in names]
    outside: list = []
    for _kind, k, _s, dur, _st, _dev, rec in c["activities"]:
        (outside if rec < 0 else per[rec]).append((c["kernel_names"][k], dur / 1e3))
    return Attribution(names, per, outside)
