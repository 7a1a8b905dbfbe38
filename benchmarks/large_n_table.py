"""Large n: peak extra memory and time of every A⁻¹ method against torch, in one run (issue 27).

    PYTHONPATH=<repo> python3 benchmarks/large_n_table.py OUT.json [--n 4096,8192,16384]
                      [--repeat 7] [--dtype float64]

On a CUDA GPU, for each n, with A = X·Xᵀ/n + I (seeded) and L = torch.linalg.cholesky(A):

* ``cholesky_inverse(L)``: torch's ``torch.cholesky_inverse(L)`` (the baseline), then
  ``cusolver_trace.cholesky_inverse(L, method=m)`` for every method below, checks on;
* ``spd_inverse(A)``: torch's ``torch.cholesky_inverse(torch.linalg.cholesky(A))`` (the
  baseline), then ``cusolver_trace.spd_inverse(A, method=m)``, checks on.

Each row: the median of ``--repeat`` CUDA-event times (ms, one warm-up call first), timed call by
call alternately with its baseline's, and the ratio to the median of those baseline calls (both
under the same clocks and temperature: on the H200 the same method timed in two consecutive rows
differed by 5 % at n = 16384); the baseline's own row is timed alone. Then the peak device memory beyond what was allocated
before the call in n² elements (:func:`cusolver_trace.sweep.peak_extra`: torch's caching
allocator, the result included), the share of the DGEMM rate on the potri count (2n³/3 flops
for the inverse, n³/3 more for the factorization; the rate of one ``torch.mm`` of two n × n
matrices in the same run), and the largest relative difference from the baseline's result.
Prints a Markdown table; OUT.json holds the rows.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys

INVERSE = ("potrs", "potri", "rec_trtri_lauum", "gemm_lauum", "auto")
SPD = ("potrf_gemm_lauum", "gemm_lauum", "torch", "auto")


def _time(fns, repeat):
    """The median CUDA-event time (ms) of each of ``fns``: one warm-up call of each, then
    ``repeat`` rounds calling each once in turn."""
    import torch

    for fn in fns:
        fn()
    torch.cuda.synchronize()
    times = [[] for _ in fns]
    for _ in range(repeat):
        for fn, out in zip(fns, times):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            fn()
            b.record()
            b.synchronize()
            out.append(a.elapsed_time(b))
    return [statistics.median(t) for t in times]


def measure(n: int, dtype: str, repeat: int) -> list[dict]:
    """The rows for one n (see the module docstring)."""
    import torch

    import cusolver_trace as ct
    from cusolver_trace.sweep import peak_extra

    dt = getattr(torch, dtype)
    g = torch.Generator(device="cuda").manual_seed(n)
    X = torch.randn(n, n, device="cuda", dtype=dt, generator=g)
    A = X @ X.mT / n + torch.eye(n, device="cuda", dtype=dt)
    del X
    L = torch.linalg.cholesky(A)
    B = torch.randn(n, n, device="cuda", dtype=dt, generator=g)
    (gemm_ms,) = _time([lambda: B @ B], repeat)
    rate = 2 * n ** 3 / (gemm_ms * 1e-3)
    del B
    isz = torch.empty((), dtype=dt).element_size()
    rows = []
    for op, base, methods, call, flops in (
            ("cholesky_inverse", lambda: torch.cholesky_inverse(L), INVERSE,
             lambda m: ct.cholesky_inverse(L, method=m), 2 * n ** 3 / 3),
            ("spd_inverse", lambda: torch.cholesky_inverse(torch.linalg.cholesky(A)), SPD,
             lambda m: ct.spd_inverse(A, method=m), n ** 3)):
        ref = base()
        scale = float(ref.abs().max())
        entries = [("torch (baseline)", base)] + [(m, (lambda m=m: call(m))) for m in methods]
        for name, fn in entries:
            x = fn()
            err = float((x - ref).abs().max()) / scale
            del x
            peak = peak_extra(fn, "cuda", batch=1, n=n, itemsize=isz)
            if fn is base:
                (ms,) = _time([fn], repeat)
                base_ms = ms
            else:
                ms, base_ms = _time([fn, base], repeat)
            resolved = (ct.inverse_method(L, "auto") if op == "cholesky_inverse"
                        else ct.spd_inverse_method(A, "auto")) if name == "auto" else name
            rows.append({"n": n, "dtype": dtype, "op": op, "method": name, "resolved": resolved,
                         "ms": ms, "torch_ms": base_ms, "ratio": ms / base_ms,
                         "peak_n2": peak,
                         "dgemm_share": flops / (ms * 1e-3) / rate, "gemm_tflops": rate / 1e12,
                         "rel_diff": err})
        del ref
    return rows


def orders(text: str) -> list[int]:
    """``"4096,8192"`` -> ``[4096, 8192]`` (each an int >= 1)."""
    try:
        out = [int(x) for x in text.split(",")]
    except ValueError:
        out = []
    if not out or min(out) < 1:
        raise argparse.ArgumentTypeError(f"expected orders >= 1 separated by commas, got {text!r}")
    return out


def positive(text: str) -> int:
    """An int >= 1 (``--repeat``)."""
    try:
        v = int(text)
    except ValueError:
        v = 0
    if v < 1:
        raise argparse.ArgumentTypeError(f"expected an int >= 1, got {text!r}")
    return v


def main(argv=None) -> int:
    from cusolver_trace._argparse import Parser
    from cusolver_trace._paths import output_problem

    p = Parser(prog="large_n_table.py", description=" ".join(__doc__.split("\n\n")[0].split()))
    p.add_argument("out", help="JSON file for the rows")
    p.add_argument("--n", type=orders, default=[4096, 8192, 16384], help="orders, comma-separated")
    p.add_argument("--repeat", type=positive, default=7, help="timed calls per row (median)")
    p.add_argument("--dtype", default="float64", choices=("float32", "float64"))
    args = p.parse_args(argv)
    # before minutes of work
    problem = output_problem(args.out, "out", reads=(__file__,), dash=False)
    if problem is not None:
        print(f"large_n_table: {problem}", file=sys.stderr)
        return 2
    import torch

    if not torch.cuda.is_available():
        print("large_n_table: needs a CUDA GPU", file=sys.stderr)
        return 2
    rows = []
    print("| n | op | method | ms | torch ms (alternating) | / torch | peak extra n² | DGEMM share "
          "| max rel. diff |")
    print("|---|---|---|---|---|---|---|---|---|")
    for n in args.n:
        for r in measure(n, args.dtype, args.repeat):
            rows.append(r)
            name = r["method"] + (f" → {r['resolved']}" if r["method"] == "auto" else "")
            print(f"| {n} | {r['op']} | {name} | {r['ms']:.2f} | {r['torch_ms']:.2f} | "
                  f"{r['ratio']:.3f} | "
                  f"{r['peak_n2']:.2f} | {100 * r['dgemm_share']:.0f} % | {r['rel_diff']:.1e} |",
                  flush=True)
        torch.cuda.empty_cache()
    with open(args.out, "w") as fh:
        json.dump({"device": torch.cuda.get_device_name(0), "torch": torch.__version__,
                   "rows": rows}, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
