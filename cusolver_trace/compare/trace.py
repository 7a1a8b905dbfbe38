"""The call sequences of a comparison: both sides run once more in a child process with the
cuSOLVER / cuBLAS loggers on, and their calls are compared call by call."""
from __future__ import annotations

from .. import ops
from ..replay import nvtx_labels
from ..tracing.nvtx import nvtx_range
from .report import CallSequences


def run_side(op: str, side: str, inputs, opts=None, path=None):
    """Run one side of a comparison inside its NVTX range: torch's call or the replay.

    The ``trace=True`` child of :func:`compare` calls this by name.

    Parameters
    ----------
    op : str
        A registered op with a replay.
    side : {"torch", "replay"}
    inputs : cusolver_trace.ops.Inputs
    opts : Options or mapping, optional
        The op's options (default torch's defaults).
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
    opts = opts if isinstance(opts, ops.Options) else o.options_from(**(opts or {}))
    if path is None:
        path = o.path_for(inputs, opts)
    t_label, r_label = nvtx_labels(o, inputs, path)
    if side == "torch":
        with nvtx_range(t_label):
            return o.torch_call(inputs, opts)
    with nvtx_range(r_label, color="green"):
        return o.run_replay(inputs, opts, path)


def trace_sides(o, inputs, opts, path, preferred, timeout) -> CallSequences:
    """Both sides under the loggers, in one child process; their call sequences compared."""
    from ..tracing.profile import api_calls_many, qualified_name

    exact = bool(path.bitwise)
    if not inputs.on_cuda:
        return CallSequences(None, exact, reason="ran on the CPU: LAPACK makes no cuSOLVER / "
                                                 "cuBLAS call for the loggers to record")
    name = qualified_name(run_side)
    sides = [(s, name, (o.name, s, inputs, dict(opts), path), {}) for s in ("torch", "replay")]
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
    from ..tracing.diff import diff_traces, flatten
    from ..tracing.model import Trace

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
