"""``cusolver-trace trace``: run a program with the API loggers on, or read a captured log.

    cusolver-trace trace [--json PATH] [--all] [--no-fold] [--keep-log PATH] -- python script.py args...
    cusolver-trace trace --from-log FILE [--section LABEL] [--json PATH] [--all] [--no-fold]

Running a program prints its own output, then the call tree; the exit status
is passed through (128 + N when the program was killed by signal N).
"""
from __future__ import annotations

import argparse
import sys
from typing import Sequence

__all__ = ["register", "run", "main", "build_parser"]

_DESCRIPTION = (
    "Trace the cuSOLVER and cuBLAS API calls a program makes (the libraries' own loggers, "
    "CUSOLVERDN_LOG_LEVEL=5 and CUBLAS_LOGINFO_DBG=1, on the program's stdout), and show "
    "them as a tree: cuBLAS calls under the cuSOLVER call that issued them, consecutive "
    "identical calls collapsed with a count.")
_EPILOG = (
    "examples:\n"
    "  cusolver-trace trace -- python3 script.py --n 256\n"
    "  cusolver-trace trace --json trace.json --all -- python3 script.py\n"
    "  cusolver-trace trace --json - -- python3 script.py | jq .   # JSON alone on stdout\n"
    "  cusolver-trace trace --from-log tests/data/h200-torch2.11-cu130/trace-stdout.log.gz "
    "--section 'cholesky_inverse dtype=float64 n=256 batch=1 upper=False'")


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
    p.add_argument("--timeout", type=float, metavar="SECONDS",
                   help="kill the program after SECONDS (what it logged is kept)")
    p.add_argument("command", nargs=argparse.REMAINDER,
                   help="the program and its arguments, after '--'")


def register(subparsers) -> argparse.ArgumentParser:
    """Add the ``trace`` subcommand to an argparse ``subparsers`` object.

    The subparser's defaults carry ``func=run``, so the main CLI can dispatch
    with ``return args.func(args)``.
    """
    p = subparsers.add_parser("trace", help="trace cuSOLVER / cuBLAS API calls of a program or log",
                              description=_DESCRIPTION, epilog=_EPILOG,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    _add_arguments(p)
    p.set_defaults(func=run)
    return p


def build_parser() -> argparse.ArgumentParser:
    """A stand-alone parser for ``python -m cusolver_trace.tracing``."""
    p = argparse.ArgumentParser(prog="cusolver-trace trace", description=_DESCRIPTION,
                                epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    _add_arguments(p)
    return p


def _write_json(trace, path: str, console) -> None:
    text = trace.to_json()
    if path == "-":
        sys.stdout.write(text + "\n")
    else:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text + "\n")
        console.print(f"[dim]JSON written to {path}[/dim]")


def run(args: argparse.Namespace) -> int:
    """Carry out ``cusolver-trace trace``; returns the process exit status.

    With a command: the program's exit status (128 + N if killed by signal N);
    127 if it cannot be started. With ``--from-log``: 0, or 2 for a missing
    file / unknown section. 2 for usage errors.
    """
    from rich.markup import escape

    from .._console import console

    from .logparse import load_log
    from .model import Trace
    from .runner import run_traced

    json_stdout = args.json == "-"
    out = console(highlight=False, stderr=json_stdout)  # wide when piped: calls stay greppable
    err = console(stderr=True, highlight=False)
    human = sys.stderr if json_stdout else sys.stdout  # the program's own output goes here
    command = list(args.command or [])
    if command[:1] == ["--"]:
        command = command[1:]

    def fail(msg: str, code: int = 2) -> int:
        err.print(f"[red]cusolver-trace trace: {escape(msg)}[/red]")
        return code

    if args.from_log:
        if command:
            return fail("give either --from-log FILE or a command after '--', not both")
        try:
            log = load_log(args.from_log)
            if args.section is not None:
                log = log.section(args.section)
        except FileNotFoundError:
            return fail(f"no such log file: {args.from_log}")
        except KeyError as e:
            return fail(e.args[0])
        notes = [] if log.records else ["no cuSOLVER / cuBLAS API record in this log"
                                        + (" section" if args.section else "")]
        if not log.ordered and len(log.libraries) == 1:
            notes.append(f"only {next(iter(log.libraries))} records: a single logger's file, "
                         f"so no nesting under cuSOLVER calls")
        trace = Trace(label=args.from_log + (f"  [{args.section}]" if args.section else ""),
                      calls=log.calls, notes=notes, output=[o.text for o in log.output],
                      sections=list(log.sections))
        for line in trace.output:
            human.write(line + "\n")
        human.flush()
        out.print(trace.renderable(all=args.all, fold=not args.no_fold))
        if args.json:
            _write_json(trace, args.json, out)
        return 0

    if not command:
        return fail("nothing to run: give a command after '--' (or --from-log FILE)")
    try:
        result = run_traced(command, log_path=args.keep_log, timeout=args.timeout)
    except FileNotFoundError as e:
        return fail(str(e), 127)
    except PermissionError as e:
        return fail(f"cannot run {command[0]!r}: {e}", 126)
    for line in result.output:
        human.write(line + "\n")
    human.flush()
    if result.stderr:
        sys.stderr.write(result.stderr if result.stderr.endswith("\n") else result.stderr + "\n")
        sys.stderr.flush()
    try:
        trace = result.to_trace(section=args.section)
    except KeyError as e:
        fail(e.args[0])
        trace = result.to_trace()
    out.rule("[bold]cusolver-trace[/bold]")
    out.print(trace.renderable(all=args.all, fold=not args.no_fold))
    if result.signal is not None:
        out.print(f"[bold red]killed by {result.signal_name}[/bold red] "
                  f"(exit status {result.exit_status})")
    else:
        out.print(f"exit status {result.returncode}")
    if args.keep_log:
        out.print(f"[dim]raw log kept in {escape(args.keep_log)}[/dim]")
    if args.json:
        _write_json(trace, args.json, out)
    return result.exit_status


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m cusolver_trace.tracing``; returns the exit status."""
    args = build_parser().parse_args(argv)
    return run(args)
