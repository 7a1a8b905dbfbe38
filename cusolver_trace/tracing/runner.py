"""Run a program with the cuSOLVER and cuBLAS API loggers on, and parse what they logged.

Both loggers write to the child's stdout, so their records stay in call order, and
``PYTHONUNBUFFERED=1`` makes CPython's C ``stdout`` unbuffered too, so nothing is lost when
the process dies (docs/reading-a-trace.md, "Crashes and the exit-time segfault").

The child's stdout goes to a file (``log_path`` or a temporary file), never
into memory, and is parsed line by line while the program writes it (in a thread
of this process); stderr goes to another temporary file.
The file's first line (:data:`~.logparse.LOG_HEADER`, then the command as JSON) says
that it is a program's captured stdout, so that ``--from-log`` reads it back whatever
bytes the program printed (a NUL, a binary dump); the program's stdout follows byte
for byte, and record line numbers are line numbers in that file.

The program runs in a session (and process group) of its own, so a time limit
ends everything it started: SIGTERM to the whole group, a short grace period,
then SIGKILL to whatever is left of it.
"""
from __future__ import annotations

import errno
import io
import json
import math
import os
import shlex
import signal
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from typing import Mapping, Sequence

from .logparse import LOG_HEADER, ParsedLog, read_log
from .model import ExitStatus, Trace

__all__ = ["LOGGER_ENV", "TraceRun", "run_traced", "logger_env", "ProgramStartError",
           "ProgramNotFoundError", "ProgramNotExecutableError", "KILL_GRACE_S"]

#: Seconds between SIGTERM and SIGKILL when a program's time limit is reached.
KILL_GRACE_S = 2.0


class ProgramStartError(OSError):
    """The program could not be started; ``exit_status`` is the shell's code for it."""

    exit_status = 126


class ProgramNotFoundError(ProgramStartError, FileNotFoundError):
    """No such program (shell status 127)."""

    exit_status = 127


class ProgramNotExecutableError(ProgramStartError, PermissionError):
    """The program exists but cannot be executed (shell status 126)."""

    exit_status = 126

#: Environment that turns both API loggers on, writing to stdout.
LOGGER_ENV = {
    "CUSOLVERDN_LOG_LEVEL": "5",     # 5 = API trace
    "CUBLAS_LOGINFO_DBG": "1",
    "CUBLAS_LOGDEST_DBG": "stdout",
    "PYTHONUNBUFFERED": "1",         # CPython then also unbuffers C stdout
}
#: Variables that would send cuSOLVER's records elsewhere or filter them.
_UNSET = ("CUSOLVERDN_LOG_FILE", "CUSOLVERDN_LOG_MASK")


def logger_env(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """``os.environ`` + ``env`` + :data:`LOGGER_ENV`, without variables that
    would redirect or mask cuSOLVER's log (``CUSOLVERDN_LOG_FILE``, ``..._MASK``)."""
    out = dict(os.environ)
    out.update(env or {})
    for k in _UNSET:
        out.pop(k, None)
    out.update(LOGGER_ENV)
    return out


@dataclass
class TraceRun(ExitStatus):
    """Outcome of :func:`run_traced`.

    Attributes
    ----------
    argv : list[str]
    returncode : int       as ``subprocess`` reports it: the exit code, or
                           ``-N`` when killed by signal N
    log : ParsedLog        records (``log.calls`` nested, ``log.records`` flat),
                           program output lines (``log.output``), sections
    stderr : str           the program's stderr, decoded (invalid bytes replaced)
    log_path : str | None  where the raw stdout was kept (only if asked for)
    timed_out : bool       killed by :func:`run_traced` after ``timeout`` seconds
    wall_s : float         wall-clock run time in seconds
    parse_s : float        seconds of log parsing left when the program ended (the log is
                           parsed while the program writes it)
    """

    argv: list[str]
    returncode: int
    log: ParsedLog
    stderr: str = ""
    log_path: str | None = None
    timed_out: bool = False
    wall_s: float = 0.0
    notes: list[str] = field(default_factory=list)
    parse_s: float = 0.0

    @property
    def signal(self) -> int | None:
        """Number of the signal that killed the program, or ``None``."""
        return -self.returncode if self.returncode < 0 else None

    @property
    def records(self):
        return self.log.records

    @property
    def output(self) -> list[str]:
        """The program's own stdout lines (log records removed), in order."""
        return [o.text for o in self.log.output]

    def to_trace(self, section: str | None = None, label: str | None = None) -> Trace:
        """A :class:`~.model.Trace` of the run (optionally of one ``#### label`` section).

        Raises ``KeyError`` if ``section`` is not in the log.
        """
        log = self.log.section(section) if section is not None else self.log
        return Trace(
            label=label or shlex.join(self.argv) + (f"  [{section}]" if section else ""),
            calls=log.calls, notes=list(self.notes), output=[o.text for o in log.output],
            stderr=self.stderr, returncode=self.returncode, signal=self.signal,
            sections=[section] if section is not None else list(self.log.sections))


def _notes(run: TraceRun) -> list[str]:
    notes = []
    n = len(run.log.records)
    if run.timed_out:
        notes.append(f"the program ran past its time limit and was killed; the {n} "
                     f"records logged before that are kept")
    elif run.signal is not None:
        what = {"SIGSEGV": " (segmentation fault)", "SIGABRT": " (abort)",
                "SIGKILL": " (killed)"}.get(run.signal_name or "", "")
        note = f"the program was killed by {run.signal_name}{what}; the {n} records logged before that are kept."
        if run.signal_name == "SIGSEGV":
            note += (" With the loggers on, a SIGSEGV at interpreter exit was seen after all work "
                     "had finished: check that the program's own output is complete.")
        notes.append(note)
    if any(r.truncated for r in run.log.records):
        notes.append("the last cuBLAS record was cut off (the process died while writing it)")
    if n == 0:
        notes.append("no cuSOLVER / cuBLAS API record was logged (no GPU call, CPU tensors, "
                     "MAGMA-only paths, or the libraries were never loaded)")
    return notes


def _check_timeout(timeout: float | None) -> None:
    if timeout is None:
        return
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
        raise TypeError(f"run_traced: timeout must be a number of seconds, not {timeout!r}")
    if not (math.isfinite(timeout) and timeout > 0):
        raise ValueError(f"run_traced: timeout must be a positive, finite number of seconds, "
                         f"not {timeout!r}")


def _start(argv: list[str], **kw) -> subprocess.Popen:
    """``Popen`` in a new session; failures to start become :class:`ProgramStartError` s."""
    try:
        return subprocess.Popen(argv, start_new_session=True, **kw)
    except FileNotFoundError as e:
        why = "no such program"
        if os.sep in argv[0] and os.path.isfile(argv[0]):
            why = "its '#!' interpreter was not found"
        raise ProgramNotFoundError(errno.ENOENT, f"cannot run {argv[0]!r}: {why}") from e
    except PermissionError as e:
        why = ("it is a folder" if os.path.isdir(argv[0])
               else "permission denied (not an executable file)")
        raise ProgramNotExecutableError(errno.EACCES, f"cannot run {argv[0]!r}: {why}") from e
    except OSError as e:  # ENOEXEC (no '#!' line), ENOTDIR, E2BIG, ...
        raise ProgramStartError(e.errno, f"cannot run {argv[0]!r}: {e.strerror or e}") from e


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass  # the group is gone already


def _exited(proc: subprocess.Popen) -> bool:
    """Has the child exited? Without reaping it: while it is a zombie its pid, and so
    its process group id, cannot be reused by another process."""
    if proc.returncode is not None:
        return True
    if not hasattr(os, "waitid"):  # pragma: no cover - no waitid: reap (tiny reuse window)
        return proc.poll() is not None
    try:
        info = os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return True
    return info is not None


def _kill_group(proc: subprocess.Popen, grace: float = KILL_GRACE_S) -> int:
    """End the program and everything in its process group: SIGTERM, up to ``grace``
    seconds for the child to exit, then SIGKILL to all that is left. Returns the
    child's return code."""
    pgid = proc.pid  # start_new_session: the child leads its own group
    _signal_group(pgid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while not _exited(proc) and time.monotonic() < deadline:
        time.sleep(0.02)
    _signal_group(pgid, signal.SIGKILL)  # grandchildren, or a child that ignored SIGTERM
    return proc.wait()


class _Tail(io.RawIOBase):
    """A file read while another process writes it: at its end, wait for more until
    :attr:`done` is set (the writer has exited), then read what is left and end."""

    def __init__(self, fd: int):
        super().__init__()
        self.fd, self.done, self.done_at = fd, threading.Event(), 0.0

    def finish(self) -> None:
        """The writer has exited: read to the end, then stop."""
        self.done_at = time.perf_counter()
        self.done.set()

    def readable(self) -> bool:
        return True

    def readinto(self, buf) -> int:
        while True:
            finished = self.done.is_set()
            n = os.readv(self.fd, [buf])
            if n or finished:
                return n
            self.done.wait(0.02)

    def close(self) -> None:
        if not self.closed:
            os.close(self.fd)
        super().close()


class _Parser(threading.Thread):
    """Parses the program's stdout as it is written (:class:`_Tail`), so that little of
    the parsing is left when the program ends; ``after_s`` is what was."""

    def __init__(self, tail: _Tail, name: str):
        super().__init__(daemon=True)
        self.tail, self.name = tail, name
        self.log, self.error, self.after_s = None, None, 0.0
        self.start()

    def run(self) -> None:
        try:
            self.log = read_log(io.BufferedReader(self.tail), name=self.name, text_only=False,
                                decompress=False)
        except Exception as e:  # reported in the run's notes, never lost in the thread
            self.error = e
        self.after_s = max(time.perf_counter() - self.tail.done_at, 0.0)


def _wait(proc: subprocess.Popen, timeout: float | None, stop) -> int:
    """``proc.wait(timeout)``, also ended (``TimeoutExpired``) when ``stop`` is set."""
    if stop is None:
        return proc.wait(timeout=timeout)
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        step = 0.05 if deadline is None else min(0.05, max(deadline - time.monotonic(), 0.0))
        try:
            return proc.wait(timeout=step)
        except subprocess.TimeoutExpired:
            if stop.is_set() or (deadline is not None and time.monotonic() >= deadline):
                raise


def run_traced(argv: Sequence[str], *, log_path: str | os.PathLike | None = None,
               env: Mapping[str, str] | None = None, timeout: float | None = None,
               cwd: str | os.PathLike | None = None, stop=None) -> TraceRun:
    """Run ``argv`` with both API loggers on and parse the records it logged.

    Parameters
    ----------
    argv : sequence of str
        The program, e.g. ``["python3", "script.py", "--n", "256"]``.
    log_path : path, optional
        Keep the raw stdout (records and program output, in order) in this file, after
        one header line (:data:`~.logparse.LOG_HEADER` and the command as JSON);
        by default a temporary file is used and deleted.
    env : mapping, optional
        Extra environment variables, added to ``os.environ``; the logger
        variables (:data:`LOGGER_ENV`) are always set on top.
    timeout : float, optional
        Seconds (positive, finite) before the program is ended: its whole process
        group gets SIGTERM, then SIGKILL after :data:`KILL_GRACE_S` seconds. What it
        logged is kept.
    cwd : path, optional
        Working directory of the program.
    stop : threading.Event, optional
        When it is set (from another thread), the program is ended as at its time limit.

    Returns
    -------
    TraceRun
        Never raises for the program's own failures: a non-zero exit, an
        exception, death by a signal, or a stdout that is not text are reported
        in the result.

    Raises
    ------
    ProgramNotFoundError, ProgramNotExecutableError, ProgramStartError
        If ``argv[0]`` cannot be executed (subclasses of ``FileNotFoundError``,
        ``PermissionError`` and ``OSError``; ``exit_status`` is 127 or 126).
    OSError
        If ``log_path`` cannot be written or ``cwd`` is not a folder.
    ValueError
        If ``argv`` is empty or ``timeout`` is not a positive finite number.
    """
    argv = [os.fspath(a) for a in argv]
    if not argv:
        raise ValueError("run_traced: empty command")
    _check_timeout(timeout)
    if cwd is not None and not os.path.isdir(cwd):
        raise NotADirectoryError(errno.ENOTDIR, "no such working folder", os.fspath(cwd))
    keep = log_path is not None
    if keep:
        out_path = os.fspath(log_path)
        out = open(out_path, "w+b")
    else:
        fd, out_path = tempfile.mkstemp(prefix="cusolver-trace-", suffix=".log")
        out = os.fdopen(fd, "w+b")
    timed_out = False
    notes: list[str] = []
    try:
        with out, tempfile.TemporaryFile() as err:
            out.write(LOG_HEADER + json.dumps(argv).encode() + b"\n")
            out.flush()
            # Parsed while the program runs, through our own handle (the program may
            # remove or rename the file); whatever it writes is parsed, text or not.
            tail = _Tail(os.open(out_path, os.O_RDONLY))
            t0 = time.perf_counter()
            try:
                proc = _start(argv, stdout=out, stderr=err, env=logger_env(env), cwd=cwd)
            except BaseException:
                tail.close()
                raise
            parser = _Parser(tail, out_path)
            try:
                returncode = _wait(proc, timeout, stop)
            except subprocess.TimeoutExpired:
                returncode = _kill_group(proc)
                timed_out = True
            except BaseException:  # KeyboardInterrupt: don't leave the program behind
                _kill_group(proc)
                raise
            finally:
                wall = time.perf_counter() - t0
                tail.finish()
                parser.join()
                tail.close()
            err.seek(0)
            stderr = err.read().decode("utf-8", errors="replace")
            log = parser.log
            if log is None:
                log = ParsedLog([], [], [], [], [], False)
                notes.append(f"the program's stdout could not be read back: {parser.error}")
    finally:
        if not keep:
            try:
                os.unlink(out_path)
            except OSError:
                pass
    run = TraceRun(argv, returncode, log, stderr, out_path if keep else None, timed_out, wall,
                   parse_s=parser.after_s)
    run.notes = notes + _notes(run)
    return run
