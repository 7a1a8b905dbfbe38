"""Compare torch's own function with the replay of the library calls it makes.

:func:`compare` runs an op's torch call (:mod:`cusolver_trace.ops`) and the replay of
its library calls on the same inputs, device and stream, and reports:

* the verdict (:func:`verdict`, a pure function) — ``bitwise-equal`` (every bit of
  every output equal, info equal; identical non-finite outputs included),
  ``within-tolerance`` (not bitwise, but both sides pass LAPACK's ratio test, < 30,
  and agree on info; only where the replay runs another library than torch: where it runs
  torch's own routine, other bits are a ``MISMATCH``), ``failed-alike`` (both report the
  same failing ``info`` — and the other matrices of the batch agree — or both return
  non-finite values at the same places: LAPACK leaves such contents unspecified, and they
  are not compared) or ``MISMATCH`` (anything else);
* differences: max |Δ|, max ULP distance, ‖Δ‖_F / ‖torch‖_F, NaN placement;
* accuracy of each side: the op's LAPACK ratio (pot01 / pot02 / pot03 with LAPACK's
  eps, on the triangle the op reads), non-finite counts, asymmetry of an inverse;
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

The torch call and the replay each run inside an NVTX range
(:func:`cusolver_trace.tracing.nvtx_range`; nothing without the ``nvtx`` package), named
``torch <function> …`` and ``replay <op>: <library calls> …``, so that an Nsight Systems
timeline shows which calls are the replay's.
"""
from __future__ import annotations

import datetime as _dt
import functools
import io
import re
from dataclasses import asdict, dataclass, field

import numpy as np

from . import _json, checks, ops
from ._arrays import flag
from ._dtypes import dtype_info
from .timing import (Timing, TimeSplit, Unavailable, cpu_threads, time_calls, time_dict,
                     time_gpu_busy, time_host, time_split)
from .replay import nvtx_labels
from .tracing.nvtx import nvtx_range

__all__ = ["compare", "Comparison", "Side", "CallSequences", "VERDICTS", "verdict", "as_input",
           "run_side", "call_sequences", "TRACE_TIMEOUT_S"]

VERDICTS = ("bitwise-equal", "within-tolerance", "failed-alike", "MISMATCH")
#: 3: each side's ``timing`` holds ``events``, ``gpu_busy`` and ``host``; ``time_split``
#: and ``call_sequences`` added.
SCHEMA = "cusolver-trace/comparison/3"
#: Profiled calls per side for the GPU-busy time, at most (the profiler keeps every event).
GPU_BUSY_MAX_CALLS = 50
#: Why a side's GPU-busy time is missing from ``compare(..., gpu_busy=False)`` (no note is
#: made of it: :func:`with_gpu_busy` measures it next).
GPU_BUSY_LATER = "not measured yet (compare(..., gpu_busy=False); with_gpu_busy measures it)"
#: Seconds the ``trace=True`` child (both sides under the loggers) may run.
TRACE_TIMEOUT_S = 300.0


@dataclass(repr=False)
class Side:
    """One side of a comparison (``torch`` or ``replay``).

    ``ratio`` is None where the op's ratio does not apply (failed factorization, a
    partial factor, non-finite output).
    """

    name: str
    ratio_name: str
    ratio: float | None
    info: list
    nonfinite: int
    asymmetry: float | None = None
    timing: Timing | None = None
    error: str | None = None
    #: GPU-busy time (summed kernel durations, ms), or why it is unavailable.
    gpu_busy: Timing | Unavailable | None = None
    #: Host time to issue the call (ms, no synchronize after it), or why it is unavailable.
    host: Timing | Unavailable | None = None
    #: Why ``timing`` (the event time) is None.
    why_not_timed: str | None = None

    def times(self) -> dict:
        """``events`` / ``gpu_busy`` / ``host``: each a :class:`Timing` or an :class:`Unavailable`."""
        why = self.why_not_timed or "not timed"
        return {"events": self.timing if self.timing is not None else Unavailable(why),
                "gpu_busy": self.gpu_busy if self.gpu_busy is not None else Unavailable(why),
                "host": self.host if self.host is not None else Unavailable(why)}

    def to_dict(self):
        d = {k: v for k, v in asdict(self).items()
             if k not in ("timing", "gpu_busy", "host", "why_not_timed")}
        d["timing"] = {k: time_dict(v) for k, v in self.times().items()}
        d["passes"] = None if self.ratio is None else bool(checks.passes(self.ratio))
        return d

    def __repr__(self):
        return f"Side({self.name}, {self.ratio_name}={_fmt(self.ratio)}, info={_fmt_info(self.info)})"


@dataclass(repr=False)
class Comparison:
    """Result of :func:`compare`; renders as a table (terminal / notebook), converts to dict / JSON.

    Distances (``max_abs_diff`` …) are None where the outputs are not compared (a failed
    factorization leaves the factor's contents unspecified).
    """

    op: str
    spec: dict
    path: ops.TorchPath
    verdict: str
    bitwise_equal: bool
    info_agree: bool
    max_abs_diff: float | None
    max_ulp_distance: int | None
    rel_fro_diff: float | None
    nan_mismatches: int | None
    torch: Side
    replay: Side
    notes: list = field(default_factory=list)
    provenance: dict = field(default_factory=dict)
    torch_name: str = ""
    #: Whether the time difference is GPU work or issue overhead (:func:`~.timing.time_split`).
    time_split: TimeSplit | None = None
    #: The call sequences of both sides (``compare(..., trace=True)``), else None.
    call_sequences: "CallSequences | None" = None
    #: ``compare(..., gpu_busy=False)``: what :func:`with_gpu_busy` checks its inputs
    #: against (:func:`_fingerprint`); None once the GPU-busy time is in (or was never put off).
    inputs_fingerprint: tuple | None = field(default=None, repr=False, compare=False)

    @property
    def time_ratio(self) -> float | None:
        """replay median time / torch median time (< 1: the replay is faster)."""
        if self.torch.timing is None or self.replay.timing is None:
            return None
        return self.replay.timing.median_ms / self.torch.timing.median_ms

    @property
    def ok(self) -> bool:
        return self.verdict != "MISMATCH"

    def to_dict(self) -> dict:
        return {
            "schema": SCHEMA,
            "op": self.op, "spec": self.spec, "torch_path": self.path.to_dict(),
            "verdict": self.verdict, "bitwise_equal": self.bitwise_equal,
            "info_agree": self.info_agree,
            "differences": {"max_abs": self.max_abs_diff, "max_ulp": self.max_ulp_distance,
                            "rel_fro": self.rel_fro_diff, "nan_mismatches": self.nan_mismatches},
            "torch": self.torch.to_dict(), "replay": self.replay.to_dict(),
            "time_ratio_replay_over_torch": self.time_ratio,
            "time_split": None if self.time_split is None else self.time_split.to_dict(),
            "call_sequences": (None if self.call_sequences is None
                               else self.call_sequences.to_dict()),
            "notes": list(self.notes), "provenance": self.provenance,
        }

    def to_json(self, **kw) -> str:
        return _json.dumps(self.to_dict(), indent=2, **kw)

    # -- rendering ---------------------------------------------------------------------
    def __repr__(self):
        s = self.spec
        return (f"<Comparison {self.op} n={s['n']} batch={s['batch']} {s['dtype']} "
                f"{'upper' if s['upper'] else 'lower'} {s['device']}: {self.verdict}>")

    def __rich__(self):
        from rich.console import Group
        from rich.table import Table
        from rich.text import Text

        s = self.spec
        color = {"bitwise-equal": "bold green", "within-tolerance": "green",
                 "failed-alike": "yellow", "MISMATCH": "bold red"}[self.verdict]
        head = Text.assemble(
            (f"{self.op}", "bold"),
            f"  n={s['n']} batch={s['batch']}"
            + (f" nrhs={s['nrhs']}" if s.get("nrhs") is not None else "")
            + f" dtype={s['dtype']} upper={s['upper']} device={s['device']}"
            + f" matrix={s.get('matrix', '?')}\n",
            "torch path: ", (f"{self.path.backend}: " + " → ".join(self.path.calls), "cyan"),
            f"  [{self.path.rule}]\n",
            "verdict: ", (self.verdict, color),
        )
        if self.time_split is not None:
            head.append("\n" + self.time_split.text)
        if self.call_sequences is not None:
            cs = self.call_sequences
            head.append("\ncall sequences equal: ")
            head.append(cs.answer, style={"yes": "green", "no": "bold red" if cs.counts_as_mismatch
                                          else "yellow"}.get(cs.answer, "dim"))
            if cs.detail:
                head.append(f" ({cs.detail})")
        t = Table(show_header=True, header_style="bold")
        t.add_column("")
        t.add_column(self.torch_name or "torch")
        t.add_column("replay (raw calls)")
        rn = self.torch.ratio_name
        t.add_row(f"LAPACK {rn} ratio (< 30)", _fmt(self.torch.ratio), _fmt(self.replay.ratio))
        t.add_row("info", _fmt_info(self.torch.info), _fmt_info(self.replay.info))
        t.add_row("non-finite entries", str(self.torch.nonfinite), str(self.replay.nonfinite))
        if self.torch.asymmetry is not None or self.replay.asymmetry is not None:
            t.add_row("asymmetry ‖X−Xᴴ‖_F/‖X‖_F", _fmt(self.torch.asymmetry),
                      _fmt(self.replay.asymmetry))
        if self.torch.timing is not None or self.replay.timing is not None:
            clock = (self.torch.timing or self.replay.timing).clock
            label = "CUDA events" if clock == "cuda-events" else clock
            t.add_row(f"time ({label}): median [IQR] ms", _fmt_t(self.torch.timing),
                      _fmt_t(self.replay.timing))
            t.add_row("GPU busy (kernel sum): median [IQR] ms", _fmt_t(self.torch.gpu_busy),
                      _fmt_t(self.replay.gpu_busy))
            t.add_row("host issue time: median [IQR] ms", _fmt_t(self.torch.host),
                      _fmt_t(self.replay.host))
        d = Table(show_header=False, box=None)
        d.add_row("bitwise equal", str(self.bitwise_equal))
        if self.max_abs_diff is not None:
            d.add_row("max |Δ|", _fmt(self.max_abs_diff))
            d.add_row("max ULP distance", str(self.max_ulp_distance))
            d.add_row("‖Δ‖_F / ‖torch‖_F", _fmt(self.rel_fro_diff))
        if self.time_ratio is not None:
            d.add_row("time ratio replay/torch", f"{self.time_ratio:.3f}")
        notes = [Text(f"note: {n}", style="dim") for n in self.notes]
        return Group(head, t, d, *notes)

    def _render(self):
        from rich.console import Console

        # never the Jupyter renderer (that would display a second copy as a side effect)
        # and no file handle to leak: the text goes to a buffer
        con = Console(record=True, width=110, file=io.StringIO(), force_jupyter=False,
                      force_terminal=False)
        con.print(self)
        return con

    def __str__(self):
        return self._render().export_text()

    def _repr_html_(self):
        # a <pre> with inline styles only: no page, no global CSS that would restyle a notebook
        return self._render().export_html(
            inline_styles=True,
            code_format='<pre style="font-family:Menlo,\'DejaVu Sans Mono\',consolas,'
                        '\'Courier New\',monospace;line-height:1.2">{code}</pre>')


@dataclass
class CallSequences:
    """torch's and the replay's cuSOLVER / cuBLAS calls, logged in a child process and
    compared call by call (routine, nesting, typed arguments; setup calls left out).

    Attributes
    ----------
    equal : bool or None
        The sequences are equal; None when they could not be traced (``reason`` says why).
    exact : bool
        The dispatch rule says the replay runs torch's own calls (``TorchPath.bitwise``).
    calls_torch, calls_replay : int or None
        Calls compared on each side.
    first_difference : str or None
        The first difference, in one line.
    reason : str or None
        Why not traced, or what an inexact path's difference means.
    torch_calls, replay_calls : list of str
        The compared calls, one line each (at most :data:`MAX_LISTED`).
    """

    equal: bool | None
    exact: bool
    calls_torch: int | None = None
    calls_replay: int | None = None
    first_difference: str | None = None
    reason: str | None = None
    torch_calls: list = field(default_factory=list)
    replay_calls: list = field(default_factory=list)

    MAX_LISTED = 200

    @property
    def counts_as_mismatch(self) -> bool:
        """Unequal sequences where the replay is meant to be exact."""
        return self.equal is False and self.exact

    @property
    def answer(self) -> str:
        return {True: "yes", False: "no", None: "not traced"}[self.equal]

    @property
    def detail(self) -> str:
        if self.equal is None:
            return self.reason or ""
        if self.equal:
            return f"{self.calls_torch} calls, setup calls not compared"
        what = (f"{self.calls_torch} vs {self.calls_replay} calls; first difference: "
                f"{self.first_difference}")
        if self.exact:
            return what + "; the dispatch rule says the replay is exact, so this is a MISMATCH"
        return what + ("; " + self.reason if self.reason else "")

    def to_dict(self) -> dict:
        return {"traced": self.equal is not None, "equal": self.equal, "exact": self.exact,
                "counts_as_mismatch": self.counts_as_mismatch, "calls_torch": self.calls_torch,
                "calls_replay": self.calls_replay, "first_difference": self.first_difference,
                "reason": self.reason, "torch_calls": list(self.torch_calls),
                "replay_calls": list(self.replay_calls)}


def _fmt(x):
    if x is None:
        return "—"
    x = float(x)
    if x != x:
        return "n/a"
    return f"{x:.3g}" if x != 0 else "0"


def _fmt_info(info):
    info = list(info)
    bad = [(i, v) for i, v in enumerate(info) if v]
    if not bad:
        return "0" if len(info) == 1 else f"all 0 ({len(info)})"
    return ", ".join(f"[{i}]={v}" for i, v in bad[:4]) + (" …" if len(bad) > 4 else "")


def _fmt_t(t: Timing | Unavailable | None):
    if t is None:
        return "—"
    if isinstance(t, Unavailable):
        return "unavailable (see notes)"
    return f"{t.median_ms:.4g} [{t.q1_ms:.4g}–{t.q3_ms:.4g}]" + (" noisy" if t.noisy else "")


@functools.cache
def _provenance() -> dict:
    from .versions import versions

    return versions()


# --------------------------------------------------------------------------- inputs
def as_input(x, name: str):
    """A torch tensor for :func:`compare` from a tensor or array-like, handled the way the
    array routines handle inputs: ``requires_grad`` read through ``detach()``; conjugate and
    negative views, negative strides and non-native byte order materialized; meta and
    sparse tensors refused.

    Raises
    ------
    TypeError
        Unsupported dtype or kind.
    ValueError
        A meta / sparse tensor, or fewer than 2 dimensions.
    """
    import torch

    if isinstance(x, torch.Tensor):
        if x.device.type == "meta":
            raise ValueError(f"{name} is a meta tensor: it holds no values to compare")
        if x.layout != torch.strided:
            raise TypeError(f"{name}: sparse or non-strided tensors are not supported")
        if x.device.type not in ("cpu", "cuda"):
            raise ValueError(f"{name}: device {x.device} is not supported (use cuda or cpu)")
        t = x.detach()
    else:
        try:
            arr = np.asarray(x)
        except Exception as exc:
            raise TypeError(f"{name}: cannot read {type(x).__name__} as an array: {exc}") from None
        if arr.dtype.kind not in "biufc":   # text, bytes, objects: not numbers at all
            raise TypeError(f"{name}: expected numbers, got {type(x).__name__} read as "
                            f"{arr.dtype}")
        t = checks.as_tensor(arr)
    dtype_info(t.dtype)
    if t.ndim < 2:
        raise ValueError(f"{name}: expected a matrix or a batch of matrices (at least 2-D), got "
                         f"shape {tuple(t.shape)}")
    return t.resolve_conj().resolve_neg()


# --------------------------------------------------------------------------- the verdict
def verdict(*, bitwise: bool, info_agree: bool, info_failed: bool, torch_raised: bool,
            fails_on_info: bool, factor_failed: bool, nonfinite_alike: bool,
            nonfinite: bool, nan_mismatches: int, rel_diff: float, tolerance: float,
            torch_passes: bool, replay_passes: bool, input_nonfinite: bool = False,
            calls_differ: bool = False, exact_path: bool = False,
            failures_agree: bool = False, healthy_agree: bool = True) -> str:
    """The verdict of one comparison, from facts already measured (pure).

    Parameters
    ----------
    bitwise : bool
        Every bit of the outputs is equal.
    info_agree : bool
        Both sides report the same info (for torch's raised error: the same first failure).
    info_failed : bool
        Some info is non-zero (either side).
    torch_raised : bool
        torch raised instead of returning (its CPU potri path on a zero pivot).
    fails_on_info : bool
        For this op ``info > 0`` leaves the result unspecified (potrf).
    factor_failed : bool
        Both sides got a partial factor (A is not positive definite).
    input_nonfinite : bool
        The op's input holds NaN / Inf where the op reads it: LAPACK leaves the result
        unspecified, so only bitwise equality and info are compared.
    nonfinite_alike : bool
        Both outputs are non-finite at exactly the same places (same NaN / ±Inf).
    nonfinite : bool
        Either output has a non-finite entry.
    nan_mismatches : int
        Places where exactly one side is NaN.
    rel_diff : float
        ‖Δ‖_F / ‖torch‖_F over the outputs (over the finite places when non-finite).
    tolerance : float
        What ``rel_diff`` may be for results that did not come from the same routine
        (30·eps·n).
    torch_passes, replay_passes : bool
        Each side's LAPACK ratio is below 30.
    calls_differ : bool
        The call sequences were traced and differ on a path whose dispatch rule says the
        replay is exact (:attr:`CallSequences.counts_as_mismatch`): always ``MISMATCH``.
    exact_path : bool
        The dispatch rule says the replay runs torch's own routine (``TorchPath.bitwise``):
        then a result that is not bitwise equal is a ``MISMATCH`` (where LAPACK specifies
        it); False (the default) where two different libraries run (the CPU's two LAPACKs,
        MAGMA), judged by LAPACK's ratios.
    failures_agree : bool
        The same matrices fail on both sides (info non-zero), whatever minor each reports.
        On a path that is not exact, two libraries may stop at different minors of a matrix
        singular to working precision (different blocking): ``failed-alike``, not
        ``MISMATCH``.
    healthy_agree : bool
        Where some matrices of a batch leave the result unspecified (a failing info for
        ``fails_on_info``, or non-finite input), the others agree (bitwise on an exact path;
        otherwise bitwise, non-finite at the same places, or both passing LAPACK's ratio);
        False makes the verdict ``MISMATCH``.

    Both sides failing LAPACK's ratio while agreeing with each other within ``tolerance``
    is ``failed-alike`` too: the input is at fault (a factor that is not A's), not the
    replay.

    Returns
    -------
    str
        One of :data:`VERDICTS`.

    Examples
    --------
    >>> verdict(bitwise=True, info_agree=True, info_failed=False, torch_raised=False,
    ...         fails_on_info=False, factor_failed=False, nonfinite_alike=True, nonfinite=True,
    ...         nan_mismatches=0, rel_diff=0.0, tolerance=1e-13, torch_passes=False,
    ...         replay_passes=False)
    'bitwise-equal'
    """
    if calls_differ:
        return "MISMATCH"
    if torch_raised:
        return "failed-alike" if info_agree else "MISMATCH"
    if info_failed and fails_on_info:
        failed_alike = info_agree or (failures_agree and not exact_path)
        return "failed-alike" if failed_alike and healthy_agree else "MISMATCH"
    if bitwise and info_agree:
        return "bitwise-equal"
    if not info_agree:
        return "MISMATCH"
    if input_nonfinite:
        return "failed-alike" if healthy_agree else "MISMATCH"
    if factor_failed or nonfinite:
        alike = nan_mismatches == 0 and (nonfinite_alike if nonfinite else True)
        return "failed-alike" if alike and rel_diff <= tolerance else "MISMATCH"
    if exact_path:   # the same routine on the same input, yet other bits
        return "MISMATCH"
    if torch_passes and replay_passes and nan_mismatches == 0:
        return "within-tolerance"
    if not torch_passes and not replay_passes and nan_mismatches == 0 and rel_diff <= tolerance:
        return "failed-alike"
    return "MISMATCH"


# --------------------------------------------------------------------------- running
def _torch_info(op, t_out, t_info, t_error, batch: int):
    """torch's info per matrix: from its return value, from its error message, or zeros
    (torch's potrs-type paths report nothing)."""
    if t_error is not None:  # torch raised for the first failing matrix only
        m = re.search(r"(?:diagonal element|order) (\d+)", t_error)
        be = re.search(r"Batch element (\d+)", t_error)
        info = [0] * max(batch, 1)
        info[int(be.group(1)) if be else 0] = int(m.group(1)) if m else -1
        return info
    if op.reports_info and t_info is not None:
        return [int(v) for v in t_info.reshape(-1).cpu()]
    return [0] * batch


def _first_failure(info):
    return next(((i, v) for i, v in enumerate(info) if v), None)


def _nonfinite_alike(X, Y) -> bool:
    """Non-finite at exactly the same places, with the same infinities."""
    import torch

    if X.shape != Y.shape:
        return False
    fx, fy = torch.isfinite(X), torch.isfinite(Y)
    if not torch.equal(fx, fy):
        return False
    nx, ny = torch.isnan(X), torch.isnan(Y)
    if not torch.equal(nx, ny):
        return False
    inf = ~fx & ~nx
    return bool(torch.equal(X[inf], Y[inf])) if bool(inf.any()) else True


def _finite_rel_diff(X, Y) -> float:
    """‖Δ‖_F / ‖Y‖_F over the places where both are finite."""
    import torch

    both = torch.isfinite(X) & torch.isfinite(Y)
    x, y = torch.where(both, X, 0), torch.where(both, Y, 0)
    return float(checks.rel_fro_diff(x, y))


def _torch_cpu_behaviour(op, inputs, upper) -> str:
    """What torch's CPU path does with the same inputs (said beside non-finite CUDA results)."""
    cpu = ops.Inputs(inputs.A.cpu(), inputs.x.cpu(), None if inputs.B is None else inputs.B.cpu())
    try:
        out, _ = op.torch_call(cpu, upper)
    except Exception as exc:  # torch.linalg.LinAlgError and friends
        return f"torch's CPU path raises {type(exc).__name__}: {exc}"
    bad = int(checks.nonfinite_count(out))
    return f"torch's CPU path returns {bad} non-finite entries" + (" too" if bad else " (all finite)")


def _failure_notes(op, inputs, t_info_l, r_info_l) -> list[str]:
    notes = []
    if op.fails_on_info:
        first = _first_failure(r_info_l) or _first_failure(t_info_l)
        if first:
            i, k = first
            where = f" of batch element {i}" if inputs.batch_shape else ""
            notes.append(f"not positive definite: the leading minor of order {k}{where} is not "
                         "positive definite; LAPACK leaves the factor's contents unspecified, so "
                         "only info is compared")
    return notes


def _factor_failure_note(inputs, upper) -> str | None:
    """Name the minor and batch element where factoring A failed."""
    import torch

    if not inputs.factor_failed:
        return None
    _, finfo = torch.linalg.cholesky_ex(inputs.A, upper=upper)
    flat = [int(v) for v in finfo.reshape(-1).cpu()]
    first = _first_failure(flat)
    if first is None:
        return None
    i, k = first
    where = f" of batch element {i}" if inputs.batch_shape else ""
    return f"A is not positive definite: its leading minor of order {k}{where} is not positive definite"


def compare(op: str, A=None, B=None, *, factor=None, upper: bool = False,
            preferred: str | None = None, torch_version: str | None = None, repeat: int = 20,
            warmup: int = 3, timing: bool = True, matrix: str | None = None,
            provenance: bool = True, seed: int = 0, trace: bool = False,
            trace_timeout: float = TRACE_TIMEOUT_S, gpu_busy: bool = True) -> Comparison:
    """Run torch's ``op`` and the replay of its library calls on the same inputs; compare.

    Parameters
    ----------
    op : str
        A registered op with a replay (:func:`cusolver_trace.ops.names`).
    A : torch.Tensor or array (..., n, n)
        Hermitian positive definite input (CUDA or CPU; float32, float64, complex64,
        complex128). For ops on the factor, the factor is
        ``torch.linalg.cholesky_ex(A, upper=upper)``, handed to both sides.
    B : torch.Tensor or array (..., n, nrhs), optional
        Right-hand sides for ops that take them (default: one column of seeded standard
        normal values).
    factor : torch.Tensor or array (..., n, n), optional
        For ops on the factor: use this factor as given (e.g. a singular one) instead of
        factoring A; A defaults to L·Lᴴ (Uᴴ·U) of its triangle, for the ratios.
    upper : bool
        Use the upper triangle (only that triangle of A and of the factor is read).
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

    Returns
    -------
    Comparison

    Raises
    ------
    cusolver_trace.ops.OpError
        Unknown op or one without a replay (a ``ValueError``).
    ValueError
        Non-square A, mismatched B, a meta tensor, negative repeat / warmup.
    TypeError
        Unsupported dtype or kind of input (text, objects), a ``matrix`` label that is not
        a str, a flag that is not a bool.

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
    upper, timing, provenance, trace, gpu_busy = (
        flag(v, k) for k, v in (("upper", upper), ("timing", timing), ("provenance", provenance),
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
    factor = None if factor is None else as_input(factor, "factor")
    if factor is not None and A is not None and factor.device != A.device:
        raise ValueError(f"factor is on {factor.device} but A is on {A.device}")
    if factor is not None and A is not None and factor.dtype != A.dtype:
        # named here: the ratio check further on would name "A and Ainv"
        raise TypeError(f"factor is {str(factor.dtype).replace('torch.', '')} but A is "
                        f"{str(A.dtype).replace('torch.', '')}: they must have the same dtype")
    B = None if B is None else as_input(B, "B")
    if matrix is not None and not isinstance(matrix, str):
        raise TypeError(f"matrix is a label (a str), got {type(matrix).__name__}")
    inputs = ops.prepare_inputs(o, A, B, factor=factor, upper=upper, seed=seed)
    fingerprint = None if gpu_busy else _fingerprint(A=A, B=B, factor=factor)
    device = inputs.x.device
    dt = dtype_info(inputs.x.dtype)
    path = o.torch_path(batch=inputs.batch, n=inputs.n, nrhs=inputs.nrhs, dtype=dt.name,
                        device=device.type, torch_version=torch_version, preferred=preferred)
    run = _run_both(o, inputs, upper, path, preferred,
                    repeat=repeat if timing else 0, warmup=warmup, gpu_busy=gpu_busy)
    if not timing or int(repeat) == 0:
        run.why_not_timed = "not timed (repeat = 0)" if timing else "not timed (timing=False)"
    calls = _trace_sides(o, inputs, upper, path, preferred, trace_timeout) if trace else None
    f = _facts(o, inputs, upper, run, exact=bool(path.bitwise))
    ts = _side(o, "torch", inputs, upper, run.t_out, f.t_info, f, run)
    rs = _side(o, "replay", inputs, upper, run.r_out, f.r_info, f, run)
    v = verdict(bitwise=f.bitwise, info_agree=f.info_agree, info_failed=f.info_failed,
                torch_raised=run.t_error is not None, fails_on_info=o.fails_on_info,
                factor_failed=inputs.factor_failed, nonfinite_alike=f.alike,
                nonfinite=f.nonfinite, nan_mismatches=f.nan_mismatches or 0,
                rel_diff=f.rel_diff if f.rel_diff is not None else 0.0,
                tolerance=30 * dt.lapack_eps * max(inputs.n, 1),
                torch_passes=ts.ratio is not None and bool(checks.passes(ts.ratio)),
                replay_passes=rs.ratio is not None and bool(checks.passes(rs.ratio)),
                input_nonfinite=f.input_nonfinite,
                calls_differ=calls is not None and calls.counts_as_mismatch,
                exact_path=bool(path.bitwise),
                failures_agree=f.failures_alike, healthy_agree=f.healthy is not False)
    split = _time_split(ts, rs)
    notes = _notes(o, inputs, upper, path, run, f, ts, rs, calls)
    if preferred not in (None, "default") and device.type != "cuda":
        notes.append(f"preferred={preferred!r} has no effect here: it selects torch's CUDA "
                     "linear-algebra library, and this comparison ran on the CPU")
    spec = {"n": inputs.n, "batch": inputs.batch, "batch_shape": list(inputs.batch_shape),
            "nrhs": inputs.nrhs, "dtype": dt.name, "upper": bool(upper), "device": str(device),
            "preferred": preferred or "default",
            "matrix": matrix if matrix is not None else "given A", "seed": seed,
            "repeat": repeat if run.timings else 0, "warmup": warmup,
            "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")}
    spec["trace"] = bool(trace)
    return Comparison(o.name, spec, path, v, f.bitwise, f.info_agree, f.max_abs, f.max_ulp,
                      f.rel_diff, f.nan_mismatches, ts, rs, notes,
                      _provenance() if provenance else {}, o.torch_name, split, calls,
                      fingerprint)


def _fingerprint(**given) -> tuple:
    """Per input (``A``, ``B``, ``factor``; None where not given): its shape, dtype, device
    and ``wᵀ·[uᵀ X_b v]_b`` for fixed random vectors ``u``, ``v``, ``w`` (complex for complex
    inputs), NaN / ±Inf first replaced by three constants, as bytes. A plain sum missed
    swapped entries, a permutation, a change moved between the triangles, a conjugate and
    NaN at other places; weighting every entry by its own random ``u_i v_j w_b`` does not.
    One copy, three scalings and one sum per input, and one transfer of the results:
    what :func:`with_gpu_busy` checks that it was handed the same inputs with, without
    keeping them alive between the two calls."""
    import struct

    import torch

    forms = {}
    for k, t in given.items():
        if t is None or not t.numel():
            continue
        dt = torch.complex128 if t.is_complex() else torch.float64
        # a new tensor (nan_to_num is out of place): the products below may work in place
        x = t.reshape(-1, *t.shape[-2:]).to(dt).nan_to_num(nan=0.5772156649015329,
                                                            posinf=1.618033988749895,
                                                            neginf=-2.718281828459045)
        g = torch.Generator().manual_seed(20261202)
        u, v, w = (torch.randn(m, generator=g, dtype=dt).to(t.device)
                   for m in (x.shape[1], x.shape[2], x.shape[0]))
        # elementwise products and one sum, not matrix-vector products: a sum's order is
        # fixed on a given device, so the same input gives the same bits on both calls
        forms[k] = x.mul_(u[:, None]).mul_(v).mul_(w[:, None, None]).sum()
    host = dict(zip(forms, torch.stack([f.to(torch.complex128) for f in forms.values()])
                    .cpu().tolist())) if forms else {}
    out = []
    for k, t in given.items():
        if t is None:
            out.append((k, None))
            continue
        z = complex(host.get(k, 0))
        out.append((k, (tuple(t.shape), str(t.dtype), str(t.device),
                        struct.pack("<dd", z.real, z.imag))))
    return tuple(out)


def _fingerprint_difference(was: tuple, now: tuple) -> str:
    """What differs between two :func:`_fingerprint` results, in words."""
    for (k, a), (_, b) in zip(was, now):
        if a == b:
            continue
        if a is None or b is None:
            return f"{k} was {'not ' if a is None else ''}given to compare but is " \
                   f"{'now' if a is None else 'not now'}"
        for i, what in enumerate(("shape", "dtype", "device")):
            if a[i] != b[i]:
                return f"{k}'s {what} is {b[i]}, compare had {a[i]}"
        return f"{k}'s values are not the ones compare had"
    return "they differ"


def with_gpu_busy(c: Comparison, A=None, B=None, *, factor=None) -> Comparison:
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
    A, B, factor : torch.Tensor or array, optional
        The same inputs that :func:`compare` was given (same values, shapes, dtype, device;
        ``B`` and ``factor`` where it had them).

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
        here before), or the inputs are not the ones ``c`` was made from: each of ``A``,
        ``B``, ``factor`` given to both or to neither, with the same shape, dtype, device
        and values (checked through a random weighted sum of each: one copy and one
        reduction per input).

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
    import dataclasses

    if not isinstance(c, Comparison):
        raise TypeError(f"with_gpu_busy needs a Comparison, got {type(c).__name__}")
    A = None if A is None else as_input(A, "A")
    B = None if B is None else as_input(B, "B")
    factor = None if factor is None else as_input(factor, "factor")
    if c.inputs_fingerprint is None:
        raise ValueError("this comparison is not waiting for its GPU-busy time: it was made "
                         "with gpu_busy=True, or with_gpu_busy has measured it already")
    now = _fingerprint(A=A, B=B, factor=factor)
    if now != c.inputs_fingerprint:
        raise ValueError("with_gpu_busy: these inputs are not the ones the comparison was "
                         f"made from: {_fingerprint_difference(c.inputs_fingerprint, now)}")
    if c.torch.timing is None and c.replay.timing is None:
        return c   # nothing timed: no GPU-busy time to add
    o = ops.get(c.op)
    spec = c.spec
    inputs = ops.prepare_inputs(o, A, B, factor=factor, upper=spec["upper"], seed=spec["seed"])
    device = inputs.x.device
    fns = dict(zip(("torch", "replay"), _sides(o, inputs, spec["upper"], c.path)))
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
    return dataclasses.replace(c, torch=ts, replay=rs, time_split=_time_split(ts, rs),
                               notes=list(c.notes) + _unavailable_notes(ts, rs, ("gpu_busy",)),
                               inputs_fingerprint=None)


def run_side(op: str, side: str, inputs, upper: bool = False, path=None):
    """Run one side of a comparison inside its NVTX range: torch's call or the replay.

    The ``trace=True`` child of :func:`compare` calls this by name.

    Parameters
    ----------
    op : str
        A registered op with a replay.
    side : {"torch", "replay"}
    inputs : cusolver_trace.ops.Inputs
    upper : bool
    path : TorchPath, optional
        The replay's path (default: the installed torch's, for these inputs).

    Returns
    -------
    tuple
        What the side returns: ``(result, info)`` for torch (info may be None),
        ``(result, info, path)`` for the replay.

    Raises
    ------
    ValueError
        ``side`` is neither.

    Examples
    --------
    >>> import torch
    >>> from cusolver_trace.matrices import spd
    >>> from cusolver_trace import ops
    >>> L = torch.linalg.cholesky(spd(4))
    >>> X, info, p = run_side("cholesky_inverse", "replay", ops.Inputs(L, L))
    >>> p.backend
    'lapack'
    """
    o = ops.get(op)
    if side not in ("torch", "replay"):
        raise ValueError(f"side must be 'torch' or 'replay', got {side!r}")
    if path is None:
        path = o.torch_path(batch=inputs.batch, n=inputs.n, nrhs=inputs.nrhs,
                            dtype=inputs.x.dtype, device=inputs.x.device.type)
    t_label, r_label = nvtx_labels(o, inputs, path)
    if side == "torch":
        with nvtx_range(t_label):
            return o.torch_call(inputs, upper)
    with nvtx_range(r_label, color="green"):
        return o.run_replay(inputs, upper, path)


def _trace_sides(o, inputs, upper, path, preferred, timeout) -> CallSequences:
    """Both sides under the loggers, in one child process; their call sequences compared."""
    from .tracing.profile import api_calls_many, qualified_name

    exact = bool(path.bitwise)
    if not inputs.on_cuda:
        return CallSequences(None, exact, reason="ran on the CPU: LAPACK makes no cuSOLVER / "
                                                 "cuBLAS call for the loggers to record")
    name = qualified_name(run_side)
    sides = [(s, name, (o.name, s, inputs, upper, path), {}) for s in ("torch", "replay")]
    try:
        with ops.preferred_library(preferred):
            found = api_calls_many(sides, str(inputs.x.device), timeout=timeout)
    except (ValueError, OSError) as exc:
        return CallSequences(None, exact, reason=f"could not run the tracing child: {exc}")
    return call_sequences(found, path)


def call_sequences(found: dict, path) -> CallSequences:
    """Compare the two sides' logged calls (setup calls left out).

    Parameters
    ----------
    found : dict
        ``"torch"`` / ``"replay"`` -> ``(calls, notes, outside)`` as
        :func:`cusolver_trace.tracing.profile.api_calls_many` returns them: ``calls`` a list
        of :class:`~cusolver_trace.tracing.ApiCall` (None: the side was not reached, the
        notes say why).
    path : TorchPath
        The path the replay followed; ``path.bitwise`` says whether it is exact.

    Returns
    -------
    CallSequences
    """
    from .tracing.diff import diff_traces, flatten
    from .tracing.model import Trace

    exact = bool(path.bitwise)
    missing = [f"{s}: {'; '.join(found[s][1]) or 'no calls logged'}"
               for s in ("torch", "replay") if found[s][0] is None]
    if missing:
        return CallSequences(None, exact, reason="; ".join(missing))
    tt, rt = (Trace(label=s, calls=found[s][0]) for s in ("torch", "replay"))
    d = diff_traces(tt, rt)
    reason = None
    if not d.equal and not exact:
        reason = ("not a MISMATCH: the dispatch rule says the replay is not exact here"
                  + (f" ({path.note})" if path.note else ""))
    listed = [[c.label().strip() for c in flatten(t)[:CallSequences.MAX_LISTED]] for t in (tt, rt)]
    return CallSequences(d.equal, exact, d.calls_a, d.calls_b, _first_difference(d.first),
                         reason, *listed)


def _first_difference(first) -> str | None:
    """One line naming torch's and the replay's calls (A = torch, B = the replay)."""
    if first is None:
        return None
    if first.kind == "added":
        return f"the replay's call {first.index_b + 1} is not in torch's: {first.b.label().strip()}"
    if first.kind == "removed":
        return f"torch's call {first.index_a + 1} is not in the replay's: {first.a.label().strip()}"
    return (f"torch's call {first.index_a + 1} vs the replay's call {first.index_b + 1}: "
            f"{'; '.join(first.fields)} (torch: {first.a.label().strip()})")


def _time_split(ts: Side, rs: Side) -> TimeSplit:
    """:func:`~.timing.time_split` of the two sides' medians (unavailable ones as None)."""
    def med(t):
        return t.median_ms if isinstance(t, Timing) else None

    def why(t):
        return t.reason if isinstance(t, Unavailable) else None

    tt, rt = ts.times(), rs.times()
    noise, samples = 0.0, None
    if isinstance(tt["events"], Timing) and isinstance(rt["events"], Timing):
        noise = (tt["events"].iqr_ms + rt["events"].iqr_ms) / 2
        samples = min(tt["events"].repeat, rt["events"].repeat)
    return time_split(*((med(tt[k]), med(rt[k])) for k in ("events", "gpu_busy", "host")),
                      noise_ms=noise, why_no_event=why(tt["events"]) or why(rt["events"]),
                      why_no_gpu=why(tt["gpu_busy"]) or why(rt["gpu_busy"]),
                      why_no_host=why(tt["host"]) or why(rt["host"]), samples=samples)


@dataclass
class _Run:
    """What the two sides returned (torch may raise instead), and their timings."""

    t_out: object
    t_info: object
    t_error: str | None
    r_out: object
    r_info: object
    timings: dict
    gpu_busy: dict = field(default_factory=dict)
    host: dict = field(default_factory=dict)
    why_not_timed: str | None = None


def _sides(o, inputs, upper, path):
    """torch's call and the replay as zero-argument callables, each inside its NVTX range,
    the replay's decisions taken once (not in a timing loop)."""
    t_label, r_label = nvtx_labels(o, inputs, path)

    def torch_side():
        with nvtx_range(t_label):
            return o.torch_call(inputs, upper)

    replay = o.replay_call(inputs, upper, path)   # decided once, not in the timing loop

    def replay_side():
        with nvtx_range(r_label, color="green"):
            return replay()
    return torch_side, replay_side


def _run_both(o, inputs, upper, path, preferred, *, repeat: int, warmup: int,
              gpu_busy: bool = True) -> _Run:
    """Run torch's call and the replay on the same inputs (and time both, interleaved, when
    ``repeat`` > 0), under the backend preference given; the GPU-busy time last, or not at
    all (``gpu_busy=False``)."""
    import torch

    device = inputs.x.device
    t_error, timings, gpu, host = None, {}, {}, {}
    torch_side, replay_side = _sides(o, inputs, upper, path)
    with ops.preferred_library(preferred if device.type == "cuda" else None):
        try:
            t_out, t_info = torch_side()
        except torch.linalg.LinAlgError as exc:  # torch's CPU potri path raises for a zero pivot
            t_error, t_out, t_info = str(exc), None, None
        r_out, r_info, _ = replay_side()
        if repeat > 0 and t_error is None:
            fns = {"torch": torch_side, "replay": replay_side}
            dev = device if device.type == "cuda" else None
            # each sample from an idle GPU: a single call of tens of µs would otherwise start
            # behind the other side's queued work, and the ratio swing with the interleaving;
            # and right after an untimed call of the same side, so that neither side's sample
            # pays for the other side's call having pushed its host path out of the caches
            timings = time_calls(fns, device=dev, warmup=warmup, repeat=repeat, idle_start=True,
                                 warm_each=True)
            host = time_host(fns, device=dev, repeat=repeat, warm_each=True)
            # the profiler last: once it has run, every later call in this process is slower
            # (see with_gpu_busy)
            gpu = (time_gpu_busy(fns, device=dev, repeat=min(repeat, GPU_BUSY_MAX_CALLS))
                   if gpu_busy else {k: Unavailable(GPU_BUSY_LATER) for k in fns})
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    run = _Run(t_out, t_info, t_error, r_out, r_info, timings, gpu, host)
    if t_error is not None:
        run.why_not_timed = "not timed: torch raised"
    return run


@dataclass
class _Facts:
    """What the verdict and the notes are made from (measured once)."""

    t_info: list
    r_info: list
    info_agree: bool
    info_failed: bool
    compared: bool
    input_nonfinite: bool
    bitwise: bool
    nan_mismatches: int | None = None
    max_abs: float | None = None
    max_ulp: int | None = None
    rel_diff: float | None = None
    nonfinite: bool = False
    alike: bool = False
    failures_alike: bool = False    # :func:`_failures_alike`
    healthy: bool | None = None     # :func:`_healthy_members_agree`


def _facts(o, inputs, upper, run: _Run, *, exact: bool) -> _Facts:
    """Info on both sides, whether the outputs are compared at all, their differences, and
    the batch facts (failures alike, healthy members agreeing; ``exact``: the replay runs
    torch's own routine)."""
    import torch

    r_info = [int(v) for v in run.r_info.reshape(-1).cpu()]
    t_info = _torch_info(o, run.t_out, run.t_info, run.t_error, inputs.batch)
    if run.t_error is not None:
        info_agree = _first_failure(t_info) == _first_failure(r_info)
    else:
        info_agree = t_info == r_info
    info_failed = any(t_info) or any(r_info)
    tri = inputs.x.triu() if upper else inputs.x.tril()
    f = _Facts(t_info, r_info, info_agree, info_failed,
               compared=run.t_error is None and not (info_failed and o.fails_on_info),
               input_nonfinite=not bool(torch.isfinite(tri).all()) or (
                   inputs.B is not None and not bool(torch.isfinite(inputs.B).all())),
               bitwise=run.t_error is None and checks.bitwise_equal(run.t_out, run.r_out))
    if f.compared:
        t, r = run.t_out, run.r_out
        f.nan_mismatches = checks.nan_mismatches(t, r)
        f.max_abs = float(checks.max_abs_diff(t, r))
        f.max_ulp = int(checks.max_ulp_distance(t, r))
        f.nonfinite = bool(checks.nonfinite_count(t) or checks.nonfinite_count(r))
        f.alike = _nonfinite_alike(t, r) if f.nonfinite else True
        f.rel_diff = _finite_rel_diff(t, r) if f.nonfinite else float(checks.rel_fro_diff(t, r))
    f.failures_alike = _failures_alike(o, inputs, run, f)
    f.healthy = _healthy_members_agree(o, inputs, upper, run, f, exact)
    return f


def _failures_alike(o, inputs, run: _Run, f: _Facts) -> bool:
    """Whether the two sides fail on the same matrices, judged as two different libraries
    may: both fail (at any minor), or one fails at minor k where the other's factor has a
    pivot at the rounding level, ``L[k-1, k-1]² <= 30·n·eps·max|A_ii|`` (the minor is
    singular to working precision, and either answer is LAPACK's). Only a path that is not
    exact uses this (:func:`verdict`)."""
    if run.t_error is not None:
        return False
    pairs = list(zip(f.t_info, f.r_info))
    if all((a != 0) == (b != 0) for a, b in pairs):
        return True
    if not o.fails_on_info or run.t_out is None or run.r_out is None:
        return False
    n = inputs.n
    tol = 30 * n * dtype_info(inputs.x.dtype).lapack_eps
    A = inputs.A.reshape(-1, n, n)
    outs = {"t": run.t_out.reshape(-1, n, n), "r": run.r_out.reshape(-1, n, n)}
    for i, (a, b) in enumerate(pairs):
        if (a != 0) == (b != 0):
            continue
        k, good = (a, "r") if a != 0 else (b, "t")
        if k < 1 or k > n:
            return False
        pivot = float(abs(outs[good][i, k - 1, k - 1]) ** 2)
        scale = float(A[i].diagonal().abs().max())
        if not pivot <= tol * scale:
            return False
    return True


def _healthy_members_agree(o, inputs, upper, run: _Run, f: _Facts, exact: bool) -> bool | None:
    """Where some matrices of a batch leave the result unspecified (a failing ``info`` for
    ``fails_on_info`` ops, or NaN / Inf where the op reads its input), whether the others
    (info 0 on both sides, finite input) agree: equal bits; else, on a path that is not
    exact, non-finite values at the same places or both sides passing the op's LAPACK
    ratio. None: nothing to compare (no such member, or a batch of one)."""
    if not ((f.info_failed and o.fails_on_info) or f.input_nonfinite) or inputs.batch <= 1 \
            or run.t_error is not None or run.t_out is None or run.r_out is None:
        return None
    import torch

    def per_member(t):
        return t.reshape(-1, *t.shape[-2:])

    tri = inputs.x.triu() if upper else inputs.x.tril()
    finite = torch.isfinite(per_member(tri)).flatten(1).all(1)
    if inputs.B is not None:
        finite &= torch.isfinite(per_member(inputs.B)).flatten(1).all(1)
    ok = [i for i, (a, b) in enumerate(zip(f.t_info, f.r_info))
          if a == 0 and b == 0 and bool(finite[i])]
    if not ok:
        return None
    idx = torch.tensor(ok)

    def rows(t):
        return None if t is None else per_member(t)[idx]

    t, r = rows(run.t_out), rows(run.r_out)
    if checks.bitwise_equal(t, r):
        return True
    if exact:
        return False
    if checks.nonfinite_count(t) or checks.nonfinite_count(r):
        return checks.nan_mismatches(t, r) == 0 and _nonfinite_alike(t, r)
    sub = ops.Inputs(rows(inputs.A), rows(inputs.x), rows(inputs.B))
    return bool(checks.passes(o.check(sub, t, upper))) and bool(checks.passes(o.check(sub, r, upper)))


def _side(o, name, inputs, upper, out, info, f: _Facts, run: _Run) -> Side:
    """One side's report: the op's LAPACK ratio where it applies, info, non-finite count,
    asymmetry (Hermitian results) and timing."""
    if out is None:
        return Side(name, o.check_name, None, info, 0, None, None, run.t_error,
                    why_not_timed=run.why_not_timed)
    applies = (f.compared and not inputs.factor_failed and not f.input_nonfinite
               and not checks.nonfinite_count(out))
    ratio = None
    if applies:
        ratio = float(o.check(inputs, out, upper)) if out.numel() else 0.0
    asym = float(checks.asymmetry(out)) if o.hermitian_result else None
    return Side(name, o.check_name, ratio, info, int(checks.nonfinite_count(out)), asym,
                run.timings.get(name), None, run.gpu_busy.get(name), run.host.get(name),
                run.why_not_timed)


def _unavailable_notes(ts: Side, rs: Side, keys) -> list[str]:
    """A note per timing of ``keys`` that is unavailable, with its reason (one note when
    both sides share it); none for timings not measured yet (:data:`GPU_BUSY_LATER`) or when
    nothing was timed."""
    notes = []
    if ts.timing is None and rs.timing is None:
        return notes
    for key in keys:
        what = {"gpu_busy": "GPU-busy time", "host": "host issue time"}[key]
        reasons = {s.name: s.times()[key].reason for s in (ts, rs)
                   if isinstance(s.times()[key], Unavailable)
                   and s.times()[key].reason != GPU_BUSY_LATER}
        if len(set(reasons.values())) == 1 and len(reasons) == 2:
            notes.append(f"{what} unavailable: {next(iter(reasons.values()))}")
        else:
            notes += [f"{k}'s {what} unavailable: {v}" for k, v in reasons.items()]
    return notes


def _notes(o, inputs, upper, path, run: _Run, f: _Facts, ts: Side, rs: Side,
           calls: CallSequences | None = None) -> list[str]:
    """What a reader should know about this comparison, in the order it matters."""
    device = inputs.x.device
    notes = list(inputs.notes)
    if run.t_error is not None:
        notes.append(f"torch raised: {run.t_error}")
    if f.input_nonfinite and not (f.info_failed and o.fails_on_info):
        notes.append("the input holds NaN / Inf where the op reads it: LAPACK leaves the result "
                     "unspecified, so the outputs are compared for bitwise equality only")
    notes += _failure_notes(o, inputs, f.t_info, f.r_info)
    if o.fails_on_info and not f.info_agree and not path.bitwise and f.failures_alike:
        notes.append("the two sides report different failures (info torch "
                     f"{f.t_info}, replay {f.r_info}): two different libraries run here, and on "
                     "a matrix singular to working precision they may stop at different minors, "
                     "or one may pass a pivot at the rounding level that the other rejects "
                     "(different blocking); judged failed-alike")
    if f.healthy is False:
        notes.append("the matrices of the batch whose result LAPACK specifies (info 0 on both "
                     "sides, finite input) do not agree ("
                     + ("not bitwise equal, where the replay runs torch's own routine)"
                        if path.bitwise else "a side fails LAPACK's ratio on them)"))
    if (ts.ratio is not None and rs.ratio is not None and not checks.passes(ts.ratio)
            and not checks.passes(rs.ratio)):
        notes.append(f"both sides fail LAPACK's {o.check_name} ratio ({ts.ratio:.3g} and "
                     f"{rs.ratio:.3g}): the input does not satisfy what the op assumes (e.g. a "
                     "factor that is not A's); the two results are compared with each other")
    fnote = _factor_failure_note(inputs, upper)
    if fnote:
        notes.append(fnote)
    if f.bitwise and not f.compared and run.t_error is None:
        notes.append("the unspecified contents happen to be bitwise equal as well")
    if path.bitwise and f.compared and not f.bitwise and device.type == "cuda":
        notes.append("the replay runs the same library routines as torch, yet the bits differ: "
                     "check that torch and the raw layer load the same libcusolver/libcublas")
    if path.note:
        notes.append(path.note)
    if ts.nonfinite or rs.nonfinite:
        notes.append(f"non-finite output: torch {ts.nonfinite}, replay {rs.nonfinite} entries"
                     + (" at the same places" if f.compared and f.alike else "")
                     + "; cuSOLVER potrs reports nothing for a singular factor and potrf can "
                     "return info = 0 on NaN input")
        if device.type == "cuda":
            notes.append(_torch_cpu_behaviour(o, inputs, upper))
    if inputs.n == 0 or inputs.batch == 0:
        notes.append("empty input: both sides return empty results; no library routine was "
                     "called by the replay")
    if device.type == "cpu":
        notes.append("ran on the CPU: torch's CPU path (its bundled LAPACK) vs the replay through "
                     f"scipy's LAPACK; no GPU was used; threads: {cpu_threads()}")
    for s in (ts, rs):
        if s.timing is not None and s.timing.noisy:
            notes.append(f"{s.name} timing is noisy: {s.timing.repeat} sample(s) say nothing of "
                         "the spread (--repeat 3 or more)" if s.timing.repeat < 3 else
                         f"{s.name} timing is noisy: IQR {s.timing.iqr_ms:.3g} ms is more than "
                         f"20 % of the median {s.timing.median_ms:.3g} ms")
    notes += _unavailable_notes(ts, rs, ("gpu_busy", "host"))
    if calls is not None and calls.equal is False and calls.exact:
        notes.append("the replay's library calls differ from torch's where the dispatch rule "
                     f"says they are the same: {calls.first_difference}")
    if ts.ratio is not None and not checks.passes(ts.ratio):
        notes.append(f"torch's own {o.check_name} ratio is {ts.ratio:.3g} (>= 30)")
    return notes
