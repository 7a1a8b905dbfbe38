"""Time ``cusolver-trace diff`` on two synthetic traces of about one million calls each.

    PYTHONPATH=. python3 benchmarks/trace_diff_1m.py [--calls 1000000] [--seed 0]

The traces look like a training loop's: a few setup calls, then epochs of steps; a step is
15-25 calls (potrf, trsm, gemm ... with the epoch's sizes). B is A with scattered edits:
steps inserted and removed, calls whose argument changed, one epoch with a step more. Each
case is diffed as the tracer writes it (loops folded into ``{"repeat": k}`` blocks) and fully
unfolded (every call its own node), from JSON files through the public ``load_trace_json`` +
``diff_traces``; the wall time of each is printed. Nothing here needs a GPU.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from cusolver_trace.tracing.diff import diff_traces, load_trace_json  # noqa: E402

ROUTINES = [("cuSOLVER", "cusolverDnXpotrf"), ("cuSOLVER", "cusolverDnXpotrs"),
            ("cuBLAS", "cublasDtrsm_v2"), ("cuBLAS", "cublasDgemm_v2"),
            ("cuBLAS", "cublasDgemmStridedBatched"), ("cuSOLVER", "cusolverDnXpotrf_bufferSize")]


def call(lib: str, fn: str, **args) -> dict:
    return {"library": lib, "function": fn, "count": 1, "args": args}


def step(rng: random.Random, n: int) -> list[dict]:
    """One training step: 15-25 calls, fixed by the seed."""
    out = []
    for k in range(rng.randint(15, 25)):
        lib, fn = ROUTINES[rng.randrange(len(ROUTINES))]
        out.append(call(lib, fn, n=n, k=k % 4, uplo="LOWER"))
    return out


def program(total: int, seed: int, edits: int) -> tuple[list[list[dict]], list[list[dict]]]:
    """Epochs of A as lists of steps, and B's (A with ``edits`` edits)."""
    rng = random.Random(seed)
    epochs_a = []
    count = 0
    while count < total:
        n = rng.choice([256, 512, 1024, 2048])
        body = step(rng, n)
        reps = rng.randint(200, 2000)
        epochs_a.append([body] * reps)
        count += len(body) * reps
    epochs_b = [list(e) for e in epochs_a]
    for _ in range(edits):
        e = rng.randrange(len(epochs_b))
        s = rng.randrange(len(epochs_b[e]))
        what = rng.random()
        if what < 0.3:
            epochs_b[e].insert(s, step(rng, 64))              # a step of another size
        elif what < 0.6:
            del epochs_b[e][s]                                 # a step less
        else:
            changed = [dict(c) for c in epochs_b[e][s]]        # one argument changed
            changed[rng.randrange(len(changed))] = call("cuBLAS", "cublasDtrsm_v2", n=1, k=9)
            epochs_b[e][s] = changed
    return epochs_a, epochs_b


def folded(epochs: list[list[list[dict]]]) -> list[dict]:
    """Runs of identical steps as ``{"repeat": k, "calls": step}`` blocks (as the tracer folds)."""
    out = []
    for steps in epochs:
        i = 0
        while i < len(steps):
            j = i
            while j < len(steps) and steps[j] is steps[i]:
                j += 1
            out.append({"repeat": j - i, "calls": steps[i]} if j - i > 1 else None)
            if j - i == 1:
                out.extend(steps[i])
            out = [x for x in out if x is not None]
            i = j
    return out


def unfolded(epochs: list[list[list[dict]]]) -> list[dict]:
    return [c for steps in epochs for s in steps for c in s]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--calls", type=int, default=1_000_000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--edits", type=int, default=40)
    args = p.parse_args(argv)
    a, b = program(args.calls, args.seed, args.edits)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for form, make in (("folded", folded), ("unfolded", unfolded)):
            paths = []
            for name, epochs in (("a", a), ("b", b)):
                path = os.path.join(tmp, f"{form}-{name}.json")
                with open(path, "w") as fh:
                    json.dump({"schema": "cusolver-trace/trace/2", "calls": make(epochs)}, fh)
                paths.append(path)
            t0 = time.perf_counter()
            d = diff_traces(load_trace_json(paths[0]), load_trace_json(paths[1]))
            dt = time.perf_counter() - t0
            same = diff_traces(load_trace_json(paths[0]), load_trace_json(paths[0]))
            rows.append((form, d.calls_a, d.calls_b, d.changed, d.added, d.removed,
                         d.approximate, dt, same.equal, os.path.getsize(paths[0])))
    print(f"{'form':9} {'calls A':>9} {'calls B':>9} {'changed':>8} {'added':>6} {'removed':>8} "
          f"{'approx':>6} {'diff s':>7} {'A==A':>5} {'A bytes':>11}")
    for r in rows:
        print(f"{r[0]:9} {r[1]:9d} {r[2]:9d} {r[3]:8d} {r[4]:6d} {r[5]:8d} {str(r[6]):>6} "
              f"{r[7]:7.2f} {str(r[8]):>5} {r[9]:11d}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
