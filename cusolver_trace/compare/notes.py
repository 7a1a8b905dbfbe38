"""The notes of a comparison: what a reader should know about it, in the order it matters.
The words for what a failure means come from the op."""
from __future__ import annotations

from .. import checks
from ..timing import Unavailable, cpu_threads
from .facts import Facts, first_failure
from .report import GPU_BUSY_LATER, CallSequences, Side


def torch_cpu_behaviour(op, inputs, opts) -> str:
    """What torch's CPU path does with the same inputs (said beside non-finite CUDA results)."""
    from .facts import parts

    try:
        out, _ = op.torch_call(inputs.to("cpu"), opts)
    except Exception as exc:  # torch.linalg.LinAlgError and friends
        return f"torch's CPU path raises {type(exc).__name__}: {exc}"
    bad = int(checks.nonfinite_count(parts(out)[0]))
    return f"torch's CPU path returns {bad} non-finite entries" + (" too" if bad else " (all finite)")


def failure_notes(op, inputs, t_info, r_info) -> list[str]:
    """The first failing matrix, in the op's words."""
    if not op.fails_on_info:
        return []
    first = first_failure(r_info) or first_failure(t_info)
    if not first:
        return []
    i, k = first
    where = f"batch element {i}: " if inputs.batch_shape else ""
    return [f"failed: {where}{op.failure_text(k)} (info = {k}); the result of a matrix that "
            "fails is compared by its info only"]


def status_notes(o, inputs, opts, run) -> list[str]:
    """Where torch raised a library status: what the replay did, and whether the op's ``auto``
    method (the project's own path) computes a result that passes the op's check."""
    out = []
    if run.r_error is not None:
        out.append(f"the replay's same library call failed the same way: {run.r_error}")
    elif run.r_out is not None:
        out.append(_judged(o, inputs, opts, "the replay", run.r_out))
    auto = o.methods.get("auto") if o.methods else None
    if auto is not None and not (auto.gpu_only and not inputs.on_cuda):
        try:
            result = auto.make(o, inputs, opts, False)()
        except Exception as exc:  # a library status, or memory
            out.append(f"method auto ({auto.resolved(inputs)}) raised {type(exc).__name__}: {exc}")
        else:
            out.append(_judged(o, inputs, opts, f"method auto ({auto.resolved(inputs)})", result))
    return out


def _judged(o, inputs, opts, who: str, result) -> str:
    ratio = float(o.check(inputs, result, opts))
    verdict = "passes" if checks.passes(ratio) else "FAILS"
    return f"{who} {verdict} the {o.check_name} check: ratio {ratio:.3g} (< 30 passes)"


def unavailable_notes(ts: Side, rs: Side, keys) -> list[str]:
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


def notes(o, inputs, opts, path, run, f: Facts, ts: Side, rs: Side,
           calls: CallSequences | None = None) -> list[str]:
    """What a reader should know about this comparison, in the order it matters."""
    device = inputs.x.device
    notes = list(inputs.notes)
    if run.t_error is not None:
        notes.append(f"torch raised: {run.t_error}")
    if run.status_error:
        notes += status_notes(o, inputs, opts, run)
    if f.input_nonfinite and not (f.info_failed and o.fails_on_info):
        notes.append("the input holds NaN / Inf where the op reads it: LAPACK leaves the result "
                     "unspecified, so the outputs are compared for bitwise equality only")
    notes += failure_notes(o, inputs, f.t_info, f.r_info)
    if o.fails_on_info and not f.info_agree and not path.bitwise and f.failures_agree:
        notes.append("the two sides report different failures (info torch "
                     f"{f.t_info}, replay {f.r_info}): two different libraries run here, and on "
                     "a matrix singular to working precision they may stop at different places, "
                     "or one may pass a pivot at the rounding level that the other rejects "
                     "(different blocking); judged failed-alike")
    if f.healthy_agree is False:
        notes.append("the matrices of the batch whose result LAPACK specifies (info 0 on both "
                     "sides, finite input) do not agree ("
                     + ("not bitwise equal, where the replay runs torch's own routine)"
                        if path.bitwise else "a side fails LAPACK's ratio on them)"))
    if (ts.ratio is not None and rs.ratio is not None and not checks.passes(ts.ratio)
            and not checks.passes(rs.ratio)):
        notes.append(f"both sides fail LAPACK's {o.check_name} ratio ({ts.ratio:.3g} and "
                     f"{rs.ratio:.3g}): the input does not satisfy what the op assumes (e.g. a "
                     "factor that is not A's); the two results are compared with each other")
    if f.bitwise and not f.compared and run.t_error is None:
        notes.append("the unspecified contents happen to be bitwise equal as well")
    if path.bitwise and f.compared and not f.bitwise and device.type == "cuda":
        notes.append("the replay runs the same library routines as torch, yet the bits differ: "
                     "check that torch and the raw layer load the same libcusolver/libcublas")
    if path.note:
        notes.append(path.note)
    if (o.parts_agreement is not None and f.compared and not f.bitwise and not f.nonfinite
            and run.t_out is not None and run.r_out is not None):
        notes.append(o.parts_agreement(inputs, run.t_out, run.r_out, opts))
    if ts.nonfinite or rs.nonfinite:
        notes.append(f"non-finite output: torch {ts.nonfinite}, replay {rs.nonfinite} entries"
                     + (" at the same places" if f.compared and f.alike else "")
                     + (f"; {o.nonfinite_note}" if o.nonfinite_note else ""))
        if device.type == "cuda":
            notes.append(torch_cpu_behaviour(o, inputs, opts))
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
    notes += unavailable_notes(ts, rs, ("gpu_busy", "host"))
    if calls is not None and calls.equal is False and calls.exact:
        notes.append("the replay's library calls differ from torch's where the dispatch rule "
                     f"says they are the same: {calls.first_difference}")
    if ts.ratio is not None and not checks.passes(ts.ratio):
        notes.append(f"torch's own {o.check_name} ratio is {ts.ratio:.3g} (>= 30)")
    return notes
