"""Timing sweeps: torch against each method, side by side, checked, against measured ceilings.

``cusolver-trace sweep`` (and :func:`run_sweep`) builds, for every (dtype, n,
batch), a seeded Hermitian positive definite input (:func:`cusolver_trace.matrices.spd`,
cond 1e3 by default), then for each method:

1. runs it once and judges the result with LAPACK's ratio (``pot01``
   factorization, ``pot02`` solve, ``pot03`` inverse; < 30 passes) — a method
   that fails is reported ``FAILED`` and gets no GFLOP/s;
2. times torch and all methods **interleaved in one**
   :func:`cusolver_trace.timing.time_calls` run (CUDA events on a GPU; median,
   IQR in ms), and reports each method's time ratio to torch (< 1 = faster);
3. converts to GFLOP/s with the LAWN 41 count *named* (``potrf``, ``potrs``,
   ``inverse_potrs`` = 2n³, ``potri`` = 2n³/3, times the batch) — for every
   inverse method also on the potri count, the least work that yields A⁻¹ —
   and to % of the GEMM ceiling measured in the same process
   (:mod:`cusolver_trace.ceiling`).

Ops: ``cholesky`` (A → L), ``cholesky_inverse`` (L → A⁻¹), ``cholesky_solve``
(L, B → X) and ``spd_inverse`` (A → A⁻¹ through a Cholesky factorization, e.g.
the fused ``potrf_trsm_batched``). Methods per op: :data:`OP_METHODS`.
"""
from __future__ import annotations

import csv
import datetime as _dt
import functools
import json
import math
from dataclasses import dataclass

import torch

from . import checks, methods
from ._dtypes import dtype_info
from .ceiling import ceiling, percent_of_ceiling
from .replay import preferred_library
from .timing import time_calls

__all__ = ["OPS", "OP_METHODS", "GPU_ONLY", "DEFAULT_METHODS", "Case", "make_case",
           "method_callable", "measure_case", "run_sweep", "sweep_report", "write_json",
           "write_csv", "plot_sweep", "register"]

OPS = ("cholesky", "cholesky_inverse", "cholesky_solve", "spd_inverse")
_INV = methods.METHODS
OP_METHODS = {
    "cholesky": ("torch", "replay", "potrf", "potrf_X", "potrf_legacy", "potrf_batched"),
    "cholesky_inverse": ("torch", "torch_cusolver", "replay", *(m for m in _INV if m != "torch")),
    "cholesky_solve": ("torch", "torch_cusolver", "replay", "potrs", "potrs_batched", "trsm",
                       "trsm_batched"),
    "spd_inverse": ("torch", "potrf_trsm_batched", *(m for m in _INV if m != "torch")),
}
"""Methods per op. ``torch``: torch's op (``linalg.cholesky_ex`` for cholesky, so
that no host sync is timed); ``torch_cusolver``: the same with
``preferred_linalg_library("cusolver")``; ``replay``: the exact library calls
torch makes (:func:`cusolver_trace.replay.replay`); ``potrf_*``: the
``routines.potrf`` entry points; inverse methods: :data:`methods.METHODS`;
for ``spd_inverse`` a factor method m means potrf followed by m."""

GPU_ONLY = frozenset({"torch_cusolver", "potrf_X", "potrf_legacy", "potrf_batched", "potrs_batched",
                      "trsm", "trsm_batched", "potrf_trsm_batched"})

DEFAULT_METHODS = {
    ("cholesky", "cuda"): ("torch", "replay", "potrf_legacy"),
    ("cholesky", "cpu"): ("torch", "replay"),
    ("cholesky_inverse", "cuda"): ("torch", "potri", "trsm_batched", "trtri_lauum",
                                   "rec_trtri_lauum", "auto"),
    ("cholesky_inverse", "cpu"): ("torch", "potrs", "potri"),
    ("cholesky_solve", "cuda"): ("torch", "replay", "trsm_batched"),
    ("cholesky_solve", "cpu"): ("torch", "replay", "potrs"),
    ("spd_inverse", "cuda"): ("torch", "potrf_trsm_batched", "rec_trtri_lauum"),
    ("spd_inverse", "cpu"): ("torch", "potri"),
}

_CHECK = {"cholesky": "pot01", "cholesky_solve": "pot02", "cholesky_inverse": "pot03",
          "spd_inverse": "pot03"}
_INVERSE_OPS = ("cholesky_inverse", "spd_inverse")
_BIG_N = 4096  # from here on a CUDA input's QR and products run on the GPU


# --------------------------------------------------------------------------- inputs
def _spd_input(n, batch_shape, cond, dtype, device, seed):
    """matrices.spd's construction (Haar Q·diag(σ)·Qᴴ, σ geometric 1 → 1/cond, seeded CPU
    Gaussian); for CUDA and n >= 4096 the QR and the products run on the GPU (the same
    matrix up to rounding; a CPU QR of order 16384 would take minutes)."""
    from .matrices import spd

    dev = torch.device(device)
    if dev.type != "cuda" or n < _BIG_N:
        return spd(n, batch=batch_shape, cond=cond, dtype=dtype, device=dev, seed=seed)
    dt = dtype_info(dtype)
    c = torch.complex128 if dt.is_complex else torch.float64
    G = torch.randn(*batch_shape, n, n, dtype=c, generator=torch.Generator().manual_seed(seed))
    Q, R = torch.linalg.qr(G.to(dev))
    del G
    d = R.diagonal(dim1=-2, dim2=-1)
    Q = Q * torch.where(d == 0, 1, d / d.abs()).unsqueeze(-2)
    sigma = cond ** -(torch.arange(n, dtype=torch.float64, device=dev) / max(n - 1, 1))
    A = (Q * sigma) @ Q.mH
    return ((A + A.mH) / 2).to(dt.torch)


@dataclass
class Case:
    """One sweep point: inputs on the device, built once and shared by all methods.

    ``A`` (..., n, n) Hermitian positive definite; ``F`` its Cholesky factor
    (inverse / solve ops); ``B`` (..., n, nrhs) right-hand sides (solve).
    A batch of 1 is an unbatched ``(n, n)`` input (torch's batch-1 paths).
    """

    op: str
    n: int
    batch: int
    dtype: str
    device: str
    upper: bool
    nrhs: int
    A: torch.Tensor
    F: torch.Tensor | None = None
    B: torch.Tensor | None = None

    @property
    def on_cuda(self) -> bool:
        return torch.device(self.device).type == "cuda"

    @property
    def key(self) -> dict:
        return dict(op=self.op, n=self.n, batch=self.batch, dtype=self.dtype, device=self.device,
                    upper=self.upper, nrhs=self.nrhs if self.op == "cholesky_solve" else None)


def make_case(op: str, n: int, batch: int = 1, dtype="float64", device="cpu", *,
              upper: bool = False, nrhs: int = 1, seed: int = 0, cond: float = 1e3) -> Case:
    """Build the inputs of one sweep point (seeded: the same on every run).

    Raises ValueError for an unknown op or n < 1 / batch < 1; TypeError for an
    unsupported dtype.
    """
    if op not in OPS:
        raise ValueError(f"op must be one of {OPS}, got {op!r}")
    if n < 1 or batch < 1 or nrhs < 1:
        raise ValueError(f"n, batch and nrhs must be >= 1, got n={n} batch={batch} nrhs={nrhs}")
    name = dtype_info(dtype).name
    shape = () if batch == 1 else (batch,)
    A = _spd_input(n, shape, cond, name, device, seed)
    F = B = None
    if op in ("cholesky_inverse", "cholesky_solve"):
        F = torch.linalg.cholesky(A, upper=upper)
    if op == "cholesky_solve":
        g = torch.Generator().manual_seed(seed + 1)
        B = torch.randn(*shape, n, nrhs, dtype=torch.float64, generator=g).to(A.dtype).to(A.device)
    return Case(op, n, batch, name, str(A.device), upper, nrhs, A, F, B)


# --------------------------------------------------------------------------- methods
def _torch_fn(case: Case):
    A, F, B, up = case.A, case.F, case.B, case.upper
    return {
        "cholesky": lambda: torch.linalg.cholesky_ex(A, upper=up)[0],
        "cholesky_inverse": lambda: torch.cholesky_inverse(F, upper=up),
        "cholesky_solve": lambda: torch.cholesky_solve(B, F, upper=up),
        "spd_inverse": lambda: torch.cholesky_inverse(torch.linalg.cholesky_ex(A, upper=up)[0],
                                                      upper=up),
    }[case.op]


def _potrf(case: Case, A):
    """Factor without synchronizing: cuSOLVER as torch (Xpotrf / potrfBatched), else LAPACK."""
    from . import routines

    if case.on_cuda:
        from . import _cuda_impl as cu

        return cu.potrf(A, case.upper, "X" if case.batch == 1 else "batched")[0]
    return routines.potrf(A, case.upper, check=False)[0]


def method_callable(case: Case, method: str):
    """A zero-argument callable running ``method`` on the case's inputs and returning the
    result tensor, without synchronizing (so CUDA events time GPU work only).

    Raises ValueError for a method the op does not have, or a GPU-only method
    on a CPU case.
    """
    if method not in OP_METHODS[case.op]:
        raise ValueError(f"{case.op} has no method {method!r}; choose from {OP_METHODS[case.op]}")
    if method in GPU_ONLY and not case.on_cuda:
        raise ValueError(f"method {method!r} runs cuSOLVER/cuBLAS batched or preferred-library "
                         f"paths and needs a CUDA device (this sweep runs on {case.device})")
    from . import _cuda_impl as cu
    from . import routines
    from .replay import replay, torch_path

    op, A, F, B, up = case.op, case.A, case.F, case.B, case.upper
    if method == "torch":
        return _torch_fn(case)
    if method == "torch_cusolver":
        fn = _torch_fn(case)

        def with_cusolver():
            with preferred_library("cusolver"):
                return fn()
        return with_cusolver
    if method == "replay":
        x = A if op == "cholesky" else F
        path = torch_path(op, batch=case.batch, n=case.n, nrhs=case.nrhs if B is not None else None,
                                 dtype=case.dtype, device=torch.device(case.device).type)
        return lambda: replay(op, x, B, upper=up, path=path)[0]
    if op == "cholesky":
        if method == "potrf":
            return lambda: routines.potrf(A, up, check=False)[0]
        return lambda: cu.potrf(A, up, method.removeprefix("potrf_"))[0]
    if op == "cholesky_solve":
        if method == "potrs":
            return (lambda: cu.potrs(F, B, up, "X")[0]) if case.on_cuda else \
                (lambda: routines.potrs(F, B, up))
        if method == "potrs_batched":
            return lambda: cu.potrs(F, B, up, "batched")[0]
        return lambda: cu.trsm_solve(F, B, up, batched=method == "trsm_batched")[0]
    if op == "cholesky_inverse":
        return lambda: methods.inverse_ex(F, up, method)[0]
    if method == "potrf_trsm_batched":
        return lambda: methods.potrf_trsm_batched(A, up)[0]
    return lambda: methods.inverse_ex(_potrf(case, A), up, method)[0]


def _check(case: Case, result) -> float:
    if case.op == "cholesky":
        return checks.pot01(case.A, result, case.upper)
    if case.op == "cholesky_solve":
        return checks.pot02(case.A, result, case.B, case.upper)
    return checks.pot03(case.A, result, case.upper)


def _resolved(case: Case, method: str) -> str:
    if method == "auto":
        return methods.auto_method(case.n, case.batch, case.dtype, torch.device(case.device).type)
    return method


def flop_count(case: Case, method: str) -> tuple[str, float, float | None]:
    """``(count name, flops of the method's algorithm, flops on the potri yardstick or None)``,
    LAWN 41 real flops (complex expanded) times the batch."""
    n, b, cx = case.n, case.batch, dtype_info(case.dtype).is_complex
    f = functools.partial(checks.flops, complex=cx)
    if case.op == "cholesky":
        return "potrf", b * f("potrf", n), None
    if case.op == "cholesky_solve":
        return f"potrs(nrhs={case.nrhs})", b * f("potrs", n, case.nrhs), None
    m = _resolved(case, method)
    if m in ("torch", "torch_cusolver", "replay", "potrf_trsm_batched"):
        name = "potri" if not case.on_cuda and m in ("torch", "replay") else "inverse_potrs"
    else:
        name = methods.FLOP_COUNT[m]
    if case.op == "cholesky_inverse":
        return name, b * f(name, n), b * f("potri", n)
    return f"potrf+{name}", b * (f("potrf", n) + f(name, n)), b * (f("potrf", n) + f("potri", n))


# --------------------------------------------------------------------------- measuring
def measure_case(case: Case, method_names, *, repeat: int = 10, warmup: int = 2,
                 flush_l2: bool = False, ceil=None) -> list[dict]:
    """Check every method once, then time torch and all methods interleaved; one row each.

    ``torch`` is always included (first). Rows (JSON-ready dicts): the case's
    keys, ``method``, ``resolved`` (what ``auto`` ran), ``status`` (``ok`` /
    ``FAILED`` (ratio >= 30 or NaN) / ``ERROR``), ``check`` and ``ratio``,
    ``error``, timing in ms (``median_ms``, ``q1_ms``, ``q3_ms``, ``iqr_ms``,
    ``min_ms``, ``repeat``, ``clock``), ``ratio_to_torch`` (median / torch's
    median), ``flop_count``, ``gflops``, ``pct_of_ceiling``, and for inverse
    ops ``gflops_potri`` / ``pct_of_ceiling_potri``; ``ceiling_gflops``.
    GFLOP/s fields are None for a method that did not pass.
    """
    names = ["torch", *[m for m in method_names if m != "torch"]]
    ceil = ceil if ceil is not None else ceiling(case.device, case.dtype)
    rows, fns = {}, {}
    for m in names:
        row = dict(case.key, method=m, resolved=_resolved(case, m), status="ok",
                   check=_CHECK[case.op], ratio=None, error=None)
        try:
            fn = method_callable(case, m)
            row["ratio"] = float(_check(case, fn()))
            if not checks.passes(row["ratio"]):
                row["status"] = "FAILED"
            fns[m] = fn
        except Exception as exc:  # reported in the row, never timed
            row.update(status="ERROR", error=f"{type(exc).__name__}: {exc}")
        rows[m] = row
    dev = case.device if case.on_cuda else None
    timings = time_calls(fns, device=dev, warmup=warmup, repeat=repeat, flush_l2=flush_l2) if fns else {}
    t_torch = timings.get("torch")
    for m, row in rows.items():
        t = timings.get(m)
        name, fl, fl_potri = flop_count(case, m)
        row.update(flop_count=name, ceiling_gflops=ceil.gemm_gflops)
        if t is not None:
            row.update({k: v for k, v in t.to_dict().items() if k != "max_ms"})
            row["ratio_to_torch"] = t.median_ms / t_torch.median_ms if t_torch else None
        good = t is not None and row["status"] == "ok"
        row["gflops"] = t.gflops(fl) if good else None
        row["pct_of_ceiling"] = percent_of_ceiling(row["gflops"], ceil) if good else None
        if case.op in _INVERSE_OPS:
            row["gflops_potri"] = t.gflops(fl_potri) if good else None
            row["pct_of_ceiling_potri"] = percent_of_ceiling(row["gflops_potri"], ceil) if good else None
    return list(rows.values())


def _device(device) -> str:
    if device is None:
        return "cuda:0" if torch.cuda.is_available() else "cpu"
    return str(device)


def default_methods(op: str, device) -> tuple:
    """The methods a sweep runs when none are named."""
    return DEFAULT_METHODS[(op, torch.device(_device(device)).type)]


def run_sweep(op: str = "cholesky_inverse", n=(256, 1024), batch=(1,), dtype=("float64",),
              method_names=None, *, device=None, upper: bool = False, nrhs: int = 1,
              repeat: int = 10, warmup: int = 2, seed: int = 0, cond: float = 1e3,
              flush_l2: bool = False, progress: bool = True, console=None,
              shard: tuple[int, int] = (0, 1)) -> list[dict]:
    """Sweep ``op`` over every (dtype, n, batch); returns the rows of :func:`measure_case`.

    Parameters
    ----------
    op : one of :data:`OPS`
    n, batch : iterables of int     matrix orders and batch sizes (1 = unbatched (n, n))
    dtype : iterable of str         float32, float64, complex64, complex128
    method_names : iterable of str  default :data:`DEFAULT_METHODS` for op and device
    device : str                    default ``cuda:0`` when torch sees a GPU, else ``cpu``
    upper, nrhs, seed, cond         input set-up (see :func:`make_case`)
    repeat, warmup, flush_l2        timing (see :func:`cusolver_trace.timing.time_calls`)
    progress : bool                 show a rich progress bar
    shard : (i, k)                  run only every k-th (dtype, n, batch) point starting at i
                                    (how ``--gpus`` splits a sweep over GPUs)

    Raises
    ------
    ValueError  unknown op / method, a GPU-only method on the CPU.
    """
    device = _device(device)
    names = list(method_names or default_methods(op, device))
    if op not in OPS:
        raise ValueError(f"op must be one of {OPS}, got {op!r}")
    bad = [m for m in names if m not in OP_METHODS[op]]
    if bad:
        raise ValueError(f"{op} has no method(s) {bad}; choose from {', '.join(OP_METHODS[op])}")
    if torch.device(device).type != "cuda" and GPU_ONLY.intersection(names):
        raise ValueError(f"method(s) {sorted(GPU_ONLY.intersection(names))} need a CUDA device; "
                         f"this sweep runs on {device}")
    points = [(d, k, b) for d in dtype for k in n for b in batch][shard[0]::shard[1]]
    rows = []
    from rich.progress import Progress

    with Progress(console=console, disable=not progress, transient=True) as bar:
        task = bar.add_task(f"{op} sweep", total=len(points))
        for d, k, b in points:
            bar.update(task, description=f"{op} {d} n={k} batch={b}")
            case = make_case(op, k, b, d, device, upper=upper, nrhs=nrhs, seed=seed, cond=cond)
            rows += measure_case(case, names, repeat=repeat, warmup=warmup, flush_l2=flush_l2)
            del case
            bar.advance(task)
    return rows


# --------------------------------------------------------------------------- reports
def sweep_report(rows, *, settings=None) -> dict:
    """JSON-ready report: tool, UTC date, provenance (:func:`cusolver_trace.versions.versions`),
    the measured ceilings used, settings and the rows."""
    from .versions import versions

    ceils = {f"{r['device']} {r['dtype']}": ceiling(r["device"], r["dtype"]).to_dict() for r in rows}
    return {"tool": "cusolver-trace sweep",
            "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            "versions": versions(), "ceilings": ceils, "settings": settings or {},
            "results": rows}


def write_json(report: dict, path) -> None:
    with open(path, "w") as fh:
        json.dump(report, fh, indent=2, default=str)


def write_csv(rows, path) -> None:
    """One line per (case, method); columns are the union of the rows' keys, in order."""
    fields = list(dict.fromkeys(k for r in rows for k in r))
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=fields)
        w.writeheader()
        w.writerows(rows)


def _num(x, fmt=".4g"):
    return "—" if x is None or (isinstance(x, float) and math.isnan(x)) else format(x, fmt)


def results_table(rows):
    """A rich table of the rows (FAILED / ERROR methods show no GFLOP/s)."""
    from rich.table import Table

    inv = any(r["op"] in _INVERSE_OPS for r in rows)
    # rows from --gpus workers: each worker sees its pinned GPU as cuda:0, so name the physical one
    gpus = sorted({str(r["physical_gpu"]) for r in rows if r.get("physical_gpu") not in (None, "")})
    where = (f"GPUs {', '.join(gpus)} (one process each, CUDA_VISIBLE_DEVICES)" if len(gpus) > 1
             else f"GPU {gpus[0]} (CUDA_VISIBLE_DEVICES)" if gpus else rows[0]["device"])
    t = Table(title=f"{rows[0]['op']} on {where} "
                    "(ms: median of CUDA events or perf_counter; vs torch: time ratio, < 1 faster)")
    cols = (["GPU"] if len(gpus) > 1 else []) + [
        "dtype", "n", "batch", "method", "status", "check", "median ms", "IQR ms", "vs torch",
        "flop count", "GFLOP/s", "% ceil"]
    cols += ["GFLOP/s potri", "% ceil potri"] if inv else []
    for c in cols:
        t.add_column(c, justify="left" if c in ("GPU", "dtype", "method", "status", "flop count") else "right")
    for r in rows:
        status = {"ok": "[green]ok[/]", "FAILED": "[bold red]FAILED[/]"}.get(r["status"], "[red]ERROR[/]")
        method = r["method"] + (f" → {r['resolved']}" if r["resolved"] != r["method"] else "")
        cells = ([str(r.get("physical_gpu", ""))] if len(gpus) > 1 else []) + [
                 r["dtype"], str(r["n"]), str(r["batch"]), method, status,
                 f"{r['check']} {_num(r['ratio'], '.3g')}" if r["error"] is None else r["error"][:40],
                 _num(r.get("median_ms")), _num(r.get("iqr_ms"), ".2g"),
                 _num(r.get("ratio_to_torch"), ".3f"),
                 r["flop_count"], _num(r["gflops"]), _num(r["pct_of_ceiling"], ".1f")]
        if inv:
            cells += [_num(r.get("gflops_potri")), _num(r.get("pct_of_ceiling_potri"), ".1f")]
        t.add_row(*cells)
    return t


def plot_sweep(rows, path) -> None:
    """Time (ms) vs n and % of the GEMM ceiling vs n, one line per method (torch included),
    log axes; one row of two panels per (op, dtype, batch). Inverse ops plot the % on the
    potri count. Methods that did not pass are left out of the % panel.

    Raises ImportError (with the install hint) when matplotlib is missing.
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise ImportError("--plot needs matplotlib: pip install 'cusolver-trace[plot]' "
                          "(or pip install matplotlib)") from exc
    groups = sorted({(r["op"], r["dtype"], r["batch"]) for r in rows}, key=str)
    fig, axes = plt.subplots(len(groups), 2, figsize=(12, 4 * len(groups)), squeeze=False)
    for (op, d, b), (ax_t, ax_p) in zip(groups, axes):
        sub = [r for r in rows if (r["op"], r["dtype"], r["batch"]) == (op, d, b)]
        pct = "pct_of_ceiling_potri" if op in _INVERSE_OPS else "pct_of_ceiling"
        for m in dict.fromkeys(r["method"] for r in sub):
            pts = sorted((r["n"], r.get("median_ms"), r.get(pct)) for r in sub if r["method"] == m)
            tx = [(n, t) for n, t, _ in pts if t is not None]
            px = [(n, p) for n, _, p in pts if p is not None and p > 0]
            style = dict(marker="o", lw=2.5 if m == "torch" else 1.5, label=m)
            if tx:
                ax_t.plot(*zip(*tx), **style)
            if px:
                ax_p.plot(*zip(*px), **style)
        title = f"{op} {d}" + (f" batch {b}" if b > 1 else "")
        ax_t.set(xscale="log", yscale="log", xlabel="n", ylabel="median time (ms)", title=title)
        ax_p.set(xscale="log", yscale="linear", ylim=(0, None), xlabel="n",
                 ylabel="% of measured GEMM ceiling" + (" (potri count)" if pct.endswith("potri") else ""),
                 title=title)
        ns = sorted({r["n"] for r in sub})
        for ax in (ax_t, ax_p):
            ax.set_xticks(ns, [str(v) for v in ns])
            ax.minorticks_off()
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


# --------------------------------------------------------------------------- CLI
def _worker_argv(args, shard: int, count: int, out: str) -> list[str]:
    """The ``cusolver-trace sweep`` command line of one shard (same settings, one GPU)."""
    import sys

    argv = [sys.executable, "-m", "cusolver_trace", "sweep", "--op", args.op,
            "--n", ",".join(map(str, args.n)), "--batch", ",".join(map(str, args.batch)),
            "--dtype", ",".join(args.dtype), "--nrhs", str(args.nrhs), "--repeat", str(args.repeat),
            "--warmup", str(args.warmup), "--cond", repr(args.cond), "--seed", str(args.seed),
            "--shard", f"{shard}/{count}", "--out", out]
    if args.method:
        argv += ["--method", ",".join(args.method)]
    if args.upper:
        argv.append("--upper")
    if args.flush_l2:
        argv.append("--flush-l2")
    if args.device:
        argv += ["--device", args.device]
    return argv


def spread_over_gpus(args, gpu_ids: list[str], console) -> list[dict]:
    """Run the sweep as one process per GPU (``CUDA_VISIBLE_DEVICES`` = that GPU, every
    ``len(gpu_ids)``-th point each), wait for all, and merge their rows (each row gets
    ``physical_gpu``). A failing worker raises ``RuntimeError`` with its output."""
    import os
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        procs = []
        for i, gpu in enumerate(gpu_ids):
            out = os.path.join(tmp, f"part{i}.json")
            env = dict(os.environ, CUDA_VISIBLE_DEVICES=gpu)
            log = open(os.path.join(tmp, f"part{i}.log"), "w")
            procs.append((gpu, out, log, subprocess.Popen(
                _worker_argv(args, i, len(gpu_ids), out), env=env, stdout=log,
                stderr=subprocess.STDOUT)))
        console.print(f"sweep spread over {len(gpu_ids)} process(es), GPUs {gpu_ids}")
        rows = []
        for gpu, out, log, proc in procs:
            rc = proc.wait()
            log.close()
            if rc not in (0, 1) or not os.path.exists(out):  # 1 = a method FAILED its check
                raise RuntimeError(f"sweep worker on GPU {gpu!r} exited {rc}:\n"
                                   + open(log.name).read()[-3000:])
            with open(out) as fh:
                part = json.load(fh)["results"]
            rows += [dict(r, physical_gpu=gpu) for r in part]
    return rows


def cmd_sweep(args) -> int:
    from .cli import EXIT_MISMATCH, EXIT_OK, _console

    con = _console()
    device = _device(args.device)
    if torch.device(device).type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"--device {device}: no CUDA GPU is visible to torch")
    if args.device is None:
        con.print(f"[bold]device {device}[/]" + ("" if device != "cpu" else
                  ": no GPU visible, so torch's CPU path and LAPACK (scipy) are timed"))
    if args.plot:  # fail before the sweep, not after
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            raise ValueError("--plot needs matplotlib: pip install 'cusolver-trace[plot]'") from None
    for d in args.dtype:
        c = ceiling(device, d)
        con.print(f"ceiling {d} on {c.device}: GEMM {c.gemm_gflops:,.0f} GFLOP/s "
                  f"(n = {c.gemm_n}), copy {c.copy_gbs:,.0f} GB/s")
    if args.gpus:
        from .workflow import physical_gpu_ids

        ids = physical_gpu_ids()
        if not ids:
            raise ValueError("--gpus: no GPU found (nvidia-smi -L / CUDA_VISIBLE_DEVICES)")
        count = len(ids) if args.gpus == "all" else int(args.gpus)
        rows = spread_over_gpus(args, ids[:count], con)
    else:
        i, k = (int(v) for v in args.shard.split("/"))
        rows = run_sweep(args.op, args.n, args.batch, args.dtype, args.method, device=device,
                         upper=args.upper, nrhs=args.nrhs, repeat=args.repeat, warmup=args.warmup,
                         seed=args.seed, cond=args.cond, flush_l2=args.flush_l2, console=con,
                         shard=(i, k))
    con.print(results_table(rows))
    settings = {k: v for k, v in vars(args).items() if k != "func"}
    write_json(sweep_report(rows, settings=settings), args.out)
    con.print(f"wrote {args.out}")
    if args.csv:
        write_csv(rows, args.csv)
        con.print(f"wrote {args.csv}")
    if args.plot:
        plot_sweep(rows, args.plot)
        con.print(f"wrote {args.plot}")
    bad = [r for r in rows if r["status"] != "ok"]
    for r in bad:
        con.print(f"[bold red]{r['status']}[/]: {r['method']} {r['dtype']} n={r['n']} batch={r['batch']} "
                  f"{r['check']} = {_num(r['ratio'], '.3g')} {r['error'] or ''}")
    return EXIT_MISMATCH if bad else EXIT_OK


def register(subparsers) -> None:
    """Add ``cusolver-trace sweep`` to the CLI's subparsers."""
    from .cli import _csv

    p = subparsers.add_parser(
        "sweep", help="time torch against faster methods over n / batch / dtype, checked",
        description="Time torch and each method side by side (interleaved, CUDA events on a GPU), "
                    "check every result with LAPACK's ratios (pot01/02/03 < 30, else FAILED), "
                    "report GFLOP/s with the LAWN 41 count named, % of the GEMM ceiling measured "
                    "in the same run, and the ratio to torch. Exit 1 if a method FAILED.")
    p.add_argument("--op", required=True, choices=OPS)
    p.add_argument("--n", type=_csv(int), required=True, help="matrix orders, e.g. 256,1024,4096")
    p.add_argument("--batch", type=_csv(int), default=[1], help="batch sizes (1 = one (n, n) matrix)")
    p.add_argument("--dtype", type=_csv(str), default=["float64"],
                   help="float32,float64,complex64,complex128")
    p.add_argument("--method", type=_csv(str), default=None,
                   help="comma-separated; per op: " + "; ".join(f"{o}: {','.join(m)}"
                                                                for o, m in OP_METHODS.items()))
    p.add_argument("--upper", action="store_true", help="use the upper triangle (default lower)")
    p.add_argument("--nrhs", type=int, default=1, help="right-hand sides (cholesky_solve)")
    p.add_argument("--repeat", type=int, default=10, help="timed samples per method")
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--flush-l2", action="store_true", help="zero a 256 MB buffer before each sample")
    p.add_argument("--cond", type=float, default=1e3, help="condition number of the inputs")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", default=None, help="cuda:0, ... or cpu (default: cuda:0 if present)")
    p.add_argument("--gpus", default=None, metavar="N|all",
                   help="spread the points over N GPUs: one process per GPU pinned with "
                        "CUDA_VISIBLE_DEVICES, results merged into one report")
    p.add_argument("--shard", default="0/1", metavar="I/K",
                   help="run only every K-th point starting at I (used by --gpus)")
    p.add_argument("--out", required=True, metavar="JSON", help="write results + provenance here")
    p.add_argument("--csv", metavar="PATH", help="also write one CSV line per (case, method)")
    p.add_argument("--plot", metavar="PNG", help="time and %% of ceiling vs n (needs matplotlib)")
    p.set_defaults(func=cmd_sweep)
