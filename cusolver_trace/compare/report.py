"""The report of a comparison: :class:`Side`, :class:`Comparison` (a table in a terminal or a
notebook, a dict, JSON) and :class:`CallSequences`."""
from __future__ import annotations

import io
from dataclasses import asdict, dataclass, field

from .. import _json, checks, ops
from ..timing import Timing, TimeSplit, Unavailable, ratio, time_dict

VERDICTS = ("bitwise-equal", "within-tolerance", "failed-alike", "MISMATCH")
#: 4: ``spec.options`` holds the op's options (``upper`` was a field of its own);
#: ``parts_equal`` added. 3: each side's ``timing`` holds ``events``, ``gpu_busy`` and
#: ``host``; ``time_split`` and ``call_sequences`` added.
SCHEMA = "cusolver-trace/comparison/4"
#: Why a side's GPU-busy time is missing from ``compare(..., gpu_busy=False)`` (no note is
#: made of it: :func:`~cusolver_trace.compare.with_gpu_busy` measures it next).
GPU_BUSY_LATER = "not measured yet (compare(..., gpu_busy=False); with_gpu_busy measures it)"


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
    #: Whether each further part of the result (e.g. ``pivots``) is equal on both sides, bit
    #: for bit (the first part's differences are the distances above).
    parts_equal: dict = field(default_factory=dict)
    #: ``compare(..., gpu_busy=False)``: what :func:`with_gpu_busy` checks its inputs
    #: against (:func:`~.run.fingerprint`); None once the GPU-busy time is in (or was never
    #: put off).
    inputs_fingerprint: tuple | None = field(default=None, repr=False, compare=False)

    @property
    def time_ratio(self) -> float | None:
        """replay median time / torch median time (< 1: the replay is faster); None where
        either is missing or was taken while the CPU's cores were oversubscribed
        (:func:`cusolver_trace.timing.ratio`)."""
        return ratio(self.replay.timing, self.torch.timing)

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
            "parts_equal": dict(self.parts_equal),
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
        opts = "".join(f" {k}={v}" for k, v in s.get("options", {}).items())
        return (f"<Comparison {self.op} n={s['n']} batch={s['batch']} {s['dtype']}{opts} "
                f"{s['device']}: {self.verdict}>")

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
            + f" dtype={s['dtype']}"
            + "".join(f" {k}={v}" for k, v in s.get("options", {}).items())
            + f" device={s['device']}"
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
        for part, same in self.parts_equal.items():
            d.add_row(f"{part} equal", "yes" if same else "no")
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
        from .._console import environ

        con = Console(record=True, width=110, file=io.StringIO(), force_jupyter=False,
                      force_terminal=False, _environ=environ())
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
