"""What the peer tables share (``benchmarks/lu_table.py``, ``benchmarks/eigh_table.py``): the
peers (torch, JAX, CuPy: a peer that is missing or fails is reported, never fatal), single
synchronized calls timed with the host clock, skips (loops in Python over large batches, calls
predicted too slow, the deadline), the JSON rewritten after every case, and the short table.

A table is a :class:`Spec`: its cases, how it makes inputs, which calls it times, how it judges
a result (a LAPACK ratio; < 30 passes) and which row ``auto`` runs.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import traceback
from dataclasses import dataclass, field
from typing import Callable

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
# this checkout's package, whatever else is installed
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

CAP_S = 3.0          # skip a call predicted to take longer than this
ONE_CALL_S = 1.0     # a first call longer than this is timed once
T0 = time.perf_counter()


def say(*a):
    print(*a, flush=True)


@dataclass
class Spec:
    """One table.

    ``make_inputs(P, batch, n) -> tuple`` of tensors; ``calls(P, inputs, batch, n) -> [(op,
    who, label, fn)]``; ``judge(P, op, result, inputs) -> (check name, ratio)``;
    ``resolve_auto(op, n, batch, device) -> row``; ``skip(label, resolved, batch, n) -> note
    or None``; ``jax(P, jax, jnp)`` sets the jitted JAX functions on ``P``.
    """

    doc: str
    dry_env: str
    cases: tuple
    dry_cases: tuple
    make_inputs: Callable
    calls: Callable
    judge: Callable
    resolve_auto: Callable
    skip: Callable
    jax: Callable
    meta: dict = field(default_factory=dict)

    @property
    def dry(self) -> bool:
        return os.environ.get(self.dry_env) == "1"


class Peers:
    """torch, and JAX / CuPy when they load (``why`` says why not)."""

    def __init__(self, spec: Spec):
        import torch

        self.torch = torch
        self.dry = spec.dry
        self.dev = "cpu" if self.dry else "cuda:0"
        self.jax = self.jnp = self.cupy = None
        self.why = {}
        if self.dry:
            self.why = {"jax": "dry run", "cupy": "dry run"}
            return
        try:
            import cupy

            cupy.cuda.Device(0).use()
            self.cupy = cupy
        except Exception as exc:   # reported, not fatal
            self.why["cupy"] = f"{type(exc).__name__}: {exc}"
        try:
            import jax

            jax.config.update("jax_enable_x64", True)
            import jax.numpy as jnp

            self.jax, self.jnp = jax, jnp
            spec.jax(self, jax, jnp)
            self.jdev = [d for d in jax.devices() if d.platform == "gpu"][0]
        except Exception as exc:
            self.jax = None
            self.why["jax"] = f"{type(exc).__name__}: {exc}"

    def sync(self):
        if not self.dry:
            self.torch.cuda.synchronize()

    def versions(self):
        out = {"torch": self.torch.__version__}
        for name in ("jax", "cupy"):
            mod = getattr(self, name)
            out[name] = getattr(mod, "__version__", None) if mod is not None else None
        import cusolver_trace

        out["cusolver_trace"] = cusolver_trace.__version__
        try:
            out["git"] = subprocess.run(["git", "rev-parse", "--short", "HEAD"],
                                        capture_output=True, text=True,
                                        cwd=os.path.dirname(__file__)).stdout.strip()
        except OSError:
            out["git"] = None
        if not self.dry:
            out["device"] = self.torch.cuda.get_device_name(0)
            try:
                out["cusolver_trace_libs"] = __import__(
                    "cusolver_trace.backends.cuda", fromlist=["x"]).library_versions("cuda:0")
            except Exception as exc:
                out["cusolver_trace_libs"] = f"{type(exc).__name__}: {exc}"
        return out


def first_call(fn, sync):
    """The first call: ``(result, synced wall ms)``."""
    t = time.perf_counter()
    out = fn()
    sync()
    return out, (time.perf_counter() - t) * 1e3


def time_call(fn, sync, reps, first):
    """Per-call synced wall ms: ``(samples, note)``. After the first call (``first`` ms: over
    :data:`ONE_CALL_S` it is the only sample) one more warm-up call, then ``reps`` timed."""
    if first > ONE_CALL_S * 1e3:
        return [first], "one call (the first, warm-up included)"
    fn()
    sync()
    samples = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        sync()
        samples.append((time.perf_counter() - t) * 1e3)
    return samples, ""


def run_case(P, spec: Spec, batch, n, reps, prev, deadline):
    rows = []
    inputs = spec.make_inputs(P, batch, n)
    fn = None
    for op, who, label, fn in spec.calls(P, inputs, batch, n):
        row = {"batch": batch, "n": n, "op": op, "who": who, "method": label, "resolved": label,
               "status": "ok", "samples_ms": [], "median_ms": None, "check": None,
               "ratio": None, "note": "", "error": None}
        rows.append(row)
        key = (op, who, label)
        if who == "ours" and label == "auto":
            row["resolved"] = spec.resolve_auto(op, n, batch, "cpu" if P.dry else "cuda")
        note = spec.skip(label, row["resolved"], batch, n) if who == "ours" else None
        if note:
            row.update(status="skipped", note=note)
        if row["status"] == "ok" and key in prev and prev[key][0] == batch:
            pb, pn, pms = prev[key]
            guess = pms * (n / pn) ** 3 / 1e3
            if guess > CAP_S:
                row.update(status="skipped", note=f"predicted {guess:.0f} s per call from "
                                                  f"{pms:.0f} ms at {pb} x {pn}")
        if row["status"] == "ok" and time.perf_counter() - T0 > deadline:
            row.update(status="skipped", note="deadline")
        if row["status"] == "skipped":
            say(f"{batch:>6} x {n:<5} {op:<6} {who:<6} {label:<18} skipped: {row['note']}")
            continue
        try:
            res, first = first_call(fn, P.sync)
            row["check"], row["ratio"] = spec.judge(P, op, res, inputs)
            del res
            if not row["ratio"] < 30:
                row["status"] = "FAILED"
            row["samples_ms"], row["note"] = time_call(fn, P.sync, reps, first)
            row["median_ms"] = statistics.median(row["samples_ms"])
            prev[key] = (batch, n, row["median_ms"])
        except Exception as exc:   # reported in the row, never fatal
            row.update(status="ERROR", error=f"{type(exc).__name__}: {exc}",
                       trace=traceback.format_exc(limit=3))
        say(f"{batch:>6} x {n:<5} {op:<6} {who:<6} {label:<18} "
            + (f"{row['median_ms']:10.3f} ms" if row["median_ms"] is not None else " " * 13)
            + (f"  {row['check']} {row['ratio']:.2f}" if row["ratio"] is not None else "")
            + f"  {row['status']} {row['note']} {row['error'] or ''}")
    del inputs, fn
    if not P.dry:
        P.torch.cuda.empty_cache()
        if P.cupy is not None:
            P.cupy.get_default_memory_pool().free_all_blocks()
    return rows


def summary(rows):
    """The short table: per case and op, the peers, ours auto and our best row, ratios."""
    lines = ["| batch x n | op | torch | JAX | CuPy | ours auto (row) | best ours (row) | "
             "auto/torch | auto/best peer | best/best peer |", "|---" * 10 + "|"]
    keys = []
    for r in rows:
        k = (r["batch"], r["n"], r["op"])
        if k not in keys:
            keys.append(k)
    for batch, n, op in keys:
        sel = [r for r in rows if (r["batch"], r["n"], r["op"]) == (batch, n, op)]
        ok = {(r["who"], r["method"]): r for r in sel if r["status"] == "ok"}

        def ms(who):
            got = [r["median_ms"] for (w, _), r in ok.items() if w == who]
            return min(got) if got else None

        peers = {w: ms(w) for w in ("torch", "jax", "cupy")}
        best_peer = min((v for v in peers.values() if v is not None), default=None)
        auto = ok.get(("ours", "auto"))
        ours = [r for (w, _), r in ok.items() if w == "ours"]
        best = min(ours, key=lambda r: r["median_ms"]) if ours else None

        def f(v):
            return "—" if v is None else f"{v:.3f}"

        def ratio(a, b):
            return "—" if a is None or b is None else f"{a / b:.2f}"

        am = auto["median_ms"] if auto else None
        bm = best["median_ms"] if best else None
        lines.append(
            f"| {batch} x {n} | {op} | {f(peers['torch'])} | {f(peers['jax'])} | "
            f"{f(peers['cupy'])} | {f(am)} ({auto['resolved'] if auto else '—'}) | {f(bm)} "
            f"({best['method'] if best else '—'}) | {ratio(am, peers['torch'])} | "
            f"{ratio(am, best_peer)} | {ratio(bm, best_peer)} |")
    return "\n".join(lines)


def main(spec: Spec, argv=None) -> int:
    p = argparse.ArgumentParser(description=spec.doc.splitlines()[0])
    p.add_argument("out", help="JSON file to write (rewritten after every case)")
    p.add_argument("--deadline", type=float, default=220.0,
                   help="seconds from the start after which no new call is timed (default 220)")
    p.add_argument("--cases", help="batch x n list, e.g. 10000x8,1x4096 (default: the issue's)")
    p.add_argument("--reps", type=int, default=7, help="timed calls per row, >= 7 (default 7)")
    args = p.parse_args(argv)
    if args.reps < 7:
        p.error("--reps must be >= 7")
    cases = spec.dry_cases if spec.dry else spec.cases
    if args.cases:
        try:
            cases = [tuple(int(v) for v in c.lower().split("x")) for c in args.cases.split(",")]
        except ValueError:
            p.error(f"--cases: expected a list like 10000x8,1x4096, got {args.cases!r}")
    if not spec.dry:
        import torch

        if not torch.cuda.is_available():
            print(f"{p.prog}: no CUDA GPU visible to torch; {spec.dry_env}=1 runs the script's "
                  "logic on the CPU with small sizes", file=sys.stderr)
            return 2
    out_dir = os.path.dirname(os.path.abspath(args.out))
    os.makedirs(out_dir, exist_ok=True)
    P = Peers(spec)
    meta = {"command": " ".join([sys.executable, *sys.argv]), "versions": P.versions(),
            "peers_missing": P.why, "reps": args.reps, "clock": "perf_counter, synced per call",
            **spec.meta}
    for name, why in P.why.items():
        say(f"{name}: not measured ({why})")
    rows, prev = [], {}
    for batch, n in cases:
        rows += run_case(P, spec, batch, n, args.reps, prev, args.deadline)
        with open(args.out, "w") as f:
            json.dump({**meta, "elapsed_s": time.perf_counter() - T0, "rows": rows}, f, indent=1)
    table = summary(rows)
    with open(args.out, "w") as f:
        json.dump({**meta, "elapsed_s": time.perf_counter() - T0, "rows": rows,
                   "summary": table}, f, indent=1)
    say(f"\n{meta['versions'].get('device', 'cpu')}, torch {meta['versions']['torch']}, "
        f"float64, synced wall ms per call (median of {args.reps}); "
        f"{time.perf_counter() - T0:.0f} s in all")
    say(table)
    failed = [r for r in rows if r["status"] == "FAILED"]
    return 1 if failed else 0
