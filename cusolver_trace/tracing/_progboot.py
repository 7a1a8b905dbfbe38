"""Bootstrap of a whole traced Python program (``cusolver-trace trace -- python3 prog.py``).

Started by :func:`cusolver_trace.tracing.program.program_command` as::

    python3 [interpreter options] -c BOOTSTRAP <_hook.py> <_progboot.py> OUTDIR OPS MODE TARGET ARGS...

The bootstrap first loads ``_hook.py`` by path (stdlib only) and installs the C ``stdout``
hook -- before anything imports torch, and so before cuSOLVER / cuBLAS are loaded -- then
loads this file by path and calls :func:`main`. It does not import :mod:`cusolver_trace`
(the program may not have it on its path).

:func:`main` imports torch, starts the profiler (:class:`~._hook.Profiler`; every torch op
too when ``OPS`` is ``ops``), switches the hook's markers and source-line capture on, runs
the program (``MODE``: ``path``, ``module`` or ``code``) with ``sys.argv`` as it expects,
then stops the profiler and writes into ``OUTDIR`` ``profile.json`` (:func:`~._hook.correlate`
plus ``sources``) and ``status.json`` (``timing``, ``cuda``, ``why``, ``all_ops``,
``tracing_s``). See docs/tracing-programs.md, "How GPU time per call is measured".

Whatever happens -- no torch, no GPU, a hook that could not be installed -- the program still
runs; ``status.json`` says why there is no timing. The program's own exit (``SystemExit``,
an exception, ``KeyboardInterrupt``) is re-raised after the files are written, so its exit
status and traceback are unchanged.
"""
from __future__ import annotations

import json
import os
import runpy
import sys
import sysconfig
import time


def _write(folder: str, name: str, obj) -> None:
    try:
        with open(os.path.join(folder, name), "w") as fh:
            json.dump(obj, fh, separators=(",", ":"))
    except (OSError, TypeError, ValueError):
        pass


def _skip_prefixes(torch_mod) -> tuple:
    here = os.path.dirname(os.path.abspath(__file__))          # .../cusolver_trace/tracing
    prefixes = [os.path.dirname(here) + os.sep, here + os.sep]  # this package
    if torch_mod is not None:
        prefixes.append(os.path.dirname(os.path.abspath(torch_mod.__file__)) + os.sep)
    for key in ("stdlib", "platstdlib"):
        try:
            prefixes.append(sysconfig.get_paths()[key] + os.sep)
        except KeyError:
            pass
    return tuple(dict.fromkeys(prefixes))


def _missing_program(mode: str, target: str) -> None:
    """Leave as the interpreter itself would when the script or module does not exist (its
    message, status 2 for a path and 1 for a module), rather than with runpy's traceback."""
    exe = os.path.basename(sys.executable) or "python3"
    if mode == "path" and not os.path.exists(target):
        print(f"{exe}: can't open file {os.path.abspath(target)!r}: [Errno 2] No such file or "
              "directory", file=sys.stderr)
        raise SystemExit(2)
    if mode == "module":
        import importlib.util

        try:
            found = importlib.util.find_spec(target) is not None
        except (ImportError, ValueError):  # a parent package that does not exist, or ""
            found = False
        if not found:
            print(f"{exe}: No module named {target}", file=sys.stderr)
            raise SystemExit(1)


def _run_program(mode: str, target: str, args: list) -> None:
    if mode == "path":
        _missing_program(mode, target)
        sys.argv = [target] + args
        sys.path[0:1] = [os.path.dirname(os.path.abspath(target))]
        runpy.run_path(target, run_name="__main__")
    elif mode == "module":
        sys.argv = [target] + args  # run_module puts the module's file in argv[0]
        sys.path[0:1] = [os.getcwd()]
        _missing_program(mode, target)
        runpy.run_module(target, run_name="__main__", alter_sys=True)
    else:  # code
        sys.argv = ["-c"] + args
        sys.path[0:1] = [""]
        main_mod = sys.modules["__main__"]
        code = compile(target, "<string>", "exec")
        exec(code, main_mod.__dict__)


def main(hookmod, argv: list) -> None:
    """Run the program in ``argv`` = ``[OUTDIR, OPS, MODE, TARGET, *ARGS]`` under the profiler.

    Parameters
    ----------
    hookmod : module
        ``_hook.py`` as the bootstrap loaded it; ``hookmod.HOOK`` is what
        ``install_stdout_hook()`` returned (``None``: no hook).
    argv : list of str
        ``OUTDIR``, ``OPS`` (``ops``: record every torch op; ``calls``: only what the
        per-call times need), ``MODE`` (``path`` / ``module`` / ``code``), ``TARGET``,
        program args.

    Returns
    -------
    None
        The program's own ``SystemExit`` or exception propagates (after the files are
        written).

    Raises
    ------
    BaseException
        Whatever the program raised.
    """
    hook = hookmod.HOOK
    folder, all_ops, mode, target, args = argv[0], argv[1] == "ops", argv[2], argv[3], list(argv[4:])
    status = {"timing": False, "cuda": False, "why": None, "all_ops": all_ops, "tracing_s": {}}
    prof = None
    torch = None
    if hook is None:
        status["why"] = ("C stdout could not be hooked (needs glibc's fopencookie), so log "
                         "records cannot be placed on the profiler's timeline")
    else:
        try:
            import torch  # noqa: F811 - after the hook: cuSOLVER / cuBLAS load later
        except Exception as e:  # ImportError, or a broken install
            torch = None
            status["why"] = f"torch is not importable in the program's Python ({type(e).__name__}: {e})"
    if torch is not None:
        try:
            cuda = bool(torch.cuda.is_available())
            status["cuda"] = cuda
            hook.skip_prefixes = _skip_prefixes(torch)
            t = time.perf_counter()
            prof = hookmod.Profiler(torch, cuda=cuda, all_ops=all_ops)
            prof.start()
            status["tracing_s"]["profiler start"] = time.perf_counter() - t
            status["all_ops"] = prof.all_ops
            hook.reset()
            hook.capture_source = True
            hook.profiling = True
            status["timing"] = True
            if not cuda:
                status["why"] = ("no CUDA device visible to torch in the program: it ran on the "
                                 "CPU, so there are no kernels and no GPU times")
        except Exception as e:
            prof = None
            status["timing"] = False
            status["why"] = f"torch.profiler could not be started ({type(e).__name__}: {e})"
    failure = None
    try:
        _run_program(mode, target, args)
    except BaseException as e:  # SystemExit, KeyboardInterrupt, the program's own errors
        failure = e
    finally:
        _finish(hookmod, hook, prof, torch, status, folder)
    if failure is None:
        _leave(hook, 0)
        return
    if isinstance(failure, SystemExit):
        code = failure.code
        if code is None:
            code = 0
        elif not isinstance(code, int):
            try:
                print(code, file=sys.stderr)  # as Python prints a non-integer exit code
            except Exception:
                pass
            code = 1
        _leave(hook, code)
        raise failure
    if isinstance(failure, KeyboardInterrupt):
        raise failure  # signal handling as Python's own
    # the program's own error: its traceback without the bootstrap's frames, exit status 1
    tb = failure.__traceback__
    skip = (os.path.abspath(__file__), os.path.abspath(runpy.__file__))
    while tb is not None and tb.tb_next is not None and \
            os.path.abspath(tb.tb_frame.f_code.co_filename) in skip:
        tb = tb.tb_next
    sys.excepthook(type(failure), failure.with_traceback(tb), tb)
    try:
        sys.stderr.flush()
    except Exception:
        pass
    _leave(hook, 1)
    sys.exit(1)


def _finish(hookmod, hook, prof, torch, status: dict, folder: str) -> None:
    """Stop the profiler, correlate, write ``profile.json`` and ``status.json``."""
    cost = status["tracing_s"]
    profile = None
    if prof is not None:
        hook.profiling = False
        try:
            if status["cuda"]:
                torch.cuda.synchronize()
        except Exception:
            pass
        try:
            t = time.perf_counter()
            events = prof.stop()
            cost["profiler stop"] = time.perf_counter() - t - prof.read_s
            cost["event reading"] = prof.read_s
            t = time.perf_counter()
            profile = hookmod.correlate(events, all_ops=prof.all_ops)
            cost["correlation"] = time.perf_counter() - t
            cost["events"] = len(events)
        except Exception as e:
            status["timing"] = False
            status["why"] = f"torch.profiler failed to stop ({type(e).__name__}: {e})"
    if profile is not None:
        t = time.perf_counter()
        profile["sources"] = hook.resolved_sources()
        _write(folder, "profile.json", profile)
        cost["write"] = time.perf_counter() - t
    _write(folder, "status.json", status)
    try:
        sys.stdout.flush()
    except Exception:
        pass


def _leave(hook, code: int) -> None:
    """End the process as Python would — non-daemon threads joined, ``atexit`` handlers
    run, Python and C streams flushed — but without interpreter teardown (``os._exit``).

    Why: with the hook installed, C ``stdout`` is a ``fopencookie`` stream whose write
    function is Python. The libraries still log during teardown (static destructors
    destroying cuBLAS / cuSOLVER handles write ``cublasDestroy`` records), and a Python
    callback entered after the interpreter is finalized crashes: on the H200 every traced
    GPU program exited with SIGSEGV (status 139) after all its work had finished. The
    API child of ``trace(fn)`` leaves through ``os._exit`` for the same reason. Without a
    hook (nothing Python on C stdout) the normal exit is kept.
    """
    if hook is None:
        return
    import atexit
    import threading

    me = threading.current_thread()
    for t in threading.enumerate():
        if t is not me and not t.daemon:
            try:
                t.join()
            except Exception:
                pass
    try:
        atexit._run_exitfuncs()  # the program's handlers, last registered first
    except Exception:
        pass
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            pass
    try:
        import ctypes

        ctypes.CDLL(None).fflush(None)  # C stdio buffers (the loggers' stream is unbuffered)
    except Exception:
        pass
    os._exit(int(code) & 0xFF)
