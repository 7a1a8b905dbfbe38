"""GPU time per API call for a whole program (``cusolver-trace trace -- python3 prog.py``),
and the join of a traced process's profile with the parsed log.

:func:`program_command` rewrites ``python3 [opts] prog.py ARGS`` (also ``-m module`` and
``-c code``) into a bootstrap (:data:`BOOTSTRAP`) that installs the C ``stdout`` hook
(:mod:`._hook`) before the program imports torch and then runs :mod:`._progboot`, which
writes the correlation of every GPU activity with the hooked records; :func:`load_profile`
reads it back and :func:`attach` joins it with the parsed records. The steps, and when there
is no timing: docs/tracing-programs.md, "How GPU time per call is measured".
"""
from __future__ import annotations

import json
import os
import re
import sys
from typing import Sequence

from .events import Event

__all__ = ["BOOTSTRAP", "bootstrap_command", "program_command", "load_profile", "attach"]

#: ``python -c BOOTSTRAP <_hook.py> <module.py> ARGS...``: loads ``_hook.py`` by path (stdlib
#: only), installs the stdout hook, then loads the module by path and calls its
#: ``main(hook_module, ARGS)`` -- without importing :mod:`cusolver_trace`.
BOOTSTRAP = (
    "import importlib.util as _u, sys as _s\n"
    "def _load(name, path):\n"
    "    spec = _u.spec_from_file_location(name, path)\n"
    "    mod = _u.module_from_spec(spec)\n"
    "    _s.modules[name] = mod\n"
    "    spec.loader.exec_module(mod)\n"
    "    return mod\n"
    "_h = _load('_cusolver_trace_hook', _s.argv[1])\n"
    "_h.HOOK = _h.install_stdout_hook()\n"
    "_m = _load('_cusolver_trace_main', _s.argv[2])\n"
    "del _load\n"
    "_m.main(_h, _s.argv[3:])\n"
)
_HERE = os.path.dirname(os.path.abspath(__file__))
_PYTHON_RE = re.compile(r"^python(?:\d+(?:\.\d+)*)?$")
_FLAG_OPTS = set("bBdEhiIOqsSuvVxR") | {"OO", "bb"}
_VALUE_OPTS = {"-W", "-X"}


def bootstrap_command(python: str, opts: Sequence[str], module: str, args: Sequence[str]) -> list[str]:
    """``python [opts] -c BOOTSTRAP <_hook.py> <module>.py ARGS``: ``module`` is ``_progboot``
    (a whole program) or ``_child`` (the calls of :func:`~.profile.trace`)."""
    return [python, *opts, "-c", BOOTSTRAP, os.path.join(_HERE, "_hook.py"),
            os.path.join(_HERE, f"{module}.py"), *args]


def _is_python(exe: str) -> bool:
    if _PYTHON_RE.match(os.path.basename(exe)):
        return True
    try:
        return os.path.samefile(exe, sys.executable)
    except OSError:
        return False


def program_command(argv: Sequence[str], outdir: str, *, all_ops: bool = False
                    ) -> tuple[list[str] | None, str | None]:
    """The bootstrap command that runs ``argv`` with per-call timing, or why not.

    Parameters
    ----------
    argv : sequence of str
        The program as the user gave it: ``python3 [interpreter options] script.py ARGS``,
        ``python3 -m module ARGS`` or ``python3 -c CODE ARGS``.
    outdir : str
        Folder where the bootstrap writes ``status.json`` and ``profile.json``.
    all_ops : bool
        Record every torch op too (``--by op``: the op that issued each call).

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
    return bootstrap_command(argv[0], opts, "_progboot",
                             [outdir, "ops" if all_ops else "calls", mode, target, *rest]), None


def load_profile(folder: str, name: str = "profile.json") -> tuple[dict, dict | None]:
    """Read ``status.json`` and the correlated profile a bootstrap wrote.

    Parameters
    ----------
    folder : str
    name : str
        The profile's file name in ``folder``.

    Returns
    -------
    (dict, dict or None)
        The status (``timing``, ``cuda``, ``why``, ``tracing_s`` ...; ``timing`` false with
        ``why`` set when a file is missing or damaged: the program never reached the
        bootstrap's end) and the profile (:func:`._hook.correlate` plus ``sources``), or
        ``None``.

    Examples
    --------
    >>> load_profile("/nonexistent")[0]["timing"]
    False
    """
    def read(n):
        with open(os.path.join(folder, n)) as fh:
            return json.load(fh)

    try:
        status = read("status.json")
    except (OSError, ValueError):
        return {"timing": False, "cuda": False, "why": "the program ended before the profiler "
                "could write its events (killed, crashed, or left through os._exit)"}, None
    try:
        profile = read(name)
    except (OSError, ValueError):
        profile = None
    if status.get("timing") and profile is None:
        status = {**status, "timing": False, "why": "the profiler's events could not be read back"}
    return status, profile


def attach(records: list, profile: dict, notes: list[str], *, gpu: bool = True) -> list[Event] | None:
    """Join a correlated profile with the parsed records (see the module docstring).

    Parameters
    ----------
    records : list of ApiCall
        Every record of the log (or of one section), in order (``ParsedLog.records``).
    profile : dict
        :func:`._hook.correlate`'s result, optionally with ``sources`` (per record
        ``[file, line, code]``); its markers must line up one to one with ``records``.
    notes : list of str
        Gets a sentence when nothing could be attached.
    gpu : bool
        Whether GPU activities were profiled (``False``: a CPU-only torch; spans, ops and
        source lines are still attached, ``kernels`` stay ``None``).

    Returns
    -------
    list of Event or None
        Every GPU activity (``parent``: the record that launched it, or ``None``), or ``None``
        when the markers and the records do not line up (then nothing is attached).

    Examples
    --------
    >>> from cusolver_trace.tracing import parse_log
    >>> from cusolver_trace.tracing._hook import correlate
    >>> log = parse_log("[2026-11-30 02:17:18][cusolverDn][1][Api][cusolverDnXpotrf] n=8")
    >>> prof = correlate([("cpu", 100, 0, 1, "ct_api#0:cusolverDnXpotrf"),
    ...                   ("cpu", 110, 5, 2, "cudaLaunchKernel"), ("cuda", 120, 2000, 2, "potrf")])
    >>> acts = attach(log.records, prof, [])
    >>> [(a.name, a.parent.name) for a in acts], log.records[0].gpu_ms
    ([('potrf', 'cusolverDnXpotrf')], 0.002)
    """
    names = profile.get("names") or []
    logged = [r.name for r in records]
    if names != logged:
        notes.append(f"no per-call GPU time: {len(names)} hooked records vs {len(logged)} parsed "
                     f"ones do not line up")
        return None
    sources = profile.get("sources") or []
    for i, r in enumerate(records):
        span = profile["records"][i] if i < len(profile.get("records") or []) else None
        if span is not None:
            r.start_us, r.dur_us, r.op = span[0], span[1] - span[0], span[2]
        src = sources[i] if i < len(sources) else None
        if src:
            r.where, r.code = f"{src[0]}:{src[1]}", (src[2] or None)
        r.kernels = [] if gpu else None
    if not gpu:
        return None
    kernel_names = profile["kernel_names"]
    out = []
    for kind, k, start, dur, stream, device, rec in profile["activities"]:
        parent = records[rec] if 0 <= rec < len(records) else None
        a = Event(kernel_names[k], kind, start, dur, stream, None, {}, parent, device=device)
        if parent is not None:
            parent.kernels.append(a)
        out.append(a)
    return out
