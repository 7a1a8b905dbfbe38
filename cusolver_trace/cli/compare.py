"""``cusolver-trace compare``: torch's op against the replay of its library calls."""
from __future__ import annotations

from .. import ops
from ._common import (EXIT_MISMATCH, EXIT_OK, UsageError, check_memory, choice, console, csv_of,
                      dtype_name, integer, output_path, resolve_device, uplo, write_json)


def _summary(con, results, device):
    from rich.table import Table

    t = Table(title=f"{results[0].op}: {len(results)} comparisons on {device}")
    for col in ("dtype", "n", "batch", "uplo", "torch path", "verdict", "max ULP",
                "ratio torch", "ratio replay", "torch ms", "replay ms", "replay/torch"):
        t.add_column(col)

    def f(x, fmt):
        return "—" if x is None else format(x, fmt)

    for c in results:
        s = c.spec
        tt, rt = c.torch.timing, c.replay.timing
        t.add_row(s["dtype"], str(s["n"]), str(s["batch"]), "U" if s["upper"] else "L",
                  c.path.backend, c.verdict, f(c.max_ulp_distance, "d"),
                  f(c.torch.ratio, ".3g"), f(c.replay.ratio, ".3g"),
                  "—" if tt is None else f"{tt.median_ms:.4g}" + (" noisy" if tt.noisy else ""),
                  "—" if rt is None else f"{rt.median_ms:.4g}" + (" noisy" if rt.noisy else ""),
                  f(c.time_ratio, ".3f"))
    con.print(t)


def run(args) -> int:
    from .._dtypes import dtype_info
    from ..compare import VERDICTS, compare
    from ..matrices import parse_matrix_spec

    op = ops.get(args.op)
    if args.nrhs is not None and not op.has_rhs:
        raise UsageError(f"--nrhs is for ops that take right-hand sides; {op.name} takes none")
    json_path = output_path(args.json, "--json")
    con = console(stderr=json_path == "-")
    spec = parse_matrix_spec(args.matrix)
    device = resolve_device(args.device)
    fixed = spec.fixed_n()
    if args.n is not None and fixed is not None and any(k != fixed for k in args.n):
        raise UsageError(f"--n {','.join(map(str, args.n))}: --matrix {args.matrix} has n = {fixed}")
    sizes = args.n or ([fixed] if fixed is not None else [512])
    dtypes = args.dtype or [None]
    for d in dtypes:
        item = dtype_info(d or "complex128").itemsize
        for k in sizes:
            for b in args.batch:
                check_memory(8.0 * item * k * k * b, device, f"n = {k}, batch = {b}")
    if device == "cpu":
        con.print("[bold]Running on the CPU[/]: no GPU here, so torch's CPU path (its own LAPACK) "
                  "is compared with the replay through scipy's LAPACK.")
    results = []
    import torch

    for dtype in dtypes:
        for n in sizes:
            for batch in args.batch:
                for upper in args.uplo:
                    shape = () if batch == 1 and not args.keep_batch_dim else (batch,)
                    A = spec.make(n=n if fixed is None else None, batch=shape, dtype=dtype,
                                  device=device, seed=args.seed).A
                    B = None
                    if op.has_rhs:
                        g = torch.Generator().manual_seed(args.seed + 1)
                        B = torch.randn(*A.shape[:-1], args.nrhs or 1, generator=g,
                                        dtype=torch.float64).to(A.dtype).to(device)
                    c = compare(op.name, A, B, upper=upper, preferred=args.preferred,
                                repeat=args.repeat, warmup=args.warmup, timing=args.repeat > 0,
                                matrix=spec.describe(), seed=args.seed)
                    results.append(c)
                    if not args.summary_only:
                        con.print(c)
                        con.print()
    if len(results) > 1:
        _summary(con, results, device)
    if json_path:
        write_json([c.to_dict() for c in results], json_path, con)
    con.print(f"{len(results)} compared: " + ", ".join(
        f"{v} {sum(c.verdict == v for c in results)}" for v in VERDICTS))
    return EXIT_MISMATCH if any(c.verdict == "MISMATCH" for c in results) else EXIT_OK


def register(sub) -> None:
    """Add ``compare`` to the subparsers; the op choices come from the registry."""
    names = ops.names(replayable=True)
    p = sub.add_parser("compare", help="compare torch's op with the replay of its cuSOLVER/cuBLAS calls",
                       description="Run torch's op and the replay of exactly the library calls it "
                                   "makes on the same inputs, device and stream; report bitwise "
                                   "agreement, LAPACK ratios and timing. Lists (comma-separated) "
                                   "run every combination. Exit 0 on agreement, 1 on MISMATCH, "
                                   "2 on bad usage or input.")
    p.add_argument("--op", required=True, type=choice(names, "op"),
                   help="; ".join(f"{o.name}: {o.summary}" for o in ops.all_ops() if o.name in names))
    p.add_argument("--n", type=csv_of(integer(0), "integer"), default=None,
                   help="matrix order(s), e.g. 64,1000 (default 512, or the size a file/digits/"
                        "classic3 matrix has)")
    p.add_argument("--batch", type=csv_of(integer(1), "integer"), default=[1], help="batch size(s)")
    p.add_argument("--nrhs", type=integer(1), default=None,
                   help="right-hand sides (ops that take them; default 1)")
    p.add_argument("--dtype", type=csv_of(dtype_name, "dtype"), default=None,
                   help="float32,float64,complex64,complex128 (default float64, or a file's own)")
    fill = p.add_mutually_exclusive_group()
    fill.add_argument("--upper", dest="uplo", action="store_const", const=[True], default=[False],
                      help="use the upper triangle (default lower)")
    fill.add_argument("--uplo", dest="uplo", type=csv_of(uplo, "fill mode"),
                      help="L, U, lower, upper (any case), or a list such as lower,upper")
    p.add_argument("--matrix", default="random",
                   help="input spec: random, random:cond=1e6, lapack:ill, classic3, file:PATH, digits")
    p.add_argument("--device", default=None, help="cuda:0, cuda:1, ... or cpu (default: cuda:0 if present)")
    p.add_argument("--preferred", type=choice(("default", "cusolver", "magma"), "library"),
                   default=None,
                   help="torch.backends.cuda.preferred_linalg_library during the torch call")
    p.add_argument("--repeat", type=integer(0, 10000), default=20,
                   help="timed runs per side (0: no timing; at most 10000)")
    p.add_argument("--warmup", type=integer(0, 10000), default=3)
    p.add_argument("--seed", type=integer(0, 2**63 - 1), default=0)
    p.add_argument("--keep-batch-dim", action="store_true", help="batch 1 as (1, n, n) instead of (n, n)")
    p.add_argument("--summary-only", action="store_true", help="print only the summary table")
    p.add_argument("--json", metavar="PATH",
                   help="write the comparisons as a JSON list to PATH ('-': stdout; the tables "
                        "then go to stderr)")
    p.set_defaults(func=run)
