"""GPU time per API call for a whole program (``cusolver-trace trace -- python3 prog.py``).

The same join as :func:`cusolver_trace.tracing.trace` does for one call
(:mod:`._hook`), applied to a whole Python program:

1. :func:`program_command` rewrites ``python3 [opts] prog.py ARGS`` (also ``-m
   module`` and ``-c code``) into a bootstrap (:mod:`._progboot`) that installs
   the C ``stdout`` hook *before* the program imports torch, runs the program
   under ``torch.profiler`` and writes the profiler events, the hooked record
   names and, per record, the user's source line.
2. :func:`load_program_profile` reads them back; :func:`attribute_program` gives
   every logged record its kernels (by correlation id, as :func:`._hook.attribute`),
   the torch op that issued it (the ``aten::`` CPU op events enclosing its marker on
   the same thread) and its host-side span, plus a GPU timeline for ``--chrome``.
3. :func:`apply_timing` attaches all that to the parsed records.

Why torch.profiler: it is what the project already uses (one mechanism for
``trace(fn)`` and whole programs), it puts kernels, runtime launches, aten ops
and our markers on one timeline with shared correlation ids, and cupti-python is
not installed on the GPU machine. Cost: the profiler's own overhead (see
``--overhead``), and a program that starts torch.profiler itself conflicts with it
(run it with ``--no-timing``).
"""
from __future__ import annotations

import json
import os
import re
import sys
from dataclasses import dataclass, field
from typing import Iterable, Sequence

from ._hook import _LAUNCH_PREFIXES, _TICK_RE, Attribution

__all__ = ["PROGRAM_BOOTSTRAP", "program_command", "ProgramProfile", "load_program_profile",
           "ProgramTiming", "attribute_program", "apply_timing", "GpuEvent"]

_BOOT_HOOK = "_cusolver_trace_hook"
_BOOT_PROG = "_cusolver_trace_progboot"
#: ``python -c PROGRAM_BOOTSTRAP <_hook.py> <_progboot.py> OUTDIR MODE TARGET ARGS...``
PROGRAM_BOOTSTRAP = (
    "import importlib.util as _u, sys as _s\n"
    "def _load(name, path):\n"
    "    spec = _u.spec_from_file_location(name, path)\n"
    "    mod = _u.module_from_spec(spec)\n"
    "    _s.modules[name] = mod\n"
    "    spec.loader.exec_module(mod)\n"
    "    return mod\n"
    "_h = _load(%r, _s.argv[1])\n"
    "_h.HOOK = _h.install_stdout_hook()\n"
    "_p = _load(%r, _s.argv[2])\n"
    "del _load\n"
    "_p.main(_h.HOOK, _s.argv[3:])\n"
) % (_BOOT_HOOK, _BOOT_PROG)

_PYTHON_RE = re.compile(r"^python(?:\d+(?:\.\d+)*)?$")
_FLAG_OPTS = set("bBdEhiIOqsSuvVxR") | {"OO", "bb"}
_VALUE_OPTS = {"-W", "-X"}


def _is_python(exe: str) -> bool:
    base = os.path.basename(exe)
    if _PYTHON_RE.match(base):
        return True
    try:
        return os.path.samefile(exe, sys.executable)
    except OSError:
        return False


def program_command(argv: Sequence[str], outdir: str) -> tuple[list[str] | None, str | None]:
    """The bootstrap command that runs ``argv`` with per-call timing, or why not.

    Parameters
    ----------
    argv : sequence of str
        The program as the user gave it: ``python3 [interpreter options] script.py ARGS``,
        ``python3 -m module ARGS`` or ``python3 -c CODE ARGS``.
    outdir : str
        Folder where the bootstrap writes ``status.json``, ``hook.json``, ``events.json``.

    Returns
    -------
    (list of str, None) or (None, str)
        The command to run instead, or ``None`` and one sentence saying why per-call
        timing is not possible for this command (not a Python interpreter, a script
        read from stdin, interactive mode).

    Examples
    --------
    >>> cmd, why = program_command(["python3", "gp.py", "--n", "64"], "/tmp/x")
    >>> cmd[0], cmd[1], cmd[-3:]
    ('python3', '-c', ['gp.py', '--n', '64'])
    >>> program_command(["bash", "run.sh"], "/tmp/x")[1].startswith("not a Python")
    True
    """
    argv = list(argv)
    if not argv or not _is_python(argv[0]):
        return None, ("not a Python command: per-call GPU time needs the program started as "
                      "'python3 script.py ...', 'python3 -m module ...' or 'python3 -c CODE'")
    opts: list[str] = []
    i = 1
    while i < len(argv):
        a = argv[i]
        if a in _VALUE_OPTS:
            if i + 1 >= len(argv):
                return None, f"'{a}' without a value"
            opts += [a, argv[i + 1]]
            i += 2
            continue
        if a[:2] in _VALUE_OPTS and len(a) > 2:
            opts.append(a)
            i += 1
            continue
        if a in ("-m", "-c"):
            if i + 1 >= len(argv):
                return None, f"'{a}' without a value"
            mode = "module" if a == "-m" else "code"
            target, rest = argv[i + 1], argv[i + 2:]
            break
        if a.startswith("-m") and len(a) > 2:
            mode, target, rest = "module", a[2:], argv[i + 1:]
            break
        if a.startswith("-c") and len(a) > 2:
            mode, target, rest = "code", a[2:], argv[i + 1:]
            break
        if a == "-" or a == "-i" or "i" in a[1:] and a.startswith("-") and not a.startswith("--"):
            return None, "a program read from stdin or run interactively cannot be timed"
        if a.startswith("--"):  # --version, --help ...: nothing to time
            return None, f"interpreter option {a} runs no program to time"
        if a.startswith("-"):
            if all(ch in _FLAG_OPTS for ch in a[1:]):
                opts.append(a)
                i += 1
                continue
            return None, f"unknown interpreter option {a}"
        mode, target, rest = "path", a, argv[i + 1:]
        break
    else:
        return None, "no script, -m module or -c code: nothing to time"
    here = os.path.dirname(os.path.abspath(__file__))
    return ([argv[0], *opts, "-c", PROGRAM_BOOTSTRAP, os.path.join(here, "_hook.py"),
             os.path.join(here, "_progboot.py"), outdir, mode, target, *rest], None)


@dataclass
class ProgramProfile:
    """What the bootstrap wrote (see :mod:`._progboot`).

    Attributes
    ----------
    timing : bool        the profiler ran for the whole program
    cuda : bool          a GPU was visible to torch in the program
    why : str | None     why there is no timing (or no GPU time)
    names : list[str]    function of every hooked record, in order
    sources : list       per record ``(file, line, code)`` or ``None``
    events : list        profiler events ``[device, start_ns, dur_ns, corr, name, thread, ...]``
    """

    timing: bool
    cuda: bool
    why: str | None
    names: list[str] = field(default_factory=list)
    sources: list = field(default_factory=list)
    events: list = field(default_factory=list)


def load_program_profile(folder: str) -> ProgramProfile:
    """Read ``status.json``, ``hook.json`` and ``events.json`` from the bootstrap's folder.

    Parameters
    ----------
    folder : str

    Returns
    -------
    ProgramProfile
        ``timing`` false with ``why`` set when a file is missing or damaged (the
        program never reached the bootstrap's end: killed, ``os._exit``, ...).

    Examples
    --------
    >>> load_program_profile("/nonexistent").timing
    False
    """
    def read(name):
        with open(os.path.join(folder, name)) as fh:
            return json.load(fh)

    try:
        status = read("status.json")
    except (OSError, ValueError):
        return ProgramProfile(False, False, "the program ended before the profiler could write "
                                            "its events (killed, crashed, or left through os._exit)")
    prof = ProgramProfile(bool(status.get("timing")), bool(status.get("cuda")), status.get("why"))
    try:
        hooked = read("hook.json")
        prof.names = [str(n) for n in hooked.get("names", [])]
        prof.sources = [tuple(s) if s else None for s in hooked.get("sources", [])]
    except (OSError, ValueError, TypeError):
        pass
    if prof.timing:
        try:
            prof.events = [tuple(e) for e in read("events.json")]
        except (OSError, ValueError, TypeError):
            prof.timing = False
            prof.why = "the profiler's events could not be read back"
    return prof


@dataclass
class GpuEvent:
    """One kernel / memcpy / memset on the GPU timeline (µs from the first event)."""

    name: str
    start_us: float
    dur_us: float
    stream: int
    device: int
    record: int | None  # index of the API record that launched it (None: torch's own)


@dataclass
class ProgramTiming:
    """Per-record results of :func:`attribute_program`.

    Attributes
    ----------
    attribution : Attribution   kernels ``(name, ms)`` per record, for :func:`.profile.attach_kernels`
    ops : list[str | None]      torch op that issued each record
    spans : list                per record ``(start_us, end_us)`` on the host, or ``None``
    gpu : list[GpuEvent]        every GPU event
    kernel_records : dict       ``id(kernel tuple) -> GpuEvent`` (to follow kernels moved by
                                :func:`.profile.attach_kernels`)
    """

    attribution: Attribution
    ops: list
    spans: list
    gpu: list
    kernel_records: dict = field(default_factory=dict, repr=False)
    t0_ns: int = 0


def _enclosing_ops(ops: list[tuple[int, int, int, str]], ticks: list[tuple[int, int, int]]) -> dict:
    """For ticks ``(t, thread, index)`` and ops ``(start, end, thread, name)``: index ->
    the op to report (outermost ``aten::`` op enclosing the tick on its thread; inside
    autograd's backward, ``"aten::x (in XBackward0)"``)."""
    by_thread: dict[int, list] = {}
    for start, end, th, name in ops:
        by_thread.setdefault(th, []).append((start, 0, end, name))
    for t, th, idx in ticks:
        by_thread.setdefault(th, []).append((t, 1, idx, None))
    out: dict[int, str | None] = {}
    for items in by_thread.values():
        items.sort(key=lambda x: (x[0], x[1]))
        stack: list[tuple[int, str]] = []
        for start, kind, val, name in items:
            while stack and stack[-1][0] <= start:
                stack.pop()
            if kind == 0:
                if val > start:
                    stack.append((val, name))
                continue
            aten = [n for _e, n in stack if n.startswith("aten::")]
            backward = [n for _e, n in stack if n.startswith("autograd::engine::evaluate_function")]
            op = aten[0] if aten else (stack[0][1] if stack else None)
            if backward and op is not None:
                op = f"{op} (in {backward[0].split(':')[-1].strip()})"
            out[val] = op
    return out


def attribute_program(events: Iterable[Sequence]) -> ProgramTiming:
    """Kernels, torch op and host span of every hooked record, from profiler events.

    Parameters
    ----------
    events : iterable of sequences
        ``(device, start_ns, duration_ns, correlation_id, name[, thread, device_index,
        resource])`` as :mod:`._progboot` writes them (the 5-field form of
        :func:`._hook.kineto_events` and of the kineto fixture file works too).

    Returns
    -------
    ProgramTiming
        A kernel belongs to the last ``ct_api#`` marker before its launch (the
        runtime event with its correlation id); kernels launched before any marker
        are torch's own (``attribution.outside``).

    Examples
    --------
    >>> ev = [("cpu", 100, 0, 1, "ct_api#0:cusolverDnXpotrf", 7),
    ...       ("cpu", 110, 5, 2, "cudaLaunchKernel", 7), ("cuda", 120, 2000, 2, "potrf_k", 7)]
    >>> t = attribute_program(ev)
    >>> t.attribution.per_record[0]
    [('potrf_k', 0.002)]
    """
    events = [tuple(e) for e in events]
    t0 = min((e[1] for e in events), default=0)

    def us(ns):
        return (ns - t0) / 1000.0

    ticks: list[tuple[int, int, str, int]] = []   # start, index, name, thread
    launch: dict[int, tuple[int, int, int]] = {}  # corr -> start, end, thread
    ops: list[tuple[int, int, int, str]] = []
    for e in events:
        dev, start, dur, corr, name = e[:5]
        th = e[5] if len(e) > 5 else 0
        if dev != "cpu":
            continue
        m = _TICK_RE.match(name)
        if m:
            ticks.append((start, int(m.group("i")), m.group("name"), th))
        elif name.startswith(_LAUNCH_PREFIXES):
            launch.setdefault(corr, (start, start + dur, th))
        elif name.startswith(("aten::", "autograd::")):
            ops.append((start, start + dur, th, name))
    ticks.sort()
    count = max((t[1] for t in ticks), default=-1) + 1
    names = [""] * count
    spans: list = [None] * count
    for start, i, name, _th in ticks:
        names[i] = name
        spans[i] = [us(start), us(start)]
    per: list[list[tuple[str, float]]] = [[] for _ in range(count)]
    outside: list[tuple[str, float]] = []
    gpu: list[GpuEvent] = []
    kernel_records: dict = {}
    # per thread: ticks in time order, so a launch goes to the last marker of *its* thread
    by_thread: dict[int, tuple[list[int], list[int]]] = {}
    for start, i, _n, th in ticks:
        s, idx = by_thread.setdefault(th, ([], []))
        s.append(start)
        idx.append(i)
    all_starts = [t[0] for t in ticks]
    all_idx = [t[1] for t in ticks]
    import bisect

    for e in sorted((e for e in events if e[0] != "cpu"), key=lambda e: launch.get(e[3], (e[1],))[0]):
        _dev, start, dur, corr, name = e[:5]
        dev_index = e[6] if len(e) > 6 else 0
        stream = e[7] if len(e) > 7 else 0
        ln = launch.get(corr)
        if ln is not None and ln[2] in by_thread:
            starts, idx = by_thread[ln[2]]
            j = bisect.bisect_right(starts, ln[0]) - 1
            rec = idx[j] if j >= 0 else None
        else:
            t = ln[0] if ln is not None else start
            j = bisect.bisect_right(all_starts, t) - 1
            rec = all_idx[j] if j >= 0 else None
        item = (name, dur / 1e6)
        ev = GpuEvent(name, us(start), dur / 1000.0, int(stream), int(dev_index), rec)
        gpu.append(ev)
        kernel_records[id(item)] = (ev, ln)
        if rec is None:
            outside.append(item)
        else:
            per[rec].append(item)
    ops_by_index = _enclosing_ops(ops, [(t[0], t[3], t[1]) for t in ticks])
    gpu.sort(key=lambda g: g.start_us)
    timing = ProgramTiming(Attribution(names, per, outside),
                           [ops_by_index.get(i) for i in range(count)], spans, gpu, kernel_records,
                           t0)
    return timing


def apply_timing(records: list, timing: ProgramTiming, sources: Sequence | None,
                 notes: list[str]) -> list[tuple[str, float]] | None:
    """Attach kernels, ops, source lines and host spans to the parsed ``records``.

    Parameters
    ----------
    records : list of ApiCall
        Every record of the log, in order (``ParsedLog.records``).
    timing : ProgramTiming
        From :func:`attribute_program`.
    sources : sequence or None
        Per record ``(file, line, code)`` from the hook, or ``None``.
    notes : list of str
        Gets a note when the hooked records and the parsed ones do not line up.

    Returns
    -------
    list of (str, float) or None
        Kernels that ran outside any library call (torch's own), or ``None`` when
        nothing could be attached (then no record gets a time).

    Examples
    --------
    See ``tests/test_trace_summary.py``.
    """
    from .profile import attach_kernels

    outside = attach_kernels(records, timing.attribution, notes)
    if outside is None:
        return None
    mine = {id(k) for r in records for k in (r.kernels or [])}
    for k_id, (ev, _ln) in timing.kernel_records.items():
        if k_id not in mine:
            ev.record = None  # moved to torch's own by attach_kernels
    for i, r in enumerate(records):
        r.op = timing.ops[i] if i < len(timing.ops) else None
        src = sources[i] if sources is not None and i < len(sources) else None
        if src:
            r.where, r.code = f"{src[0]}:{src[1]}", (src[2] or None)
        span = timing.spans[i] if i < len(timing.spans) else None
        if span is not None:
            end = span[0]
            for k in r.kernels or []:
                ev, ln = timing.kernel_records.get(id(k), (None, None))
                if ln is not None:
                    end = max(end, (ln[1] - timing.t0_ns) / 1000.0)
            r.span = (span[0], max(end, span[0] + 1.0))
    return outside
