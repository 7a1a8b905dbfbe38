"""Child process of :func:`cusolver_trace.tracing.trace`: one call with the API loggers on.

Usage (started by ``trace`` through :func:`child_command`, with the logger
environment set; ``python -m cusolver_trace.tracing._child DIR`` also works, but
then the stdout hook comes after torch has loaded the libraries)::

    python -c BOOTSTRAP .../tracing/_hook.py DIR

``DIR/call.pt`` (``torch.save``) holds ``fn`` (an importable dotted name such
as ``"torch.cholesky_inverse"``), ``args``, ``kwargs`` (tensors load back onto
the device they were saved from), ``device`` and ``linalg_library`` (the
parent's ``torch.backends.cuda.preferred_linalg_library``). The child makes one
warm-up call (library loading, handle creation), writes ``#### call`` through
libc ``printf`` + ``fflush`` (the C stdio stream the loggers write to, so the
marker lands in order with the records), calls ``fn`` again, synchronizes,
writes ``#### end call``, writes ``DIR/status.json`` and leaves through
``os._exit`` — skipping interpreter teardown, where a SIGSEGV was seen with the
loggers on.

For CUDA calls the traced call also runs under ``torch.profiler`` with C
``stdout`` routed through :func:`~cusolver_trace.tracing._hook.install_stdout_hook`
(installed before torch loads the libraries), and ``DIR/kernels.json`` gets the
kernels each logged record launched (:func:`~cusolver_trace.tracing._hook.attribute`).
"""
from __future__ import annotations

import ctypes
import importlib
import json
import os
import sys
import traceback

MARK_BEGIN = "#### call"
MARK_END = "#### end call"
BOOT_MODULE = "_cusolver_trace_hook"
#: ``python -c BOOTSTRAP <path of _hook.py> DIR``: installs the stdout hook from
#: ``_hook.py`` loaded by path (stdlib only), *then* imports this package (which
#: imports torch, which loads cuSOLVER / cuBLAS) and runs :func:`main` on ``DIR``.
BOOTSTRAP = (
    "import importlib.util, runpy, sys\n"
    "spec = importlib.util.spec_from_file_location(%r, sys.argv[1])\n"
    "mod = importlib.util.module_from_spec(spec)\n"
    "sys.modules[spec.name] = mod\n"
    "spec.loader.exec_module(mod)\n"
    "mod.HOOK = mod.install_stdout_hook()\n"
    "sys.argv = ['cusolver_trace.tracing._child'] + sys.argv[2:]\n"
    "runpy.run_module('cusolver_trace.tracing._child', run_name='__main__', alter_sys=True)\n"
) % BOOT_MODULE


def child_command(folder: str) -> list[str]:
    """argv that runs the API child on ``folder`` with the stdout hook in place first."""
    hook_py = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_hook.py")
    return [sys.executable, "-c", BOOTSTRAP, hook_py, folder]


def resolve(name: str):
    """Object for a dotted name: the longest importable module prefix, then attributes.

    ``"torch.linalg.cholesky"`` -> ``torch.linalg.cholesky``;
    ``"torch.Tensor.cholesky_inverse"`` -> the method descriptor.
    Raises ``ImportError`` / ``AttributeError`` if it cannot be found.
    """
    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for attr in parts[i:]:
            obj = getattr(obj, attr)
        return obj
    raise ImportError(f"cannot import any prefix of {name!r}")


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m cusolver_trace.tracing._child DIR", file=sys.stderr)
        return 2
    folder = argv[0]
    from ._hook import attribute, install_stdout_hook, kineto_events

    # installed by the bootstrap (BOOTSTRAP) before this package, and so torch, was imported
    hook = getattr(sys.modules.get(BOOT_MODULE), "HOOK", None) or install_stdout_hook()
    libc = ctypes.CDLL(None)

    def mark(text: str) -> None:
        sys.stdout.flush()
        libc.printf(b"%s\n", text.encode())
        libc.fflush(None)

    status: dict = {"ok": False}
    try:
        import torch

        spec = torch.load(os.path.join(folder, "call.pt"), weights_only=False)
        fn = resolve(spec["fn"])
        args, kwargs = spec["args"], spec["kwargs"]
        device = spec.get("device")
        cuda = device is not None and device.startswith("cuda")
        if cuda:
            torch.cuda.set_device(torch.device(device))
            if spec.get("linalg_library"):
                torch.backends.cuda.preferred_linalg_library(spec["linalg_library"])

        def sync():
            if cuda:
                torch.cuda.synchronize()

        fn(*args, **kwargs)  # warm-up: libraries, handles, workspaces
        sync()
        if cuda and hook is not None:
            import warnings

            from torch.profiler import ProfilerActivity, profile

            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", message=".*[Pp]rofiler clears events.*")
                with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
                    mark(MARK_BEGIN)
                    hook.reset()
                    hook.profiling = True
                    try:
                        fn(*args, **kwargs)
                        sync()
                    finally:
                        hook.profiling = False
                        mark(MARK_END)
            found = attribute(kineto_events(prof))
            with open(os.path.join(folder, "kernels.json"), "w") as fh:
                json.dump({"hooked": list(hook.names), **found.to_dict()}, fh)
        else:
            mark(MARK_BEGIN)
            fn(*args, **kwargs)
            sync()
            mark(MARK_END)
        status = {"ok": True}
    except BaseException as e:  # report, never raise: the parent reads status.json
        traceback.print_exc()
        status = {"ok": False, "error": f"{type(e).__name__}: {e}"}
    finally:
        try:
            with open(os.path.join(folder, "status.json"), "w") as fh:
                json.dump(status, fh)
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            libc.fflush(None)
    return 0 if status.get("ok") else 1


if __name__ == "__main__":
    os._exit(main(sys.argv[1:]))
