"""Child process of :func:`cusolver_trace.tracing.trace`: calls with the API loggers on.

Started by :func:`cusolver_trace.tracing.profile.api_calls_many` through the bootstrap of
:func:`~cusolver_trace.tracing.program.bootstrap_command` (the stdout hook installed before
torch loads the libraries; this file loaded by path, :mod:`cusolver_trace` imported only if
a call's function lives there)::

    python -c BOOTSTRAP <_hook.py> <_child.py> DIR

``DIR/call.pt`` (``torch.save``) holds ``calls``, a list of ``{"label", "fn", "args",
"kwargs"}`` (``fn``: an importable dotted name such as ``"torch.cholesky_inverse"``; tensors
load back onto the device they were saved from), ``device`` and ``linalg_library`` (the
parent's ``torch.backends.cuda.preferred_linalg_library``). Each call is made once as a
warm-up (library loading, handle creation), then once more between ``#### <label>`` and
``#### end <label>`` lines written through libc ``printf`` + ``fflush`` (the C stdio stream
the loggers write to, so the lines land in order with the records). On CUDA the second call
runs under the profiler with every op recorded (:class:`~._hook.Profiler`), and
``DIR/profile-<i>.json`` gets the correlation of its GPU activities with its records
(:func:`~._hook.correlate`). Then ``DIR/status.json``, and the child leaves through
``os._exit`` -- skipping interpreter teardown, where a SIGSEGV was seen with the loggers on.
"""
from __future__ import annotations

import ctypes
import importlib
import json
import os
import sys
import time
import traceback


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


def _trace_one(torch, hookmod, mark, folder, label, fn, args, kwargs, cuda, pfile) -> None:
    """Warm-up call, then the traced call between ``#### label`` and ``#### end label``
    (profiled, its correlation written to ``folder/pfile``, when on CUDA with the hook)."""
    hook = hookmod.HOOK

    def sync():
        if cuda:
            torch.cuda.synchronize()

    fn(*args, **kwargs)  # warm-up: libraries, handles, workspaces
    sync()
    if not (cuda and hook is not None):
        mark(f"#### {label}")
        try:
            fn(*args, **kwargs)
            sync()
        finally:
            mark(f"#### end {label}")
        return
    prof = hookmod.Profiler(torch, cuda=True, all_ops=True)
    prof.start()
    mark(f"#### {label}")
    hook.reset()
    hook.profiling = True
    try:
        fn(*args, **kwargs)
        sync()
    finally:
        hook.profiling = False
        mark(f"#### end {label}")
        events = prof.stop()
    t = time.perf_counter()
    found = hookmod.correlate(events, all_ops=prof.all_ops)
    found["tracing_s"] = {"correlation": time.perf_counter() - t}
    with open(os.path.join(folder, pfile), "w") as fh:
        json.dump(found, fh)


def main(hookmod, argv: list) -> int:
    """Trace the calls in ``argv[0]/call.pt``; leaves the process through ``os._exit``.

    Parameters
    ----------
    hookmod : module
        ``_hook.py`` as the bootstrap loaded it (``hookmod.HOOK``: the stdout hook or ``None``).
    argv : list of str
        ``[DIR]``.

    Returns
    -------
    int
        Never returns normally: the exit status (0 when every call completed) goes to
        ``os._exit``.
    """
    if len(argv) != 1:
        print("usage: python -c BOOTSTRAP _hook.py _child.py DIR", file=sys.stderr)
        os._exit(2)
    folder = argv[0]
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
        done: list = []
        status = {"ok": False, "done": done}
        for i, c in enumerate(spec["calls"]):
            status["running"] = c["label"]
            _trace_one(torch, hookmod, mark, folder, c["label"], resolve(c["fn"]), c["args"],
                       c["kwargs"], cuda, f"profile-{i}.json")
            done.append(c["label"])
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
    os._exit(0 if status.get("ok") else 1)
