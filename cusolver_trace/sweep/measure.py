"""Timing sweeps, the measuring half: torch against each method, side by side, checked.

For every (dtype, n, batch) point, :func:`run_sweep` builds a seeded input of the structure
the op asks for (Hermitian positive definite, :func:`cusolver_trace.matrices.spd`, or
general, :func:`cusolver_trace.matrices.general`; cond 1e3 by default) and the op's
inputs (:func:`cusolver_trace.ops.prepare_inputs`), then for each of the op's methods
(:class:`cusolver_trace.ops.Method`, the public entry points with their default checks
on):

1. runs it once and judges the result with the op's LAPACK ratio (< 30 passes) — a method that fails is reported ``FAILED`` and gets no
   GFLOP/s;
2. times torch and all methods **interleaved in one**
   :func:`cusolver_trace.timing.time_calls` run (CUDA events on a GPU; median, IQR in
   ms), with an unchecked twin of each checked method when asked (``unchecked=True``:
   rows with ``checked = False`` and the check's cost as ``check_overhead``);
3. converts to GFLOP/s with the LAWN 41 count *named*, for inverses also on the potri
   count (the least work that yields A⁻¹), and to % of the GEMM ceiling measured in the
   same process (:mod:`cusolver_trace.ceiling`);
4. on a GPU, measures each method's peak device memory beyond its inputs in one more,
   untimed call (:func:`peak_extra`), beside the workspace its routine row states
   (:attr:`cusolver_trace.routines.Impl.workspace`).

Nothing here names an op: every op comes from the registry. Reporting (tables, JSON,
CSV, plots) is :mod:`cusolver_trace.sweep.report`.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import torch

from .. import checks, ops
from .._dtypes import dtype_info
from ..ceiling import ceiling, percent_of_ceiling
from ..matrices import structured
from ..timing import ratio, time_calls

__all__ = ["Case", "make_case", "method_callable", "flop_count", "measure_case", "run_sweep",
           "default_methods", "peak_extra"]

@dataclass
class Case:
    """One sweep point: inputs on the device, built once and shared by all methods.

    ``inputs``: :class:`cusolver_trace.ops.Inputs` (``A`` of the op's structure, ``x`` the
    op's matrix argument, ``B`` right-hand sides); ``opts`` the op's options. A batch of 1 is
    an unbatched ``(n, n)`` input (torch's batch-1 paths).
    """

    op: ops.Op
    n: int
    batch: int
    dtype: str
    device: str
    opts: ops.Options
    nrhs: int
    inputs: ops.Inputs

    @property
    def on_cuda(self) -> bool:
        return torch.device(self.device).type == "cuda"

    @property
    def A(self):
        return self.inputs.A

    @property
    def key(self) -> dict:
        return dict(op=self.op.name, n=self.n, batch=self.batch, dtype=self.dtype,
                    device=self.device, **self.opts,
                    nrhs=self.nrhs if self.op.has_rhs else None)


def make_case(op, n: int, batch: int = 1, dtype="float64", device="cpu", *,
              options=None, nrhs: int = 1, seed: int = 0, cond: float = 1e3) -> Case:
    """Build the inputs of one sweep point (seeded: the same on every run); ``options``: the
    op's options (a mapping; default torch's defaults).

    Raises
    ------
    cusolver_trace.ops.OpError
        Unknown op.
    ValueError
        n < 1, batch < 1 or nrhs < 1; an option value the op does not take.
    TypeError
        Unsupported dtype; an option the op does not take.
    """
    o = ops.get(op)
    opts = o.options_from(**dict(options or {}))
    if n < 1 or batch < 1 or nrhs < 1:
        raise ValueError(f"n, batch and nrhs must be >= 1, got n={n} batch={batch} nrhs={nrhs}")
    name = dtype_info(dtype).name
    shape = () if batch == 1 else (batch,)
    A = structured(o.structure, n, batch=shape, cond=cond, dtype=name, device=device, seed=seed)
    inputs = ops.prepare_inputs(o, A, opts=opts, nrhs=nrhs, seed=seed)
    return Case(o, n, batch, name, str(A.device), opts, nrhs, inputs)


def method_callable(case: Case, method: str, *, check: bool = True):
    """A zero-argument callable running ``method`` on the case's inputs and returning the
    result, through the public entry point with its checks (``check=False``: without).

    Raises
    ------
    cusolver_trace.ops.OpError
        The op has no such method (a ``ValueError``).
    ValueError
        A GPU-only method on a CPU case.
    """
    m = case.op.method(method)
    if m.gpu_only and not case.on_cuda:
        raise ValueError(f"method {method!r} runs cuSOLVER/cuBLAS batched or preferred-library "
                         f"paths and needs a CUDA device (this sweep runs on {case.device})")
    return m.make(case.op, case.inputs, case.opts, check)


def flop_count(case: Case, method: str) -> tuple[str, float, float | None]:
    """``(count name, flops of the method's algorithm, flops on the op's yardstick or None)``,
    LAWN 41 real flops (complex expanded) times the batch."""
    o, n, b = case.op, case.n, case.batch
    f = functools.partial(checks.flops, complex=dtype_info(case.dtype).is_complex)
    m = o.method(method)
    if m.flop_count is not None and m.name not in ("torch", "torch_cusolver", "replay"):
        name = m.flop_count(case.inputs, case.on_cuda)
    else:
        name = o.flop_count(case.inputs, case.on_cuda)

    def count(c):
        return f(c, n, case.nrhs) if c in checks.NEEDS_NRHS else f(c, n)

    total = count(name) + (count(o.plus_count) if o.plus_count else 0)
    label = f"{o.plus_count}+{name}" if o.plus_count else (
        f"{name}(nrhs={case.nrhs})" if name in checks.NEEDS_NRHS else name)
    yard = None
    if o.yardstick:
        yard = b * (count(o.yardstick) + (count(o.plus_count) if o.plus_count else 0))
    return label, b * total, yard


def default_methods(op, device) -> tuple:
    """The methods a sweep runs on ``device`` when none are named (the op's defaults)."""
    o = ops.get(op)
    return o.default_methods.get(torch.device(_device(device)).type, tuple(o.methods))


def _device(device) -> str:
    if device is None:
        from ..routines import default_device

        return default_device()[0]
    return str(device)


#: Matrices of at most this order are timed as runs of :data:`CALLS_PER_SAMPLE` calls per
#: sample on a GPU: their calls take tens of µs, where one call between two CUDA events
#: measures host issue time and the previous call's tail as much as the call (on the H200,
#: interleaved single calls gave checked-minus-unchecked costs from -0.04 to +0.14 ms for
#: the same fused kernel).
SMALL_N = 512
CALLS_PER_SAMPLE = 10


def peak_extra(fn, device, *, batch: int, n: int, itemsize: int) -> float | None:
    """Peak device memory of one call of ``fn`` beyond what was allocated before it, in
    units of ``batch · n²`` elements of ``itemsize`` bytes (2.0: two n × n buffers per
    matrix, the result included); None on the CPU (``device`` None or not CUDA).

    One untimed call between ``torch.cuda.reset_peak_memory_stats`` and
    ``torch.cuda.max_memory_allocated``, synchronized on both sides. It sees torch's caching
    allocator only: memory that cuSOLVER, cuBLAS, CuPy or NVRTC allocate themselves is not
    counted, nor a backend's grow-only scratch (cuSOLVER workspaces kept between calls)
    unless it grows during this call.

    Examples
    --------
    >>> peak_extra(lambda: None, "cpu", batch=1, n=8, itemsize=8) is None
    True
    """
    if device is None or torch.device(device).type != "cuda":
        return None
    dev = torch.device(device)
    torch.cuda.synchronize(dev)
    torch.cuda.reset_peak_memory_stats(dev)
    base = torch.cuda.memory_allocated(dev)
    out = fn()
    torch.cuda.synchronize(dev)
    peak = torch.cuda.max_memory_allocated(dev) - base
    del out
    return peak / (batch * n * n * itemsize)


def calls_per_sample(case: Case) -> int:
    """Consecutive calls per timing sample for ``case``: :data:`CALLS_PER_SAMPLE` on a GPU
    for n <= :data:`SMALL_N`, else 1.

    Examples
    --------
    >>> from types import SimpleNamespace as NS
    >>> calls_per_sample(NS(on_cuda=True, n=32)), calls_per_sample(NS(on_cuda=True, n=4096))
    (10, 1)
    """
    return CALLS_PER_SAMPLE if case.on_cuda and case.n <= SMALL_N else 1


def measure_case(case: Case, method_names, *, repeat: int = 10, warmup: int = 2,
                 flush_l2: bool = False, ceil=None, unchecked: bool = False,
                 threads: int | None = None) -> list[dict]:
    """Check every method once, then time torch and all methods interleaved; one row each.

    ``torch`` is always included (first). Rows (JSON-ready dicts): the case's keys,
    ``method``, ``resolved`` (what ``auto`` ran), ``checked`` (True: the entry point's checks
    on; False: its ``check=False`` twin; None: a method with no checks of its own, torch's
    call or the replay),
    ``status`` (``ok`` / ``FAILED`` (ratio >= 30 or NaN) / ``ERROR``), ``check`` and
    ``ratio``, ``error``, timing in ms (``median_ms``, ``q1_ms``, ``q3_ms``, ``iqr_ms``,
    ``min_ms``, ``repeat``, ``clock``, ``noisy``; per call, from runs of
    ``calls_per_sample`` consecutive calls (:func:`calls_per_sample`); on the CPU also
    ``threads``, every library's thread count while timing, and ``oversubscribed``, why the
    samples did not get their cores, or None), ``ratio_to_torch`` (median / torch's
    median; None where either side was oversubscribed, with the reason in
    ``ratio_withheld``: :func:`cusolver_trace.timing.ratio`), ``check_overhead`` (checked /
    unchecked median, with ``unchecked=True``),
    ``flop_count``, ``gflops``, ``pct_of_ceiling``, and for ops with a yardstick
    ``gflops_potri`` / ``pct_of_ceiling_potri``; ``ceiling_gflops``. GFLOP/s fields are
    None for a method that did not pass. Memory (on a GPU; None on the CPU):
    ``peak_extra_n2``, the peak beyond the inputs of one more, untimed call in n² per
    matrix (:func:`peak_extra`: torch's allocator only), and ``workspace_n2``, what the
    routine row it ran states (:attr:`cusolver_trace.routines.Impl.workspace`; None for
    torch's call, the replay and methods that run no row).

    ``auto`` is measured as it runs once the fused kernels it picks are built: a kernel not
    yet built is compiled before its first call (where ``auto`` alone would run torch's path
    meanwhile; :func:`cusolver_trace.backends.fused.builds_awaited`).
    """
    o = case.op
    names = ["torch", *[m for m in method_names if m != "torch"]]
    for m in names:
        o.method(m)  # an unknown method is an error, never a row of another op's method
    from ..backends._fused_build import builds_awaited

    with builds_awaited():   # auto timed as it runs once its fused kernels are built
        return _measure_case(case, names, repeat, warmup, flush_l2, ceil, unchecked, threads)


def _measure_case(case, names, repeat, warmup, flush_l2, ceil, unchecked, threads):
    o = case.op
    ceil = ceil if ceil is not None else ceiling(case.device, case.dtype)
    rows, fns = {}, {}
    for m in names:
        checkable = m in o.methods and o.methods[m].checkable
        # checked: the entry point's checks on (True) or off (its check=False twin, False);
        # None for a method with no checks of its own (torch's call, the replay)
        variants = [(m, True if checkable else None)]
        if unchecked and checkable:
            variants.append((f"{m} (check=False)", False))
        for label, check in variants:
            row = dict(case.key, method=m, resolved=m, checked=check, status="ok",
                       check=o.check_name, ratio=None, error=None, peak_extra_n2=None,
                       workspace_n2=None)
            try:
                row["resolved"] = o.method(m).resolved(case.inputs)
                if case.on_cuda:
                    row["workspace_n2"] = o.method(m).stated_workspace(case.inputs)
                fn = method_callable(case, m, check=check is not False)
                row["ratio"] = float(o.check(case.inputs, fn(), case.opts))
                if not checks.passes(row["ratio"]):
                    row["status"] = "FAILED"
                fns[label] = fn
            except Exception as exc:  # reported in the row, never timed
                row.update(status="ERROR", error=f"{type(exc).__name__}: {exc}")
            rows[label] = row
    dev = case.device if case.on_cuda else None
    k = calls_per_sample(case)
    timings = time_calls(fns, device=dev, warmup=warmup, repeat=repeat, flush_l2=flush_l2,
                         calls_per_sample=k, threads=threads) if fns else {}
    t_torch = timings.get("torch")
    size = dict(batch=case.batch, n=case.n, itemsize=dtype_info(case.dtype).itemsize)
    for label, fn in fns.items():   # after timing: caches and scratch are warm
        try:
            rows[label]["peak_extra_n2"] = peak_extra(fn, dev, **size)
        except Exception:  # noqa: BLE001 - the call passed its check; a failure here is not
            pass           # the method's, and the row keeps its time
    for label, row in rows.items():
        t = timings.get(label)
        name, fl, fl_yard = flop_count(case, row["method"])
        row.update(flop_count=name, ceiling_gflops=ceil.gemm_gflops, calls_per_sample=k)
        if t is not None:
            row.update({k: v for k, v in t.to_dict().items() if k != "max_ms"})
            row["ratio_to_torch"] = ratio(t, t_torch)
            busy = [x.oversubscribed for x in (t, t_torch) if x is not None and x.oversubscribed]
            if busy:
                row["ratio_withheld"] = f"oversubscribed CPU: {busy[0]}"
        twin = timings.get(f"{row['method']} (check=False)")
        if row["checked"] and twin is not None and t is not None:
            row["check_overhead"] = ratio(t, twin)
            row["check_cost_ms"] = (t.median_ms - twin.median_ms
                                    if row["check_overhead"] is not None else None)
        good = t is not None and row["status"] == "ok"
        row["gflops"] = t.gflops(fl) if good else None
        row["pct_of_ceiling"] = percent_of_ceiling(row["gflops"], ceil) if good else None
        if fl_yard is not None:
            row["gflops_potri"] = t.gflops(fl_yard) if good else None
            row["pct_of_ceiling_potri"] = percent_of_ceiling(row["gflops_potri"], ceil) if good else None
    return list(rows.values())


def run_sweep(op, n=(256, 1024), batch=(1,), dtype=("float64",),
              method_names=None, *, device=None, options=None, nrhs: int = 1,
              repeat: int = 10, warmup: int = 2, seed: int = 0, cond: float = 1e3,
              flush_l2: bool = False, progress: bool = True, console=None,
              shard: tuple[int, int] = (0, 1), unchecked: bool = False,
              threads: int | None = None) -> list[dict]:
    """Sweep ``op`` over every (dtype, n, batch); returns the rows of :func:`measure_case`.

    Parameters
    ----------
    op : str
        A registered op (:func:`cusolver_trace.ops.names`).
    n, batch : iterables of int
        Matrix orders and batch sizes (1 = unbatched (n, n)).
    dtype : iterable of str
        float32, float64, complex64, complex128.
    method_names : iterable of str
        Default: the op's defaults for the device.
    device : str
        Default ``cuda:0`` when torch sees a GPU, else ``cpu``.
    options, nrhs, seed, cond
        Input set-up (see :func:`make_case`).
    repeat, warmup, flush_l2
        Timing (see :func:`cusolver_trace.timing.time_calls`).
    progress : bool
        A progress line on stderr once the sweep has run 2 s
        (:class:`cusolver_trace._console.Progress`).
    console
        Not used (the progress line goes to stderr); kept for callers that pass it.
    shard : (i, k)
        Run only every k-th (dtype, n, batch) point starting at i (how ``--gpus`` splits a
        sweep over GPUs).
    unchecked : bool
        Also time each checked method with ``check=False`` (the check's cost, as a ratio).
    threads : int, optional
        On the CPU, every library's thread count while timing (default
        :data:`cusolver_trace.timing.CPU_THREADS`, 1).

    Returns
    -------
    list of dict

    Raises
    ------
    cusolver_trace.ops.OpError
        Unknown op or method.
    ValueError
        A GPU-only method on the CPU.
    """
    o = ops.get(op)
    device = _device(device)
    names = list(method_names or default_methods(o, device))
    bad = [m for m in names if m not in o.methods]
    if bad:
        raise ops.OpError(f"{o.name} has no method(s) {bad}; choose from {', '.join(o.methods)}")
    gpu_only = sorted(m for m in names if o.methods[m].gpu_only)
    if torch.device(device).type != "cuda" and gpu_only:
        raise ValueError(f"method(s) {gpu_only} need a CUDA device; this sweep runs on {device}")
    points = [(d, k, b) for d in dtype for k in n for b in batch][shard[0]::shard[1]]
    rows = []
    from .._console import progress as progress_line

    with progress_line(f"{o.name} sweep", len(points), after=None if progress else math.inf) as bar:
        for d, k, b in points:
            bar.step(f"{d} n={k} batch={b}")
            case = make_case(o, k, b, d, device, options=options, nrhs=nrhs, seed=seed,
                             cond=cond)
            rows += measure_case(case, names, repeat=repeat, warmup=warmup, flush_l2=flush_l2,
                                 unchecked=unchecked, threads=threads)
            del case
    return rows
