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

Several calls in one child: ``call.pt`` may instead hold ``calls``, a list of
``{"label", "fn", "args", "kwargs"}``; each is warmed up and traced in turn inside
its own ``#### <label>`` … ``#### end <label>`` section, its kernels in
``DIR/kernels-<i>.json`` (i: its position). ``compare --trace`` runs torch's call and
the replay this way, one process for both.
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


def _trace_one(torch, hook, mark, folder, label, fn, args, kwargs, cuda, kfile) -> None:
    """Warm-up call, then the traced call between ``#### label`` and ``#### end label``
    (profiled, with the kernels of each record written to ``folder/kfile``, when on CUDA
    with the stdout hook in place)."""
    def sync():
        if cuda:
            torch.cuda.synchronize()

    fn(*args, **kwargs)  # warm-up: libraries, handles, workspaces
    sync()
    if cuda and hook is not None:
        import warnings

        from torch.profiler import ProfilerActivity, profile

        from ._hook import attribute, kineto_events

        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*[Pp]rofiler clears events.*")
            with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
                mark(f"#### {label}")
                hook.reset()
                hook.profiling = True
                try:
                    fn(*args, **kwargs)
                    sync()
                finally:
                    hook.profiling = False
                    mark(f"#### end {label}")
        found = attribute(kineto_events(prof))
        with open(os.path.join(folder, kfile), "w") as fh:
            json.dump({"hooked": list(hook.names), **found.to_dict()}, fh)
    else:
        mark(f"#### {label}")
        try:
            fn(*args, **kwargs)
            sync()
        finally:
            mark(f"#### end {label}")


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m cusolver_trace.tracing._child DIR", file=sys.stderr)
        return 2
    folder = argv[0]
    from ._hook import install_stdout_hook

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
        device = spec.get("device")
        cuda = device is not None and device.startswith("cuda")
        if cuda:
            torch.cuda.set_device(torch.device(device))
            if spec.get("linalg_library"):
                torch.backends.cuda.preferred_linalg_library(spec["linalg_library"])
        if "calls" in spec:
            todo = [(c["label"], c["fn"], c["args"], c["kwargs"], f"kernels-{i}.json")
                    for i, c in enumerate(spec["calls"])]
        else:
            todo = [(MARK_BEGIN[len("#### "):], spec["fn"], spec["args"], spec["kwargs"],
                     "kernels.json")]
        done: list = []
        status = {"ok": False, "done": done}
        for label, fn_name, args, kwargs, kfile in todo:
            status["running"] = label
            _trace_one(torch, hook, mark, folder, label, resolve(fn_name), args, kwargs, cuda,
                       kfile)
            done.append(label)
        status.pop("running", None)
        status["ok"] = True
    except BaseException as e:  # report, never raise: the parent reads status.json
        traceback.print_exc()
        status = {**status, "ok": False, "error": f"{type(e).__name__}: {e}"}
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
