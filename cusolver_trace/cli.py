"""The ``cusolver-trace`` command (also ``python -m cusolver_trace``).

Subcommands: ``info`` (versions, libraries, GPU), ``compare`` (torch vs the
replay of its library calls), ``trace`` (which cuSOLVER/cuBLAS calls a program
makes), ``sweep`` (timing sweeps and inverse methods). Exit status: 0 = done /
agreement, 1 = a MISMATCH (or the traced program's failure), 2 = bad usage or
bad input.
"""
from __future__ import annotations

import argparse
import json
import sys

from ._console import console
from .errors import GPUUnavailableError
from .replay import OPS

EXIT_OK, EXIT_MISMATCH, EXIT_USAGE = 0, 1, 2


def _csv(kind):
    def parse(text):
        try:
            return [kind(v) for v in str(text).split(",") if v.strip()]
        except ValueError as exc:
            raise argparse.ArgumentTypeError(f"expected a comma-separated list: {exc}") from None
    return parse


def _console():
    """Rich console; when output is piped (logs, CI) use a wide fixed width so tables stay whole."""
    return console(piped_width=160)


def default_device() -> str:
    """``cuda:0`` when torch sees a GPU and the raw layer's bindings load, else ``cpu``
    (saying why on stderr when a GPU is there but CuPy / nvmath-python are not)."""
    import torch

    if not torch.cuda.is_available():
        return "cpu"
    from .raw import _load

    try:
        _load.cupy_cusolver()
        _load.nvmath_cusolverDn()
    except GPUUnavailableError as exc:
        print(f"cusolver-trace: a GPU is visible but the raw cuSOLVER layer is not usable ({exc}); "
              "running on the CPU", file=sys.stderr)
        return "cpu"
    return "cuda:0"


# -- info -------------------------------------------------------------------------------
def cmd_info(args) -> int:
    from rich.table import Table

    from .versions import versions

    v = versions()
    if args.json:
        print(json.dumps(v, indent=2, default=str))
        return EXIT_OK
    con = _console()
    t = Table(title="cusolver-trace info", show_header=False)
    for k, val in v["packages"].items():
        t.add_row(k, "not installed" if val is None else str(val))
    t.add_row("python", v["python"])
    gpu = v["gpu"]
    if gpu["available"]:
        for d in gpu["devices"]:
            t.add_row(f"cuda:{d['index']}", f"{d['name']} (sm {d['compute_capability']}, "
                      f"{d['memory_GiB']} GiB)")
        t.add_row("driver", f"{gpu.get('driver_version', '?')} (CUDA {gpu.get('driver_cuda_version')})")
    else:
        t.add_row("GPU", gpu["note"])
    libs = v.get("libraries", {})
    for name in ("cusolver", "cublas"):
        if name in libs:
            t.add_row(f"{name} version", libs[name]["version"])
    if "raw_layer" in libs:
        t.add_row("raw layer", libs["raw_layer"])
    for stem, files in libs.get("files", {}).items():
        t.add_row(f"{stem} loaded", "\n".join(files))
    if v["shared_libraries"] is not None:
        t.add_row("torch and raw layer share libcusolver/libcublas", str(v["shared_libraries"]))
    con.print(t)
    for w in v["warnings"]:
        con.print(f"[bold yellow]warning:[/] {w}")
    return EXIT_OK


# -- compare ----------------------------------------------------------------------------
def cmd_compare(args) -> int:
    import torch
    from rich.table import Table

    from .compare import compare
    from .matrices import parse_matrix_spec

    con = _console()
    device = args.device or default_device()
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise ValueError(f"--device {device}: no CUDA GPU is visible to torch")
    if device == "cpu":
        con.print("[bold]Running on the CPU[/]: no GPU here, so torch's CPU path (its own LAPACK) "
                  "is compared with the replay through scipy's LAPACK.")
    spec = parse_matrix_spec(args.matrix)
    sizes = args.n or ([None] if spec.fixed_n() is not None else [512])
    results = []
    for dtype in args.dtype:
        for n in sizes:
            for batch in args.batch:
                for upper in args.uplo:
                    A = spec.make(n=n, batch=() if batch == 1 and not args.keep_batch_dim else (batch,),
                                  dtype=dtype, device=device, seed=args.seed).A
                    B = None
                    if args.op == "cholesky_solve":
                        g = torch.Generator().manual_seed(args.seed + 1)
                        B = torch.randn(*A.shape[:-1], args.nrhs, generator=g, dtype=torch.float64)
                        B = B.to(A.dtype).to(device)
                    c = compare(args.op, A, B, upper=upper, preferred=args.preferred,
                                repeat=args.repeat, warmup=args.warmup, timing=args.repeat > 0,
                                matrix=spec.describe())
                    results.append(c)
                    if not args.summary_only:
                        con.print(c)
                        con.print()
    if len(results) > 1:
        t = Table(title=f"{args.op}: {len(results)} comparisons on {device}")
        for col in ("dtype", "n", "batch", "uplo", "torch path", "verdict", "max ULP",
                    "ratio torch", "ratio replay", "torch ms", "replay ms", "replay/torch"):
            t.add_column(col)
        for c in results:
            s = c.spec
            tt, rt = c.torch.timing, c.replay.timing
            t.add_row(s["dtype"], str(s["n"]), str(s["batch"]), "U" if s["upper"] else "L",
                      c.path.backend, c.verdict, str(c.max_ulp_distance),
                      f"{c.torch.ratio:.3g}", f"{c.replay.ratio:.3g}",
                      "—" if tt is None else f"{tt.median_ms:.4g}",
                      "—" if rt is None else f"{rt.median_ms:.4g}",
                      "—" if c.time_ratio is None else f"{c.time_ratio:.3f}")
        con.print(t)
    if args.json:
        data = [c.to_dict() for c in results]
        with open(args.json, "w") as fh:
            json.dump(data[0] if len(data) == 1 else data, fh, indent=2, default=str)
        con.print(f"wrote {args.json}")
    bad = [c for c in results if c.verdict == "MISMATCH"]
    con.print(f"{len(results)} compared: " + ", ".join(
        f"{v} {sum(c.verdict == v for c in results)}" for v in
        ("bitwise-equal", "within-tolerance", "failed-alike", "MISMATCH")))
    return EXIT_MISMATCH if bad else EXIT_OK


def _add_compare(sub):
    p = sub.add_parser("compare", help="compare torch's op with the replay of its cuSOLVER/cuBLAS calls",
                       description="Run torch's op and the replay of exactly the library calls it "
                                   "makes on the same inputs, device and stream; report bitwise "
                                   "agreement, LAPACK ratios and timing. Lists (comma-separated) "
                                   "run every combination.")
    p.add_argument("--op", required=True, choices=OPS)
    p.add_argument("--n", type=_csv(int), default=None,
                   help="matrix order(s), e.g. 64,1000 (default 512, or the size a file/digits/"
                        "classic3 matrix has)")
    p.add_argument("--batch", type=_csv(int), default=[1], help="batch size(s)")
    p.add_argument("--nrhs", type=int, default=1, help="right-hand sides (cholesky_solve)")
    p.add_argument("--dtype", type=_csv(str), default=["float64"],
                   help="float32,float64,complex64,complex128")
    p.add_argument("--upper", dest="uplo", action="store_const", const=[True], default=[False],
                   help="use the upper triangle (default lower)")
    p.add_argument("--uplo", dest="uplo", type=lambda s: [v == "upper" for v in s.split(",")],
                   help="lower, upper or lower,upper")
    p.add_argument("--matrix", default="random",
                   help="input spec: random, random:cond=1e6, lapack:ill, classic3, file:PATH, digits")
    p.add_argument("--device", default=None, help="cuda:0, cuda:1, ... or cpu (default: cuda:0 if present)")
    p.add_argument("--preferred", choices=["default", "cusolver", "magma"], default=None,
                   help="torch.backends.cuda.preferred_linalg_library during the torch call")
    p.add_argument("--repeat", type=int, default=20, help="timed runs per side (0: no timing)")
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--keep-batch-dim", action="store_true", help="batch 1 as (1, n, n) instead of (n, n)")
    p.add_argument("--summary-only", action="store_true", help="print only the summary table")
    p.add_argument("--json", metavar="PATH", help="write the comparison(s) as JSON")
    p.set_defaults(func=cmd_compare)


# -- devices ------------------------------------------------------------------------------
def cmd_devices(args) -> int:
    from .checks import bitwise_equal
    from .versions import loaded_libraries
    from .workflow import render, run_op, run_workflow, visible_devices

    con = _console()
    devices = args.device or visible_devices()
    if devices == ["cpu"]:
        con.print("No GPU visible: running on the CPU (torch's LAPACK vs scipy's LAPACK).")
    kw = dict(repeat=args.repeat, warmup=args.warmup, dtype=args.dtype)
    if args.op:
        n = args.n or 1024
        runs = run_op(args.op, devices, n=n, batch=args.batch, nrhs=args.nrhs, **kw)
        title = f"{args.op} n={n} batch={args.batch} {args.dtype}: torch vs replay on each device"
    else:
        n = args.n or 4096
        runs = run_workflow(devices, n=n, **kw)
        title = f"hello_cholesky workflow n={n} {args.dtype}: cholesky → cholesky_inverse → cholesky(upper)"
    con.print(render(runs, title))
    for stem, files in loaded_libraries().items():
        if files and stem in ("libcusolver", "libcublas"):
            con.print(f"{stem} used by every device's run (one process): {', '.join(files)}")
    if args.json:
        import json

        data = [{"device": r.device, "name": r.name, "torch": r.torch.to_dict(),
                 "replay": r.replay.to_dict(), "replay_over_torch": r.ratio,
                 "torch_equals_replay_bitwise": r.torch_equals_replay,
                 "equals_first_device_bitwise": bitwise_equal(r.U, runs[0].U)} for r in runs]
        with open(args.json, "w") as fh:
            json.dump(data, fh, indent=2)
    bad = [r for r in runs if not r.torch_equals_replay and r.device != "cpu"]
    return EXIT_MISMATCH if bad else EXIT_OK


def _add_devices(sub):
    p = sub.add_parser("devices", help="the hello_cholesky workflow (or one op) on every visible GPU",
                       description="Runs the original hello_cholesky workflow (or --op) with torch and "
                                   "with the replay on each GPU in turn, timed with CUDA events after "
                                   "warm-up; prints per-device medians, their ratios, and bit-for-bit "
                                   "agreement between torch and the replay and across devices.")
    p.add_argument("--op", choices=OPS, default=None)
    p.add_argument("--n", type=int, default=None, help="matrix order (default 4096; 1024 with --op)")
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--nrhs", type=int, default=1)
    p.add_argument("--dtype", default="float64")
    p.add_argument("--device", action="append", help="restrict to these devices (repeatable)")
    p.add_argument("--repeat", type=int, default=10)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--json", metavar="PATH")
    p.set_defaults(func=cmd_devices)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="cusolver-trace",
        description="Call cuSOLVER directly, replay the calls torch makes for its Cholesky family, "
                    "and check results and timing against torch.")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("info", help="versions, loaded libcusolver/libcublas, GPU")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=cmd_info)
    _add_compare(sub)
    _add_devices(sub)
    try:
        from .tracing import command as trace_command
    except ImportError:  # pragma: no cover - the trace package is part of the distribution
        trace_command = None
    if trace_command is not None:
        trace_command.register(sub)
    try:
        from . import sweep
    except ImportError:
        sweep = None
    if sweep is not None:
        sweep.register(sub)
    return parser


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except (ValueError, TypeError, FileNotFoundError, GPUUnavailableError) as exc:
        print(f"cusolver-trace {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
