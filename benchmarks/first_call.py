"""The first ``method="auto"`` call of a new shape on a cold kernel cache, against torch (no
first-call stall: ``auto`` runs torch's path while the kernel is built in the background).

    python3 benchmarks/first_call.py [--cases 1000x64,300x100] [--timeout 600] [--repeat 5]
                                     [--json first_call.json] [--no-warmup] [--cold-inputs]

``XDG_CACHE_HOME`` points at a fresh temporary directory (``CUSOLVER_TRACE_CACHE`` unset):
nothing is compiled. The process is first warmed: the ``cuda13-fused`` extra is imported (its
seconds reported), the torch ops that make a case's inputs run once on 10 x 8 x 8 (a CUDA
generator, ``randn``, a batched matmul, ``linalg.cholesky``), and ``auto`` is called on a shape
it sends to torch (CuPy, cuSOLVER's handles, the check kernel): what is measured is the first
call of a new shape, not the first call of the process. ``--cold-inputs`` leaves out the
inputs' ops from that warm-up: each case's inputs are then made by the process's first
``randn``, matmul and ``linalg.cholesky``, and the first call also pays for the caches those
first-in-process ops leave cold (on the H200, about 0.2-0.4 x torch's call at 1000 x 64, for
``method="torch"`` as for ``auto``: benchmarks/results/h200-2026-12-04-b/README.md). Then, per
case (float64 batch x n; A SPD, L = ``torch.linalg.cholesky(A)``):

1. ``torch.cholesky_inverse(L)``, warm: the median wall time of synchronized calls;
2. the first ``cusolver_trace.cholesky_inverse(L, method="auto")``: wall time, synchronized.
   Goal: at most 2 x torch's (``auto`` runs torch's path while the fused kernel is built in
   the background), and the result passes LAPACK's pot03 < 30;
3. calls again in a loop until ``cusolver_trace.inverse_method(L, "auto")`` says ``fused``:
   after how many calls and seconds (``--timeout``);
4. the 10th call after that: which method runs (goal: fused), its wall time, pot03; and the
   slowest of every call between the first and that one (the background build's one-time
   costs, such as starting the build process, land in one of them).

A first call is one sample: steps 1 and 2 are repeated in ``--repeat`` - 1 fresh processes,
each on its own cold cache and warmed the same way, and the goal is on the median of the
``--repeat`` ratios (each listed in the JSON, their range in the table).

Then ``cusolver-trace warmup`` of the default kernel list in a fresh process on another cold
cache: the wall time in all and, per kernel, cached / compiled and the seconds of each stage.
Prints a table and writes JSON. Exit 0 when every goal is met, 1 otherwise, 2 where it cannot
run (no GPU, no extra). Uses only public entry points. Needs a GPU and the extra.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time

CASES = ((1000, 64), (300, 100))
RATIO_GOAL = 2.0
AFTER = 10   # the call after readiness that is checked


def parse_cases(text: str) -> list[tuple[int, int]]:
    """``"1000x64,300x100"`` -> ``[(1000, 64), (300, 100)]``: batch x n, each an integer from 1
    to 10⁹ in plain decimal digits (the CLI's parser), no case named twice."""
    from cusolver_trace.cli._common import integer

    one = integer(1, 10**9)
    out = []
    for part in text.split(","):
        bits = part.split("x")
        try:
            if len(bits) != 2:
                raise argparse.ArgumentTypeError("not two numbers joined by 'x'")
            case = (one(bits[0]), one(bits[1]))
        except argparse.ArgumentTypeError as exc:
            raise argparse.ArgumentTypeError(f"a case is BATCHxN (as 1000x64,300x100), got "
                                             f"{part!r}: {exc}") from None
        if case in out:
            raise argparse.ArgumentTypeError(f"the case {part!r} is named twice")
        out.append(case)
    return out


def cold_env(root: str) -> dict:
    """The environment of a process whose kernel cache is ``root`` (empty)."""
    env = dict(os.environ, XDG_CACHE_HOME=root)
    env.pop("CUSOLVER_TRACE_CACHE", None)
    return env


def wall(torch, fn) -> tuple[float, object]:
    """``(seconds, result)`` of one synchronized call."""
    torch.cuda.synchronize()
    t = time.perf_counter()
    out = fn()
    torch.cuda.synchronize()
    return time.perf_counter() - t, out


def make_inputs(torch, batch: int, n: int):
    """``(A, L)``: ``batch`` SPD float64 matrices of order ``n`` on the GPU (``G Gᵀ / n + I``,
    G standard normal from a generator seeded with ``n``) and their Cholesky factors."""
    g = torch.Generator(device="cuda").manual_seed(n)
    G = torch.randn(batch, n, n, device="cuda", dtype=torch.float64, generator=g)
    A = G @ G.mT / n + torch.eye(n, device="cuda", dtype=torch.float64)
    del G
    return A, torch.linalg.cholesky(A)


def first_call(torch, ct, checks, batch: int, n: int):
    """Steps 1 and 2: ``(row, A, L)``, the row holding ``torch_s``, ``first_auto_s``,
    ``method_after_first``, ``first_pot03`` and ``ratio``."""
    A, L = make_inputs(torch, batch, n)
    row = {"batch": batch, "n": n, "dtype": "float64"}
    for _ in range(3):
        wall(torch, lambda: torch.cholesky_inverse(L))
    row["torch_s"] = statistics.median(wall(torch, lambda: torch.cholesky_inverse(L))[0]
                                       for _ in range(20))
    row["first_auto_s"], X = wall(torch, lambda: ct.cholesky_inverse(L, method="auto"))
    row["method_after_first"] = ct.inverse_method(L, "auto")   # torch: the kernel is building
    row["first_pot03"] = float(checks.pot03(A, X))
    row["ratio"] = row["first_auto_s"] / row["torch_s"]
    return row, A, L


def measure_case(torch, ct, checks, batch: int, n: int, timeout: float) -> dict:
    row, A, L = first_call(torch, ct, checks, batch, n)
    start, calls, row["slowest_next_s"] = time.perf_counter(), 1, 0.0
    while ct.inverse_method(L, "auto") != "fused":
        if time.perf_counter() - start > timeout:
            row.update(calls_until_fused=None, s_until_fused=None)
            return row
        s, _ = wall(torch, lambda: ct.cholesky_inverse(L, method="auto"))
        row["slowest_next_s"] = max(row["slowest_next_s"], s)
        calls += 1
        time.sleep(0.05)
    row["calls_until_fused"] = calls
    row["s_until_fused"] = time.perf_counter() - start
    for _ in range(AFTER - 1):
        s, _ = wall(torch, lambda: ct.cholesky_inverse(L, method="auto"))
        row["slowest_next_s"] = max(row["slowest_next_s"], s)
    row["after_method"] = ct.inverse_method(L, "auto")
    row["after_s"], X = wall(torch, lambda: ct.cholesky_inverse(L, method="auto"))
    row["after_pot03"] = float(checks.pot03(A, X))
    return row


def run_repeats(cases, count: int, timeout: float, cold_inputs: bool = False) -> list[list]:
    """Steps 1 and 2 in ``count`` fresh processes (``--first-only``), each on a cold cache of
    its own: per case, the rows they printed, or ``{"error": ...}`` for a process that failed."""
    per: list[list] = [[] for _ in cases]
    arg = ",".join(f"{b}x{n}" for b, n in cases)
    for _ in range(count):
        with tempfile.TemporaryDirectory(prefix="first-call-repeat-") as root:
            try:
                p = subprocess.run([sys.executable, os.path.abspath(__file__), "--first-only",
                                    "--cases", arg] + (["--cold-inputs"] if cold_inputs else []),
                                   capture_output=True, text=True,
                                   timeout=timeout, env=cold_env(root))
                rows = json.loads(p.stdout) if p.returncode == 0 else None
                error = None if rows is not None else (p.stderr.strip()[-500:] or
                                                       f"exit {p.returncode}")
            except (subprocess.TimeoutExpired, ValueError) as e:
                rows, error = None, f"{type(e).__name__}: {e}"
        for i in range(len(cases)):
            per[i].append(rows[i] if rows is not None else {"error": error})
    return per


def with_repeats(row: dict, repeats: list[dict]) -> dict:
    """``row`` with ``repeats`` (the fresh processes' rows), ``ratios`` (this process's and
    theirs) and ``median_ratio``; ``repeats_pot03_ok`` is False where a repeat failed or its
    result missed pot03 < 30 (then the goal is not met)."""
    ratios = [row["ratio"]] + [r["ratio"] for r in repeats if "ratio" in r]
    return {**row, "repeats": repeats, "ratios": ratios,
            "median_ratio": statistics.median(ratios),
            "repeats_pot03_ok": all(r.get("first_pot03", math.inf) < 30 for r in repeats)}


def run_warmup(timeout: float) -> dict:
    """``cusolver-trace warmup`` (the default list) in a fresh process on a cold cache."""
    with tempfile.TemporaryDirectory(prefix="first-call-warmup-") as root:
        t = time.perf_counter()
        p = subprocess.run([sys.executable, "-m", "cusolver_trace", "warmup", "--json", "-"],
                           capture_output=True, text=True, timeout=timeout, env=cold_env(root))
        seconds = time.perf_counter() - t
    if p.returncode != 0:
        return {"exit": p.returncode, "wall_s": seconds, "error": p.stderr.strip()[-2000:]}
    return {"exit": 0, "wall_s": seconds, **summarize_warmup(json.loads(p.stdout)["kernels"])}


def summarize_warmup(kernels: list[dict]) -> dict:
    """Counts, the compile seconds summed (over the worker processes), the slowest kernel
    and each stage's seconds summed over the compiled kernels."""
    compiled = [k for k in kernels if k["status"] == "compiled"]
    stages: dict = {}
    for k in compiled:
        for s, v in k["stages"].items():
            stages[s] = stages.get(s, 0.0) + v
    slow = max(compiled, key=lambda k: k["seconds"], default=None)
    return {"kernels": kernels, "count": len(kernels), "compiled": len(compiled),
            "cached": sum(k["status"] == "cached" for k in kernels),
            "failed": sum(k["status"] == "failed" for k in kernels),
            "compile_s": sum(k["seconds"] for k in compiled),
            "suggested_s": sum(k["suggested_s"] for k in kernels),
            "slowest": None if slow is None else
            f"{slow['op']} n={slow['n']} {slow['dtype']}: {slow['seconds']:.1f} s",
            "stage_s": stages}


def goals(results: dict) -> list[tuple[str, str, bool]]:
    """``(what, value, met)`` per goal."""
    out = []
    for r in results["cases"]:
        case = f"{r['batch']} x {r['n']}"
        ratios = r.get("ratios") or [r["ratio"]]
        ratio = r.get("median_ratio", r["ratio"])
        value = (f"{ratio:.2f}" if len(ratios) == 1 else
                 f"{ratio:.2f} (median of {len(ratios)} processes, {min(ratios):.2f}-"
                 f"{max(ratios):.2f})")
        out.append((f"{case}: first auto call / torch (goal <= {RATIO_GOAL:g})", value,
                    ratio <= RATIO_GOAL and r["first_pot03"] < 30
                    and r.get("repeats_pot03_ok", True)))
        ok = r.get("calls_until_fused") is not None
        out.append((f"{case}: auto runs fused once built",
                    f"after {r['calls_until_fused']} calls, {r['s_until_fused']:.1f} s" if ok
                    else "not within the timeout", ok))
        if ok:
            out.append((f"{case}: call {AFTER} after that",
                        f"{r['after_method']}, {r['after_s'] * 1e3:.3f} ms",
                        r["after_method"] == "fused" and r["after_pot03"] < 30))
    w = results.get("warmup")
    if w is not None:
        out.append(("warmup of the default list (cold cache, fresh process)",
                    f"{w['wall_s']:.1f} s" + (f", {w['compiled']} compiled, {w['failed']} failed"
                                               if w["exit"] == 0 else f", exit {w['exit']}"),
                    w["exit"] == 0))
    return out


def _median_text(r: dict) -> str:
    ratios = r.get("ratios") or [r["ratio"]]
    return (f"{r.get('median_ratio', r['ratio']):.2f} of {len(ratios)} ({min(ratios):.2f}-"
            f"{max(ratios):.2f})")


def table(results: dict) -> str:
    """The results as Markdown."""
    lines = [f"{results.get('device', '?')}, torch {results.get('torch', '?')}; the extra's "
             f"import: {results.get('extra_import_s', float('nan')):.2f} s; "
             + ("--cold-inputs: the inputs' torch ops left out of the process's warm-up"
                if results.get("cold_inputs") else
                "the inputs' torch ops warmed on 10 x 8 x 8 with the process"), "",
             "| case | torch warm ms | first auto ms | ratio | median ratio (range) | auto then | "
             "calls until fused | s until fused | slowest of calls 2 to 10 after, ms | "
             "call 10 after | ms |",
             "|---" * 11 + "|"]
    for r in results["cases"]:
        until = r.get("calls_until_fused")
        lines.append(
            f"| {r['batch']} x {r['n']} | {r['torch_s'] * 1e3:.3f} | "
            f"{r['first_auto_s'] * 1e3:.3f} | {r['ratio']:.2f} | {_median_text(r)} | "
            f"{r['method_after_first']} | "
            f"{'-' if until is None else until} | "
            f"{'-' if until is None else format(r['s_until_fused'], '.1f')} | "
            f"{r.get('slowest_next_s', 0) * 1e3:.3f} | {r.get('after_method', '-')} | "
            f"{format(r['after_s'] * 1e3, '.3f') if 'after_s' in r else '-'} |")
    w = results.get("warmup")
    if w is not None and w["exit"] == 0:
        lines += ["", f"warmup: {w['count']} kernels in {w['wall_s']:.1f} s ({w['compiled']} "
                  f"compiled, {w['cached']} cached, {w['failed']} failed; {w['compile_s']:.1f} s "
                  f"of compiling over the processes, slowest {w['slowest']}); stages summed: "
                  + ", ".join(f"{s} {v:.1f} s" for s, v in w["stage_s"].items()), "",
                  "| op | n | dtype | status | s | suggested s | stages |", "|---" * 7 + "|"]
        for k in w["kernels"]:
            lines.append(f"| {k['op']} | {k['n']} | {k['dtype']} | {k['status']} | "
                         f"{k['seconds']:.1f} | {k['suggested_s']:.2f} | "
                         + ", ".join(f"{s} {v:.2f}" for s, v in k["stages"].items()) + " |")
    elif w is not None:
        lines += ["", f"warmup: exit {w['exit']}: {w.get('error', '')}"]
    lines += ["", "| goal | value | met |", "|---|---|---|"]
    lines += [f"| {what} | {value} | {'yes' if met else 'NO'} |"
              for what, value, met in goals(results)]
    return "\n".join(lines)


def seconds(text: str) -> float:
    """A finite number of seconds > 0, written plainly (the CLI's parser)."""
    from cusolver_trace.cli._common import number

    return number(0, exclusive=True)(text)


def count(text: str) -> int:
    """An integer from 1 to 1000 in plain decimal digits (the CLI's parser)."""
    from cusolver_trace.cli._common import integer

    return integer(1, 1000)(text)


def prepare(torch, cold_inputs: bool = False):
    """This process on a cold cache of its own, the extra imported, the inputs' torch ops run
    once on 10 x 8 x 8 (unless ``cold_inputs``), and warmed on a shape ``auto`` sends to torch:
    ``(ct, checks, results)``, or None (after one line on stderr) where there is no GPU or
    ``auto`` does not pick fused."""
    if not torch.cuda.is_available():
        print("first_call: needs a CUDA GPU", file=sys.stderr)
        return None
    cache = tempfile.mkdtemp(prefix="first-call-")
    os.environ.update(cold_env(cache))      # before any kernel is looked for
    os.environ.pop("CUSOLVER_TRACE_CACHE", None)   # (it would win over XDG_CACHE_HOME)
    import cusolver_trace as ct
    from cusolver_trace import checks, routines

    t = time.perf_counter()   # the extra, imported where auto first reaches its fused rule
    picks = routines.resolve_method("auto", 64, 1000, "float64", "cuda")
    results = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__,
               "cache": cache, "extra_import_s": time.perf_counter() - t,
               "cold_inputs": bool(cold_inputs), "cases": []}
    if picks != "fused":
        print("first_call: auto does not pick fused here (is the cuda13-fused extra installed? "
              "pip install 'cusolver-trace[cuda13-fused]')", file=sys.stderr)
        return None
    if not cold_inputs:
        make_inputs(torch, 10, 8)   # the inputs' torch ops, first in the process, not timed
    small = torch.linalg.cholesky(torch.eye(8, dtype=torch.float64, device="cuda").expand(10, 8, 8)
                                  * 2)
    for _ in range(3):   # the process warmed on a shape auto sends to torch (and its check)
        wall(torch, lambda: ct.cholesky_inverse(small, method="auto"))
    return ct, checks, results


def first_only(cases, cold_inputs: bool = False) -> int:
    """``--first-only`` (a repeat): steps 1 and 2 of each case, printed as a JSON list."""
    import torch

    ready = prepare(torch, cold_inputs)
    if ready is None:
        return 2
    ct, checks, _ = ready
    rows = []
    for batch, n in cases:
        rows.append(first_call(torch, ct, checks, batch, n)[0])
        torch.cuda.empty_cache()
    print(json.dumps(rows))
    return 0


def main(argv=None) -> int:
    from cusolver_trace._argparse import Parser
    from cusolver_trace._paths import output_problem

    p = Parser(prog="first_call.py", description=" ".join(__doc__.split("\n\n")[0].split()))
    p.add_argument("--cases", type=parse_cases,
                   default=",".join(f"{b}x{n}" for b, n in CASES), help="BATCHxN,... (float64)")
    p.add_argument("--timeout", type=seconds, default=600.0,
                   help="seconds to wait for auto to run fused, per case, and for the warm-up")
    p.add_argument("--json", default="first_call.json", help="where to write the results")
    p.add_argument("--no-warmup", action="store_true", help="skip timing cusolver-trace warmup")
    p.add_argument("--repeat", type=count, default=5,
                   help="processes in which the first call is timed (this one and fresh ones; "
                        "the goal is on the median)")
    p.add_argument("--cold-inputs", action="store_true",
                   help="leave the torch ops that make the inputs out of the process's warm-up: "
                        "the first call also pays for the caches they leave cold")
    p.add_argument("--first-only", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.first_only:
        return first_only(args.cases, args.cold_inputs)
    # before minutes of work
    problem = output_problem(args.json, "--json", reads=(__file__,), dash=False)
    if problem is not None:
        print(f"first_call: {problem}", file=sys.stderr)
        return 2
    import torch

    ready = prepare(torch, args.cold_inputs)
    if ready is None:
        return 2
    ct, checks, results = ready
    for batch, n in args.cases:
        results["cases"].append(measure_case(torch, ct, checks, batch, n, args.timeout))
        torch.cuda.empty_cache()
    if args.repeat > 1:
        per = run_repeats(args.cases, args.repeat - 1, args.timeout, args.cold_inputs)
        results["cases"] = [with_repeats(r, rep) for r, rep in zip(results["cases"], per)]
    if not args.no_warmup:
        results["warmup"] = run_warmup(args.timeout)
    print(table(results))
    with open(args.json, "w") as f:
        json.dump(results, f, indent=1)
    print(f"wrote {args.json}")
    return 0 if all(met for _, _, met in goals(results)) else 1


if __name__ == "__main__":
    sys.exit(main())
