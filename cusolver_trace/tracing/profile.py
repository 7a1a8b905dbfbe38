"""``trace(fn, *args, **kwargs)``: what one torch call does on the GPU.

The cuSOLVER / cuBLAS API calls with their arguments come from the libraries' own loggers,
which can only be switched on before the libraries load: the call is replayed on the same
inputs in a child process (:mod:`cusolver_trace.tracing._child`) started with the loggers on,
which also profiles it (kernels per call, the kernel table, aten ops).
"""
from __future__ import annotations

import dataclasses
import json
import os
import sys
import tempfile
from typing import Any, Callable, Iterable

from ._child import resolve
from .events import AtenOp
from .model import Trace
from .program import attach, bootstrap_command
from .runner import run_traced

__all__ = ["trace", "qualified_name", "api_calls_many"]

#: Seconds the API child may run before it is killed.
CHILD_TIMEOUT_S = 600.0
_SECTION = "call"
#: Namespaces searched for builtins whose __module__/__qualname__ do not import
#: (``torch.linalg.cholesky.__module__`` is ``torch._C._linalg``).
_NAMESPACES = ("torch", "torch.linalg", "torch.Tensor", "torch.special", "torch.fft",
               "torch.nn.functional")


def qualified_name(fn: Callable) -> str:
    """An importable dotted name that resolves back to ``fn`` itself.

    ``torch.cholesky_inverse`` -> ``"torch.cholesky_inverse"``;
    ``torch.linalg.cholesky`` -> ``"torch.linalg.cholesky"``; a function ``f``
    defined at the top level of module ``pkg.mod`` -> ``"pkg.mod.f"``.

    Raises
    ------
    ValueError
        For lambdas, nested functions, ``functools.partial`` objects, functions
        defined in ``__main__`` and anything else that a fresh process cannot
        import by name (the API part replays the call in a child process).
    """
    qual = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None)
    module = getattr(fn, "__module__", None)
    candidates = []
    for ns_name in _NAMESPACES:
        try:
            ns = resolve(ns_name)
        except (ImportError, AttributeError):
            continue
        short = getattr(fn, "__name__", None)
        if short and getattr(ns, short, None) is fn:
            candidates.append(f"{ns_name}.{short}")
        else:
            candidates.extend(f"{ns_name}.{k}" for k, v in vars(ns).items() if v is fn)
    if qual and "<" not in qual and module and module != "__main__":
        candidates.append(f"{module}.{qual}")
    for name in candidates:
        try:
            if resolve(name) is fn:
                return name
        except (ImportError, AttributeError):
            continue
    where = f" (defined in {module})" if module == "__main__" else ""
    raise ValueError(
        f"trace() needs a named, importable function for the API part, such as "
        f"torch.cholesky_inverse or mypkg.mymodule.myfunc; {fn!r}{where} cannot be "
        f"imported by name in a fresh process. Move it to an importable module, or "
        f"pass api=False to get the profiler part only.")


def _tensors(obj) -> Iterable:
    import torch

    if isinstance(obj, torch.Tensor):
        yield obj
    elif isinstance(obj, (list, tuple)):
        for o in obj:
            yield from _tensors(o)
    elif isinstance(obj, dict):
        for o in obj.values():
            yield from _tensors(o)
    elif dataclasses.is_dataclass(obj) and not isinstance(obj, type):  # e.g. ops.Inputs
        for f in dataclasses.fields(obj):
            yield from _tensors(getattr(obj, f.name))


def _describe(fn: Callable, args, kwargs) -> str:
    import torch

    def one(a) -> str:
        if isinstance(a, torch.Tensor):
            return f"{str(a.dtype).removeprefix('torch.')}{list(a.shape)} {a.device}"
        text = repr(a)
        return text if len(text) <= 40 else text[:37] + "..."

    try:
        name = qualified_name(fn)
    except ValueError:
        name = getattr(fn, "__qualname__", None) or repr(fn)
    parts = [one(a) for a in args] + [f"{k}={one(v)}" for k, v in kwargs.items()]
    return f"{name}({', '.join(parts)})"


def _profile(fn, args, kwargs, cuda: bool) -> tuple[list, list[AtenOp]]:
    """One call in this process under the profiler (every op): its GPU activities (no call
    is logged here, so none has a parent) and aten ops (host ms)."""
    import torch

    from . import _hook

    prof = _hook.Profiler(torch, cuda=cuda, all_ops=True)
    prof.start()
    try:
        fn(*args, **kwargs)
        if cuda:
            torch.cuda.synchronize()
    finally:
        events = prof.stop()
    found = _hook.correlate(events, all_ops=True)
    return attach([], found, [], gpu=cuda) or [], _aten(found)


def _aten(found: dict | None) -> list[AtenOp] | None:
    if not found or found.get("aten") is None:
        return None
    return [AtenOp(n, c, ms) for n, c, ms in found["aten"]]


def _child_pythonpath() -> str:
    pkg_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    paths = [pkg_root] + [p for p in sys.path if p] + \
        [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    return os.pathsep.join(dict.fromkeys(paths))


def api_calls_many(calls, device: str | None, *, timeout: float = CHILD_TIMEOUT_S) -> dict:
    """Several named calls, each traced in turn in one child with the loggers on.

    Parameters
    ----------
    calls : sequence of (label, name, args, kwargs)
        ``label``: the call's section (``"torch"``, ``"replay"``; distinct, no ``#``);
        ``name``: an importable dotted name (:func:`qualified_name`); its inputs
        (``torch.save``-able).
    device : str or None
        ``"cuda:0"`` … (the child uses it, and the parent's
        ``preferred_linalg_library``), or None for CPU calls.
    timeout : float
        Seconds before the child is ended.

    Returns
    -------
    dict
        ``label -> (calls, notes, activities)``: ``calls`` (a list of
        :class:`~.events.ApiCall` events, each with the GPU activities it launched as
        ``kernels`` on CUDA) is None when the child never reached that call; ``activities``
        every GPU activity of the call (``parent``: the call that launched it, ``None``:
        torch's own), or None when not profiled (CPU inputs, no hook).

    Raises
    ------
    ValueError
        The inputs cannot be saved, or the labels are not distinct.
    """
    return {k: v[:3] for k, v in _run_child(calls, device, timeout).items()}


def _run_child(calls, device: str | None, timeout: float, warm_up=None) -> dict:
    """Run the API child; per label ``(calls, notes, activities, aten ops)``. ``warm_up``
    (a callable) runs in this process while the child starts; what it raises is raised
    here, after the child has been stopped."""
    import threading

    import torch

    labels = [c[0] for c in calls]
    if len(set(labels)) != len(labels) or any("#" in str(x) or not str(x) for x in labels):
        raise ValueError(f"api_calls_many: labels must be distinct and plain, got {labels}")
    spec: dict[str, Any] = {"calls": [{"label": lb, "fn": fn, "args": a, "kwargs": kw}
                                      for lb, fn, a, kw in calls],
                            "device": device, "linalg_library": None}
    if device and device.startswith("cuda"):
        spec["linalg_library"] = torch.backends.cuda.preferred_linalg_library().name.lower()
    found: dict = {}
    with tempfile.TemporaryDirectory(prefix="cusolver-trace-") as folder:
        try:
            torch.save(spec, os.path.join(folder, "call.pt"))
        except Exception as e:  # pickling errors come in many types
            raise ValueError(f"trace(): the inputs could not be saved with torch.save for "
                             f"the API part ({type(e).__name__}: {e}); pass api=False") from e
        argv = bootstrap_command(sys.executable, [], "_child", [folder])
        env = {"PYTHONPATH": _child_pythonpath()}
        if warm_up is None:
            run = run_traced(argv, env=env, timeout=timeout)
        else:  # the child starts (seconds: torch, CUDA) while this process warms up
            stop, box = threading.Event(), {}
            worker = threading.Thread(target=lambda: box.update(
                run=_guarded(run_traced, argv, env=env, timeout=timeout, stop=stop)))
            worker.start()
            try:
                warm_up()
            except BaseException:
                stop.set()
                worker.join()
                raise
            worker.join()
            run = box["run"]
            if isinstance(run, BaseException):
                raise run
        status = _read_json(os.path.join(folder, "status.json")) or {"ok": False}
        for i, label in enumerate(labels):
            found[label] = _read_json(os.path.join(folder, f"profile-{i}.json"))
    tail = "\n".join(run.stderr.strip().splitlines()[-5:])
    out: dict = {}
    for label in labels:
        notes: list[str] = []
        if run.signal is not None or run.timed_out:
            notes.extend(run.notes[:1])
        if label not in run.log.sections:
            why = status.get("error") or tail
            notes.append(f"the API child stopped before the traced call (exit status "
                         f"{run.exit_status}){': ' + why if why else ''}")
            out[label] = (None, notes, None, None)
            continue
        if label not in (status.get("done") or []):
            notes.append(f"the traced call did not complete in the API child: "
                         f"{status.get('error') or tail or 'no status written'}; the records "
                         f"logged up to then are shown")
        part = run.log.section(label)
        profile, activities = found[label], None
        if profile is None and spec["linalg_library"] is not None:  # CUDA call without timing
            notes.append("no per-call GPU time: the API child could not hook C stdout "
                         "(needs glibc) or did not finish the profiled call")
        elif profile is not None:
            activities = attach(part.records, profile, notes)
        out[label] = (part.calls, notes, activities, _aten(profile))
    return out


def _read_json(path: str):
    """What a child wrote to ``path``, or ``None`` (missing, cut short)."""
    try:
        with open(path) as fh:
            return json.load(fh)
    except (OSError, ValueError):
        return None


def _guarded(fn, *args, **kw):
    """``fn(*args, **kw)``, or the exception it raised (for a worker thread)."""
    try:
        return fn(*args, **kw)
    except BaseException as e:  # handed to the caller's thread
        return e


def trace(fn: Callable, *args, api: bool = True, **kwargs) -> Trace:
    """Trace one call ``fn(*args, **kwargs)``: API calls, GPU kernels and aten ops.

    When an input is a CUDA tensor and ``api`` is true, the call is replayed on the same
    inputs in a child process with the cuSOLVER and cuBLAS loggers on (they can only be
    switched on before the libraries load): one warm-up call, then one call under
    ``torch.profiler`` (CPU ops + CUDA activities). That gives the API calls with their
    arguments (e.g. ``cusolverDnXpotrs`` uplo, n, nrhs, lda, ldb, and the two
    ``cublasDtrsm_v2_64`` it issues), the GPU activities each call launched (their GPU ms:
    ``CallNode.gpu_ms`` / ``self_gpu_ms`` in :meth:`Trace.tree`; see
    :mod:`cusolver_trace.tracing._hook`; glibc only), the kernel table and the aten ops.
    The child uses this process's ``preferred_linalg_library`` setting and the same
    ``CUDA_VISIBLE_DEVICES``; this process makes the call once too (its errors are raised
    here), while the child starts. Otherwise (CPU inputs, ``api=False``) the call is
    profiled here, after a warm-up call.

    Parameters
    ----------
    fn : callable
        For the API part, a named importable function (``torch.cholesky_inverse``,
        ``torch.linalg.cholesky``, ``torch.cholesky_solve``, ``pkg.mod.func``).
    *args, **kwargs
        Its inputs. Tensors of any shape; they are ``torch.save``-d for the child.
    api : bool
        ``False`` skips the child (profiler part only; any callable then works).

    Returns
    -------
    Trace
        Rendered as a tree (terminal, notebook), ``to_json()``. ``calls`` is ``None`` when
        the API part was skipped (CPU inputs: cuSOLVER is not involved; ``api=False``),
        with a note saying why.

    Raises
    ------
    ValueError
        If the API part is needed and ``fn`` cannot be imported by name (lambda,
        local function, ``__main__``), or the inputs cannot be saved.
    Whatever ``fn`` raises (the call in this process).
    """
    import torch

    tensors = list(_tensors((args, kwargs)))
    cuda_tensors = [t for t in tensors if t.is_cuda]
    device = str(cuda_tensors[0].device) if cuda_tensors else None
    notes: list[str] = []
    calls = None

    def warm_up():
        fn(*args, **kwargs)
        if cuda_tensors:
            torch.cuda.synchronize()

    if api and cuda_tensors:
        name = qualified_name(fn)  # fails before anything runs
        calls, more, activities, aten = _run_child([(_SECTION, name, args, kwargs)], device,
                                                   CHILD_TIMEOUT_S, warm_up)[_SECTION]
        notes.extend(more)
    else:
        warm_up()
        activities, aten = _profile(fn, args, kwargs, bool(cuda_tensors))
        if not api:
            notes.append("API calls not traced (api=False)")
        else:
            notes.append("no CUDA tensor among the inputs: the call runs on the CPU (LAPACK), "
                         "cuSOLVER and cuBLAS are not involved, so there are no API calls to trace")
        if not cuda_tensors:
            activities = []
    if cuda_tensors and activities == []:
        notes.append("torch.profiler reported no CUDA kernels (is CUPTI available?)")
    return Trace(label=_describe(fn, args, kwargs), calls=calls, activities=activities,
                 aten_ops=aten, notes=notes, sections=[_SECTION] if calls is not None else [])
