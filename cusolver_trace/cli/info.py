"""``cusolver-trace info``: versions, loaded libcusolver / libcublas, GPU."""
from __future__ import annotations


from ._common import EXIT_OK, console, output_path, write_json


def run(args) -> int:
    from rich.table import Table

    from ..versions import versions

    json_path = output_path(args.json, "--json")
    v = versions()
    if json_path == "-":
        write_json(v, "-", None)
        return EXIT_OK
    con = console()
    if json_path:
        write_json(v, json_path, con)
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


def register(sub) -> None:
    """Add ``info`` to the subparsers."""
    p = sub.add_parser("info", help="versions, loaded libcusolver/libcublas, GPU")
    p.add_argument("--json", metavar="PATH", nargs="?", const="-",
                   help="write the same facts as JSON to PATH ('-' or no PATH: stdout, instead "
                        "of the table)")
    p.set_defaults(func=run)
