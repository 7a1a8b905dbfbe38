"""``cusolver-trace sweep``: time torch against each method over n / batch / dtype, checked."""
from __future__ import annotations

import json
import os
import sys

from .. import ops
from ._common import (EXIT_MISMATCH, EXIT_OK, UsageError, add_format, add_option_flags,
                      check_memory, choice, console, csv_of, distinct_outputs, dtype_name, integer,
                      number, option_sets, output_path, resolve_device, shard, writing)


def _worker_argv(args, index: int, count: int, out: str) -> list[str]:
    """The ``cusolver-trace sweep`` command line of one shard (same settings, one GPU)."""
    argv = [sys.executable, "-m", "cusolver_trace", "sweep", "--op", args.op,
            "--n", ",".join(map(str, args.n)), "--batch", ",".join(map(str, args.batch)),
            "--dtype", ",".join(args.dtype), "--repeat", str(args.repeat),
            "--warmup", str(args.warmup), "--cond", repr(args.cond), "--seed", str(args.seed),
            "--shard", f"{index}/{count}", "--out", out]
    if args.nrhs is not None:
        argv += ["--nrhs", str(args.nrhs)]
    if args.method:
        argv += ["--method", ",".join(args.method)]
    if getattr(args, "threads", None) is not None:
        argv += ["--threads", str(args.threads)]
    for flag in ("flush_l2", "unchecked"):
        if getattr(args, flag):
            argv.append("--" + flag.replace("_", "-"))
    op = ops.get(args.op)
    for name, value in option_sets(args, op, lists=False)[0].items():
        opt = op.option(name)
        argv += [opt.flag, opt.labels[value]]
    if args.device:
        argv += ["--device", args.device]
    return argv


def spread_over_gpus(args, gpu_ids: list[str], con) -> list[dict]:
    """Run the sweep as one process per GPU (``CUDA_VISIBLE_DEVICES`` = that GPU, every
    ``len(gpu_ids)``-th point each), wait for all, and merge their rows (each row gets
    ``physical_gpu``). A failing worker raises ``RuntimeError`` with its output."""
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        procs = []
        for i, gpu in enumerate(gpu_ids):
            out = os.path.join(tmp, f"part{i}.json")
            env = dict(os.environ, CUDA_VISIBLE_DEVICES=gpu)
            log = open(os.path.join(tmp, f"part{i}.log"), "w")
            procs.append((gpu, out, log, subprocess.Popen(
                _worker_argv(args, i, len(gpu_ids), out), env=env, stdout=log,
                stderr=subprocess.STDOUT)))
        con.print(f"sweep spread over {len(gpu_ids)} process(es), GPUs {gpu_ids}")
        rows = []
        for gpu, out, log, proc in procs:
            rc = proc.wait()
            log.close()
            if rc not in (0, 1) or not os.path.exists(out):  # 1 = a method FAILED its check
                with open(log.name) as fh:
                    raise RuntimeError(f"sweep worker on GPU {gpu!r} exited {rc}:\n" + fh.read()[-3000:])
            with open(out) as fh:
                rows += [dict(r, physical_gpu=gpu) for r in json.load(fh)["results"]]
    return rows


def run(args) -> int:
    from .._dtypes import dtype_info
    from ..ceiling import ceiling
    from ..sweep import measure, report
    from ..timing import cpu_threads

    op = ops.get(args.op)
    options = option_sets(args, op, lists=False)[0]
    if args.nrhs is not None and not op.has_rhs:
        raise UsageError(f"--nrhs is for ops that take right-hand sides; {op.name} takes none")
    for flag, path in (("--out", args.out), ("--csv", args.csv), ("--plot", args.plot)):
        output_path(path, flag, allow_stdout=False)
    distinct_outputs(out=args.out, csv=args.csv, plot=args.plot)
    if args.plot:  # fail before the sweep, not after
        try:
            import matplotlib
        except ImportError:
            raise UsageError("--plot needs matplotlib: pip install 'cusolver-trace[plot]'") from None
        matplotlib.use("Agg")
        from matplotlib.figure import Figure

        kinds = Figure().canvas.get_supported_filetypes()
        suffix = os.path.splitext(args.plot)[1].lstrip(".").lower()
        if suffix not in kinds:
            raise UsageError(f"--plot {args.plot}: the name must end in one of "
                             f"{', '.join('.' + k for k in sorted(kinds))}")
    device = resolve_device(args.device)
    names = args.method or list(measure.default_methods(op, device))
    for m in names:
        method = op.method(m)
        if method.gpu_only and not device.startswith("cuda"):
            raise UsageError(f"method {m!r} needs a CUDA device; this sweep runs on {device}")
    from ..matrices import check_cond

    for d in args.dtype:
        try:
            check_cond(args.cond, d)   # the one rule, compare's --matrix random:cond=… too
        except ValueError as exc:
            raise UsageError(f"--{exc}") from None
        for k in args.n:
            for b in args.batch:
                check_memory(12.0 * dtype_info(d).itemsize * k * k * b, device,
                             f"n = {k}, batch = {b}")
    ids = None
    if args.gpus:  # before any measuring
        from ..workflow import physical_gpu_ids

        ids = physical_gpu_ids()
        if not ids:
            raise UsageError("--gpus: no GPU found (nvidia-smi -L / CUDA_VISIBLE_DEVICES)")
        count = len(ids) if args.gpus == "all" else int(args.gpus)
        if count > len(ids):
            raise UsageError(f"--gpus {args.gpus}: only {len(ids)} GPU(s) here")
    con = console(stderr=args.format != "table")   # csv / md / json: only the records on stdout
    if args.device is None:
        con.print(f"[bold]device {device}[/]" + ("" if device != "cpu" else
                  ": no GPU visible, so torch's CPU path and LAPACK (scipy) are timed"))
    if device == "cpu":
        con.print(f"CPU threads: {cpu_threads(args.threads)}")
        if args.flush_l2:
            con.print("note: --flush-l2 flushes a GPU's L2 cache; on the CPU it does nothing")
    if args.unchecked:
        bare = [m for m in names if m in op.methods and not op.methods[m].checkable]
        if bare:
            who = "it runs" if len(bare) == 1 else "they run"
            con.print(f"note: --unchecked adds no check=False row for {', '.join(bare)}: "
                      f"{who} no checks of {'its' if len(bare) == 1 else 'their'} own")
    for d in args.dtype:
        c = ceiling(device, d)
        con.print(f"ceiling {d} on {c.device}: GEMM {c.gemm_gflops:,.0f} GFLOP/s "
                  f"(n = {c.gemm_n}), copy {c.copy_gbs:,.0f} GB/s")
    if args.gpus:
        count = len(ids) if args.gpus == "all" else int(args.gpus)
        rows = spread_over_gpus(args, ids[:count], con)
    else:
        rows = measure.run_sweep(op, args.n, args.batch, args.dtype, names, device=device,
                                 options=options, nrhs=args.nrhs or 1, repeat=args.repeat,
                                 warmup=args.warmup, seed=args.seed, cond=args.cond,
                                 flush_l2=args.flush_l2, console=con, shard=args.shard,
                                 unchecked=args.unchecked, threads=args.threads)
    if rows:
        from .._console import emit

        emit(con, report.results_table(rows), args.format)
    else:
        con.print(f"shard {args.shard[0]}/{args.shard[1]} holds no point of this sweep: nothing "
                  "to measure")
    settings = {k: v for k, v in vars(args).items() if k != "func"}
    with writing(args.out, "--out"):
        report.write_json(report.sweep_report(rows, settings=settings), args.out)
    con.print(f"wrote {args.out}")
    if args.csv:
        with writing(args.csv, "--csv"):
            report.write_csv(rows, args.csv)
        con.print(f"wrote {args.csv}")
    if args.plot and rows:
        with writing(args.plot, "--plot"):
            report.plot_sweep(rows, args.plot)
        con.print(f"wrote {args.plot}")
    noisy = [r for r in rows if r.get("noisy")]
    if noisy:
        con.print(f"[yellow]{len(noisy)} row(s) noisy[/] (IQR > 20 % of the median, or fewer "
                  "than 3 samples): "
                  + ", ".join(f"{r['method']} n={r['n']}" for r in noisy[:8]))
    bad = [r for r in rows if r["status"] != "ok"]
    for r in bad:
        con.print(f"[bold red]{r['status']}[/]: {r['method']} {r['dtype']} n={r['n']} batch={r['batch']} "
                  f"{r['check']} = {report.fmt_number(r['ratio'], '.3g')} {r['error'] or ''}")
    return EXIT_MISMATCH if bad else EXIT_OK


def _gpus(text: str) -> str:
    if text == "all":
        return text
    return str(integer(1)(text))


def register(sub) -> None:
    """Add ``sweep`` to the subparsers; ops and methods come from the registry."""
    p = sub.add_parser(
        "sweep", help="time torch against faster methods over n / batch / dtype, checked",
        description="Time torch and each method side by side (interleaved, CUDA events on a GPU), "
                    "through the public entry points with their checks on; check every result "
                    "with LAPACK's ratios (pot01/02/03 < 30, else FAILED), report GFLOP/s with the "
                    "LAWN 41 count named, % of the GEMM ceiling measured in the same run, and the "
                    "ratio to torch; on a GPU also each method's peak memory beyond its inputs "
                    "(one untimed call, torch's allocator; n² per matrix) beside the workspace "
                    "its method table states. Exit 1 if a method FAILED.")
    p.add_argument("--op", required=True, type=choice(ops.names(), "op"),
                   help="; ".join(f"{o.name}: {o.summary}" for o in ops.all_ops()))
    p.add_argument("--n", type=csv_of(integer(1), "integer"), required=True,
                   help="matrix orders, e.g. 256,1024,4096")
    p.add_argument("--batch", type=csv_of(integer(1), "integer"), default=[1],
                   help="batch sizes (1 = one (n, n) matrix)")
    p.add_argument("--dtype", type=csv_of(dtype_name, "dtype"), default=["float64"],
                   help="float32,float64,complex64,complex128")
    p.add_argument("--method", type=csv_of(str, "method"), default=None,
                   help="comma-separated; per op: " + "; ".join(
                       f"{o.name}: {','.join(o.methods)}" for o in ops.all_ops()))
    p.add_argument("--unchecked", action="store_true",
                   help="also time each checked method with check=False (the checks' cost)")
    add_option_flags(p)
    p.add_argument("--nrhs", type=integer(1), default=None,
                   help="right-hand sides (ops that take them; default 1)")
    p.add_argument("--repeat", type=integer(1, 10000), default=10, help="timed samples per method")
    p.add_argument("--warmup", type=integer(0, 10000), default=2,
                   help="untimed calls of each method before timing (default 2)")
    p.add_argument("--flush-l2", action="store_true", help="zero a 256 MB buffer before each sample")
    p.add_argument("--cond", type=number(1.0), default=1e3, help="condition number of the inputs")
    p.add_argument("--seed", type=integer(0, 2**63 - 1), default=0,
                   help="seed of the inputs (default 0)")
    p.add_argument("--device", default=None, help="cuda:0, ... or cpu (default: cuda:0 if present)")
    p.add_argument("--gpus", type=_gpus, default=None, metavar="N|all",
                   help="spread the points over N GPUs: one process per GPU pinned with "
                        "CUDA_VISIBLE_DEVICES, results merged into one report")
    p.add_argument("--shard", type=shard, default=(0, 1), metavar="I/K",
                   help="run only every K-th point starting at I (used by --gpus; default 0/1: "
                        "every point)")
    p.add_argument("--threads", type=integer(1, 4096), default=None, metavar="N",
                   help="on the CPU, the thread count of every library while timing (torch, "
                        "BLAS, OpenMP; default 1, as torch.utils.benchmark: a ratio then does "
                        "not move with the machine's load)")
    add_format(p, "the results table")
    p.add_argument("--out", required=True, metavar="JSON", help="write results + provenance here")
    p.add_argument("--csv", metavar="PATH", help="also write one CSV line per (case, method)")
    p.add_argument("--plot", metavar="PNG", help="time and %% of ceiling vs n (needs matplotlib)")
    p.set_defaults(func=run)
