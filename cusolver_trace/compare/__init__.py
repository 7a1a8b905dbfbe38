"""Compare torch's own function with the replay of the library calls it makes.

:func:`compare` runs an op's torch call (:mod:`cusolver_trace.ops`) and the replay of
its library calls on the same inputs, device and stream, and reports:

* the verdict (:func:`verdict` of the comparison's :class:`Facts`, a pure function) —
  ``bitwise-equal`` (every bit of every output equal, info equal; identical non-finite
  outputs included), ``within-tolerance`` (not bitwise, but both sides pass the op's
  LAPACK ratio test, < 30, and agree on info; only where the replay runs another library
  than torch: where it runs torch's own routine, other bits are a ``MISMATCH``),
  ``failed-alike`` (both report the same failing ``info`` — and the other matrices of the
  batch agree — or both return non-finite values at the same places: LAPACK leaves such
  contents unspecified, and they are not compared) or ``MISMATCH`` (anything else);
* differences: max |Δ|, max ULP distance, ‖Δ‖_F / ‖torch‖_F, NaN placement, and whether
  each further part of the result (pivots) is equal;
* accuracy of each side: the op's LAPACK ratio (with LAPACK's eps, on what the op
  reads), non-finite counts, asymmetry of a Hermitian result;
* timing, three ways per side (ms, median and IQR; a side whose IQR exceeds 20 % of its
  median is flagged noisy):

  - the CUDA-event time (warm-up, interleaved runs), and the replay / torch ratio;
  - the GPU-busy time: the summed durations of the kernels the call launched, from
    ``torch.profiler`` (:func:`cusolver_trace.timing.time_gpu_busy`);
  - the host time to issue the call, without synchronizing after it
    (:func:`cusolver_trace.timing.time_host`);

  and :func:`cusolver_trace.timing.time_split` says whether a difference is GPU work or
  issue overhead. Times that cannot be had (on the CPU: GPU-busy and issue time) are
  reported as unavailable with the reason;
* optionally (``trace=True``) the call sequences: both sides run once more in a child
  process with the cuSOLVER / cuBLAS loggers on, and their calls are compared call by
  call (:func:`cusolver_trace.tracing.diff_traces`). Where the dispatch rule says the
  replay is exact (``bitwise``), unequal call sequences make the verdict ``MISMATCH``;
  where it is not (torch runs MAGMA, which is not logged) they are reported only;
* provenance: :func:`cusolver_trace.versions.versions`, the seed and the date.

The package never names an op or a factorization: what an op reads, its options, its
check and the words for its failures come from the op. Modules: :mod:`.report` (the
report types), :mod:`.facts` (facts and the verdict), :mod:`.run` (inputs, running,
timing, the inputs' fingerprint), :mod:`.notes`, :mod:`.trace` (call sequences).

The torch call and the replay each run inside an NVTX range
(:func:`cusolver_trace.tracing.nvtx_range`; nothing without the ``nvtx`` package), named
``torch <function> …`` and ``replay <op>: <library calls> …``, so that an Nsight Systems
timeline shows which calls are the replay's.
"""
from __future__ import annotations

import dataclasses
import datetime as _dt
import functools
from typing import Any

import numpy as np

from .. import checks, ops
from .._arrays import ArrayLike, flag
from .._dtypes import dtype_info
from ..timing import time_gpu_busy
from .facts import Facts, measure, parts, verdict
from .notes import notes as _notes
from .notes import unavailable_notes
from .report import GPU_BUSY_LATER, SCHEMA, VERDICTS, CallSequences, Comparison, Side
from .run import (GPU_BUSY_MAX_CALLS, as_input, fingerprint, fingerprint_difference, run_both,
                  sides, split_times)
from .trace import call_sequences, run_side, trace_sides

__all__ = ["compare", "with_gpu_busy", "Comparison", "Side", "CallSequences", "Facts",
           "VERDICTS", "SCHEMA", "verdict", "as_input", "run_side", "call_sequences",
           "TRACE_TIMEOUT_S", "GPU_BUSY_MAX_CALLS", "GPU_BUSY_LATER"]

#: Seconds the ``trace=True`` child (both sides under the loggers) may run.
TRACE_TIMEOUT_S = 300.0


@functools.cache
def _provenance() -> dict:
    from ..versions import versions

    return versions()


def _split_kwargs(o, kw: dict) -> tuple[dict, dict]:
    """``compare``'s keywords beyond its own: the op's inputs (its ``takes``) and its
    options.

    Raises
    ------
    TypeError
        A keyword that is neither.
    """
    given, options = {}, {}
    names = {opt.name for opt in o.options}
    for k, v in kw.items():
        if k in o.takes and k not in ("A", "B"):
            given[k] = v
        elif k in names:
            options[k] = v
        else:
            takes = [t for t in o.takes if t not in ("A", "B")]
            raise TypeError(f"compare({o.name!r}, ...) got an unexpected keyword {k!r}; "
                            f"{o.name} takes options {sorted(names) or 'none'}"
                            + (f" and inputs {takes}" if takes else ""))
    return given, options


def _by_name(o, given: dict) -> dict:
    """Every input the op takes besides A and B, by name (None where not given)."""
    return {k: given.get(k) for k in o.takes if k not in ("A", "B")}


def compare(op: str, A: ArrayLike | None = None, B: ArrayLike | None = None, *,
            preferred: str | None = None, torch_version: str | None = None, repeat: int = 20,
            warmup: int = 3, timing: bool = True, matrix: str | None = None,
            provenance: bool = True, seed: int = 0, trace: bool = False,
            trace_timeout: float = TRACE_TIMEOUT_S, gpu_busy: bool = True,
            **kw: Any) -> Comparison:
    """Run torch's ``op`` and the replay of its library calls on the same inputs; compare.

    Parameters
    ----------
    op : str
        A registered op with a replay (:func:`cusolver_trace.ops.names`).
    A : torch.Tensor or array (..., n, n)
        The matrix the op's inputs are made from (CUDA or CPU; float32, float64, complex64,
        complex128): Hermitian positive definite or general, as the op says
        (``ops.get(op).structure``). An op on a factorization gets A factored as torch
        factors it, the factor handed to both sides.
    B : torch.Tensor or array (..., n, nrhs), optional
        Right-hand sides for ops that take them (default: one column of seeded standard
        normal values).
    preferred : {"default", "cusolver", "magma"}, optional
        ``torch.backends.cuda.preferred_linalg_library`` while torch runs (restored
        afterwards); it selects the path the replay follows.
    torch_version : str, optional
        Replay the path of this torch version instead of the installed one's.
    repeat, warmup : int
        Timed and untimed calls per side; ``repeat=0`` times nothing. On a GPU each side
        is timed three ways, ``repeat`` samples each: CUDA events, GPU-busy time (kernel
        durations from ``torch.profiler``; at most :data:`GPU_BUSY_MAX_CALLS` samples) and
        host issue time, in that order: the profiler last, since once it has run every
        later call in the process is slower (figures in :func:`with_gpu_busy`).
    timing : bool
        Set False to skip timing.
    gpu_busy : bool
        Set False to leave the GPU-busy time out (reported as not measured yet), so that
        several comparisons in one process can all be timed before the profiler runs; then
        :func:`with_gpu_busy` on each adds it. The ``compare`` command does this.
    trace : bool
        Also run both sides once more in a child process with the cuSOLVER / cuBLAS
        loggers on and compare their call sequences (:class:`CallSequences`); on a path
        whose dispatch rule says the replay is exact, unequal sequences are a
        ``MISMATCH``. On the CPU nothing is logged: reported as not traced.
    trace_timeout : float
        Seconds the tracing child may run (s).
    matrix : str
        A label for the input, recorded as given in the report (e.g. the ``--matrix`` spec
        the input was made from); default ``"given A"``.
    provenance : bool
        Record versions and loaded libraries.
    seed : int
        Seed of the default B, recorded in the report.
    **kw
        The op's options (``upper=True``; ``adjoint=True``, ``left=False``,
        ``pivot=False``: ``ops.get(op).options``) and inputs handed over as they are, by
        the names in ``ops.get(op).takes`` (``factor=`` a given Cholesky factor, e.g. a
        singular one; A then defaults to L·Lᴴ of its triangle, for the ratios).

    Returns
    -------
    Comparison

    Raises
    ------
    cusolver_trace.ops.OpError
        Unknown op or one without a replay (a ``ValueError``).
    ValueError
        Non-square A, mismatched B, a meta tensor, negative repeat / warmup, an option
        value the op does not take.
    TypeError
        Unsupported dtype or kind of input (text, objects), a ``matrix`` label that is not
        a str, a flag that is not a bool, a keyword the op does not take.

    Examples
    --------
    >>> import cusolver_trace as ct
    >>> from cusolver_trace.matrices import spd
    >>> c = ct.compare("cholesky_inverse", spd(64), timing=False, provenance=False)
    >>> c.verdict in ("bitwise-equal", "within-tolerance")
    True
    """
    if isinstance(op, str) and op not in ops.names():  # the choices: what compare can run
        raise ops.OpError(f"compare cannot run op {op!r}; choose from "
                          f"{', '.join(ops.names(replayable=True))}")
    o = ops.get(op)
    o.require_replay()
    given, options = _split_kwargs(o, kw)
    opts = o.options_from(**options)
    timing, provenance, trace, gpu_busy = (
        flag(v, k) for k, v in (("timing", timing), ("provenance", provenance),
                                ("trace", trace), ("gpu_busy", gpu_busy)))
    if isinstance(trace_timeout, bool) or not isinstance(trace_timeout, (int, float)) \
            or not 0 < trace_timeout < float("inf"):
        raise ValueError(f"trace_timeout must be a positive number of seconds, got {trace_timeout!r}")
    if any(isinstance(v, bool) or not isinstance(v, (int, np.integer)) for v in (repeat, warmup)):
        raise ValueError(f"repeat and warmup must be ints >= 0, got repeat={repeat!r} "
                         f"warmup={warmup!r}")
    if int(repeat) < 0 or int(warmup) < 0:
        raise ValueError(f"repeat and warmup must be >= 0, got repeat={repeat} warmup={warmup}")
    ops.check_preferred(preferred)
    if torch_version is not None:
        ops.parse_version(torch_version)
    if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool) or not 0 <= seed < 2**63:
        raise ValueError(f"seed must be an integer in [0, 2**63), got {seed!r}")
    A = None if A is None else as_input(A, "A")
    given = {k: as_input(v, k) for k, v in given.items() if v is not None}
    for k, t in given.items():
        if A is not None and t.device != A.device:
            raise ValueError(f"{k} is on {t.device} but A is on {A.device}")
        if A is not None and t.dtype != A.dtype and t.is_floating_point() == A.is_floating_point():
            # named here: the ratio check further on would name other operands
            raise TypeError(f"{k} is {str(t.dtype).replace('torch.', '')} but A is "
                            f"{str(A.dtype).replace('torch.', '')}: they must have the same dtype")
    B = None if B is None else as_input(B, "B")
    if matrix is not None and not isinstance(matrix, str):
        raise TypeError(f"matrix is a label (a str), got {type(matrix).__name__}")
    inputs = ops.prepare_inputs(o, A, B, opts=opts, seed=seed, **given)
    prints = None if gpu_busy else fingerprint(A=A, B=B, **_by_name(o, given))
    device = inputs.x.device
    dt = dtype_info(inputs.x.dtype)
    path = o.path_for(inputs, opts, torch_version=torch_version, preferred=preferred)
    run = run_both(o, inputs, opts, path, preferred, repeat=repeat if timing else 0,
                   warmup=warmup, gpu_busy=gpu_busy)
    if not timing or int(repeat) == 0:
        run.why_not_timed = "not timed (repeat = 0)" if timing else "not timed (timing=False)"
    calls = trace_sides(o, inputs, opts, path, preferred, trace_timeout) if trace else None
    f = measure(o, inputs, opts, run, exact=bool(path.bitwise))
    ts = _side(o, "torch", inputs, opts, run.t_out, f.t_info, f, run)
    rs = _side(o, "replay", inputs, opts, run.r_out, f.r_info, f, run)
    f.torch_passes = ts.ratio is not None and bool(checks.passes(ts.ratio))
    f.replay_passes = rs.ratio is not None and bool(checks.passes(rs.ratio))
    f.calls_differ = calls is not None and calls.counts_as_mismatch
    v = verdict(f)
    notes = _notes(o, inputs, opts, path, run, f, ts, rs, calls)
    if preferred not in (None, "default") and device.type != "cuda":
        notes.append(f"preferred={preferred!r} has no effect here: it selects torch's CUDA "
                     "linear-algebra library, and this comparison ran on the CPU")
    spec = {"n": inputs.n, "batch": inputs.batch, "batch_shape": list(inputs.batch_shape),
            "nrhs": o.nrhs_of(inputs, opts), "dtype": dt.name, "options": dict(opts),
            "device": str(device), "preferred": preferred or "default",
            "matrix": matrix if matrix is not None else "given A", "seed": seed,
            "repeat": repeat if run.timings else 0, "warmup": warmup,
            "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            "trace": bool(trace)}
    return Comparison(o.name, spec, path, v, f.bitwise, f.info_agree, f.max_abs, f.max_ulp,
                      f.rel_diff, f.nan_mismatches, ts, rs, notes,
                      _provenance() if provenance else {}, o.torch_name, split_times(ts, rs),
                      calls, f.parts_equal, prints)


def _side(o, name, inputs, opts, out, info, f: Facts, run) -> Side:
    """One side's report: the op's LAPACK ratio where it applies, info, non-finite count,
    asymmetry (Hermitian results) and timing."""
    if out is None:
        return Side(name, o.check_name, None, info, 0, None, None,
                    run.r_error if name == "replay" else run.t_error,
                    why_not_timed=run.why_not_timed)
    first = parts(out)[0]
    bad = int(checks.nonfinite_count(first))
    applies = f.compared and not inputs.factor_failed and not f.input_nonfinite and not bad
    ratio = None
    if applies:
        ratio = float(o.check(inputs, out, opts)) if first.numel() else 0.0
    asym = float(checks.asymmetry(first)) if o.hermitian_result else None
    return Side(name, o.check_name, ratio, info, bad, asym, run.timings.get(name), None,
                run.gpu_busy.get(name), run.host.get(name), run.why_not_timed)


def with_gpu_busy(c: Comparison, A: ArrayLike | None = None, B: ArrayLike | None = None,
                  **given: Any) -> Comparison:
    """``c`` (from ``compare(..., gpu_busy=False)``) with both sides' GPU-busy time measured
    now, on the inputs ``c`` was made from, and its time split redone.

    ``torch.profiler``, which measures the GPU-busy time, leaves every later call in its
    process slower (on the H200, torch 2.11: the host time of ``cholesky_ex`` at n = 64 from
    43 to 64 µs; CUDA-event times at n = 256 up by 30 %). So several comparisons are
    timed first, each with ``gpu_busy=False``, and profiled after all of them; the
    ``compare`` command does this.

    Parameters
    ----------
    c : Comparison
        Made by :func:`compare` with ``gpu_busy=False``.
    A, B : torch.Tensor or array, optional
        The same inputs that :func:`compare` was given (same values, shapes, dtype, device;
        ``B`` where it had one).
    **given : torch.Tensor or array
        The inputs handed over by name (``factor=``), as :func:`compare` had them.

    Returns
    -------
    Comparison
        A copy of ``c``: ``torch.gpu_busy`` and ``replay.gpu_busy`` (ms) measured, or
        unavailable with the reason (CPU, profiler failure; then a note says so), and the
        ``time_split`` made from all three times. ``c`` is returned unchanged when it was
        not timed.

    Raises
    ------
    TypeError
        ``c`` is not a :class:`Comparison`; an input of an unsupported kind or dtype.
    ValueError
        ``c`` is not waiting for its GPU-busy time (made with ``gpu_busy=True``, or passed
        here before), or the inputs are not the ones ``c`` was made from: each input given to
        both or to neither, with the same shape, dtype, device and values (checked through a
        random weighted sum of each: one copy and one reduction per input).

    Examples
    --------
    >>> import cusolver_trace as ct
    >>> from cusolver_trace.matrices import spd
    >>> A = spd(8)
    >>> c = ct.compare("cholesky", A, repeat=3, gpu_busy=False, provenance=False)
    >>> c = ct.with_gpu_busy(c, A)   # on the CPU: unavailable, with the reason
    >>> c.torch.gpu_busy.reason
    'ran on the CPU: no GPU kernels to add up'
    """
    if not isinstance(c, Comparison):
        raise TypeError(f"with_gpu_busy needs a Comparison, got {type(c).__name__}")
    o = ops.get(c.op)
    given, _ = _split_kwargs(o, given)
    A = None if A is None else as_input(A, "A")
    B = None if B is None else as_input(B, "B")
    given = {k: as_input(v, k) for k, v in given.items() if v is not None}
    if c.inputs_fingerprint is None:
        raise ValueError("this comparison is not waiting for its GPU-busy time: it was made "
                         "with gpu_busy=True, or with_gpu_busy has measured it already")
    now = fingerprint(A=A, B=B, **_by_name(o, given))
    if now != c.inputs_fingerprint:
        raise ValueError("with_gpu_busy: these inputs are not the ones the comparison was "
                         f"made from: {fingerprint_difference(c.inputs_fingerprint, now)}")
    if c.torch.timing is None and c.replay.timing is None:
        return c   # nothing timed: no GPU-busy time to add
    spec = c.spec
    opts = o.options_from(**spec["options"])
    inputs = ops.prepare_inputs(o, A, B, opts=opts, seed=spec["seed"], **given)
    device = inputs.x.device
    fns = dict(zip(("torch", "replay"), sides(o, inputs, opts, c.path)))
    with ops.preferred_library(spec["preferred"] if device.type == "cuda" else None):
        for fn in fns.values():
            fn()   # warm, as the timed calls of compare were
        gpu = time_gpu_busy(fns, device=device if device.type == "cuda" else None,
                            repeat=max(1, min(int(spec["repeat"]), GPU_BUSY_MAX_CALLS)))
    if device.type == "cuda":
        import torch

        torch.cuda.synchronize(device)
    ts = dataclasses.replace(c.torch, gpu_busy=gpu["torch"])
    rs = dataclasses.replace(c.replay, gpu_busy=gpu["replay"])
    return dataclasses.replace(c, torch=ts, replay=rs, time_split=split_times(ts, rs),
                               notes=list(c.notes) + unavailable_notes(ts, rs, ("gpu_busy",)),
                               inputs_fingerprint=None)

