"""Size of a trace's JSON in the compact (default) form, from a trace JSON of any form.

    PYTHONPATH=. python3 benchmarks/trace_json_size.py TRACE.json [--lines] [--no-op]

Rebuilds the folded call tree of ``TRACE.json`` (nodes, ``repeat`` blocks, sections; the
times per node) as :class:`~cusolver_trace.tracing.CallNode` s and writes it again as
``Trace.to_json()`` writes ``calls`` (:class:`~cusolver_trace.tracing.model.CompactForm`),
then prints the bytes of ``calls`` (with the ``sources`` table) before and after, and of the
whole file with the other keys as they are. ``--lines`` keeps the nodes' log lines (as with
``--keep-log`` / ``--from-log``), ``--no-op`` drops the torch op (as without ``--by op``).
Nothing here needs a GPU.
"""
from __future__ import annotations

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from cusolver_trace.tracing.events import ApiCall, library_of  # noqa: E402
from cusolver_trace.tracing.model import CallNode, CompactForm, RepeatBlock  # noqa: E402


def rebuild(items: list, *, op: bool = True) -> list:
    """The nodes and blocks of a ``calls`` list (sections flattened into their calls)."""
    out: list = []
    for x in items:
        if "function" not in x:
            body = rebuild(x["calls"], op=op)
            out += body if "section" in x else [RepeatBlock(body, x["repeat"])]
            continue
        call = ApiCall(x["function"], library=x.get("library") or library_of(x["function"]),
                       args=x.get("args", {}), line=x.get("line"),
                       op=x.get("op") if op else None, where=x.get("where"), code=x.get("code"))
        children = rebuild(x.get("children", []), op=op)
        self_ms = x.get("self_gpu_ms")
        out.append(CallNode(call, x.get("count", 1), [call.line], children, self_ms,
                            x.get("self_kernels") or 0))
    return out


def _count(items: list) -> int:
    return sum(_count(x.nodes) if isinstance(x, RepeatBlock) else sum(1 for _ in x.walk())
               for x in items)


def _calls(items):
    """The call nodes of ``items``, inside folded loops too."""
    for x in items:
        if isinstance(x, RepeatBlock):
            yield from _calls(x.nodes)
        else:
            yield x


def sizes(trace: dict, *, lines: bool = False, op: bool = True) -> dict:
    """Bytes of ``calls`` as given and in the compact form, and of the whole compact file."""
    dumps = lambda obj: len(json.dumps(obj, separators=(",", ":")))  # noqa: E731
    nodes = rebuild(trace["calls"], op=op)
    form = CompactForm(timed=any(n.self_gpu_ms is not None for n in _calls(nodes)), lines=lines)
    calls = [n.to_dict(form) for n in nodes]
    compact = {**trace, "calls": calls, "call_times": form.timed, "sources": form.table()}
    return {"nodes": _count(nodes),
            "calls_given": dumps(trace["calls"]),
            "calls_compact": dumps(calls) + dumps(form.table()),
            "file_given": dumps(trace), "file_compact": dumps(compact)}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("trace")
    p.add_argument("--lines", action="store_true", help="keep each node's log line")
    p.add_argument("--no-op", action="store_true", help="drop the torch op of each call")
    args = p.parse_args(argv)
    try:
        with open(args.trace, encoding="utf-8") as fh:
            trace = json.load(fh)
        s = sizes(trace, lines=args.lines, op=not args.no_op)
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError, AttributeError) as exc:
        print(f"trace_json_size.py: {args.trace}: not a readable trace file ({type(exc).__name__}: "
              f"{exc})", file=sys.stderr)
        return 2
    mb = lambda n: f"{n / 1e6:.3f} MB"  # noqa: E731
    print(f"{s['nodes']} call nodes; calls {mb(s['calls_given'])} -> {mb(s['calls_compact'])} "
          f"({s['calls_compact'] / max(s['nodes'], 1):.0f} bytes a node); whole file "
          f"{mb(s['file_given'])} -> {mb(s['file_compact'])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
