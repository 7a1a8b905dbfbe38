"""Issue 13's table: batches of small SPD matrices, the fused (cuSOLVERDx) inverse against torch.

    python3 benchmarks/fused_table.py [--dtype float64,float32] [--cases 10000x8,1000x32]
                                      [--json out.json]

For each batch x n: CUDA-event median per call (ms) and host wall time per call (µs, the
median of 5 loops of 100 calls without synchronization inside a loop) of

* ``torch.cholesky_inverse(L)`` (torch's default path; MAGMA for batch > 1 in torch 2.11),
* the same under ``torch.backends.cuda.preferred_linalg_library("cusolver")`` (a loop of
  ``cusolverDnXpotrs`` in torch 2.11: skipped above batch 10000, where it takes seconds),
* ``torch.linalg.inv_ex(A)`` and torch's A → A⁻¹ (``cholesky_ex`` + ``cholesky_inverse``),
* ``cusolver_trace.cholesky_inverse(L, method="fused")`` with and without its checks, and
  ``cusolver_trace.spd_inverse(A, method="fused")`` (A → A⁻¹ in one kernel), unchecked,
* a device-to-device copy of L: the bytes the fused inverse must move (read n², write n²
  per matrix). ``% copy`` = copy time / fused time: how close the kernel is to the memory
  ceiling measured in the same run.

L comes from ``torch.linalg.cholesky`` (column-major, as users have it). Every fused
result is checked with LAPACK's ``?pot03`` (< 30). Kernels are compiled on first use
(seconds each) and cached on disk; run twice for steady numbers. Needs a GPU and the
``cuda13-fused`` extra.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

CASES = ((100000, 4), (10000, 8), (100000, 16), (1000, 32), (1000, 64), (100, 128))
GOALS = {(10000, 8): 0.03, (1000, 32): 0.04, (100000, 16): 0.25, (1000, 64): 0.10}  # float64


def gpu_ms(torch, fn, reps=25, warm=3):
    """Median of per-call CUDA-event times."""
    for _ in range(warm):
        fn()
    ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
          for _ in range(reps)]
    for a, b in ev:
        a.record()
        fn()
        b.record()
    torch.cuda.synchronize()
    return statistics.median(a.elapsed_time(b) for a, b in ev)


def host_us(torch, fn, calls=100, loops=5):
    """Host wall time per call: the median over ``loops`` loops of ``calls`` calls each, no
    synchronization inside a loop (one before each, so a loop starts with an idle GPU)."""
    per_loop = []
    for _ in range(loops):
        torch.cuda.synchronize()
        t = time.perf_counter()
        for _ in range(calls):
            fn()
        per_loop.append((time.perf_counter() - t) / calls * 1e6)
    torch.cuda.synchronize()
    return statistics.median(per_loop)


def measure(torch, ct, checks, dtype, batch, n):
    tdt = getattr(torch, dtype)
    g = torch.Generator(device="cuda").manual_seed(0)
    G = torch.randn(batch, n, n, device="cuda", dtype=tdt, generator=g)
    A = G @ G.mT / n + torch.eye(n, device="cuda", dtype=tdt)
    del G
    L = torch.linalg.cholesky(A)
    copy_dst = torch.empty_like(L)
    calls = {
        "copy": lambda: copy_dst.copy_(L),
        "torch": lambda: torch.cholesky_inverse(L),
        "torch.linalg.inv_ex": lambda: torch.linalg.inv_ex(A),
        "torch A->inv": lambda: torch.cholesky_inverse(torch.linalg.cholesky_ex(A)[0]),
        "fused": lambda: ct.cholesky_inverse(L, method="fused", check=False),
        "fused checked": lambda: ct.cholesky_inverse(L, method="fused"),
        "fused A->inv": lambda: ct.spd_inverse(A, method="fused", check=False),
    }
    row = {"dtype": dtype, "batch": batch, "n": n, "ms": {}, "host_us": {}}
    row["pot03"] = float(checks.pot03(A, calls["fused"]()))
    row["pot03_A_to_inv"] = float(checks.pot03(A, calls["fused A->inv"]()))
    for name, fn in calls.items():
        row["ms"][name] = gpu_ms(torch, fn)
        row["host_us"][name] = host_us(torch, fn)
    if batch <= 10000:
        old = torch.backends.cuda.preferred_linalg_library()
        torch.backends.cuda.preferred_linalg_library("cusolver")
        try:
            fn = calls["torch"]
            row["ms"]["torch cusolver"] = gpu_ms(torch, fn, reps=5 if batch >= 10000 else 15, warm=1)
            row["host_us"]["torch cusolver"] = host_us(torch, fn, calls=3, loops=1)
        finally:
            torch.backends.cuda.preferred_linalg_library(old)
    row["pct_copy"] = 100.0 * row["ms"]["copy"] / row["ms"]["fused"]
    return row


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dtype", default="float64,float32")
    p.add_argument("--cases", default=",".join(f"{b}x{n}" for b, n in CASES))
    p.add_argument("--json")
    args = p.parse_args(argv)
    import torch

    import cusolver_trace as ct
    from cusolver_trace import checks
    from cusolver_trace.backends import fused

    why = fused.available()
    if why is not None:
        print(f"fused_table: {why}", file=sys.stderr)
        return 2
    cases = [tuple(int(v) for v in c.split("x")) for c in args.cases.split(",")]
    rows = []
    cols = ("torch", "torch cusolver", "torch.linalg.inv_ex", "torch A->inv", "fused",
            "fused checked", "fused A->inv", "copy")
    print(f"{torch.cuda.get_device_name(0)}, torch {torch.__version__}; ms per call "
          "(CUDA-event median), host µs per call in brackets")
    print("| dtype | batch x n | " + " | ".join(cols) + " | % copy | pot03 |")
    print("|---" * (len(cols) + 4) + "|")
    for dtype in args.dtype.split(","):
        for batch, n in cases:
            r = measure(torch, ct, checks, dtype, batch, n)
            rows.append(r)
            cells = []
            for c in cols:
                v = r["ms"].get(c)
                cells.append("—" if v is None else f"{v:.4f} ({r['host_us'][c]:.0f})")
            goal = GOALS.get((batch, n)) if dtype == "float64" else None
            mark = "" if goal is None else (" ✓" if r["ms"]["fused"] <= goal else f" (goal {goal})")
            print(f"| {dtype} | {batch} x {n} | " + " | ".join(cells)
                  + f" | {r['pct_copy']:.0f}{mark} | {max(r['pot03'], r['pot03_A_to_inv']):.2f} |",
                  flush=True)
            torch.cuda.empty_cache()
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(0), "torch": torch.__version__,
                       "fused_versions": fused.versions(), "rows": rows}, f, indent=1)
    bad = [r for r in rows if not (r["pot03"] < 30 and r["pot03_A_to_inv"] < 30)]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
