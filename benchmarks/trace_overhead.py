"""What tracing a real program costs, and whether its report adds up (issue 26, GPU part).

    PYTHONPATH=<repo> python3 benchmarks/trace_overhead.py OUTDIR [--runs 3] [--client PATH]
                      [--client-args "--n 300"] [--n-inverse 4096] [--timeout 900] [--cpu]

On the GPU machine, with the default client (``examples/trace_botorch.py``: an exact
GPyTorch ``SingleTaskGP`` fit on 300 points of Hartmann-6, then ``qLogExpectedImprovement``
optimized with 4 restarts), it

1. runs the client untraced ``--runs`` times and traced as many times
   (``python3 -m cusolver_trace trace --json out.json -- python3 CLIENT``), and prints the
   medians of the wall times and their ratio (goal: at most 1.5);
2. reads the last traced run's JSON: its size (goal: at most 1 MB), the summary's kernels
   in library calls, kernels outside them and library kernels outside every call (goal: 0),
   and where the tracer's own time went (``tracing_s``);
3. runs ``trace --by op --json`` once and compares the sum of its rows' GPU time with the
   kernels that a plain ``torch.profiler`` run of the client (no loggers, no hook) names
   cuSOLVER / cuBLAS (goal: within 5 %);
4. times ``cusolver_trace.trace(torch.cholesky_inverse, L)`` at n = ``--n-inverse`` (goal:
   at most 5 s), twice in one process.

Every part runs in its own processes; one that fails is reported and the others go on.
Everything each run printed, and every JSON, goes to OUTDIR; a short table ends the output,
and OUTDIR/summary.json holds the same figures. Exit status 0 when every part ran (whether
the goals were met is in the table), 1 otherwise, 2 for bad arguments (one line) or without
a GPU. ``--cpu`` runs every part on a machine without one, to test the script: the figures
are of that run and no goal is judged.
"""
from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import time
import traceback

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_CLIENT = os.path.join(ROOT, "examples", "trace_botorch.py")

#: Runs the client under a plain torch.profiler (CUDA activities, no loggers, no hook) and
#: writes the kernels' total GPU ms per library (by name) to argv[1].
PROFILER_RUN = r"""
import json, runpy, sys
import torch
from torch.profiler import ProfilerActivity, profile
from cusolver_trace.tracing.kernels import classify_kernel
out, client = sys.argv[1], sys.argv[2]
sys.argv = [client] + sys.argv[3:]
acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if torch.cuda.is_available() else [])
status = 0
with profile(activities=acts) as prof:
    try:
        runpy.run_path(client, run_name="__main__")
    except SystemExit as e:
        status = e.code if isinstance(e.code, int) else 1
    if torch.cuda.is_available():
        torch.cuda.synchronize()
per, count = {}, {}
def annotation(e):  # a record_function range drawn on the GPU timeline, not a kernel
    try:
        return bool(e.is_user_annotation())
    except Exception:  # a torch without it (2.11's _KinetoEvent has no activity_type either)
        return False
for e in prof.profiler.kineto_results.events():
    if "CUDA" not in str(e.device_type()) or annotation(e):
        continue
    lib = classify_kernel(e.name())
    per[lib] = per.get(lib, 0.0) + e.duration_ns() / 1e6
    count[lib] = count.get(lib, 0) + 1
json.dump({"gpu_ms_by_library": per, "kernels_by_library": count, "status": status},
          open(out, "w"))
"""

#: Times trace(torch.cholesky_inverse, L) twice at n = argv[2]; writes the figures to argv[1].
INVERSE_RUN = r"""
import json, sys, time
import torch
import cusolver_trace as ct
out, n = sys.argv[1], int(sys.argv[2])
if not torch.cuda.is_available():
    json.dump({"skipped": "no CUDA device visible to torch"}, open(out, "w"))
    sys.exit(0)
g = torch.Generator(device="cuda").manual_seed(0)
A = torch.randn(n, n, device="cuda", dtype=torch.float64, generator=g)
L = torch.linalg.cholesky(A @ A.mT + n * torch.eye(n, device="cuda", dtype=torch.float64))
torch.cuda.synchronize()
times, notes = [], []
for _ in range(2):
    t0 = time.perf_counter()
    t = ct.trace(torch.cholesky_inverse, L)
    times.append(time.perf_counter() - t0)
    notes = t.notes
calls = [r.function for r in t.records() if r.kind == "compute"]
json.dump({"wall_s": times, "calls": calls, "notes": notes,
           "gpu_ms": t.summary().library_ms, "n": n}, open(out, "w"))
"""


def median(values):
    """Median of the numbers in ``values`` (``None`` when there are none)."""
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def run(argv, log_path, timeout, env=None):
    """Run ``argv``; its stdout and stderr go to ``log_path``. Returns (status, wall s)."""
    t0 = time.perf_counter()
    with open(log_path, "w") as log:
        log.write("$ " + shlex.join(argv) + "\n")
        log.flush()
        try:
            proc = subprocess.run(argv, stdout=log, stderr=subprocess.STDOUT, timeout=timeout,
                                  env=env, cwd=ROOT)
            status = proc.returncode
        except subprocess.TimeoutExpired:
            status = "timeout"
    return status, time.perf_counter() - t0


def trace_figures(path: str) -> dict:
    """Figures of a trace JSON: its size and what its summary says about the kernels.

    Parameters
    ----------
    path : str
        A ``cusolver-trace trace --json`` file.

    Returns
    -------
    dict
        ``bytes``, ``timed``, ``library_gpu_ms`` (the sum of the summary's rows),
        ``attributed_kernels``, ``outside_kernels``, ``unattributed_library_kernels``,
        ``calls``, ``wall_s``, ``tracing_s``.
    """
    with open(path) as fh:
        d = json.load(fh)
    s = d.get("summary") or {}
    rows = s.get("rows") or []
    return {"bytes": os.path.getsize(path), "timed": s.get("timed"),
            "library_gpu_ms": sum(r.get("total_ms") or 0.0 for r in rows) if s.get("timed") else None,
            "attributed_kernels": s.get("attributed_kernels"),
            "outside_kernels": s.get("outside_kernels"),
            "unattributed_library_kernels": s.get("unattributed_library_kernels"),
            "calls": s.get("calls"), "wall_s": d.get("wall_s"),
            "tracing_s": d.get("tracing_s") or {}}


def library_ms(profiler_json: dict) -> float:
    """cuSOLVER + cuBLAS kernel ms of a plain profiler run (by kernel name)."""
    per = profiler_json.get("gpu_ms_by_library") or {}
    return per.get("cuSOLVER", 0.0) + per.get("cuBLAS", 0.0)


def _part(name: str, results: dict, fn) -> None:
    """Run one part; record its figures, or why it failed (the others go on)."""
    try:
        results[name] = fn()
    except Exception as e:  # one failing part must not stop the others
        results[name] = {"error": f"{type(e).__name__}: {e}", "traceback": traceback.format_exc()}


def client_args(text: str) -> list[str]:
    """``--client-args``: one string split as a shell would (``shlex``)."""
    try:
        return shlex.split(text)
    except ValueError as e:   # an unbalanced quote
        raise argparse.ArgumentTypeError(f"cannot split {text!r} into arguments ({e})") from None


def output_names(runs: int) -> list[str]:
    """Every file the script writes into OUTDIR."""
    names = [f"{kind}-{i}.{ext}" for i in range(runs) for kind, ext in
             (("untraced", "log"), ("traced", "log"), ("traced", "json"))]
    return names + ["by-op.log", "by-op.json", "profiler.log", "profiler.json",
                    "trace-inverse.log", "trace-inverse.json", "summary.json"]


def main(argv=None) -> int:
    if ROOT not in sys.path:   # this checkout's package, as its runs get (PYTHONPATH below)
        sys.path.insert(0, ROOT)
    from cusolver_trace._argparse import Parser
    from cusolver_trace._paths import same_file
    from cusolver_trace.cli._common import integer, number

    p = Parser(prog="trace_overhead.py", description=__doc__.splitlines()[0])
    p.add_argument("outdir", help="folder for every run's output, the JSONs and summary.json")
    p.add_argument("--runs", type=integer(1), default=3, help="untraced and traced runs each")
    p.add_argument("--client", default=DEFAULT_CLIENT,
                   help="the program to trace (a path from the current folder)")
    p.add_argument("--client-args", type=client_args, default=[],
                   help="its arguments, one string split as a shell would")
    p.add_argument("--n-inverse", type=integer(1), default=4096, help="n of the trace(fn) timing")
    p.add_argument("--timeout", type=number(0, exclusive=True), default=900.0,
                   help="seconds per run")
    p.add_argument("--cpu", action="store_true",
                   help="run every part without a GPU, to test this script (no goal is judged)")
    args = p.parse_args(argv)
    if not args.outdir:
        p.error("OUTDIR is empty")
    out = os.path.abspath(args.outdir)
    client_path = os.path.abspath(args.client)
    if not os.path.isfile(client_path):
        p.error(f"--client {args.client}: no such file")
    clash = [n for n in output_names(args.runs) if same_file(client_path, os.path.join(out, n))]
    if clash:
        p.error(f"--client {args.client} is {clash[0]}, an output of this script in OUTDIR; "
                "it would be overwritten")
    if not args.cpu:
        import torch

        if not torch.cuda.is_available():
            print("trace_overhead.py: needs a CUDA GPU (--cpu runs the parts on the CPU, to "
                  "test the script)", file=sys.stderr)
            return 2
    try:
        os.makedirs(out, exist_ok=True)
    except OSError as e:
        p.error(f"cannot make OUTDIR {args.outdir}: {e.strerror or e}")
    py = sys.executable
    client = [py, client_path, *args.client_args]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [ROOT] + [x for x in os.environ.get("PYTHONPATH", "").split(os.pathsep) if x])}
    trace_cmd = [py, "-m", "cusolver_trace", "trace"]
    results: dict = {"client": shlex.join(client)}

    def untraced():
        walls = []
        for i in range(args.runs):
            status, wall = run(client, os.path.join(out, f"untraced-{i}.log"), args.timeout, env)
            if status != 0:
                raise RuntimeError(f"untraced run {i} exited with {status} (untraced-{i}.log)")
            walls.append(wall)
        return {"wall_s": walls, "median_s": median(walls)}

    def traced():
        walls = []
        for i in range(args.runs):
            js = os.path.join(out, f"traced-{i}.json")
            status, wall = run(trace_cmd + ["--json", js, "--", *client],
                               os.path.join(out, f"traced-{i}.log"), args.timeout, env)
            if status != 0:
                raise RuntimeError(f"traced run {i} exited with {status} (traced-{i}.log)")
            walls.append(wall)
        figures = trace_figures(os.path.join(out, f"traced-{args.runs - 1}.json"))
        return {"wall_s": walls, "median_s": median(walls), **figures}

    def by_op():
        js = os.path.join(out, "by-op.json")
        status, wall = run(trace_cmd + ["--by", "op", "--json", js, "--", *client],
                           os.path.join(out, "by-op.log"), args.timeout, env)
        if status != 0:
            raise RuntimeError(f"trace --by op exited with {status} (by-op.log)")
        return {"wall_s": wall, **trace_figures(js)}

    def profiler():
        js = os.path.join(out, "profiler.json")
        status, wall = run([py, "-c", PROFILER_RUN, js, *client[1:]],
                           os.path.join(out, "profiler.log"), args.timeout, env)
        if status != 0 or not os.path.isfile(js):
            raise RuntimeError(f"the plain profiler run exited with {status} (profiler.log)")
        with open(js) as fh:
            d = json.load(fh)
        if d.get("status"):
            raise RuntimeError(f"the client exited with {d['status']} under the plain profiler "
                               "(profiler.log)")
        return {"wall_s": wall, "library_gpu_ms": library_ms(d), **d}

    def inverse():
        js = os.path.join(out, "trace-inverse.json")
        status, _wall = run([py, "-c", INVERSE_RUN, js, str(args.n_inverse)],
                            os.path.join(out, "trace-inverse.log"), args.timeout, env)
        if status != 0:
            raise RuntimeError(f"the trace(fn) timing exited with {status} (trace-inverse.log)")
        with open(js) as fh:
            return json.load(fh)

    for name, fn in (("untraced", untraced), ("traced", traced), ("by_op", by_op),
                     ("profiler", profiler), ("trace_inverse", inverse)):
        print(f"[{time.strftime('%H:%M:%S')}] {name} ...", flush=True)
        _part(name, results, fn)
        if "error" in results[name]:
            print(f"    failed: {results[name]['error']}", flush=True)
    rows = table(results, args.runs, args.n_inverse, judged=not args.cpu)
    results["table"] = rows
    with open(os.path.join(out, "summary.json"), "w") as fh:
        json.dump(results, fh, indent=1, default=str)
    width = max(len(r[0]) for r in rows)
    print()
    for what, value, goal in rows:
        print(f"{what:<{width}}  {value:<28} {goal}")
    print(f"\nfull output: {out}")
    return 1 if any("error" in v for v in results.values() if isinstance(v, dict)) else 0


def table(results: dict, runs: int, n_inverse: int, *,
          judged: bool = True) -> list[tuple[str, str, str]]:
    """The short table: (what, value, goal and verdict) rows from the parts' results
    (``judged=False``, a ``--cpu`` run: each goal says it is not judged)."""
    def get(part, key):
        r = results.get(part) or {}
        return None if "error" in r else r.get(key)

    def fmt(v, spec):
        return "-" if v is None else format(v, spec)

    u, t = get("untraced", "median_s"), get("traced", "median_s")
    ratio = None if not (u and t) else t / u
    size = get("traced", "bytes")
    stray = get("traced", "unattributed_library_kernels")
    ops, prof = get("by_op", "library_gpu_ms"), get("profiler", "library_gpu_ms")
    dev = None if not (ops is not None and prof) else (ops / prof - 1.0) * 100.0
    inv = get("trace_inverse", "wall_s")
    skipped = (results.get("trace_inverse") or {}).get("skipped")

    def verdict(ok):
        if not judged:
            return "not judged (--cpu)"
        return "" if ok is None else ("met" if ok else "NOT met")

    cost = get("traced", "tracing_s") or {}
    spent = ", ".join(f"{k} {v:.2f} s" for k, v in sorted(cost.items(), key=lambda kv: -kv[1])
                      if isinstance(v, (int, float)))
    return [
        (f"untraced wall, median of {runs}", fmt(u, ".2f") + " s", ""),
        (f"traced wall, median of {runs}", fmt(t, ".2f") + " s", ""),
        ("traced / untraced", fmt(ratio, ".2f"),
         "goal <= 1.5: " + verdict(None if ratio is None else ratio <= 1.5)),
        ("tracer's own time (last traced run)", spent or "-", ""),
        ("trace JSON size", "-" if size is None else f"{size / 1e6:.3f} MB",
         "goal <= 1 MB: " + verdict(None if size is None else size <= 1_000_000)),
        ("kernels in library calls", fmt(get("traced", "attributed_kernels"), "d"), ""),
        ("kernels outside library calls", fmt(get("traced", "outside_kernels"), "d"), ""),
        ("library kernels outside every call", fmt(stray, "d"),
         "goal 0: " + verdict(None if stray is None else stray == 0)),
        ("--by op GPU ms (sum of rows)", fmt(ops, ".3f"), ""),
        ("profiler cuSOLVER+cuBLAS ms", fmt(prof, ".3f"), ""),
        ("--by op vs profiler", "-" if dev is None else f"{dev:+.1f} %",
         "goal within 5 %: " + verdict(None if dev is None else abs(dev) <= 5.0)),
        (f"trace(cholesky_inverse) n={n_inverse}",
         skipped or ("-" if not inv else " / ".join(f"{x:.2f} s" for x in inv)),
         "goal <= 5 s (first call): " + verdict(None if not inv else inv[0] <= 5.0)),
    ]


if __name__ == "__main__":
    sys.exit(main())
