"""hello_cholesky, done right: Cholesky, inverse from the factor, Cholesky of that inverse
(upper) — with torch and with the replay of its cuSOLVER calls — on every visible GPU in turn
(cuda:0, cuda:1, ...), timed with CUDA events after warm-up, printing per-device times, their
ratios, and whether results agree bit for bit (torch vs replay, and across devices).

    python3 examples/hello_cholesky.py [--n 4096] [--dtype float64] [--repeat 10]

Without a GPU it runs on the CPU (LAPACK) and says so.
"""
import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout, uninstalled

from rich.console import Console  # noqa: E402

from cusolver_trace.workflow import render, run_workflow  # noqa: E402


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=4096)
    p.add_argument("--dtype", default="float64")
    p.add_argument("--repeat", type=int, default=10)
    p.add_argument("--device", action="append", help="device(s) to use (default: all GPUs, else cpu)")
    args = p.parse_args(argv)
    runs = run_workflow(args.device, n=args.n, dtype=args.dtype, repeat=args.repeat)
    con = Console(width=160) if not sys.stdout.isatty() else Console()
    if runs[0].device == "cpu":
        con.print("No GPU visible: running on the CPU (torch's LAPACK vs scipy's LAPACK).")
    con.print(render(runs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
