"""``cusolver-trace devices``: the hello_cholesky workflow (or one op) on every visible GPU."""
from __future__ import annotations

from .. import ops
from ._common import (EXIT_MISMATCH, EXIT_OK, UsageError, add_format, add_option_flags,
                      check_memory, choice, console, dtype_name, given_option_flags, integer,
                      option_sets,
                      options_label, output_path, resolve_device, write_json)

CPU_DEFAULT_N = 512
"""The CPU's default order: the workflow there takes about a second (n = 4096 took minutes)."""


def run(args) -> int:
    from .._dtypes import dtype_info
    from ..checks import bitwise_equal
    from ..versions import loaded_libraries
    from ..workflow import render, run_op, run_workflow, visible_devices

    op = ops.get(args.op) if args.op else None
    options = {}
    if op is not None:
        op.require_replay()
        options = option_sets(args, op, lists=False)[0]
        if args.nrhs is not None and not op.has_rhs:
            raise UsageError(f"--nrhs is for ops that take right-hand sides; {op.name} takes none")
    else:
        if args.nrhs is not None or args.batch != 1:
            raise UsageError("--nrhs and --batch are for one op (--op); the workflow runs one "
                             "matrix")
        given = given_option_flags(args)
        if given:
            raise UsageError(f"{', '.join(given)}: the op options are for one op (--op)")
    json_path = output_path(args.json, "--json")
    if json_path == "-" and args.format != "table":
        raise UsageError(f"--json - and --format {args.format} would both write to stdout")
    con = console(stderr=json_path == "-" or args.format != "table")
    devices = [resolve_device(d) for d in args.device] if args.device else visible_devices()
    twice = sorted({d for d in devices if devices.count(d) > 1})
    if twice:   # cuda and cuda:0 too: the same GPU, run twice, would be two rows of one device
        raise UsageError(f"--device names {', '.join(twice)} more than once")
    on_cpu = devices == ["cpu"]
    n = args.n or (CPU_DEFAULT_N if on_cpu else (1024 if op else 4096))
    for d in devices:
        check_memory(8.0 * dtype_info(args.dtype).itemsize * n * n * args.batch, d, f"n = {n}")
    if on_cpu:
        con.print(f"No GPU visible: running on the CPU (torch's LAPACK vs scipy's LAPACK), n = {n}.")
    kw = dict(repeat=args.repeat, warmup=args.warmup, dtype=args.dtype)
    from .._console import emit, progress

    with progress("devices", 1) as bar:
        bar.step(f"timing torch and the replay on {', '.join(devices)} (n = {n})")
        if op is not None:
            runs = run_op(op, devices, n=n, batch=args.batch, nrhs=args.nrhs or 1,
                          options=options, **kw)
            title = (f"{op.name} n={n} batch={args.batch} {args.dtype} "
                     f"{options_label(op, options)}: torch vs replay on each device")
        else:
            runs = run_workflow(devices, n=n, **kw)
            title = (f"hello_cholesky workflow n={n} {args.dtype}: "
                     "cholesky → cholesky_inverse → cholesky(upper)")
    emit(con, render(runs, title), args.format)
    for stem, files in loaded_libraries().items():
        if files and stem in ("libcusolver", "libcublas"):
            con.print(f"{stem} used by every device's run (one process): {', '.join(files)}")
    if json_path:
        data = [{"device": r.device, "name": r.name, "torch": r.torch.to_dict(),
                 "replay": r.replay.to_dict(), "replay_over_torch": r.ratio,
                 "torch_equals_replay_bitwise": r.torch_equals_replay,
                 "equals_first_device_bitwise": bitwise_equal(r.U, runs[0].U)} for r in runs]
        write_json(data, json_path, con)
    bad = [r for r in runs if not r.torch_equals_replay and r.device != "cpu"]
    return EXIT_MISMATCH if bad else EXIT_OK


def register(sub) -> None:
    """Add ``devices`` to the subparsers."""
    names = ops.names(replayable=True)
    p = sub.add_parser("devices", help="the hello_cholesky workflow (or one op) on every visible GPU",
                       description="Runs the original hello_cholesky workflow (or --op) with torch and "
                                   "with the replay on each GPU in turn, timed with CUDA events after "
                                   "warm-up; prints per-device medians, their ratios, and bit-for-bit "
                                   "agreement between torch and the replay and across devices.")
    p.add_argument("--op", type=choice(names, "op"), default=None, help=", ".join(names))
    p.add_argument("--n", type=integer(1), default=None,
                   help=f"matrix order (default 4096 on a GPU, 1024 with --op; {CPU_DEFAULT_N} on "
                        "the CPU)")
    p.add_argument("--batch", type=integer(1), default=1,
                   help="batch size, with --op (default 1: one (n, n) matrix)")
    p.add_argument("--nrhs", type=integer(1), default=None,
                   help="right-hand sides, with an --op that takes them (default 1)")
    p.add_argument("--dtype", type=dtype_name, default="float64",
                   help="float32, float64, complex64 or complex128 (default float64)")
    add_option_flags(p, names)
    p.add_argument("--device", action="append", help="restrict to these devices (repeatable)")
    p.add_argument("--repeat", type=integer(1, 10000), default=10,
                   help="timed runs per side and device (default 10)")
    p.add_argument("--warmup", type=integer(0, 10000), default=3,
                   help="untimed calls per side before timing (default 3)")
    p.add_argument("--json", metavar="PATH", help="write the runs as JSON ('-': stdout)")
    add_format(p, "the table")
    p.set_defaults(func=run)
