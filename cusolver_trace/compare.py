"""Compare torch's own function with the replay of the library calls it makes.

:func:`compare` runs ``torch.linalg.cholesky`` / ``torch.cholesky_inverse`` /
``torch.cholesky_solve`` and :func:`cusolver_trace.replay.replay` on the same
inputs, device and stream, and reports:

* the verdict — ``bitwise-equal`` (every bit of every output equal, info equal),
  ``within-tolerance`` (not bitwise, but both sides pass LAPACK's ratio test,
  < 30, and agree on info), ``failed-alike`` (both report the same failing
  ``info``: the factor's contents are unspecified by LAPACK and not compared) or
  ``MISMATCH`` (anything else);
* differences: max |Δ|, max ULP distance, ‖Δ‖_F / ‖torch‖_F, NaN placement;
* accuracy of each side: LAPACK pot01 (factor), pot02 (solve), pot03 (inverse)
  ratios with LAPACK's eps, non-finite counts, asymmetry of an inverse;
* timing: CUDA events, warm-up, interleaved runs, median and IQR (ms), and
  the replay / torch ratio;
* provenance: :func:`cusolver_trace.versions.versions`.
"""
from __future__ import annotations

import functools
import json
import re
from dataclasses import asdict, dataclass, field

import numpy as np

from . import checks
from .replay import OPS, TorchPath, preferred_library, replay, torch_path
from .timing import Timing, time_calls

__all__ = ["compare", "Comparison", "VERDICTS"]

VERDICTS = ("bitwise-equal", "within-tolerance", "failed-alike", "MISMATCH")
_RATIO = {"cholesky": "pot01", "cholesky_inverse": "pot03", "cholesky_solve": "pot02"}
_TORCH_NAME = {"cholesky": "torch.linalg.cholesky_ex", "cholesky_inverse": "torch.cholesky_inverse",
               "cholesky_solve": "torch.cholesky_solve"}


@dataclass
class Side:
    """One side of a comparison (``torch`` or ``replay``)."""

    name: str
    ratio_name: str
    ratio: float
    info: list
    nonfinite: int
    asymmetry: float | None = None
    timing: Timing | None = None
    error: str | None = None

    def to_dict(self):
        d = asdict(self)
        d["timing"] = None if self.timing is None else self.timing.to_dict()
        d["passes"] = bool(checks.passes(self.ratio))
        return d


@dataclass
class Comparison:
    """Result of :func:`compare`; renders as a table (terminal / notebook), converts to dict / JSON."""

    op: str
    spec: dict
    path: TorchPath
    verdict: str
    bitwise_equal: bool
    info_agree: bool
    max_abs_diff: float
    max_ulp_distance: int | None
    rel_fro_diff: float
    nan_mismatches: int
    torch: Side
    replay: Side
    notes: list = field(default_factory=list)
    provenance: dict = field(default_factory=dict)

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
            "schema": "cusolver-trace/comparison/1",
            "op": self.op, "spec": self.spec, "torch_path": self.path.to_dict(),
            "verdict": self.verdict, "bitwise_equal": self.bitwise_equal,
            "info_agree": self.info_agree,
            "differences": {"max_abs": self.max_abs_diff, "max_ulp": self.max_ulp_distance,
                            "rel_fro": self.rel_fro_diff, "nan_mismatches": self.nan_mismatches},
            "torch": self.torch.to_dict(), "replay": self.replay.to_dict(),
            "time_ratio_replay_over_torch": self.time_ratio,
            "notes": list(self.notes), "provenance": self.provenance,
        }

    def to_json(self, **kw) -> str:
        return json.dumps(self.to_dict(), indent=2, default=str, **kw)

    # -- rendering ---------------------------------------------------------------------
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
            + (f" nrhs={s['nrhs']}" if s.get("nrhs") else "")
            + f" dtype={s['dtype']} upper={s['upper']} device={s['device']}"
            + f" matrix={s.get('matrix', '?')}\n",
            "torch path: ", (f"{self.path.backend}: " + " → ".join(self.path.calls), "cyan"),
            f"  [{self.path.rule}]\n",
            "verdict: ", (self.verdict, color),
        )
        t = Table(show_header=True, header_style="bold")
        t.add_column("")
        t.add_column(_TORCH_NAME[self.op])
        t.add_column("replay (raw calls)")
        rn = self.torch.ratio_name
        t.add_row(f"LAPACK {rn} ratio (< 30)", _fmt(self.torch.ratio), _fmt(self.replay.ratio))
        t.add_row("info", _fmt_info(self.torch.info), _fmt_info(self.replay.info))
        t.add_row("non-finite entries", str(self.torch.nonfinite), str(self.replay.nonfinite))
        if self.torch.asymmetry is not None:
            t.add_row("asymmetry ‖X−Xᴴ‖_F/‖X‖_F", _fmt(self.torch.asymmetry), _fmt(self.replay.asymmetry))
        if self.torch.timing is not None:
            for side in (self.torch, self.replay):
                pass
            t.add_row("time median [IQR] ms", _fmt_t(self.torch.timing), _fmt_t(self.replay.timing))
        d = Table(show_header=False, box=None)
        d.add_row("bitwise equal", str(self.bitwise_equal))
        d.add_row("max |Δ|", _fmt(self.max_abs_diff))
        d.add_row("max ULP distance", str(self.max_ulp_distance))
        d.add_row("‖Δ‖_F / ‖torch‖_F", _fmt(self.rel_fro_diff))
        if self.time_ratio is not None:
            d.add_row("time ratio replay/torch", f"{self.time_ratio:.3f}")
        notes = [Text(f"note: {n}", style="dim") for n in self.notes]
        return Group(head, t, d, *notes)

    def _render(self, **kw):
        from rich.console import Console

        con = Console(record=True, width=110, file=open("/dev/null", "w"), **kw)
        con.print(self)
        return con

    def __str__(self):
        return self._render().export_text()

    def _repr_html_(self):
        return self._render().export_html(inline_styles=True)


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


def _fmt_t(t: Timing | None):
    return "—" if t is None else f"{t.median_ms:.4g} [{t.q1_ms:.4g}–{t.q3_ms:.4g}]"


@functools.cache
def _provenance() -> dict:
    from .versions import versions

    return versions()


def _torch_call(op, x, b, upper):
    import torch

    if op == "cholesky":
        return torch.linalg.cholesky_ex(x, upper=upper)
    if op == "cholesky_inverse":
        return torch.cholesky_inverse(x, upper=upper), None
    return torch.cholesky_solve(b, x, upper=upper), None


def _torch_cpu_behaviour(op, x, b, upper) -> str:
    """What torch's CPU path does with the same input (for non-finite CUDA results)."""
    try:
        out, _ = _torch_call(op, x.cpu(), None if b is None else b.cpu(), upper)
    except Exception as exc:  # torch.linalg.LinAlgError and friends
        return f"torch's CPU path raises {type(exc).__name__}: {exc}"
    bad = int(checks.nonfinite_count(out))
    return f"torch's CPU path returns {bad} non-finite entries" + (" too" if bad else " (all finite)")


def compare(op: str, A=None, B=None, *, factor=None, upper: bool = False, preferred: str | None = None,
            torch_version: str | None = None, repeat: int = 20, warmup: int = 3,
            timing: bool = True, matrix: str | None = None, provenance: bool = True) -> Comparison:
    """Run torch's ``op`` and the replay of its library calls on the same inputs; compare.

    Parameters
    ----------
    op : "cholesky" | "cholesky_inverse" | "cholesky_solve"
    A : torch.Tensor (..., n, n)
        Hermitian positive definite input (CUDA or CPU; float32, float64,
        complex64, complex128). For the inverse and solve, the factor is
        ``torch.linalg.cholesky(A, upper=upper)``, handed to both sides.
    factor : torch.Tensor (..., n, n), optional
        For the inverse and solve: use this factor as given (e.g. a singular
        one) instead of factoring A; A defaults to ``L·Lᴴ`` (``Uᴴ·U``) for the
        ratios.
    B : torch.Tensor (..., n, k), optional
        Right-hand sides for ``cholesky_solve`` (default: one column of seeded
        standard normal values).
    preferred : "default" | "cusolver" | "magma", optional
        ``torch.backends.cuda.preferred_linalg_library`` while torch runs
        (restored afterwards); it selects the path the replay follows.
    repeat, warmup : int
        Timed and untimed calls per side (CUDA events on GPU).
    timing : bool
        Set False to skip timing.
    matrix : str
        Description of the input, for the report.

    Returns
    -------
    Comparison

    Raises
    ------
    ValueError  unknown op, non-square A, mismatched B; TypeError unsupported dtype.
    """
    import torch

    if op not in OPS:
        raise ValueError(f"op must be one of {OPS}, got {op!r}")
    if factor is not None:
        if op == "cholesky":
            raise ValueError("factor= is for cholesky_inverse and cholesky_solve")
        if not isinstance(factor, torch.Tensor):
            factor = torch.as_tensor(np.asarray(factor))
        F = factor.triu() if upper else factor.tril()
        if A is None:
            A = F.mH @ F if upper else F @ F.mH
    if A is None:
        raise ValueError("compare needs A (or factor= for cholesky_inverse / cholesky_solve)")
    if not isinstance(A, torch.Tensor):
        A = torch.as_tensor(np.asarray(A))
    if A.ndim < 2 or A.shape[-1] != A.shape[-2]:
        raise ValueError(f"A must be (..., n, n), got shape {tuple(A.shape)}")
    from ._dtypes import dtype_info

    dt = dtype_info(A.dtype)
    n = A.shape[-1]
    batch_shape = tuple(A.shape[:-2])
    batch = int(np.prod(batch_shape, dtype=np.int64))
    notes = []
    invalid_factor = False
    if op == "cholesky":
        x = A
    elif factor is not None:
        x = factor
    else:
        x, finfo = torch.linalg.cholesky_ex(A, upper=upper)
        invalid_factor = bool((finfo != 0).any())
        if invalid_factor:
            notes.append("torch.linalg.cholesky of A failed (A is not positive definite); the "
                         "partial factor is handed to both sides, so neither result is an inverse / "
                         "solution of A and the ratios do not apply")
    if op == "cholesky_solve" and B is None:
        g = torch.Generator().manual_seed(1)
        B = torch.randn(*batch_shape, n, 1, generator=g, dtype=torch.float64).to(A.dtype).to(A.device)
    if op == "cholesky_solve" and (B.shape[-2] != n or tuple(B.shape[:-2]) != batch_shape):
        raise ValueError(f"B must be (..., n, k) with A's batch shape {batch_shape} and n = {n}, "
                         f"got {tuple(B.shape)}")
    b = B if op == "cholesky_solve" else None
    device = A.device.type
    path = torch_path(op, batch=batch, n=n, nrhs=None if b is None else b.shape[-1], dtype=dt.name,
                      device=device, torch_version=torch_version, preferred=preferred)

    t_error = None
    with preferred_library(preferred if device == "cuda" else None):
        try:
            t_out, t_info = _torch_call(op, x, b, upper)
        except torch.linalg.LinAlgError as exc:  # torch's CPU potri path raises for a zero pivot
            t_error, t_out, t_info = str(exc), None, None
        r_out, r_info, _ = replay(op, x, b, upper=upper, path=path)
        timings = {}
        if timing and t_error is None:
            timings = time_calls(
                {"torch": lambda: _torch_call(op, x, b, upper),
                 "replay": lambda: replay(op, x, b, upper=upper, path=path)},
                device=A.device if device == "cuda" else None, warmup=warmup, repeat=repeat)
    if device == "cuda":
        torch.cuda.synchronize(A.device)
    r_info_l = [int(v) for v in r_info.reshape(-1).cpu()]
    def first_failure(info):
        return next(((i, v) for i, v in enumerate(info) if v), None)

    if t_error is not None:  # torch raised for the first failing matrix only
        m = re.search(r"(?:diagonal element|order) (\d+)", t_error)
        be = re.search(r"Batch element (\d+)", t_error)
        t_info_l = [0] * batch
        t_info_l[int(be.group(1)) if be else 0] = int(m.group(1)) if m else -1
        info_agree = first_failure(t_info_l) == first_failure(r_info_l)
    else:
        if t_info is None or op != "cholesky":
            # torch's potrs-type CUDA paths report nothing; the replay's info is argument checks only
            t_info_l = [0] * batch
        else:
            t_info_l = [int(v) for v in t_info.reshape(-1).cpu()]
        info_agree = t_info_l == r_info_l

    if t_error is None:
        bit = checks.bitwise_equal(t_out, r_out)
        nan_mis = checks.nan_mismatches(t_out, r_out)
        max_abs = float(checks.max_abs_diff(t_out, r_out))
        max_ulp = int(checks.max_ulp_distance(t_out, r_out))
        rel = float(checks.rel_fro_diff(t_out, r_out))
    else:
        bit, nan_mis, max_abs, max_ulp, rel = False, 0, float("nan"), None, float("nan")

    def ratio(out):
        if op == "cholesky":
            return checks.pot01(A, out, upper=upper)
        if op == "cholesky_inverse":
            return checks.pot03(A, out)
        return checks.pot02(A, out, b)

    failed = any(t_info_l) or any(r_info_l) or t_error is not None
    sides = []
    for name, out, info in (("torch", t_out, t_info_l), ("replay", r_out, r_info_l)):
        if out is None:
            sides.append(Side(name, _RATIO[op], float("nan"), info, 0, None, None, t_error))
            continue
        rat = float("nan") if failed and op == "cholesky" else float(ratio(out))
        sides.append(Side(name, _RATIO[op], rat, info, int(checks.nonfinite_count(out)),
                          float(checks.asymmetry(out)) if op == "cholesky_inverse" else None,
                          timings.get(name)))
    ts, rs = sides

    if t_error is not None:
        verdict = "failed-alike" if info_agree else "MISMATCH"
        notes.append(f"torch raised: {t_error}")
    elif invalid_factor:
        verdict = "bitwise-equal" if bit else (
            "failed-alike" if nan_mis == 0 and rel <= 30 * dt.lapack_eps * n else "MISMATCH")
    elif failed and op == "cholesky":
        verdict = "failed-alike" if info_agree else "MISMATCH"
        notes.append("factorization failed (info > 0): LAPACK leaves the factor's contents "
                     "unspecified, so they are not compared — only info is")
        if bit:
            notes.append("the unspecified contents happen to be bitwise equal as well")
    elif bit and info_agree:
        verdict = "bitwise-equal"
    elif info_agree and checks.passes(ts.ratio) and checks.passes(rs.ratio) and nan_mis == 0:
        verdict = "within-tolerance"
    else:
        verdict = "MISMATCH"
    if path.bitwise and not bit and verdict != "failed-alike" and device == "cuda":
        notes.append("the replay runs the same library routines as torch, yet the bits differ: "
                     "check that torch and the raw layer load the same libcusolver/libcublas")
    if path.note:
        notes.append(path.note)
    if ts.nonfinite or rs.nonfinite:
        notes.append(f"non-finite output: torch {ts.nonfinite}, replay {rs.nonfinite} entries; "
                     "cuSOLVER potrs reports nothing for a singular factor and potrf can return "
                     "info = 0 on NaN input")
        if device == "cuda":
            notes.append(_torch_cpu_behaviour(op, x, b, upper))
    if device == "cpu":
        notes.append("ran on the CPU: torch's CPU path (its bundled LAPACK) vs the replay through "
                     "scipy's LAPACK; no GPU was used")
    if op == "cholesky":
        notes.append("torch side: torch.linalg.cholesky_ex (the same kernels as linalg.cholesky, "
                     "without the error check that synchronizes)")
    if t_error is None and not invalid_factor and not checks.passes(ts.ratio) and not failed:
        notes.append(f"torch's own {_RATIO[op]} ratio is {ts.ratio:.3g} (>= 30)")

    spec = {"n": n, "batch": batch, "batch_shape": list(batch_shape),
            "nrhs": None if b is None else int(b.shape[-1]), "dtype": dt.name, "upper": upper,
            "device": str(A.device), "preferred": preferred or "default", "matrix": matrix,
            "repeat": repeat if timing else 0, "warmup": warmup}
    return Comparison(op, spec, path, verdict, bit, info_agree, max_abs, max_ulp, rel, nan_mis,
                      ts, rs, notes, _provenance() if provenance else {})
