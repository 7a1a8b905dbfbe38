"""What a verdict is made of: :class:`Facts` (measured once from the two sides' results) and
:func:`verdict`, a pure function of them. Everything op-specific comes from the op (what
it reads, its check, when a failure is at the rounding level)."""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from .. import checks
from .._dtypes import dtype_info


@dataclass
class Facts:
    """The facts of one comparison.

    Attributes
    ----------
    t_info, r_info : list of int
        info per matrix on each side (torch's from its return value or its error message).
    bitwise : bool
        Every bit of every part of the outputs is equal.
    info_agree : bool
        Both sides report the same info (for torch's raised error: the same first failure).
    info_failed : bool
        Some info is non-zero (either side).
    torch_raised : bool
        torch raised instead of returning (its CPU potri path on a zero pivot).
    fails_on_info : bool
        For this op ``info > 0`` is a failure of the matrix, whose result is compared by its
        info only.
    factor_failed : bool
        Both sides got a partial factor (factoring A failed).
    input_nonfinite : bool
        The op's input holds NaN / Inf where the op reads it: LAPACK leaves the result
        unspecified, so only bitwise equality and info are compared.
    compared : bool
        The outputs are compared (torch returned, and no matrix failed where failing leaves
        the result unspecified).
    nonfinite : bool
        Either output has a non-finite entry.
    alike : bool
        Both outputs are non-finite at exactly the same places (same NaN / ±Inf).
    nan_mismatches : int
        Places where exactly one side is NaN.
    max_abs, max_ulp, rel_diff : float, int, float or None
        max |Δ|, max ULP distance, ‖Δ‖_F / ‖torch‖_F over the first part of the outputs
        (over the finite places when non-finite); None where not compared.
    tolerance : float
        What ``rel_diff`` may be for results that did not come from the same routine
        (30·eps·n).
    torch_passes, replay_passes : bool
        Each side's LAPACK ratio is below 30.
    calls_differ : bool
        The call sequences were traced and differ on a path whose dispatch rule says the
        replay is exact: always ``MISMATCH``.
    exact_path : bool
        The dispatch rule says the replay runs torch's own routine: then a result that is not
        bitwise equal is a ``MISMATCH`` (where LAPACK specifies it); False where two
        different libraries run (the CPU's two LAPACKs, MAGMA), judged by LAPACK's ratios.
    failures_agree : bool
        The same matrices fail on both sides (info non-zero), whatever each reports, or one
        side's result is at the rounding level of the other's failure (the op's
        ``near_failure``); where torch raised, the replay's first failing matrix is the one
        torch names. On a path that is not exact: ``failed-alike``, not ``MISMATCH``.
    healthy_agree : bool or None
        Where some matrices of a batch leave the result unspecified (a failing info, or
        non-finite input), whether the others agree (bitwise on an exact path; otherwise
        bitwise, non-finite at the same places, or both passing LAPACK's ratio); False makes
        the verdict ``MISMATCH``. None: nothing to compare.
    parts_equal : dict of str to bool
        For results of several parts, whether each further part (e.g. ``pivots``) is
        bitwise equal.
    """

    t_info: list = field(default_factory=list)
    r_info: list = field(default_factory=list)
    bitwise: bool = False
    info_agree: bool = True
    info_failed: bool = False
    torch_raised: bool = False
    fails_on_info: bool = False
    factor_failed: bool = False
    input_nonfinite: bool = False
    compared: bool = True
    nonfinite: bool = False
    alike: bool = True
    nan_mismatches: int | None = None
    max_abs: float | None = None
    max_ulp: int | None = None
    rel_diff: float | None = None
    tolerance: float = 0.0
    torch_passes: bool = False
    replay_passes: bool = False
    calls_differ: bool = False
    exact_path: bool = False
    failures_agree: bool = False
    healthy_agree: bool | None = None
    parts_equal: dict = field(default_factory=dict)


def verdict(f: Facts) -> str:
    """The verdict of one comparison, from its facts (pure).

    ``bitwise-equal`` (every bit of every output equal, info equal; identical non-finite
    outputs included), ``within-tolerance`` (not bitwise, but both sides pass LAPACK's
    ratio test and agree on info; only where two different libraries run), ``failed-alike``
    (both report the same failing info, the other matrices of the batch agreeing; or both
    non-finite at the same places; or both failing the ratio while agreeing with each other:
    the input is at fault) or ``MISMATCH`` (anything else). Unequal call sequences where the
    replay is exact are always a ``MISMATCH``.

    Parameters
    ----------
    f : Facts

    Returns
    -------
    str
        One of :data:`~cusolver_trace.compare.VERDICTS`.

    Examples
    --------
    >>> verdict(Facts(bitwise=True, nonfinite=True))
    'bitwise-equal'
    >>> verdict(Facts(info_failed=True, fails_on_info=True, info_agree=False, exact_path=True))
    'MISMATCH'
    """
    healthy = f.healthy_agree is not False
    nan_mismatches = f.nan_mismatches or 0
    rel_diff = f.rel_diff if f.rel_diff is not None else 0.0
    if f.calls_differ:
        return "MISMATCH"
    if f.torch_raised:
        alike = f.info_agree or (f.failures_agree and not f.exact_path)
        return "failed-alike" if alike else "MISMATCH"
    if f.info_failed and f.fails_on_info:
        failed_alike = f.info_agree or (f.failures_agree and not f.exact_path)
        return "failed-alike" if failed_alike and healthy else "MISMATCH"
    if f.bitwise and f.info_agree:
        return "bitwise-equal"
    if not f.info_agree:
        return "MISMATCH"
    if f.input_nonfinite:
        return "failed-alike" if healthy else "MISMATCH"
    if f.factor_failed or f.nonfinite:
        alike = nan_mismatches == 0 and (f.alike if f.nonfinite else True)
        if f.nonfinite and not f.exact_path:   # two libraries overflowed at the same places:
            return "failed-alike" if alike else "MISMATCH"   # their finite rest means nothing
        return "failed-alike" if alike and rel_diff <= f.tolerance else "MISMATCH"
    if f.exact_path:   # the same routine on the same input, yet other bits
        return "MISMATCH"
    if f.torch_passes and f.replay_passes and nan_mismatches == 0:
        return "within-tolerance"
    if not f.torch_passes and not f.replay_passes and nan_mismatches == 0 \
            and rel_diff <= f.tolerance:
        return "failed-alike"
    return "MISMATCH"


# --------------------------------------------------------------------------- measuring them
def parts(result) -> tuple:
    """A result as a tuple of its parts (one tensor: a tuple of one)."""
    return tuple(result) if isinstance(result, tuple) else (result,)


def same_bits(a, b) -> bool:
    """Every bit equal: :func:`cusolver_trace.checks.bitwise_equal` for floating parts,
    exact equality for integer parts (pivots)."""
    import torch

    if a.is_floating_point() or a.is_complex():
        return checks.bitwise_equal(a, b)
    return a.shape == b.shape and a.dtype == b.dtype and bool(torch.equal(a.cpu(), b.cpu()))


def matrix_view(t):
    """``t`` as matrices for the difference metrics: a result of scalars or vectors per
    batch member (det, slogdet) as one row."""
    return t if t.ndim >= 2 else t.reshape(1, -1)


def first_failure(info):
    return next(((i, v) for i, v in enumerate(info) if v), None)


def torch_info(op, t_info, t_error, batch: int) -> list:
    """torch's info per matrix: from its return value, from its error message, or zeros
    (torch's solve-type paths report nothing)."""
    if t_error is not None:  # torch raised for the first failing matrix only
        m = re.search(r"(?:diagonal element|order|U\[|error code:) ?(\d+)", t_error)
        be = re.search(r"Batch element (\d+)", t_error)
        info = [0] * max(batch, 1)
        info[int(be.group(1)) if be else 0] = int(m.group(1)) if m else -1
        return info
    if op.reports_info and t_info is not None:
        return [int(v) for v in t_info.reshape(-1).cpu()]
    return [0] * batch


def nonfinite_alike(X, Y) -> bool:
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


def finite_rel_diff(X, Y) -> float:
    """‖Δ‖_F / ‖Y‖_F over the places where both are finite."""
    import torch

    both = torch.isfinite(X) & torch.isfinite(Y)
    x, y = torch.where(both, X, 0), torch.where(both, Y, 0)
    return float(checks.rel_fro_diff(x, y))


def _nonfinite_read(op, inputs, opts) -> bool:
    """NaN / Inf where the op reads its inputs."""
    import torch

    return any(not bool(torch.isfinite(t).all()) for t in op.reads(inputs, opts)
               if t.is_floating_point() or t.is_complex())


def _finite_members(op, inputs, opts):
    """Per matrix of the batch, whether what the op reads of it is finite."""
    import torch

    ok = torch.ones(inputs.batch, dtype=torch.bool, device=inputs.x.device)
    for t in op.reads(inputs, opts):
        if t.is_floating_point() or t.is_complex():
            ok &= torch.isfinite(t.reshape(inputs.batch, -1)).all(1)
    return ok


def measure(op, inputs, opts, run, *, exact: bool) -> Facts:
    """The facts of one comparison except those of the ratios and the call sequences
    (:func:`~cusolver_trace.compare.compare` adds them): info on both sides, whether the
    outputs are compared at all, their differences, and the batch facts."""
    if run.status_error:   # torch raised a library status; the replay raised one or returned
        return _status_facts(op, inputs, opts, run, exact)
    r_info = [int(v) for v in run.r_info.reshape(-1).cpu()]
    t_info = torch_info(op, run.t_info, run.t_error, inputs.batch)
    if run.t_error is not None:
        info_agree = first_failure(t_info) == first_failure(r_info)
    else:
        info_agree = t_info == r_info
    info_failed = any(t_info) or any(r_info)
    f = Facts(t_info, r_info, info_agree=info_agree, info_failed=info_failed,
              torch_raised=run.t_error is not None, fails_on_info=op.fails_on_info,
              factor_failed=inputs.factor_failed, exact_path=exact,
              tolerance=30 * dtype_info(inputs.x.dtype).lapack_eps * max(inputs.n, 1),
              compared=run.t_error is None and not (info_failed and op.fails_on_info),
              input_nonfinite=_nonfinite_read(op, inputs, opts))
    if run.t_error is None:
        tp, rp = parts(run.t_out), parts(run.r_out)
        same = [len(tp) == len(rp) and same_bits(a, b) for a, b in zip(tp, rp)]
        f.bitwise = len(tp) == len(rp) and all(same)
        f.parts_equal = {name: s for name, s in zip(op.outputs[1:], same[1:])}
    if f.compared:
        t, r = (matrix_view(parts(x)[0]) for x in (run.t_out, run.r_out))
        f.nan_mismatches = checks.nan_mismatches(t, r)
        f.max_abs = float(checks.max_abs_diff(t, r))
        f.max_ulp = int(checks.max_ulp_distance(t, r))
        f.nonfinite = bool(checks.nonfinite_count(t) or checks.nonfinite_count(r))
        f.alike = nonfinite_alike(t, r) if f.nonfinite else True
        f.rel_diff = finite_rel_diff(t, r) if f.nonfinite else float(checks.rel_fro_diff(t, r))
    f.failures_agree = failures_alike(op, inputs, run, f)
    f.healthy_agree = healthy_members_agree(op, inputs, opts, run, f, exact)
    return f


def _status_facts(op, inputs, opts, run, exact: bool) -> Facts:
    """The facts where torch raised a cuSOLVER / cuBLAS status (not a LinAlgError): alike when
    the replay's same call raised the same status."""
    from .run import library_status

    same = run.r_error is not None and library_status(run.r_error) == library_status(run.t_error)
    return Facts([], [], info_agree=same, torch_raised=True, fails_on_info=op.fails_on_info,
                 factor_failed=inputs.factor_failed, exact_path=exact, compared=False,
                 tolerance=30 * dtype_info(inputs.x.dtype).lapack_eps * max(inputs.n, 1),
                 input_nonfinite=_nonfinite_read(op, inputs, opts))


def failures_alike(op, inputs, run, f: Facts) -> bool:
    """Whether the two sides fail on the same matrices, judged as two different libraries
    may: both fail (at any k), or one fails at k where the other's result is at the rounding
    level of failing there (the op's ``near_failure``: the pivot rule). Only a path that is
    not exact uses this (:func:`verdict`)."""
    if run.t_error is not None:   # torch raised for its first failing matrix: the same one?
        ft, fr = first_failure(f.t_info), first_failure(f.r_info)
        return ft is not None and fr is not None and ft[0] == fr[0]
    pairs = list(zip(f.t_info, f.r_info))
    if all((a != 0) == (b != 0) for a, b in pairs):
        return True
    if not op.fails_on_info or op.near_failure is None or run.t_out is None or run.r_out is None:
        return False
    for i, (a, b) in enumerate(pairs):
        if (a != 0) == (b != 0):
            continue
        k, good = (a, run.r_out) if a != 0 else (b, run.t_out)
        if not op.near_failure(inputs, good, i, k):
            return False
    return True


def members(result, index, batch_dims: int):
    """The batch members ``index`` of every part of a result (batch dimensions flattened)."""
    out = tuple(p.reshape(-1, *p.shape[batch_dims:])[index] for p in parts(result))
    return out if isinstance(result, tuple) else out[0]


def healthy_members_agree(op, inputs, opts, run, f: Facts, exact: bool) -> bool | None:
    """Where some matrices of a batch leave the result unspecified (a failing ``info`` for
    ``fails_on_info`` ops, or NaN / Inf where the op reads its input), whether the others
    (info 0 on both sides, finite input) agree: equal bits; else, on a path that is not
    exact, non-finite values at the same places or both sides passing the op's LAPACK
    ratio. None: nothing to compare (no such member, or a batch of one)."""
    if not ((f.info_failed and op.fails_on_info) or f.input_nonfinite) or inputs.batch <= 1 \
            or run.t_error is not None or run.t_out is None or run.r_out is None:
        return None
    import torch

    finite = _finite_members(op, inputs, opts)
    ok = [i for i, (a, b) in enumerate(zip(f.t_info, f.r_info))
          if a == 0 and b == 0 and bool(finite[i])]
    if not ok:
        return None
    idx = torch.tensor(ok)
    dims = len(inputs.batch_shape)
    t, r = members(run.t_out, idx, dims), members(run.r_out, idx, dims)
    if all(same_bits(a, b) for a, b in zip(parts(t), parts(r))):
        return True
    if exact:
        return False
    t0, r0 = matrix_view(parts(t)[0]), matrix_view(parts(r)[0])
    if checks.nonfinite_count(t0) or checks.nonfinite_count(r0):
        return checks.nan_mismatches(t0, r0) == 0 and nonfinite_alike(t0, r0)
    sub = inputs.members(idx)
    return bool(checks.passes(op.check(sub, t, opts))) and bool(checks.passes(op.check(sub, r, opts)))
