"""Issue 28's table: eigenvalues and eigenvectors of batches of Hermitian matrices,
cusolver-trace's eigensolver rows against torch, JAX and CuPy, in one process on one GPU.

    python3 benchmarks/eigh_table.py OUT.json [--deadline 220] [--cases 100000x3,100x128]
                                              [--reps 7]

For each batch × n (float64; batch 1 is one unbatched matrix; a seeded Hermitian matrix with a
geometric spectrum of random signs, cond 1e3), single calls, each followed by a synchronize,
host wall clock (``time.perf_counter``), the median of ``--reps`` (>= 7) calls after two
warm-up calls, of

* torch: ``torch.linalg.eigh(A)`` (it raises from batch 65,536 on: reported, not fatal);
* JAX (``jax.jit(jnp.linalg.eigh)``, x64 on, no preallocation) and CuPy
  (``cupy.linalg.eigh``): a peer that is missing or fails is reported, never fatal;
* ``cusolver_trace.eigh(A, method=m)`` for ``m = "auto"`` and every row of
  ``routines.SYEV`` (checks on: the public entry point as users call it).

Every result is judged by LAPACK's eigen ratios (:func:`cusolver_trace.checks.eig_check`:
dsyt21's residual and orthogonality, eigenvalues against a float64 reference; < 30 passes).
Rows that loop over the matrices in Python (``Xsyevd``, ``syevj``, ``syevd``) are skipped above
batch 1000; a call whose predicted time (by n³ from the previous case of the same batch) passes
3 s is skipped; a first call over 1 s is its only sample. The JSON is rewritten after every case.
The short table comes last: per case, torch, JAX, CuPy, ours ``auto`` (and the row it ran), our
best row, and their ratios to torch and to the best peer.

``EIGH_TABLE_DRY=1`` runs the logic on the CPU at small sizes (torch and our CPU rows only).
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

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
# this checkout's package, whatever else is installed
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

CASES = ((100000, 3), (32768, 3), (10000, 8), (1000, 32), (100, 128), (8, 512), (1, 1024),
         (1, 4096))
DRY_CASES = ((100, 3), (10, 8), (1, 64))
LOOP_ROWS = {"Xsyevd", "syevj", "syevd"}
LOOP_MAX_BATCH = 1000
CAP_S = 3.0          # skip a call predicted to take longer than this
ONE_CALL_S = 1.0     # a first call longer than this is timed once
DRY = os.environ.get("EIGH_TABLE_DRY") == "1"
T0 = time.perf_counter()


def say(*a):
    print(*a, flush=True)


class Peers:
    """torch, and JAX / CuPy when they load (``why`` says why not)."""

    def __init__(self):
        import torch

        self.torch = torch
        self.dev = "cpu" if DRY else "cuda:0"
        self.jax = self.jnp = self.cupy = None
        self.why = {}
        if DRY:
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
            self.jeigh = jax.jit(jnp.linalg.eigh)
            self.jdev = [d for d in jax.devices() if d.platform == "gpu"][0]
        except Exception as exc:
            self.jax = None
            self.why["jax"] = f"{type(exc).__name__}: {exc}"

    def sync(self):
        if not DRY:
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
        if not DRY:
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


def make_inputs(P, batch, n):
    from cusolver_trace.matrices import structured

    shape = () if batch == 1 else (batch,)
    return structured("hermitian", n, batch=shape, cond=1e3, dtype="float64", device=P.dev,
                      seed=0)


def calls(P, A, batch, n):
    """``[(op, who, method label, callable returning (w, V))]``."""
    import cusolver_trace as ct
    from cusolver_trace import routines

    torch = P.torch
    out = [("eigh", "torch", "linalg.eigh", lambda: tuple(torch.linalg.eigh(A)))]
    if P.jax is not None:
        ja = P.jax.device_put(A.cpu().numpy(), P.jdev)
        out.append(("eigh", "jax", "jnp.linalg.eigh",
                    lambda: tuple(x.block_until_ready() for x in P.jeigh(ja))))
    if P.cupy is not None:
        ca = P.cupy.from_dlpack(A)
        out.append(("eigh", "cupy", "cupy.linalg.eigh", lambda: P.cupy.linalg.eigh(ca)))
    for m in routines.SYEV.names:
        if m in ("syevjBatched",) and n > 32 or m == "jacobi" and n > 8:
            continue
        if DRY and m != "auto" and routines.SYEV.row(m).gpu_only:
            continue
        out.append(("eigh", "ours", m, lambda m=m: ct.eigh(A, method=m)))
    return out


def judge(P, op, who, result, A):
    """LAPACK's eigen ratios of a result (any kind), as ``(name, value)``."""
    import numpy as np

    from cusolver_trace import checks

    torch = P.torch

    def t(x):
        if isinstance(x, torch.Tensor):
            return x
        if isinstance(x, np.ndarray) or hasattr(x, "__array__") and not hasattr(x, "__dlpack__"):
            return torch.from_numpy(np.asarray(x)).to(A.device)
        try:
            return torch.from_dlpack(x)
        except Exception:
            return torch.from_numpy(np.asarray(x)).to(A.device)

    w, V = (t(x) for x in result)
    return "eig", float(checks.eig_check(A, w, V))


def run_case(P, batch, n, reps, prev, deadline):
    from cusolver_trace import routines

    rows = []
    A = make_inputs(P, batch, n)
    for op, who, label, fn in calls(P, A, batch, n):
        row = {"batch": batch, "n": n, "op": op, "who": who, "method": label, "resolved": label,
               "status": "ok", "samples_ms": [], "median_ms": None, "check": None,
               "ratio": None, "note": "", "error": None}
        rows.append(row)
        key = (op, who, label)
        if who == "ours" and label == "auto":
            row["resolved"] = routines.SYEV.resolve("auto", n, batch, "float64",
                                                    "cpu" if DRY else "cuda")
        if who == "ours" and batch > LOOP_MAX_BATCH and (
                label in LOOP_ROWS or (label == "auto" and row["resolved"] in LOOP_ROWS)):
            row.update(status="skipped", note=f"a Python loop over {batch} matrices")
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
            row["check"], row["ratio"] = judge(P, op, who, res, A)
            del res
            if not row["ratio"] < 30:
                row["status"] = "FAILED"
            row["samples_ms"], row["note"] = time_call(fn, P.sync, reps, first)
            row["median_ms"] = statistics.median(row["samples_ms"])
            prev[key] = (batch, n, row["median_ms"])
        except Exception as exc:   # reported in the row, never fatal
            row.update(status="ERROR", error=f"{type(exc).__name__}: {exc}",
                       trace=traceback.format_exc(limit=3))
        line = (f"{batch:>6} x {n:<5} {op:<6} {who:<6} {label:<18} "
                + (f"{row['median_ms']:10.3f} ms" if row["median_ms"] is not None else " " * 13)
                + (f"  {row['check']} {row['ratio']:.2f}" if row["ratio"] is not None else "")
                + f"  {row['status']} {row['note']} {row['error'] or ''}")
        say(line)
    del A, fn
    if not DRY:
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


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out", help="JSON file to write (rewritten after every case)")
    p.add_argument("--deadline", type=float, default=220.0,
                   help="seconds from the start after which no new call is timed (default 220)")
    p.add_argument("--cases", help="batch x n list, e.g. 10000x8,1x4096 (default: the issue's)")
    p.add_argument("--reps", type=int, default=7, help="timed calls per row, >= 7 (default 7)")
    args = p.parse_args(argv)
    if args.reps < 7:
        p.error("--reps must be >= 7")
    cases = DRY_CASES if DRY else CASES
    if args.cases:
        try:
            cases = [tuple(int(v) for v in c.lower().split("x")) for c in args.cases.split(",")]
        except ValueError:
            p.error(f"--cases: expected a list like 10000x8,1x4096, got {args.cases!r}")
    out_dir = os.path.dirname(os.path.abspath(args.out))
    os.makedirs(out_dir, exist_ok=True)
    P = Peers()
    meta = {"command": " ".join([sys.executable, *sys.argv]), "versions": P.versions(),
            "peers_missing": P.why, "reps": args.reps, "clock": "perf_counter, synced per call",
            "dtype": "float64", "cond": 1e3, "matrix": "structured('hermitian'): Q diag(λ) Qᴴ, "
            "|λ| geometric from 1 to 1e-3, random signs"}
    for name, why in P.why.items():
        say(f"{name}: not measured ({why})")
    rows, prev = [], {}
    for batch, n in cases:
        rows += run_case(P, batch, n, args.reps, prev, args.deadline)
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


if __name__ == "__main__":
    sys.exit(main())
