"""hello_cholesky, done right: Cholesky, inverse from the factor, Cholesky of that inverse
(upper) — with torch and with the replay of its cuSOLVER calls — on every visible GPU in turn
(cuda:0, cuda:1, ...), timed with CUDA events after warm-up, printing per-device times, their
ratios, and whether results agree bit for bit (torch vs replay, and across devices).

    python3 examples/hello_cholesky.py [--n N] [--dtype float64] [--repeat 10]

n defaults to 4096 on a GPU and to 512 on the CPU (where n = 4096 takes minutes). Without a
GPU it runs on the CPU (LAPACK) and says so. Work that takes more than 2 s shows a progress
line on stderr.
"""
import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout, uninstalled

from cusolver_trace._console import console, emit, progress  # noqa: E402
from cusolver_trace.cli.devices import CPU_DEFAULT_N  # noqa: E402
from cusolver_trace.workflow import render, run_workflow, visible_devices  # noqa: E402

GPU_DEFAULT_N = 4096


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=None,
                   help=f"matrix order (default {GPU_DEFAULT_N} on a GPU, {CPU_DEFAULT_N} on the CPU)")
    p.add_argument("--dtype", default="float64", help="default float64")
    p.add_argument("--repeat", type=int, default=10, help="timed runs per side (default 10)")
    p.add_argument("--device", action="append", help="device(s) to use (default: all GPUs, else cpu)")
    args = p.parse_args(argv)
    devices = args.device or visible_devices()
    on_cpu = devices == ["cpu"]
    n = args.n or (CPU_DEFAULT_N if on_cpu else GPU_DEFAULT_N)
    con = console()
    if on_cpu:
        con.print(f"No GPU visible: running on the CPU (torch's LAPACK vs scipy's LAPACK), n = {n}.")
    with progress("hello_cholesky", 1) as bar:
        bar.step(f"n = {n} {args.dtype} on {', '.join(devices)}")
        runs = run_workflow(devices, n=n, dtype=args.dtype, repeat=args.repeat)
    emit(con, render(runs, f"hello_cholesky workflow n={n} {args.dtype}: cholesky → "
                           "cholesky_inverse → cholesky(upper)"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
