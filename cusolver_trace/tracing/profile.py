"""``trace(fn, *args, **kwargs)``: what one torch call does on the GPU.

Two views of the same call:

* kernels and aten ops, in this process, from ``torch.profiler`` (one warm-up
  call first, then one profiled call);
* the cuSOLVER / cuBLAS API calls with their arguments, from the libraries' own
  loggers. Those can only be switched on before the libraries load, so the call
  is replayed on the same inputs in a child process
  (:mod:`cusolver_trace.tracing._child`) started with the loggers on.
"""
from __future__ import annotations

import dataclasses

import json
import os
import re
import sys
import tempfile
import warnings
from typing import Any, Callable, Iterable

from ._child import MARK_BEGIN, child_command, resolve
from ._hook import Attribution
from .kernels import classify_kernel
from .model import AtenOp, KernelStat, Trace
from .runner import run_traced

__all__ = ["trace", "qualified_name", "api_calls_many"]

#: Seconds the API child may run before it is killed.
CHILD_TIMEOUT_S = 600.0
_SECTION = MARK_BEGIN[len("#### "):]
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


def _profile(fn, args, kwargs, cuda: bool) -> tuple[list[KernelStat], list[AtenOp]]:
    """One call under torch.profiler: kernels (device ms) and aten ops (host ms)."""
    import torch
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    with warnings.catch_warnings():  # one profiling cycle: torch's "clears events" hint is noise
        warnings.filterwarnings("ignore", message=".*[Pp]rofiler clears events.*")
        with profile(activities=activities) as prof:
            fn(*args, **kwargs)
            if cuda:
                torch.cuda.synchronize()
        events = prof.events()
    kernels: dict[str, list] = {}
    aten: dict[str, list] = {}
    for e in events:
        ms = e.time_range.elapsed_us() / 1000.0
        if getattr(e, "device_type", DeviceType.CPU) == DeviceType.CUDA:
            k = kernels.setdefault(e.name, [0.0, 0])
            k[0] += ms
            k[1] += 1
        elif e.name.startswith("aten::"):
            a = aten.setdefault(e.name, [0, 0.0])
            a[0] += 1
            a[1] += ms
    return ([KernelStat(n, classify_kernel(n), ms, c) for n, (ms, c) in kernels.items()],
            [AtenOp(n, c, ms) for n, (c, ms) in aten.items()])


def _child_pythonpath() -> str:
    pkg_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    paths = [pkg_root] + [p for p in sys.path if p] + \
        [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    return os.pathsep.join(dict.fromkeys(paths))


def _api_calls(name: str, args, kwargs, device: str | None, *, timeout: float = CHILD_TIMEOUT_S):
    """Replay ``name(*args, **kwargs)`` in a child with the loggers on.

    Returns ``(calls, notes, outside)``; ``calls`` is ``None`` if the child never
    reached the traced call; each record's ``kernels`` holds what it launched
    (:mod:`._hook`), ``outside`` the ``(kernel, ms)`` launched outside any API call
    (``None`` when per-call times are missing). Raises ``ValueError`` if the inputs cannot be saved.
    """
    spec: dict[str, Any] = {"fn": name, "args": args, "kwargs": kwargs}
    return _run_child(spec, [(_SECTION, "kernels.json")], device, timeout)[_SECTION]


def api_calls_many(calls, device: str | None, *, timeout: float = CHILD_TIMEOUT_S) -> dict:
    """Several named calls, each traced in turn in one child with the loggers on.

    Parameters
    ----------
    calls : sequence of (label, name, args, kwargs)
        ``label``: the call's section (``"torch"``, ``"replay"``; distinct, no ``####``);
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
        ``label -> (calls, notes, outside)`` as one :func:`trace` child gives them:
        ``calls`` (a list of :class:`~.logparse.ApiCall`) is None when the child never
        reached that call.

    Raises
    ------
    ValueError
        The inputs cannot be saved, or the labels are not distinct.
    """
    labels = [c[0] for c in calls]
    if len(set(labels)) != len(labels) or any("#" in str(x) or not str(x) for x in labels):
        raise ValueError(f"api_calls_many: labels must be distinct and plain, got {labels}")
    spec: dict[str, Any] = {"calls": [{"label": lb, "fn": fn, "args": a, "kwargs": kw}
                                      for lb, fn, a, kw in calls]}
    return _run_child(spec, [(lb, f"kernels-{i}.json") for i, lb in enumerate(labels)], device,
                      timeout)


def _run_child(spec: dict, sections, device: str | None, timeout: float) -> dict:
    """Run the API child on ``spec``; per ``(section, kernels file)``: (calls, notes, outside)."""
    import torch

    spec = {**spec, "device": device, "linalg_library": None}
    if device and device.startswith("cuda"):
        spec["linalg_library"] = torch.backends.cuda.preferred_linalg_library().name.lower()
    found: dict = {}
    with tempfile.TemporaryDirectory(prefix="cusolver-trace-") as folder:
        try:
            torch.save(spec, os.path.join(folder, "call.pt"))
        except Exception as e:  # pickling errors come in many types
            raise ValueError(f"trace(): the inputs could not be saved with torch.save for "
                             f"the API part ({type(e).__name__}: {e}); pass api=False") from e
        run = run_traced(child_command(folder),
                         env={"PYTHONPATH": _child_pythonpath()}, timeout=timeout)
        try:
            with open(os.path.join(folder, "status.json")) as fh:
                status = json.load(fh)
        except (OSError, ValueError):
            status = {"ok": False}
        for section, kfile in sections:
            try:
                with open(os.path.join(folder, kfile)) as fh:
                    found[section] = Attribution.from_dict(json.load(fh))
            except (OSError, ValueError, KeyError, TypeError):
                found[section] = None
    tail = "\n".join(run.stderr.strip().splitlines()[-5:])
    out: dict = {}
    for section, _kfile in sections:
        notes: list[str] = []
        if run.signal is not None or run.timed_out:
            notes.extend(run.notes[:1])
        if section not in run.log.sections:
            why = status.get("error") or tail
            notes.append(f"the API child stopped before the traced call (exit status "
                         f"{run.exit_status}){': ' + why if why else ''}")
            out[section] = (None, notes, None)
            continue
        done = section in (status.get("done") or []) or (status.get("ok") and "done" not in status)
        if not done:
            notes.append(f"the traced call did not complete in the API child: "
                         f"{status.get('error') or tail or 'no status written'}; the records "
                         f"logged up to then are shown")
        part = run.log.section(section)
        timing, outside = found[section], None
        if timing is None and spec["linalg_library"] is not None:  # CUDA call without timing
            notes.append("no per-call GPU time: the API child could not hook C stdout "
                         "(needs glibc) or did not finish the profiled call")
        elif timing is not None:
            outside = attach_kernels(part.records, timing, notes)
        out[section] = (part.calls, notes, outside)
    return out


#: Kernels only torch launches (ATen / c10 templates): never part of a library call.
_TORCH_KERNEL_RE = re.compile(r"\b(?:at|c10)::")


def _torch_own(kernel: str) -> bool:
    """ATen / c10 kernels and MAGMA's (MAGMA is linked into torch and not logged)."""
    return bool(_TORCH_KERNEL_RE.search(kernel)) or classify_kernel(kernel) == "MAGMA"


def attach_kernels(records, found, notes: list[str]) -> list[tuple[str, float]] | None:
    """Set ``record.kernels`` from an :class:`~._hook.Attribution` whose markers line
    up one to one with ``records`` (same functions, same order); return the kernels
    that belong to no call (torch's own). Otherwise leave them ``None``, add a note
    and return ``None``.

    A marker only says where a call *starts*, so what torch launches after a call
    returns lands on that call unless corrected: ATen / c10 kernels (``at::native::…``
    — the ``tril_`` of ``linalg.cholesky``, copies, the info check), MAGMA kernels
    (torch's MAGMA path calls cuBLAS between its own launches) and anything
    after a setup call (``cusolverDnDestroyParams``, ``SetStream``: they launch
    nothing) are moved to torch's own. A memcpy / memset torch issues right after
    a legacy-API call (``potrfBatched``) cannot be told apart and stays with it.
    """
    logged = [r.function for r in records]
    if found.names != logged:
        notes.append(f"no per-call GPU time: {len(found.names)} hooked records vs {len(logged)} "
                     f"parsed ones do not line up")
        return None
    outside = list(found.outside)
    for r, kernels in zip(records, found.per_record):
        if r.kind == "setup":
            mine, theirs = [], list(kernels)
        else:
            mine = [k for k in kernels if not _torch_own(k[0])]
            theirs = [k for k in kernels if _torch_own(k[0])]
        r.kernels = mine
        outside.extend(theirs)
    return outside


def trace(fn: Callable, *args, api: bool = True, **kwargs) -> Trace:
    """Trace one call ``fn(*args, **kwargs)``: API calls, kernels and aten ops.

    Runs ``fn`` once as a warm-up, once under ``torch.profiler.profile`` (CPU +
    CUDA activities) to collect aten ops (host ms) and CUDA kernels (device ms,
    classified cuSOLVER / cuBLAS / MAGMA / ATen/other), and — when an input is a
    CUDA tensor and ``api`` is true — replays the call on the same inputs in a
    child process with the cuSOLVER and cuBLAS loggers on, to get the API calls
    with their arguments (e.g. ``cusolverDnXpotrs`` uplo, n, nrhs, lda, ldb, and
    the two ``cublasDtrsm_v2_64`` it issues). The child uses the parent's
    ``preferred_linalg_library`` setting and the same ``CUDA_VISIBLE_DEVICES``,
    and also profiles its call: each API call gets the kernels it launched and
    their GPU ms (``ApiCall.kernels``; ``CallNode.gpu_ms`` / ``self_gpu_ms`` in
    :meth:`Trace.tree`; see :mod:`cusolver_trace.tracing._hook`; glibc only).

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
        Rendered as a tree (terminal, notebook), ``to_json()``. Per-call GPU ms
        come from the child's run, the kernel table from this process's run.
        ``calls`` is ``None`` when the API part was skipped (CPU inputs: cuSOLVER
        is not involved; ``api=False``), with a note saying why.

    Raises
    ------
    ValueError
        If the API part is needed and ``fn`` cannot be imported by name (lambda,
        local function, ``__main__``), or the inputs cannot be saved.
    Whatever ``fn`` raises (the warm-up call runs first, in this process).
    """
    import torch

    tensors = list(_tensors((args, kwargs)))
    cuda_tensors = [t for t in tensors if t.is_cuda]
    device = str(cuda_tensors[0].device) if cuda_tensors else None
    name = qualified_name(fn) if (api and cuda_tensors) else None  # fail before running
    fn(*args, **kwargs)  # warm-up
    if cuda_tensors:
        torch.cuda.synchronize()
    kernels, aten = _profile(fn, args, kwargs, bool(cuda_tensors))
    notes: list[str] = []
    calls = outside = None
    if not api:
        notes.append("API calls not traced (api=False)")
    elif not cuda_tensors:
        notes.append("no CUDA tensor among the inputs: the call runs on the CPU (LAPACK), "
                     "cuSOLVER and cuBLAS are not involved, so there are no API calls to trace")
    else:
        calls, more, outside = _api_calls(name, args, kwargs, device)
        notes.extend(more)
    if cuda_tensors and not kernels:
        notes.append("torch.profiler reported no CUDA kernels (is CUPTI available?)")
    return Trace(label=_describe(fn, args, kwargs), calls=calls,
                 kernels=kernels, aten_ops=aten, notes=notes,
                 sections=[_SECTION] if calls is not None else [],
                 outside_kernels=outside)
