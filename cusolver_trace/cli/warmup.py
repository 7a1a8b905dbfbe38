"""``cusolver-trace warmup``: compile the fused (cuSOLVERDx) kernels ahead of time."""
from __future__ import annotations

from ._common import (EXIT_INTERNAL, EXIT_OK, UsageError, add_format, choice, console, csv_of,
                      dtype_name, integer, output_path, write_json)

#: ``--uplo`` words (any case) and the ``upper`` flag each stands for.
_UPLO = {"l": False, "lower": False, "u": True, "upper": True}


def _uplo(text: str) -> bool:
    """argparse type: one fill mode, L / U / lower / upper (any case)."""
    import argparse

    key = str(text).lower()
    if key not in _UPLO:
        raise argparse.ArgumentTypeError(f"expected L, U, lower or upper, got {text!r}")
    return _UPLO[key]


def _sm(text: str) -> str:
    """argparse type: a compute capability ``MAJOR.MINOR`` (checked as warmup checks it)."""
    import argparse

    from ..backends._fused_warmup import parse_sm

    try:
        parse_sm(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def _table(records: list[dict]):
    from rich.table import Table

    stages = list(dict.fromkeys(s for r in records for s in r["stages"]))   # pipeline order
    t = Table(title="cusolver-trace warmup: fused (cuSOLVERDx) kernels")
    for col in ("op", "n", "dtype", "uplo", "check", "sm", "status", "s", "suggested s",
                *(f"{s} s" for s in stages)):
        t.add_column(col, justify="right" if col in ("n",) or col.endswith(" s") or col == "s"
                     else "left")
    for r in records:
        t.add_row(r["op"], str(r["n"]), r["dtype"], "U" if r["upper"] else "L",
                  "on" if r["check"] else "off", r["sm"], r["status"], f"{r['seconds']:.2f}",
                  f"{r['suggested_s']:.2f}" if r["suggested_s"] else "",
                  *(f"{r['stages'][s]:.2f}" if s in r["stages"] else "" for s in stages))
    return t


def run(args) -> int:
    from .._console import emit, progress
    from ..backends import fused

    json_path = output_path(args.json, "--json")
    if json_path == "-" and args.format != "table":
        raise UsageError(f"--json - and --format {args.format} would both write to stdout")
    con = console(stderr=json_path == "-" or args.format != "table")
    total = len(args.op) * len(args.n) * len(args.dtype) * len(args.uplo) * (
        2 if args.unchecked else 1)
    import time

    start = time.perf_counter()
    with progress("warmup", total=total) as p:
        records = fused.warmup(args.op, args.n, args.dtype, upper=args.uplo,
                               check=(True, False) if args.unchecked else (True,), sm=args.sm,
                               workers=args.workers,
                               progress=lambda r: p.step(f"{r['op']} n={r['n']} {r['dtype']}: "
                                                         f"{r['status']}"))
    emit(con, _table(records), args.format)
    by = {k: [r for r in records if r["status"] == k] for k in ("cached", "compiled", "failed")}
    con.print(f"{len(records)} kernel(s) for sm {records[0]['sm']} in "
              f"{time.perf_counter() - start:.1f} s: {len(by['cached'])} cached, "
              f"{len(by['compiled'])} compiled ({sum(r['seconds'] for r in by['compiled']):.1f} s "
              f"of compiling, summed over the processes), {len(by['failed'])} failed; disk "
              f"cache {fused.default_cache_dir()}")
    if json_path:
        write_json({"cache": str(fused.default_cache_dir()), "kernels": records}, json_path,
                   con)
    failed = by["failed"]
    for r in failed:
        con.print(f"[bold red]failed[/]: {r['op']} n={r['n']} {r['dtype']}: {r['error']}")
    if failed:
        con.print(f"{len(failed)} kernel(s) failed to compile (a bug, or a broken "
                  "cuda13-fused install: the errors above)")
        return EXIT_INTERNAL
    return EXIT_OK


def register(sub) -> None:
    """Add ``warmup`` to the subparsers."""
    from ..backends._fused_warmup import DEFAULT_DTYPES, DEFAULT_N, ROUTINES

    p = sub.add_parser(
        "warmup", help="compile the fused (cuSOLVERDx) kernels ahead of time",
        description="Compile the fused (cuSOLVERDx) kernels of a list of shapes into the disk "
                    "cache, in parallel processes: method='auto' runs torch's path until the "
                    "kernel a call needs is built (building it in the background), and an "
                    "explicit method='fused' compiles it in the call (about 10-30 s each). "
                    "The default list is what auto picks the fused method for: "
                    "cholesky_inverse of a factor from torch.linalg.cholesky and spd_inverse "
                    "of a row-major A, lower, with the in-kernel check. Reports, per kernel, "
                    "whether it was cached or compiled and the seconds of each stage. Needs "
                    "the cuda13-fused extra, and a GPU or --sm.")
    p.add_argument("--op", type=csv_of(choice(tuple(ROUTINES), "op"), "op"),
                   default=list(ROUTINES), metavar="OP",
                   help=f"routines whose kernels to build: {', '.join(ROUTINES)} (default: "
                        "both)")
    p.add_argument("--n", type=csv_of(integer(1, 4096), "integer"), default=list(DEFAULT_N),
                   help=f"matrix orders (default: {','.join(map(str, DEFAULT_N))})")
    p.add_argument("--dtype", type=csv_of(dtype_name, "dtype"), default=list(DEFAULT_DTYPES),
                   help=f"float32,float64,complex64,complex128 (default: "
                        f"{','.join(DEFAULT_DTYPES)})")
    p.add_argument("--uplo", type=csv_of(_uplo, "fill mode"), default=[False], metavar="UPLO",
                   help="the triangle read: L, U, lower, upper (any case), or a list such as "
                        "L,U (default: L)")
    p.add_argument("--unchecked", action="store_true",
                   help="also build the kernels of check=False")
    p.add_argument("--sm", type=_sm, default=None, metavar="MAJOR.MINOR",
                   help="compute capability to compile for, e.g. 9.0 (default: the GPU's; "
                        "given without that GPU, 227 KiB of shared memory per block is assumed)")
    p.add_argument("--workers", type=integer(1, 4096), default=None, metavar="N",
                   help="processes compiling at once (default: one per CPU core, at most one "
                        "per kernel to compile; 1: in this process)")
    add_format(p, "the table's rows")
    p.add_argument("--json", metavar="PATH", nargs="?", const="-",
                   help="write the records as JSON to PATH ('-' or no PATH: stdout)")
    p.set_defaults(func=run)
