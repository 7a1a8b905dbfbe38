"""Compiling the fused kernels ahead of time: :func:`warmup` (``cusolver-trace warmup``).

``method="auto"`` never waits for a kernel: while the one a call needs is not built it runs
torch's path and builds the kernel in the background, and an explicit ``method="fused"``
compiles it in the call (seconds to tens of seconds each). :func:`warmup` builds a list of
kernels up front, in parallel processes, into the disk cache that both load from. Every
public name is imported from :mod:`cusolver_trace.backends.fused`.
"""
from __future__ import annotations

import os
import re
import time
from typing import Callable, Sequence

import numpy as np

from .._dtypes import dtype_info
from . import _fused_build as _build
from . import _fused_toolchain as _toolchain
from ._fused_build import TUNED, Request, make_key
from ._fused_layout import SMEM_LIMIT, fits, plan_call

#: The routines whose kernels :func:`warmup` builds: name -> (the kernel, the memory order of
#: the input as ``auto`` gets it). ``cholesky_inverse`` from a factor as
#: ``torch.linalg.cholesky`` returns it (column-major), ``spd_inverse`` from a row-major A.
ROUTINES = {"cholesky_inverse": ("inverse", "col_major"),
            "spd_inverse": ("potrf_inverse", "row_major")}

#: The orders :func:`warmup` builds by default: those of :data:`TUNED` (the shapes measured
#: when ``auto``'s fused rule was set: 4, 8, 16, 32, 64, 128).
DEFAULT_N = tuple(sorted({n for (_op, n, _dt) in TUNED}))

#: The dtypes :func:`warmup` builds by default: those ``auto`` picks the fused method for.
DEFAULT_DTYPES = ("float32", "float64")

#: The oldest compute capability cuSOLVERDx compiles for.
MIN_SM = (7, 0)


def parse_sm(sm) -> tuple[int, int]:
    """A compute capability as ``(major, minor)``: from ``"9.0"`` or ``(9, 0)``.

    Raises
    ------
    ValueError
        Not ``MAJOR.MINOR`` in plain digits, or older than :data:`MIN_SM`.

    Examples
    --------
    >>> parse_sm("9.0"), parse_sm((12, 0))
    ((9, 0), (12, 0))
    """
    if isinstance(sm, str):
        m = re.fullmatch(r"([0-9]{1,3})\.([0-9])", sm)
        if m is None:
            raise ValueError(f"sm must be MAJOR.MINOR such as 9.0, got {sm!r}")
        sm = (int(m.group(1)), int(m.group(2)))
    if (not isinstance(sm, (tuple, list)) or len(sm) != 2
            or not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in sm)):
        raise ValueError(f"sm must be (major, minor) or 'MAJOR.MINOR', got {sm!r}")
    sm = (int(sm[0]), int(sm[1]))
    if sm < MIN_SM:
        raise ValueError(f"sm {sm[0]}.{sm[1]}: cuSOLVERDx compiles for compute capability "
                         f"{MIN_SM[0]}.{MIN_SM[1]} and newer")
    return sm


def _target(sm) -> tuple[tuple[int, int], int]:
    """``(compute capability, shared memory per block)``: the current GPU's, or ``sm`` as
    given (with that GPU's shared memory where it has this ``sm``, else :data:`SMEM_LIMIT`)."""
    import torch

    from ..errors import GPUUnavailableError
    from ._fused_launch import _device_facts

    here = None
    if torch.cuda.is_available():
        idx = torch.cuda.current_device()
        here = _device_facts(idx)
    if sm is None:
        if here is None:
            raise GPUUnavailableError(
                "no CUDA GPU is visible to take the compute capability to compile for from; "
                "give it: sm='9.0' (command line: --sm 9.0)")
        return here
    sm = parse_sm(sm)
    if here is not None and here[0] == sm:
        return here
    return sm, SMEM_LIMIT


def _flags(values, what: str) -> tuple:
    vals = tuple(values) if isinstance(values, (tuple, list)) else (values,)
    if not vals or not all(isinstance(v, bool) for v in vals):
        raise TypeError(f"{what} must be a bool or a non-empty sequence of bools, got "
                        f"{values!r}")
    return tuple(dict.fromkeys(vals))


def _list(values, what: str) -> tuple:
    if isinstance(values, (str, int)):
        values = (values,)
    try:
        vals = tuple(values)
    except TypeError:
        raise TypeError(f"{what} must be a value or a sequence of values, got {values!r}") \
            from None
    if not vals:
        raise ValueError(f"{what} is empty: nothing to build")
    return tuple(dict.fromkeys(vals))


def warmup(ops: Sequence[str] = tuple(ROUTINES), n: Sequence[int] = DEFAULT_N,
           dtypes: Sequence[str] = DEFAULT_DTYPES, *, upper: Sequence[bool] = (False,),
           check: Sequence[bool] = (True,), sm: tuple[int, int] | str | None = None,
           workers: int | None = None,
           progress: Callable[[dict], None] | None = None) -> list[dict]:
    """Compile the fused (cuSOLVERDx) kernels of a list of shapes ahead of time, into the disk
    cache (``$XDG_CACHE_HOME/cusolver_trace/fused``) from which every process loads them.

    ``method="auto"`` never waits for a kernel: until the one a call needs is built it runs
    torch's path (and builds the kernel in the background); an explicit ``method="fused"``
    compiles it in the call (a :class:`~cusolver_trace.errors.CompileWarning`; about
    10-30 s per kernel). After ``warmup``, both find the listed kernels built. The default
    list is what ``auto`` picks the fused method for and was measured: ``cholesky_inverse``
    of a factor from ``torch.linalg.cholesky`` (column-major) and ``spd_inverse`` of a
    row-major A, n = 4, 8, 16, 32, 64, 128, float32 and float64, lower, with the in-kernel
    check (``check=True``, the routines' default): 24 kernels.

    Parameters
    ----------
    ops : sequence of str
        Routines whose kernels to build: ``"cholesky_inverse"``, ``"spd_inverse"``.
    n : sequence of int
        Matrix orders (each >= 1 and small enough for shared memory: up to 240 for float32,
        169 for float64 and complex64, 119 for complex128 on an H200).
    dtypes : sequence of str or dtype
        float32, float64, complex64, complex128.
    upper : sequence of bool
        Fill modes: the factor (or A's triangle) lower (False) and / or upper (True).
    check : sequence of bool
        The kernels of ``check=True`` (with the in-kernel check) and / or ``check=False``.
    sm : (int, int) or str, optional
        Compute capability to compile for (``(9, 0)`` or ``"9.0"``); default: the current
        GPU's. Given without that GPU, the shared memory per block is taken as 227 KiB
        (sm_90): a GPU with less may need other launch shapes, so run it there.
    workers : int, optional
        Processes compiling at once (compiles are CPU-bound; each runs in a fresh process);
        default ``min(kernels to compile, os.cpu_count())``. 1: in this process.
    progress : callable, optional
        Called with each kernel's record as it is done.

    Returns
    -------
    list of dict
        One record per kernel, in the order of the loops ops, dtypes, n, upper, check:
        ``op``, ``kernel`` (the fused kernel: ``inverse`` / ``potrf_inverse``), ``n``,
        ``dtype``, ``upper``, ``check``, ``sm`` (``"9.0"``), ``status`` (``"cached"``: in
        the disk cache already; ``"compiled"``; ``"failed"``, with ``error``), ``seconds``
        (wall time of this kernel, s), ``suggested_s`` (asking libmathdx for its launch
        shape, where it was not cached; s) and ``stages`` (:func:`compile_kernel`'s seconds
        per stage: libmathdx per device function, NVRTC, the universal fatbin, nvJitLink;
        empty when cached). A kernel that fails to compile is recorded, not raised.

    Raises
    ------
    FusedUnavailableError
        The ``cuda13-fused`` extra is missing (a
        :class:`~cusolver_trace.errors.GPUUnavailableError`).
    GPUUnavailableError
        No ``sm`` given and no CUDA GPU visible.
    ValueError
        An unknown op, an n < 1 or too large for shared memory, a bad ``sm`` or ``workers``.
    TypeError
        An unsupported dtype; ``upper`` / ``check`` not bools.

    Compiles what ``cusolver_trace.cholesky_inverse(L, method="fused")`` and
    ``spd_inverse(A, method="fused")`` would compile on first use (libmathdx for cuSOLVERDx's
    ``potrf`` / ``potrs``, NVRTC, nvJitLink); needs the extra, not a GPU (with ``sm``).

    Examples
    --------
    >>> import cusolver_trace as ct
    >>> records = ct.warmup(n=[32, 64], dtypes=["float64"])   # doctest: +SKIP
    >>> [(r["op"], r["n"], r["status"]) for r in records]     # doctest: +SKIP
    [('cholesky_inverse', 32, 'compiled'), ('cholesky_inverse', 64, 'compiled'),
     ('spd_inverse', 32, 'cached'), ('spd_inverse', 64, 'compiled')]
    """
    ops = _list(ops, "ops")
    bad = [o for o in ops if o not in ROUTINES]
    if bad:
        raise ValueError(f"unknown op {bad[0]!r}; choose from {', '.join(ROUTINES)}")
    orders = _list(n, "n")
    for k in orders:
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
            raise ValueError(f"n must be ints >= 1, got {k!r}")
    orders = tuple(int(k) for k in orders)
    names = tuple(dict.fromkeys(dtype_info(d).name for d in _list(dtypes, "dtypes")))
    for d in names:
        big = [k for k in orders if not fits("inverse", k, d)]
        if big:
            raise ValueError(f"n = {big[0]} {d} does not fit in a thread block's shared memory: "
                             "the fused method does not run it")
    uppers, checks = _flags(upper, "upper"), _flags(check, "check")
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int)
                                or workers < 1):
        raise ValueError(f"workers must be an int >= 1, got {workers!r}")
    if sm is not None:
        parse_sm(sm)      # a bad sm is the caller's ValueError, whether or not the extra is here
    _toolchain._tools()   # FusedUnavailableError, naming the extra
    cap, limit = _target(sm)
    label = f"{cap[0]}.{cap[1]}"
    plans, records = [], []
    for op in ops:
        kernel, order = ROUTINES[op]
        for d in names:
            for k in orders:
                for up in uppers:
                    for chk in checks:
                        p = plan_call(kernel, d, up, order)
                        plans.append(Request(kernel, k, k, d, p["upper"], p["arr_a"], p["arr_b"],
                                             cap, limit, None, None, p["conj"], None, chk))
                        records.append({"op": op, "kernel": kernel, "n": k, "dtype": d,
                                        "upper": up, "check": chk, "sm": label})
    todo = []
    for i, req in enumerate(plans):
        start = time.perf_counter()
        try:
            key = make_key(*req, ask=False)
        except ValueError as exc:   # does not fit this GPU's shared memory
            _done(records[i], req, _failure(exc, time.perf_counter() - start), progress)
            continue
        if key is not None and _build.cached(key) is not None:
            _done(records[i], req, {"status": "cached", "seconds": time.perf_counter() - start,
                                    "suggested_s": 0.0, "stages": {}, "error": None}, progress)
        else:
            todo.append(i)
    todo.sort(key=lambda i: -plans[i].n)   # the longest compiles first
    count = min(len(todo), workers or os.cpu_count() or 1)
    if count <= 1:
        for i in todo:
            _done(records[i], plans[i], _build_one(plans[i])[0], progress)
    else:
        _in_processes(todo, plans, records, count, progress)
    return records


def _done(record: dict, req: Request, result: dict, progress) -> None:
    result["seconds"] = round(result["seconds"], 3)
    result["suggested_s"] = round(result["suggested_s"], 3)
    record.update(result)
    if result["status"] != "failed":
        _build.mark_ready(req)   # auto uses the kernel from its next call
    if progress is not None:
        progress(record)


def _in_processes(todo, plans, records, count, progress) -> None:
    """Build ``todo`` in ``count`` fresh build processes (:class:`._fused_build.Child`: no CUDA
    state is inherited, the user's main script is not run again), one thread here feeding
    each; the cubins come back, so that this process loads them even where the disk cache
    cannot be written."""
    import queue
    from concurrent.futures import ThreadPoolExecutor, as_completed

    children: queue.SimpleQueue = queue.SimpleQueue()
    made = []

    def run(i):
        try:
            child = children.get_nowait()
        except queue.Empty:
            child = _build.Child()
            made.append(child)
        try:
            return child.call(_build_one, plans[i])
        finally:
            children.put(child)

    try:
        with ThreadPoolExecutor(max_workers=count) as pool:
            jobs = {pool.submit(run, i): i for i in todo}
            for job in as_completed(jobs):
                i = jobs[job]
                try:
                    result, built = job.result()
                except Exception as exc:   # the build process died
                    result, built = _failure(exc, 0.0), None
                if built is not None:
                    _build.keep(*built)
                _done(records[i], plans[i], result, progress)
    finally:
        for child in made:
            child.close()


def _failure(exc: BaseException, seconds: float) -> dict:
    text = " ".join(str(exc).split())[:500]
    return {"status": "failed", "seconds": seconds, "suggested_s": 0.0, "stages": {},
            "error": f"{type(exc).__name__}: {text}"}


def _build_one(req: Request) -> tuple[dict, tuple | None]:
    """Build one kernel (in this process, or a warm-up worker process): ``(result, built)``,
    ``built`` = ``(digest, cubin, meta)`` of a kernel compiled here, else None. Failures are
    returned, not raised."""
    start = time.perf_counter()
    try:
        key = make_key(*req)   # may ask libmathdx for its suggestion
        suggested_s = time.perf_counter() - start
        if _build.cached(key) is not None:   # another process built it meanwhile
            return {"status": "cached", "seconds": time.perf_counter() - start,
                    "suggested_s": suggested_s, "stages": {}, "error": None}, None
        cubin, meta = _build.build(key)
    except Exception as exc:
        return _failure(exc, time.perf_counter() - start), None
    return ({"status": "compiled", "seconds": time.perf_counter() - start,
             "suggested_s": suggested_s, "stages": dict(meta.get("seconds", {})),
             "error": None}, (_build.digest(key), cubin, meta))
