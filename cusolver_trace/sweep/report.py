"""Timing sweeps, the reporting half: JSON report with provenance, CSV, a rich table, plots.

The rows come from :mod:`cusolver_trace.sweep.measure`; nothing here measures or names
an op.
"""
from __future__ import annotations

import csv
import datetime as _dt
import math

from .. import _json
from ..ceiling import ceiling

__all__ = ["sweep_report", "write_json", "write_csv", "results_table", "plot_sweep", "fmt_number"]


def sweep_report(rows, *, settings=None) -> dict:
    """JSON-ready report: tool, UTC date, provenance (:func:`cusolver_trace.versions.versions`),
    the measured ceilings used, settings and the rows."""
    from ..versions import versions

    ceils = {f"{r['device']} {r['dtype']}": ceiling(r["device"], r["dtype"]).to_dict() for r in rows}
    return {"tool": "cusolver-trace sweep",
            "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            "versions": versions(), "ceilings": ceils, "settings": settings or {},
            "results": rows}


def write_json(report: dict, path) -> None:
    with open(path, "w") as fh:
        fh.write(_json.dumps(report, indent=2))


def write_csv(rows, path) -> None:
    """One line per (case, method); columns are the union of the rows' keys, in order."""
    fields = list(dict.fromkeys(k for r in rows for k in r))
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=fields)
        w.writeheader()
        w.writerows(rows)


def fmt_number(x, fmt=".4g"):
    """``x`` formatted, or ``—`` for a missing / NaN value.

    Examples
    --------
    >>> fmt_number(12.345678), fmt_number(None), fmt_number(float("nan"), ".3f")
    ('12.35', '—', '—')
    """
    return "—" if x is None or (isinstance(x, float) and math.isnan(x)) else format(x, fmt)


def _caption(rows) -> str:
    """What the table's times are, in words: the clock, and on the CPU the thread count."""
    clocks = {r.get("clock") for r in rows if r.get("clock")}
    threads = sorted({r["threads"] for r in rows if r.get("threads")})
    if clocks <= {"cuda-events"}:
        what = "ms per call: median of CUDA events"
    elif clocks == {"thread_time"}:
        what = ("ms per call: median of the timing thread's CPU time, every library pinned to "
                "1 thread")
    else:
        what = (f"ms per call: median wall time, every library pinned to "
                f"{','.join(map(str, threads)) or '?'} threads")
    text = f"{what}; vs torch: time ratio (< 1: faster)"
    if any(r.get("peak_extra_n2") is not None for r in rows):
        text += ("; peak n²: device memory beyond the inputs, in n² per matrix (torch's "
                 "allocator), stated n²: the method table's workspace")
    if any(r.get("ratio_withheld") for r in rows):
        text += ("; — (busy CPU): no ratio, the samples did not get their cores (other "
                 "processes or thread pools running)")
    return text


def results_table(rows):
    """A rich table of the rows (FAILED / ERROR methods show no GFLOP/s). ``peak n²``: the
    measured peak device memory beyond the inputs (``peak_extra_n2``), ``stated n²``: the
    workspace the method's table row states (``workspace_n2``); "—" on the CPU."""
    from rich.table import Table

    inv = any("gflops_potri" in r for r in rows)
    # rows from --gpus workers: each worker sees its pinned GPU as cuda:0, so name the physical one
    gpus = sorted({str(r["physical_gpu"]) for r in rows if r.get("physical_gpu") not in (None, "")})
    where = (f"GPUs {', '.join(gpus)} (one process each, CUDA_VISIBLE_DEVICES)" if len(gpus) > 1
             else f"GPU {gpus[0]} (CUDA_VISIBLE_DEVICES)" if gpus else rows[0]["device"])
    t = Table(title=f"{rows[0]['op']} on {where}", caption=_caption(rows))
    cols = (["GPU"] if len(gpus) > 1 else []) + [
        "dtype", "n", "batch", "method", "status", "check", "median ms", "IQR ms", "peak n²",
        "stated n²", "vs torch",
        "check cost", "flop count", "GFLOP/s", "% ceil"]
    cols += ["GFLOP/s potri", "% ceil potri"] if inv else []
    for c in cols:
        t.add_column(c, justify="left" if c in ("GPU", "dtype", "method", "status", "flop count") else "right")
    for r in rows:
        status = {"ok": "[green]ok[/]", "FAILED": "[bold red]FAILED[/]"}.get(r["status"], "[red]ERROR[/]")
        method = r["method"] + (f" → {r['resolved']}" if r["resolved"] != r["method"] else "") + (
            " (check=False)" if r.get("checked") is False else "")
        cells = ([str(r.get("physical_gpu", ""))] if len(gpus) > 1 else []) + [
                 r["dtype"], str(r["n"]), str(r["batch"]), method, status,
                 f"{r['check']} {fmt_number(r['ratio'], '.3g')}" if r["error"] is None else r["error"][:40],
                 fmt_number(r.get("median_ms")),
                 fmt_number(r.get("iqr_ms"), ".2g") + (" [yellow]noisy[/]" if r.get("noisy") else ""),
                 fmt_number(r.get("peak_extra_n2"), ".2f"), fmt_number(r.get("workspace_n2"), ".2f"),
                 ("— (busy CPU)" if r.get("ratio_withheld") else
                  fmt_number(r.get("ratio_to_torch"), ".3f")),
                 fmt_number(r.get("check_overhead"), ".3f"),
                 r["flop_count"], fmt_number(r["gflops"]), fmt_number(r["pct_of_ceiling"], ".1f")]
        if inv:
            cells += [fmt_number(r.get("gflops_potri")), fmt_number(r.get("pct_of_ceiling_potri"), ".1f")]
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
        sub = [r for r in rows if (r["op"], r["dtype"], r["batch"]) == (op, d, b)
               and r.get("checked") is not False]
        pct = "pct_of_ceiling_potri" if any("gflops_potri" in r for r in sub) else "pct_of_ceiling"
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


