"""``cusolver-trace compare``: torch's op against the replay of its library calls."""
from __future__ import annotations

import math

from .. import ops
from .._paths import same_file
from ._common import (EXIT_MISMATCH, EXIT_OK, UsageError, add_format, add_option_flags,
                      check_memory, choice, console, csv_of, dtype_name, integer, option_sets,
                      options_label, output_path, resolve_device, write_json)


SPLIT_WORDS = {"alike": "alike", "noisy": "too noisy", "gpu-work": "GPU work",
               "issue-overhead": "issue overhead", "gpu-work-and-issue-overhead": "GPU work + issue",
               "not-separated": "not separated", "not-timed": "—"}


def _med(t, plain: bool = False) -> str:
    """A median in ms (``~`` when noisy), or ``—`` for an unavailable time."""
    from ..timing import Timing

    if not isinstance(t, Timing):
        return "—"
    return f"{t.median_ms:.4g}" + ("~" if t.noisy and not plain else "")


def _ratio(c) -> str:
    """replay/torch time, or why there is none (a ratio of oversubscribed CPU samples is no
    result: :func:`cusolver_trace.timing.ratio`)."""
    from ..timing import Timing, ratio

    r = ratio(c.replay.timing, c.torch.timing)
    if r is not None:
        return f"{r:.3f}"
    busy = any(isinstance(t, Timing) and t.oversubscribed for t in (c.torch.timing, c.replay.timing))
    return "— (busy CPU)" if busy else "—"


def _summary(con, op, results, device, fmt="table"):
    from rich.table import Table

    from .._console import emit

    traced = any(c.call_sequences is not None for c in results)
    t = Table(title=f"{results[0].op}: {len(results)} comparisons on {device}")
    cols = ["dtype", "n", "batch", "options", "torch path", "verdict", "max ULP", "ratio torch",
            "ratio replay", "replay/torch time"] + (["calls equal"] if traced else [])
    for col in cols:
        t.add_column(col)

    def f(x, fmt):
        return "—" if x is None else format(x, fmt)

    timed = any(c.torch.timing is not None for c in results)
    machine = fmt != "table"   # one record per comparison: its times as plain numbers
    if machine and timed:   # the time table's columns (ms), as the table names them
        clock = next(c.torch.timing.clock for c in results if c.torch.timing is not None)
        ev = {"cuda-events": "events", "thread_time": "CPU"}.get(clock, "wall")
        for col in (f"torch {ev}", "torch GPU", "torch host", f"replay {ev}", "replay GPU",
                    "replay host", "noisy"):
            t.add_column(col)
    for c in results:
        s = c.spec
        row = [s["dtype"], str(s["n"]), str(s["batch"]), options_label(op, s["options"]),
               c.path.backend, c.verdict, f(c.max_ulp_distance, "d"),
               f(c.torch.ratio, ".3g"), f(c.replay.ratio, ".3g"), _ratio(c)]
        if traced:
            row.append("—" if c.call_sequences is None else c.call_sequences.answer)
        if machine and timed:
            tt, rt = c.torch.times(), c.replay.times()
            row += [_med(side[k], plain=True) for side in (tt, rt)
                    for k in ("events", "gpu_busy", "host")]
            row.append(" ".join(n for n, side in (("torch", tt), ("replay", rt))
                                if any(getattr(side[k], "noisy", False) for k in side)) or "—")
        t.add_row(*row)
    emit(con, t, fmt)
    if not timed or machine:
        return
    clock = next(c.torch.timing.clock for c in results if c.torch.timing is not None)
    ev = {"cuda-events": "events", "thread_time": "CPU"}.get(clock, "wall")
    what = {"events": "CUDA-event time",
            "CPU": "the timing thread's CPU time, every library pinned to 1 thread",
            "wall": "wall time (perf_counter), every library pinned to a fixed thread count"}[ev]
    t = Table(title="time, ms (medians; — unavailable, ~ noisy)",
              caption=f"{ev}: {what}; GPU: GPU-busy time (kernel durations, "
                      "torch.profiler); host: time to issue the call; difference: what the "
                      "replay − torch difference is")
    for col in ("dtype", "n", "batch", "options", f"torch {ev}", "torch GPU", "torch host",
                f"replay {ev}", "replay GPU", "replay host", "replay/torch", "difference"):
        t.add_column(col, no_wrap=True)
    for c in results:
        s = c.spec
        tt, rt = c.torch.times(), c.replay.times()
        t.add_row(s["dtype"], str(s["n"]), str(s["batch"]), options_label(op, s["options"]),
                  *(_med(tt[k]) for k in ("events", "gpu_busy", "host")),
                  *(_med(rt[k]) for k in ("events", "gpu_busy", "host")),
                  _ratio(c),
                  "—" if c.time_split is None else SPLIT_WORDS.get(c.time_split.kind,
                                                                    c.time_split.kind))
    con.print()
    emit(con, t, fmt)


def run(args) -> int:
    from .._dtypes import dtype_info
    from ..compare import VERDICTS, compare, with_gpu_busy
    from ..matrices import parse_matrix_spec

    op = ops.get(args.op)
    option_list = option_sets(args, op)
    if args.trace_timeout is not None and not args.trace:
        raise UsageError("--trace-timeout is for --trace (the child that logs both sides)")
    if args.nrhs is not None and not op.has_rhs:
        raise UsageError(f"--nrhs is for ops that take right-hand sides; {op.name} takes none")
    json_path = output_path(args.json, "--json")
    if json_path == "-" and args.format != "table":
        raise UsageError(f"--json - and --format {args.format} would both write to stdout")
    con = console(stderr=json_path == "-" or args.format != "table")
    spec = parse_matrix_spec(args.matrix)
    spec.check(op.structure)   # before anything is printed: one line, exit 2
    if spec.kind == "file" and json_path not in (None, "-") and \
            same_file(json_path, spec.params["path"]):
        raise UsageError(f"--json {args.json} is the input of --matrix {args.matrix}; it would be "
                         "overwritten")
    device = resolve_device(args.device)
    dtypes = args.dtype or [None]
    file_batch = ()
    if spec.kind == "file":
        # read once here for its order and its batch: a batched file keeps its own batch, and
        # a --batch it does not hold (--batch 1 included) is refused before any work
        probe = spec.make(dtype=dtypes[0], device="cpu", structure=op.structure).A
        fixed, file_batch = probe.shape[-1], tuple(probe.shape[:-2])
        del probe
    else:
        fixed = spec.fixed_n(op.structure)
    if spec.kind == "digits" and args.n is not None and op.structure != "hermitian":
        fixed = None   # digits takes any n up to its samples (the first n); its default is all
    if args.n is not None and fixed is not None and any(k != fixed for k in args.n):
        raise UsageError(f"--n {','.join(map(str, args.n))}: --matrix {args.matrix} has n = {fixed}")
    sizes = args.n or ([fixed] if fixed is not None else [512])
    batches = args.batch or [1]
    if file_batch:
        if args.batch is not None and (len(file_batch) != 1
                                       or any(b != file_batch[0] for b in args.batch)):
            raise UsageError(f"--batch {','.join(map(str, args.batch))}: --matrix {args.matrix} "
                             f"holds a batch of shape {file_batch}")
        batches = [math.prod(file_batch)]
    for d in dtypes:
        item = dtype_info(d or "complex128").itemsize
        for k in sizes:
            for b in batches:
                # about eight n x n matrices per point, and six n x nrhs (B, the working
                # copies, both sides' results) for ops with right-hand sides
                rhs = (args.nrhs or 1) if op.has_rhs else 0
                check_memory(item * b * (8.0 * k * k + 6.0 * k * rhs), device,
                             f"n = {k}, batch = {b}" + (f", nrhs = {rhs}" if rhs > 1 else ""))
    if device == "cpu":
        con.print("[bold]Running on the CPU[/]: no GPU here, so torch's CPU path (its own LAPACK) "
                  "is compared with the replay through scipy's LAPACK.")
    import torch

    def point(dtype, n, batch, options):
        """The inputs of one point (seeded: the same on every call) and their label."""
        shape = () if file_batch or (batch == 1 and not args.keep_batch_dim) else (batch,)
        tm = spec.make(n=n if fixed is None else None, batch=shape, dtype=dtype, device=device,
                       seed=args.seed, structure=op.structure)
        B = None
        if op.has_rhs:
            g = torch.Generator().manual_seed(args.seed + 1)
            dims = op.rhs_dims(tm.A.shape[-1], args.nrhs or 1, op.options_from(**options))
            B = torch.randn(*tm.A.shape[:-2], *dims, generator=g,
                            dtype=torch.float64).to(tm.A.dtype).to(device)
        return tm, B

    points = [(dtype, n, batch, options) for dtype in dtypes for n in sizes for batch in batches
              for options in option_list]
    # torch.profiler (the GPU-busy time) slows every later call in the process: on a GPU,
    # every point's event and host times are taken first, and the profiler runs after them
    # all, on the same inputs made again
    later = _profile_last(device, args.repeat)
    if later and len(points) > 1:
        con.print(f"[dim]timing {len(points)} points, then their GPU-busy time (the profiler "
                  "slows every later call in its process, so it runs last)[/]")
    results = []
    from .._console import progress

    def label(dtype, n, batch, options):
        return (f"{dtype or 'float64'} n={n}" + (f" batch={batch}" if batch != 1 else "")
                + (f" {options_label(op, options)}" if options else ""))

    total = len(points) * (2 if later else 1)
    with progress(f"compare {op.name}", total) as bar:
        for p in points:
            bar.step(label(*p))
            tm, B = point(*p)
            c = compare(op.name, tm.A, B, **p[3], preferred=args.preferred,
                        repeat=args.repeat, warmup=args.warmup, timing=True,
                        matrix=tm.description, seed=args.seed, trace=args.trace,
                        trace_timeout=300.0 if args.trace_timeout is None else args.trace_timeout,
                        gpu_busy=not later)
            del tm, B
            results.append(c)
            if not later and not args.summary_only:
                bar.clear()
                con.print(c)
                con.print()
        if later:
            for i, p in enumerate(points):
                bar.step(label(*p) + ", GPU-busy time")
                tm, B = point(*p)
                results[i] = with_gpu_busy(results[i], tm.A, B)
                del tm, B
                if not args.summary_only:
                    bar.clear()
                    con.print(results[i])
                    con.print()
    if len(results) > 1 or args.summary_only or args.format != "table":
        _summary(con, op, results, device, args.format)
    if json_path:
        write_json([c.to_dict() for c in results], json_path, con)
    con.print(f"{len(results)} compared: " + ", ".join(
        f"{v} {sum(c.verdict == v for c in results)}" for v in VERDICTS))
    if args.trace:
        seqs = [c.call_sequences for c in results if c.call_sequences is not None]
        con.print("call sequences equal: " + ", ".join(
            f"{a} {sum(cs.answer == a for cs in seqs)}" for a in ("yes", "no", "not traced"))
            + (f" ({sum(cs.counts_as_mismatch for cs in seqs)} where the replay is exact: "
               "MISMATCH)" if any(cs.counts_as_mismatch for cs in seqs) else ""))
    return EXIT_MISMATCH if any(c.verdict == "MISMATCH" for c in results) else EXIT_OK


def _profile_last(device: str, repeat: int) -> bool:
    """Whether the GPU-busy times are measured after every point's other times: on a GPU,
    when anything is timed (on the CPU there is no profiling to put off)."""
    return device != "cpu" and repeat > 0


def register(sub) -> None:
    """Add ``compare`` to the subparsers; the op choices come from the registry."""
    names = ops.names(replayable=True)
    p = sub.add_parser("compare", help="compare torch's op with the replay of its cuSOLVER/cuBLAS calls",
                       description="Run torch's op and the replay of exactly the library calls it "
                                   "makes on the same inputs, device and stream; report bitwise "
                                   "agreement, LAPACK ratios and timing (CUDA events, GPU-busy "
                                   "time from torch.profiler, host issue time, and whether a "
                                   "difference is GPU work or issue overhead). Lists "
                                   "(comma-separated) run every combination. Exit 0 on "
                                   "agreement, 1 on MISMATCH (with --trace: also unequal call "
                                   "sequences where the replay is exact), 2 on bad usage or "
                                   "input.")
    p.add_argument("--op", required=True, type=choice(names, "op"),
                   help="; ".join(f"{o.name}: {o.summary}" for o in ops.all_ops() if o.name in names))
    p.add_argument("--n", type=csv_of(integer(0), "integer"), default=None,
                   help="matrix order(s), e.g. 64,1000 (default 512, or the size a file/digits/"
                        "classic3 matrix has)")
    p.add_argument("--batch", type=csv_of(integer(1), "integer"), default=None,
                   help="batch size(s) (default 1; a batched .npy file: its own batch)")
    p.add_argument("--nrhs", type=integer(1), default=None,
                   help="right-hand sides (ops that take them; default 1)")
    p.add_argument("--dtype", type=csv_of(dtype_name, "dtype"), default=None,
                   help="float32,float64,complex64,complex128 (default float64, or a file's own)")
    add_option_flags(p, names)
    p.add_argument("--matrix", default="random",
                   help="input spec: random, random:cond=1e6, lapack:ill, classic3, file:PATH, "
                        "digits; for eigensolvers also spectrum:clustered,cond=1e8, graded")
    p.add_argument("--device", default=None, help="cuda:0, cuda:1, ... or cpu (default: cuda:0 if present)")
    p.add_argument("--preferred", type=choice(("default", "cusolver", "magma"), "library"),
                   default=None,
                   help="torch.backends.cuda.preferred_linalg_library during the torch call")
    p.add_argument("--repeat", type=integer(0, 10000), default=20,
                   help="timed runs per side (0: no timing; at most 10000; default 20)")
    p.add_argument("--warmup", type=integer(0, 10000), default=3,
                   help="untimed calls per side before timing (default 3)")
    p.add_argument("--seed", type=integer(0, 2**63 - 1), default=0,
                   help="seed of the random matrices and of the default right-hand sides "
                        "(default 0)")
    p.add_argument("--keep-batch-dim", action="store_true", help="batch 1 as (1, n, n) instead of (n, n)")
    p.add_argument("--summary-only", action="store_true",
                   help="print only the summary tables (for any number of points)")
    add_format(p, "the summary tables")
    p.add_argument("--trace", action="store_true",
                   help="also run both sides in a child process with the cuSOLVER / cuBLAS "
                        "loggers on and report 'call sequences equal: yes/no'; unequal "
                        "sequences are a MISMATCH where the dispatch rule says the replay is "
                        "exact (not on torch's MAGMA paths)")
    from ..tracing.command import positive_seconds

    p.add_argument("--trace-timeout", type=positive_seconds, default=None, metavar="S",
                   help="seconds the --trace child may run (default 300)")
    p.add_argument("--json", metavar="PATH",
                   help="write the comparisons as a JSON list to PATH ('-': stdout; the tables "
                        "then go to stderr)")
    p.set_defaults(func=run)
