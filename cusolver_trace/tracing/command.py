"""``cusolver-trace trace``: run a program with the API loggers on, or read a captured log.

Options: docs/cli.md. Running a program prints its own output, then the summary (calls and
GPU time per routine), then the call tree (see docs/tracing-programs.md); the exit status
is passed through (128 + N when the program was killed by signal N; 127 when
the program is not found, 126 when it cannot be executed).

Otherwise: 0 done, 2 bad usage or bad input (a missing, unreadable or non-text
log, an output path in a missing folder ...: one line on stderr, no
traceback), 3 an internal error (a bug: the traceback is shown), 130
interrupted.
"""
from __future__ import annotations

import argparse
import math
import os
import shutil
import sys
import tempfile
import traceback
from typing import Sequence

from .._paths import output_problem, same_file

__all__ = ["register", "run", "main", "build_parser", "positive_seconds",
           "EXIT_OK", "EXIT_USAGE", "EXIT_INTERNAL", "EXIT_INTERRUPTED"]

EXIT_OK, EXIT_USAGE, EXIT_INTERNAL, EXIT_INTERRUPTED = 0, 2, 3, 130

_DESCRIPTION = (
    "Trace the cuSOLVER and cuBLAS API calls a program makes (the libraries' own loggers, "
    "CUSOLVERDN_LOG_LEVEL=5 and CUBLAS_LOGINFO_DBG=1, on the program's stdout), and show "
    "them: first a summary (calls and GPU time per routine, --by routine / shape / op / line), "
    "then a tree: cuBLAS calls under the cuSOLVER call that issued them, consecutive "
    "identical calls collapsed with a count. A Python program runs under torch.profiler "
    "(unless --no-timing) so each call gets the GPU time of the kernels it launched. "
    "See docs/tracing-programs.md.")
_EPILOG = (
    "examples:\n"
    "  cusolver-trace trace -- python3 script.py --n 256\n"
    "  cusolver-trace trace --by op --no-tree -- python3 examples/trace_gp.py --n 2000\n"
    "  cusolver-trace trace --by routine,shape --chrome timeline.json -- python3 script.py\n"
    "  cusolver-trace trace --json trace.json --all -- python3 script.py\n"
    "  cusolver-trace trace --json - -- python3 script.py | jq .   # JSON alone on stdout\n"
    "  cusolver-trace trace --from-log tests/data/h200-torch2.11-cu130/trace-stdout.log.gz "
    "--section 'cholesky_inverse dtype=float64 n=256 batch=1 upper=False'")


def positive_seconds(text: str) -> float:
    """argparse ``type`` for ``--timeout``: a positive, finite number of seconds.

    Parameters
    ----------
    text : str
        The option's value, e.g. ``"30"`` or ``"0.5"``.

    Returns
    -------
    float

    Raises
    ------
    argparse.ArgumentTypeError
        For anything else (``-1``, ``0``, ``nan``, ``inf``, ``abc``).
    """
    from ..matrices import plain_float   # written plainly: no spaces or underscores

    try:
        value = plain_float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(
            f"expected a positive number of seconds, got {text!r}")
    return value


def _add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", metavar="PATH",
                   help="also write the trace as JSON to PATH; '-' writes it to stdout and "
                        "sends the program's output and the tree to stderr instead")
    p.add_argument("--all", action="store_true",
                   help="also show setup calls (handles, streams, params, math mode), dimmed")
    p.add_argument("--no-fold", action="store_true",
                   help="list every call in order instead of folding a call sequence that "
                        "repeats back to back (a loop) into one '× k' block")
    p.add_argument("--from-log", metavar="FILE",
                   help="report on a captured log instead of running a program (.gz accepted)")
    p.add_argument("--section", metavar="LABEL",
                   help="only the records between '#### LABEL' and '#### end LABEL'")
    p.add_argument("--keep-log", metavar="PATH",
                   help="keep the program's raw stdout (records and output, in order) in PATH")
    p.add_argument("--timeout", type=positive_seconds, metavar="SECONDS",
                   help="end the program and everything it started after SECONDS (SIGTERM, "
                        "then SIGKILL); what it logged is kept")
    p.add_argument("--by", type=_by_keys, default=("routine",), metavar="KEYS",
                   help="group the summary (and, for op / line, the tree) by: routine (default), "
                        "shape (routine + size arguments n/m/k/nrhs/batchSize/lda), op (the torch "
                        "op that issued each call: the program then records every torch op, "
                        "which costs time), line (the program's source line); "
                        "comma-separated, e.g. routine,shape")
    # two flags of one mutually exclusive group, not BooleanOptionalAction: given both,
    # argparse would keep the last one without a word
    tree = p.add_mutually_exclusive_group()
    tree.add_argument("--tree", dest="tree", action="store_const", const=True, default=True,
                      help="show the call tree after the summary (default)")
    tree.add_argument("--no-tree", dest="tree", action="store_const", const=False,
                      help="the summary only")
    p.add_argument("--no-timing", action="store_true",
                   help="do not run the program under torch.profiler: calls only, no GPU times")
    p.add_argument("--overhead", action="store_true",
                   help="run the program twice, without and with the profiler, and report both "
                        "wall times")
    p.add_argument("--chrome", metavar="PATH",
                   help="write a Chrome-trace / Perfetto timeline JSON (API calls, kernels) to PATH")
    p.add_argument("--full", action="store_true",
                   help="JSON with every record (pointers, log lines, kernels per record), "
                        "every GPU activity and the program's output, besides the folded tree, "
                        "the summary and the per-name kernel totals it always has")
    p.add_argument("command", nargs=argparse.REMAINDER,
                   help="the program and its arguments, after '--'")


_KINETO_NOISE = __import__("re").compile(r"^USDT:.* \S*ActivityProfiler\S*\.cpp:\d+\] profiler_(?:start|stop)\s*$")


def _by_keys(text: str) -> tuple:
    from .summary import parse_by

    try:
        return parse_by(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


_by_keys.is_list = True   # a comma list: the repeated-option error says so


def register(subparsers) -> argparse.ArgumentParser:
    """Add the ``trace`` subcommand to an argparse ``subparsers`` object.

    Parameters
    ----------
    subparsers
        What ``ArgumentParser.add_subparsers()`` returned.

    Returns
    -------
    argparse.ArgumentParser
        The subparser; its defaults carry ``func=run``, so the main CLI can
        dispatch with ``return args.func(args)``.
    """
    p = subparsers.add_parser("trace", help="trace cuSOLVER / cuBLAS API calls of a program or log",
                              description=_DESCRIPTION, epilog=_EPILOG,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    _add_arguments(p)
    p.set_defaults(func=run)
    return p


def build_parser() -> argparse.ArgumentParser:
    """A stand-alone parser for ``python -m cusolver_trace.tracing``.

    Returns
    -------
    argparse.ArgumentParser
    """
    from .._argparse import Parser   # one-line usage errors, options given once, as the CLI

    p = Parser(prog="cusolver-trace trace", description=_DESCRIPTION,
               epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    _add_arguments(p)
    return p


def _write_json(trace, path: str, console, *, full: bool = False, summary=None,
                lines: bool = False) -> None:
    from rich.markup import escape

    text = trace.to_json(full=full, summary=summary, lines=lines)
    if path == "-":
        sys.stdout.write(text + "\n")
    else:
        try:
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(text + "\n")
        except OSError as e:
            raise _Failure(f"cannot write the JSON to {path}: {e.strerror or e}") from None
        console.print(f"[dim]JSON written to {escape(path)}[/dim]")


def _echo(stream, lines) -> None:
    """Write the program's own lines; characters the stream cannot encode are escaped."""
    for line in lines:
        try:
            stream.write(line + "\n")
        except UnicodeEncodeError:
            enc = getattr(stream, "encoding", None) or "ascii"
            stream.write((line + "\n").encode(enc, "backslashreplace").decode(enc))
    stream.flush()


def command_inputs(command: Sequence[str]) -> list[str]:
    """Files a command reads, as far as its words say: the program (found on ``PATH``),
    every argument that names an existing regular file (``prog.py``, a data file), or does so
    after its first ``=`` (``--input=data.npy``, ``if=data.bin``), and the
    file of a module run with ``-m`` (``python3 -m mymod`` reads ``mymod.py``; found from the
    current folder and this interpreter's path, without importing anything).

    Parameters
    ----------
    command : sequence of str
        The program and its arguments.

    Returns
    -------
    list of str

    Examples
    --------
    >>> command_inputs(["no-such-program-xyz", "-c", "print(1)"])
    []
    """
    import shutil

    words = list(command)
    found = [shutil.which(words[0]) or words[0]] + words[1:] if words else []
    found += [w.split("=", 1)[1] for w in words[1:] if "=" in w]
    found += [f for i, w in enumerate(words[1:-1], 1) if w == "-m"
              for f in _module_files(words[i + 1])]
    out = []
    for w in found:
        try:
            if os.path.isfile(w):
                out.append(w)
        except (ValueError, OSError):  # a NUL in an argument, a name too long
            continue
    return out


def _module_files(name: str) -> list[str]:
    """The files ``python3 -m name`` may run: the module's source, or a package's
    ``__main__.py`` and ``__init__.py``, searched from the current folder, then this
    interpreter's ``sys.path`` (:class:`importlib.machinery.PathFinder`: nothing is imported);
    ``[]`` when not found."""
    from importlib.machinery import PathFinder

    path = [os.getcwd()] + [p for p in sys.path if p]
    spec = None
    try:
        for part in name.split("."):
            spec = PathFinder.find_spec(part, path)
            if spec is None:
                return []
            path = list(spec.submodule_search_locations or [])
    except (ImportError, ValueError, OSError):   # a name that is not a module name
        return []
    out = [spec.origin] if spec is not None and spec.origin else []
    for folder in (spec.submodule_search_locations or []) if spec is not None else []:
        out.append(os.path.join(folder, "__main__.py"))
    return out


def whole_writes():
    """Context manager: ``sys.stdout`` goes through a buffered writer while it is active.

    With ``PYTHONUNBUFFERED`` (or ``-u``) ``sys.stdout`` writes straight to the file
    descriptor, and a write that the pipe takes only in part (the reader left: ``| head
    -c 10``) loses the rest without an error. A buffered writer writes everything or
    raises ``BrokenPipeError`` (the commands then exit with 141). Line-buffered, so the
    output still appears as it is produced. Leaving the block flushes (and may raise
    ``BrokenPipeError``); ``sys.stdout`` is restored either way.

    Returns
    -------
    contextlib.AbstractContextManager
    """
    import contextlib
    import io

    @contextlib.contextmanager
    def manager():
        out = sys.stdout
        raw = getattr(out, "buffer", None)
        if not isinstance(raw, io.RawIOBase):  # already buffered, or not a real file
            yield
            return
        wrapped = io.TextIOWrapper(io.BufferedWriter(raw), encoding=out.encoding,
                                   errors=out.errors, line_buffering=True)
        sys.stdout = wrapped
        try:
            yield
            wrapped.flush()
        finally:
            sys.stdout = out
            try:
                wrapped.detach().detach()  # leaves the raw stream open
            except (OSError, ValueError):  # the reader went away: what is left is lost
                pass

    return manager()


def _os_error_text(e: OSError) -> str:
    """One line for an ``OSError``: ``"PATH: reason"`` when it names a file."""
    reason = e.strerror or str(e)
    if e.filename is not None:
        return f"{e.filename}: {reason}"
    return reason


def _log_open_error_text(path: str, e: OSError) -> str:
    if isinstance(e, FileNotFoundError):
        return f"no such log file: {path}"
    if isinstance(e, IsADirectoryError):
        return f"{path} is a folder, not a log file"
    if isinstance(e, PermissionError):
        return f"cannot read {path}: permission denied"
    return f"cannot read {path}: {e.strerror or e}"


class _Failure(Exception):
    """A predictable failure: one line for stderr, and an exit status."""

    def __init__(self, message: str, code: int = EXIT_USAGE):
        super().__init__(message)
        self.code = code


def run(args: argparse.Namespace) -> int:
    """Carry out ``cusolver-trace trace``; returns the process exit status.

    Parameters
    ----------
    args : argparse.Namespace
        Parsed by :func:`build_parser` (or the ``trace`` subparser of :func:`register`).

    Returns
    -------
    int
        With a command: the program's exit status (128 + N if killed by signal
        N); 127 if it is not found, 126 if it cannot be executed. With
        ``--from-log``: 0. Either way 2 for bad usage or bad input (missing,
        unreadable or non-text log, unknown section, output path that cannot be
        written), after one line on stderr; 3 for an internal error (with its
        traceback); 130 if interrupted; 141 (the shell's status for SIGPIPE), with no
        message, when the reader of stdout goes away (``| head``).
    """
    from rich.markup import escape

    from .._console import console

    err = console(stderr=True, highlight=False)

    def say(msg: str) -> None:
        err.print(f"[red]cusolver-trace trace: error: {escape(msg)}[/red]", soft_wrap=True)

    try:
        with whole_writes():
            return _run(args, say)
    except _Failure as e:
        say(str(e))
        return e.code
    except KeyboardInterrupt:
        say("interrupted")
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # stdout closed early (``| head``): nothing more can be shown there, and, as every
        # other command, no message and the shell's status for it (README: 141)
        from .._console import EXIT_BROKEN_PIPE

        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError, AttributeError):
            pass
        return EXIT_BROKEN_PIPE
    except OSError as e:
        say(_os_error_text(e))
        return EXIT_USAGE
    except UnicodeEncodeError as e:
        say(f"cannot write {e.object[e.start:e.end]!r} in the terminal's encoding "
            f"{e.encoding}; set PYTHONIOENCODING=utf-8")
        return EXIT_USAGE
    except Exception:  # a bug: show it, and never exit with 1 (that means MISMATCH)
        traceback.print_exc()
        say("internal error (the traceback above is a bug in cusolver-trace; please report it)")
        return EXIT_INTERNAL


def _run(args: argparse.Namespace, say) -> int:
    from rich.markup import escape

    from .._console import console

    from .logparse import LogReadError, load_log
    from .model import Trace
    from .runner import ProgramStartError, run_traced

    json_stdout = args.json == "-"
    out = console(highlight=False, stderr=json_stdout)  # wide when piped: calls stay greppable
    human = sys.stderr if json_stdout else sys.stdout  # the program's own output goes here
    command = list(args.command or [])
    if command[:1] == ["--"]:
        command = command[1:]

    if args.from_log and command:
        raise _Failure("give either --from-log FILE or a command after '--', not both")
    if not args.from_log and not command:
        raise _Failure("nothing to run: give a command after '--' (or --from-log FILE)")
    if command and not command[0].strip():
        raise _Failure(f"the program to run is named {command[0]!r}: give a program after '--'")
    if args.section is not None and not args.section.strip():
        raise _Failure("--section: empty label (sections are marked '#### LABEL' ... "
                       "'#### end LABEL')")
    by = tuple(getattr(args, "by", ("routine",)) or ("routine",))
    show_tree = getattr(args, "tree", True)
    no_timing = getattr(args, "no_timing", False)
    overhead = getattr(args, "overhead", False)
    chrome = getattr(args, "chrome", None)
    full = getattr(args, "full", False)
    if args.from_log and overhead:
        raise _Failure("--overhead runs a program; it cannot be used with --from-log")
    if no_timing and overhead:
        raise _Failure("--overhead compares runs with and without the profiler; "
                       "it cannot be used with --no-timing")
    if chrome == "-":
        raise _Failure("--chrome needs a file name ('-' is not accepted)")
    if args.keep_log == "-":
        raise _Failure("--keep-log needs a file name ('-' is not accepted; the program's output "
                       "already goes to stdout)")
    if args.from_log and (args.keep_log or args.timeout is not None):
        raise _Failure("--keep-log and --timeout are for running a program; they cannot be "
                       "used with --from-log")
    for option, path in (("--from-log", args.from_log), ("--json", args.json),
                         ("--keep-log", args.keep_log), ("--chrome", chrome)):
        if path == "":
            raise _Failure(f"{option}: empty file name")
        if path is not None and "\0" in path:
            raise _Failure(f"{option} {path!r}: a file name cannot contain a NUL character")
    # Output paths are checked before anything runs: a program is not run for
    # nothing, and its exit status is never confused with trace's own failure.
    outputs = [(option, path) for option, path in (("--json", args.json),
                                                   ("--keep-log", args.keep_log),
                                                   ("--chrome", chrome))
               if path is not None and not (option == "--json" and path == "-")]
    for option, path in outputs:
        problem = output_problem(path, option)   # tried, as every command's outputs
        if problem:
            raise _Failure(problem)
    inputs = [("--from-log", args.from_log)] if args.from_log else []
    inputs += [("the command", p) for p in command_inputs(command)]
    for i, (option, path) in enumerate(outputs):
        for other, other_path in outputs[i + 1:] + inputs:
            if same_file(path, other_path):
                if other == "the command":
                    raise _Failure(f"{option} {path} is a file the command reads "
                                   f"({other_path}); it would be overwritten")
                raise _Failure(f"{option} and {other} name the same file: {path}")

    if args.from_log:
        try:
            log = load_log(args.from_log)
        except OSError as e:
            raise _Failure(_log_open_error_text(args.from_log, e)) from None
        except LogReadError as e:
            raise _Failure(str(e)) from None
        if args.section is not None:
            try:
                log = log.section(args.section)
            except KeyError as e:
                raise _Failure(e.args[0]) from None
        notes = [] if log.records else ["no cuSOLVER / cuBLAS API record in this log"
                                        + (" section" if args.section else "")]
        if not log.ordered and len(log.libraries) == 1:
            notes.append(f"only {next(iter(log.libraries))} records: a single logger's file, "
                         f"so no nesting under cuSOLVER calls")
        if "op" in by or "line" in by:
            notes.append(f"--by {','.join(by)}: a captured log does not say which torch op or "
                         f"source line issued a call (that needs a profiled run of the program)")
        trace = Trace(label=args.from_log + (f"  [{args.section}]" if args.section else ""),
                      calls=log.calls, notes=notes, output=[o.text for o in log.output],
                      sections=list(log.sections),
                      why_no_times="a captured log holds the calls but no kernel times "
                                   "(GPU times need a profiled run: trace -- python3 PROGRAM)")
        _echo(human, trace.output)
        summary = trace.summary(by=by, all=args.all)
        out.print(trace.renderable(all=args.all, fold=not args.no_fold, by=by, tree=show_tree,
                                   summary=summary))
        _finish_outputs(trace, args, out, summary, chrome, full)
        return EXIT_OK

    from .._paths import gpu_absent_reason
    from .program import program_command

    absent = gpu_absent_reason()
    # said at once, before the program runs (not before a program that cannot start: its
    # error is the one line then)
    if absent and shutil.which(command[0]) is not None:
        sys.stderr.write(f"cusolver-trace trace: note: {absent}: the program runs, but cuSOLVER "
                         "and cuBLAS run on a GPU, so no library call can be logged or timed "
                         "here\n")
        sys.stderr.flush()
    unprofiled_s = None
    try:
        if overhead:  # first without the profiler (loggers on), its output is not shown
            plain = run_traced(command, timeout=args.timeout)
            unprofiled_s = plain.wall_s
        with tempfile.TemporaryDirectory(prefix="cusolver-trace-prof-") as prof_dir:
            argv, why_not = (None, "--no-timing was given") if no_timing else \
                program_command(command, prof_dir, all_ops="op" in by)
            result = run_traced(argv or command, log_path=args.keep_log, timeout=args.timeout)
            result.argv = list(command)
            argv_profiled = argv is not None
            timing_notes, activities, cost = _program_timing(result, prof_dir if argv else None,
                                                             why_not)
    except ProgramStartError as e:
        raise _Failure(e.strerror or str(e), e.exit_status) from None
    except OSError as e:
        raise _Failure(f"cannot write the log: {_os_error_text(e)}"
                       if args.keep_log else _os_error_text(e)) from None
    if argv_profiled:  # kineto's own start/stop lines are not the program's
        result.stderr = "".join(line for line in result.stderr.splitlines(keepends=True)
                                if not _KINETO_NOISE.match(line))
    try:
        _echo(human, result.output)
    finally:   # also when stdout's reader went away: stderr is still open, and the program's
        if result.stderr:   # own errors are shown before the exit for the broken pipe
            sys.stderr.write(result.stderr if result.stderr.endswith("\n")
                             else result.stderr + "\n")
            sys.stderr.flush()
    section_missing = False
    try:
        trace = result.to_trace(section=args.section)
    except KeyError as e:
        say(e.args[0])
        section_missing = True
        trace = result.to_trace()
    trace.wall_s, trace.wall_s_unprofiled = result.wall_s, unprofiled_s
    trace.notes.extend(timing_notes)
    trace.tracing_s = {**cost, "log parsing": result.parse_s}
    if activities is not None:
        mine = {id(r) for r in trace.records()}
        trace.activities = [a for a in activities if a.parent is None or id(a.parent) in mine]
    else:
        trace.why_no_times = (timing_notes[0].removeprefix("no per-call GPU time: ")
                              if timing_notes else "not measured")
    if overhead:
        trace.notes.append("--overhead: the program ran twice, first without the profiler "
                           "(its output not shown), then with it; caches, compilation and "
                           "autotuning can favour the second run")
    summary = trace.summary(by=by, all=args.all)
    out.rule("[bold]cusolver-trace[/bold]")
    out.print(trace.renderable(all=args.all, fold=not args.no_fold, by=by, tree=show_tree,
                               summary=summary))
    if result.signal is not None:
        out.print(f"[bold red]killed by {result.signal_name}[/bold red] "
                  f"(exit status {result.exit_status})")
    else:
        out.print(f"exit status {result.returncode}")
    if args.keep_log:
        out.print(f"[dim]raw log kept in {escape(args.keep_log)}[/dim]")
    _finish_outputs(trace, args, out, summary, chrome, full)
    if section_missing and result.exit_status == 0:
        return EXIT_USAGE  # the program ran fine, but --section named nothing it logged
    return result.exit_status


def _finish_outputs(trace, args, out, summary, chrome: str | None, full: bool) -> None:
    """Write ``--chrome`` and ``--json`` (in that order; the JSON may go to stdout)."""
    from rich.markup import escape

    if chrome:
        from .chrome import write_chrome_trace

        try:
            write_chrome_trace(trace, chrome)
        except OSError as e:
            raise _Failure(f"cannot write the timeline to {chrome}: {e.strerror or e}") from None
        out.print(f"[dim]Chrome-trace timeline written to {escape(chrome)} "
                  f"(open it in https://ui.perfetto.dev)[/dim]")
    if args.json:
        # log line numbers are of use where the log is at hand
        _write_json(trace, args.json, out, full=full, summary=summary,
                    lines=bool(args.keep_log or args.from_log))


def _program_timing(result, prof_dir: str | None, why_not: str | None):
    """Per-call GPU times of a program run through the bootstrap.

    Returns ``(notes, activities | None, tracing_s)``; sets the records' kernels / op /
    where / span in place."""
    from .program import attach, load_profile

    if prof_dir is None:
        return [f"no per-call GPU time: {why_not}"], None, {}
    status, profile = load_profile(prof_dir)
    cost = {k: v for k, v in (status.get("tracing_s") or {}).items() if k != "events"}
    if not status.get("timing"):
        return [f"no per-call GPU time: {status.get('why')}"], None, cost
    notes: list[str] = []
    activities = attach(result.log.records, profile, notes, gpu=bool(status.get("cuda")))
    if not status.get("cuda"):  # ops and source lines are known, GPU times are not
        return notes + [f"no per-call GPU time: {status.get('why')}"], None, cost
    return notes, activities, cost


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m cusolver_trace.tracing``.

    Parameters
    ----------
    argv : sequence of str, optional
        The arguments (default ``sys.argv[1:]``).

    Returns
    -------
    int
        The exit status (see :func:`run`). Usage errors exit through argparse
        (``SystemExit(2)``).
    """
    args = build_parser().parse_args(argv)
    return run(args)
