"""The trace JSON's compact form (schema ``cusolver-trace/trace/3``): what a node holds, its
size, and that ``diff`` reads it as it reads the full form and the older schemas (CPU tests
on the H200 captures in tests/data/ and on synthetic traces)."""
from __future__ import annotations

import copy
import gzip
import importlib.util
import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cusolver_trace.cli import main as cli_main
from cusolver_trace.tracing import Event, Trace, diff_traces, load_log
from cusolver_trace.tracing.command import main as trace_main
from cusolver_trace.tracing.diff import TraceInputError, flatten
from cusolver_trace.tracing.events import library_of
from cusolver_trace.tracing.model import SCHEMA

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(__file__).parent / "data"
EXCERPT = DATA / "botorch-by-op" / "by-op-head.json.gz"
LOG = DATA / "h200-torch2.11-cu130" / "trace-stdout.log.gz"
T213 = DATA / "h200-torch2.13-cu130" / "trace213.json"
B1 = "cholesky_inverse dtype=float64 n=256 batch=1 upper=False"

NODE_KEYS = {"function", "library", "count", "args", "line", "src", "truncated", "gpu_ms",
             "kernels", "self_gpu_ms", "self_kernels", "children"}


def one_line(err: str) -> str:
    lines = err.strip("\n").splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def excerpt() -> dict:
    """The schema-2 JSON of a BoTorch run's first 400 call items (every field written)."""
    with gzip.open(EXCERPT, "rt", encoding="utf-8") as fh:
        return json.load(fh)


def _calls_of(items: list, *, line: list, div: int = 1, rep: int = 0) -> list:
    """Events for a schema-2 ``calls`` list: each node's ``count`` repeats (with its nested
    calls; a folded loop's calls ``repeat`` times), the node's own kernels and GPU time
    (summed over all its repeats, ``div`` of them in the loops around it) shared out evenly;
    ``rep``: which repeat of those loops this is."""
    out: list = []
    for x in items:
        if "function" not in x:
            k = x.get("repeat", 1)
            for j in range(k):
                out += _calls_of(x["calls"], line=line, div=div * k, rep=rep * k + j)
            continue
        count, own_k, own_ms = x.get("count", 1), x.get("self_kernels"), x.get("self_gpu_ms")
        for r in range(count):
            line[0] += 1
            c = Event(x["function"], library=x["library"], args=dict(x["args"]), line=line[0],
                      op=x.get("op"), where=x.get("where"), code=x.get("code"))
            if own_ms is not None:
                total, i = count * div, rep * count + r
                k = own_k // total + (i < own_k % total)
                c.kernels = [Event("k", "kernel", 0.0, own_ms * 1e3 / own_k, parent=c)
                             for _ in range(k)]
            c.children = _calls_of(x.get("children", []), line=line, div=div * count,
                                   rep=rep * count + r)
            for ch in c.children:
                ch.parent = c
            out.append(c)
    return out


def excerpt_trace(*, edit: bool = False) -> Trace:
    """The excerpt as a Trace (its calls and their kernels); ``edit``: one call's argument
    changed and one compute call left out."""
    calls = _calls_of(excerpt()["calls"], line=[0])
    if edit:
        gemms = [i for i, c in enumerate(calls) if c.name == "cublasDgemm_v2"]
        calls[gemms[1]].args["m"] += 1
        del calls[gemms[3]]
    acts = [k for c in calls for r in c.walk() for k in r.kernels or ()]
    return Trace(label="botorch", calls=calls, activities=acts)


def _nodes(items: list):
    for x in items:
        if "function" in x:
            yield x
            yield from _nodes(x.get("children", []))
        else:
            yield from _nodes(x["calls"])


def check_compact(d: dict) -> int:
    """Check a compact trace JSON against docs/reading-a-trace.md, "JSON"; returns its nodes."""
    assert d["schema"] == SCHEMA and d["format"] == "compact"
    assert isinstance(d["call_times"], bool)
    sources = d["sources"]
    assert len({json.dumps(s, sort_keys=True) for s in sources}) == len(sources)  # no repeats
    assert all(s and set(s) <= {"op", "where", "code"} for s in sources)
    used = set()
    n = 0
    for node in _nodes(d["calls"]):
        n += 1
        assert set(node) <= NODE_KEYS, node
        if "library" in node:
            assert node["library"] != library_of(node["function"])
        assert node.get("count", 2) >= 2 and node.get("args", {"x": 1})
        if "src" in node:
            assert 0 <= node["src"] < len(sources)
            used.add(node["src"])
        times = {"gpu_ms", "kernels", "self_gpu_ms", "self_kernels"} & set(node)
        if not d["call_times"]:
            assert not times
        elif node.get("gpu_ms", 0) is None:
            assert times == {"gpu_ms"}  # not measured
        elif times:
            assert node["kernels"] >= 1 and node["gpu_ms"] >= 0
            if {"self_gpu_ms", "self_kernels"} & times:
                assert node["children"] and 1 <= node["self_kernels"] <= node["kernels"]
    assert used == set(range(len(sources)))  # every entry is some node's
    return n


# --- the form --------------------------------------------------------------------------

def test_compact_schema_of_a_timed_trace_with_ops_and_lines():
    t = excerpt_trace()
    d = t.to_dict()
    assert d["call_times"] is True
    nodes = check_compact(d)
    assert nodes > 400
    # one table entry per (op, where, code): the excerpt's ops at two source lines
    assert {s.get("where", "").rsplit(":", 1)[-1] for s in d["sources"]} <= {"56", "61", ""}
    assert all("op" in s for s in d["sources"])
    first = next(_nodes(d["calls"]))
    assert first == {"function": "cublasCreate_v2", "src": 0}  # a setup call: nothing else
    gemm = next(n for n in _nodes(d["calls"]) if n["function"] == "cublasDgemm_v2")
    assert set(gemm) == {"function", "args", "src", "gpu_ms", "kernels"} and gemm["kernels"] == 1
    assert "line" not in first and "line" in next(_nodes(t.to_dict(lines=True)["calls"]))
    # the full form: every field, as the nodes have it
    full = t.to_dict(full=True)
    fnode = next(_nodes(full["calls"]))
    assert {"function", "library", "count", "args", "line", "op", "where", "code", "gpu_ms",
            "self_gpu_ms", "kernels", "self_kernels"} == set(fnode)


def test_a_node_with_nested_calls_keeps_its_own_times_apart():
    """Xpotrs (1 kernel of its own) over two trsm (7 each): the compact node has the totals
    and its own; the trsm nodes only their totals (their own are the same)."""
    from test_trace_attribution import SECTION, timed_section

    log, acts = timed_section()
    d = Trace(label="x", calls=log.calls, sections=log.sections, activities=acts).to_dict()
    check_compact(d)
    (sec,) = d["calls"]
    assert sec["section"] == SECTION
    xp = next(n for n in sec["calls"] if n["function"] == "cusolverDnXpotrs")
    assert (xp["kernels"], xp["self_kernels"]) == (15, 1)
    assert xp["self_gpu_ms"] == pytest.approx(0.0006, abs=5e-5)
    assert [set(c) for c in xp["children"]] == [{"function", "args", "gpu_ms", "kernels"}] * 2
    assert xp["gpu_ms"] == pytest.approx(xp["self_gpu_ms"] + sum(c["gpu_ms"] for c in xp["children"]),
                                         rel=1e-5)
    setup = next(n for n in sec["calls"] if n["function"] == "cusolverDnSetStream")
    assert set(setup) == {"function", "children"}  # measured, launched nothing: no times


def test_an_unmeasured_node_in_a_timed_trace_says_null():
    a = Event("cublasDgemm_v2", library="cuBLAS", args={"m": 2}, kernels=[])
    b = Event("cublasDgemm_v2", library="cuBLAS", args={"m": 3})  # not measured
    d = Trace(calls=[a, b], activities=[]).to_dict()
    assert d["call_times"] is True and d["calls"][1] == {"function": "cublasDgemm_v2",
                                                         "args": {"m": 3}, "gpu_ms": None}
    assert diff_traces(d, d).by_routine["cublasDgemm_v2"]["gpu_ms_a"] == 0.0
    # a library the name does not say is written
    odd = Event("cublasLtMatmul", library="cuBLASLt")
    assert Trace(calls=[odd]).to_dict()["calls"] == [{"function": "cublasLtMatmul",
                                                      "library": "cuBLASLt"}]


def test_cli_writes_lines_where_the_log_is_at_hand(tmp_path):
    out = tmp_path / "t.json"
    assert trace_main(["--from-log", str(LOG), "--section", B1, "--json", str(out),
                       "--no-tree"]) == 0
    d = json.loads(out.read_text())
    check_compact(d)
    assert all("line" in n for n in _nodes(d["calls"]))
    assert trace_main(["--from-log", str(LOG), "--section", B1, "--json", str(out), "--no-tree",
                       "--full"]) == 0
    full = json.loads(out.read_text())
    assert full["format"] == "full" and all(
        {"library", "count", "args", "line"} <= set(n) for n in _nodes(full["calls"]))


# --- size --------------------------------------------------------------------------------

def synthetic_trace(steps: int) -> Trace:
    """A BoTorch-like program: every cuBLAS GEMM (sizes that never repeat back to back, so
    nothing folds) between the setup calls torch makes around it, one kernel each; the calls
    from three torch ops at two source lines."""
    calls, acts = [], []
    ops = [("aten::matmul", "/work/prog.py:56", "fit(model)"),
           ("aten::bmm (in BmmBackward0)", "/work/prog.py:56", "fit(model)"),
           ("aten::matmul", "/work/prog.py:61", "optimize(acqf, bounds=bounds, q=q)")]
    for i in range(steps):
        op, where, code = ops[i % 3]
        m, b = 2 + i % 97, 4 + i % 13
        step = [("cublasSetStream_v2", {}), ("cublasSetWorkspace_v2",
                                             {"workspaceSizeInBytes": 33554432}),
                ("cublasSetMathMode", {"mode": "CUBLAS_DEFAULT_MATH"}),
                ("cublasDgemmStridedBatched", {
                    "transa": "T", "transb": "N", "m": m, "n": 2, "k": 8, "lda": 8,
                    "strideA": 8 * m, "ldb": 8, "strideB": 16, "ldc": m, "strideC": 2 * m,
                    "batchCount": b}),
                ("cublasGetMathMode", {})]
        for name, args in step:
            c = Event(name, library="cuBLAS", args=args, line=len(calls) + 1, op=op,
                      where=where, code=code, kernels=[])
            if name.startswith("cublasD"):
                c.kernels.append(Event("gemm_kernel", "kernel", 10.0 * i, 2.4 + i % 7 / 3,
                                       parent=c))
                acts += c.kernels
            calls.append(c)
    return Trace(label="synthetic", calls=calls, activities=acts)


def test_ten_thousand_nodes_stay_under_one_megabyte():
    t = synthetic_trace(2000)
    text = t.to_json()
    d = json.loads(text)
    nodes = check_compact(d)
    assert nodes == 10_000  # nothing folded: the size is the nodes'
    per_node = len(text.encode()) / nodes
    assert per_node <= 95, per_node  # 0.95 MB for 10k nodes, the rest of the file included
    assert len(t.to_json(full=True).encode()) > 3 * len(text.encode())


def test_the_botorch_excerpt_in_the_compact_form():
    """The measured BoTorch run, written again by the compact writer: under 100 bytes a node
    (about 0.9 MB for the whole run's 9747 nodes, from 2.7 MB), the op kept."""
    spec = importlib.util.spec_from_file_location("trace_json_size",
                                                  ROOT / "benchmarks" / "trace_json_size.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    s = bench.sizes(excerpt())
    assert s["calls_compact"] / s["nodes"] <= 100 and s["calls_given"] > 2.5 * s["calls_compact"]
    # the writer on the rebuilt tree and on the events give the same calls
    nodes = bench.rebuild(excerpt()["calls"])
    assert flatten({"schema": SCHEMA, "calls": [n.to_dict() for n in nodes]}, all=True) == \
        flatten(excerpt_trace(), all=True)


# --- diff reads every form alike -----------------------------------------------------------

def _verdict(d) -> tuple:
    return (d.equal, d.calls_a, d.calls_b, d.added, d.removed, d.changed,
            [str(x) for x in d.differences],
            {r: (v["calls_a"], v["calls_b"]) for r, v in d.by_routine.items()})


def _gpu_ms(d) -> dict:
    return {(r, side): v[f"gpu_ms_{side}"] for r, v in d.by_routine.items() for side in "ab"}


@pytest.mark.parametrize("all_calls", [False, True])
def test_compact_and_full_forms_diff_alike(all_calls):
    a, b = excerpt_trace(), excerpt_trace(edit=True)
    forms = {"compact": lambda t: json.loads(t.to_json()),
             "lines": lambda t: json.loads(t.to_json(lines=True)),
             "full": lambda t: json.loads(t.to_json(full=True)),
             "object": lambda t: t}
    reference = diff_traces(a, b, all=all_calls)
    assert not reference.equal and reference.changed == 1 and reference.removed == 1
    for fa in forms.values():
        for fb in forms.values():
            d = diff_traces(fa(a), fb(b), all=all_calls)
            assert _verdict(d) == _verdict(reference)
            for key, ms in _gpu_ms(d).items():
                assert ms == pytest.approx(_gpu_ms(reference)[key], rel=1e-5, abs=1e-9)
        assert diff_traces(fa(a), a, all=all_calls).equal


def test_old_schema_jsons_still_diff():
    """Schema 2 (every field, the excerpt as measured) and schema 1 (the 2.13 capture) against
    the compact JSON of the same calls: equal, with the same GPU time per routine."""
    old = excerpt()
    assert old["schema"] == "cusolver-trace/trace/2"
    compact = json.loads(excerpt_trace().to_json())
    for all_calls in (False, True):
        d = diff_traces(old, compact, all=all_calls)
        assert d.equal and d.calls_a == d.calls_b > 400
        for r, v in d.by_routine.items():
            assert v["gpu_ms_b"] == pytest.approx(v["gpu_ms_a"], rel=1e-5, abs=1e-9), r
    t213 = json.loads(T213.read_text())
    assert t213["schema"] == "cusolver-trace/trace/1"
    assert diff_traces(t213, t213).equal
    whole = load_log(LOG)
    d = diff_traces(json.loads(Trace(calls=whole.calls).to_json()), t213)
    assert not d.equal and d.by_routine["cublasDtrsm_v2"]["calls_b"] > 0


def test_the_cli_diffs_compact_against_old(tmp_path, capsys):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(excerpt_trace().to_json())
    with gzip.open(EXCERPT, "rb") as fh:
        b.write_bytes(fh.read())
    assert cli_main(["diff", str(a), str(b), "--all"]) == 0
    assert "the call sequences are equal" in capsys.readouterr().out
    b.write_text(excerpt_trace(edit=True).to_json())
    assert cli_main(["diff", str(a), str(b)]) == 1
    assert "1 changed" in capsys.readouterr().out


# --- malformed compact JSON: exit 2, one line ------------------------------------------------

def _small_compact() -> dict:
    """A compact JSON with every kind of item: nested calls, own times, a folded loop, a
    section, a node of a library its name does not say, the sources table."""
    from test_trace_attribution import timed_section

    log, acts = timed_section()
    t = Trace(label="x", calls=log.calls, sections=log.sections, activities=acts)
    d = t.to_dict(lines=True)
    d["sources"] = [{"op": "aten::cholesky_inverse", "where": "p.py:3", "code": "f(x)"}]
    sec = d["calls"][0]["calls"]
    sec[0]["src"] = 0
    sec.append({"repeat": 3, "calls": [{"function": "cublasDgemm_v2", "args": {"m": 2},
                                        "count": 2, "gpu_ms": 0.5, "kernels": 2, "src": 0},
                                       {"function": "cublasLtMatmul", "library": "cuBLASLt"}]})
    return d


def _paths(d: dict) -> list[tuple]:
    """Paths (key / index tuples) of every call node in ``d["calls"]``."""
    out = []

    def walk(items, at):
        for i, x in enumerate(items):
            here = at + (i,)
            if "function" in x:
                out.append(here)
                walk(x.get("children", []), here + ("children",))
            else:
                walk(x["calls"], here + ("calls",))
    walk(d["calls"], ("calls",))
    return out


def _at(d, path):
    for p in path:
        d = d[p]
    return d


_BAD = {
    "src": [1, -1, 10**30, "0", 0.0, True, [0]],
    "count": [-1, -10**30, "2", 2.0, False, None, 10**8],
    "function": [3, None, ["cublasDgemm_v2"]],
    "library": [7, None, {}],
    "args": [[], "m=2", 5],
    "children": [{}, "x", 3],
    "gpu_ms": ["0.5", -1.0, [1], True, 1e300, 10**400],
    "self_gpu_ms": ["x", -0.1, {}, None],
    "kernels": [-1, "1", 1.5, None],
    "self_kernels": [-2, "3", [], 2.5],
}
_TOP_BAD = {"call_times": ["yes", 1, None], "sources": [{}, "x", [1], [{"op": 1}], [{"where": None}]]}


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), all_calls=st.booleans(), top=st.booleans())
def test_property_malformed_compact_json_is_one_line_and_exit_2(capsys, data, all_calls, top):
    """One field of one node (any node: a setup call, a nested call, one in a loop) or of the
    file made wrong: bad index into the sources table, negative or non-integer counts, values
    of the wrong type. ``diff`` refuses the file in one line (exit 2), with or without --all."""
    doc = _small_compact()
    good = copy.deepcopy(doc)
    if top:
        key = data.draw(st.sampled_from(sorted(_TOP_BAD)))
        doc[key] = data.draw(st.sampled_from(_TOP_BAD[key]))
    else:
        path = data.draw(st.sampled_from(_paths(doc)))
        key = data.draw(st.sampled_from(sorted(_BAD)))
        _at(doc, path)[key] = data.draw(st.sampled_from(_BAD[key]))
    with tempfile.TemporaryDirectory() as tmp:
        pa, pb = Path(tmp) / "a.json", Path(tmp) / "b.json"
        pa.write_text(json.dumps(doc))
        pb.write_text(json.dumps(good))
        argv = ["diff", str(pa), str(pb)] + (["--all"] if all_calls else [])
        code = cli_main(argv)
        captured = capsys.readouterr()
        assert code == 2, (doc, captured.out[-500:])
        one_line(captured.err)
        assert cli_main(["diff", str(pb), str(pb)] + argv[3:]) == 0
        capsys.readouterr()


def test_the_small_compact_document_is_valid():
    """What the property test breaks is valid as it is (so exit 2 is the change's doing)."""
    doc = _small_compact()
    d = diff_traces(doc, doc, all=True)
    assert d.equal and d.by_routine["cublasDgemm_v2"]["calls_a"] == 6
    assert d.by_routine["cublasDgemm_v2"]["gpu_ms_a"] == pytest.approx(0.5)  # all 6 calls
    assert d.by_routine["cublasLtMatmul"]["calls_a"] == 3
    with pytest.raises(TraceInputError, match=r"not an index into the sources table \(0 entries"):
        flatten({**doc, "sources": [], "calls": [{"function": "cublasDgemm_v2", "src": 5}]})
    with pytest.raises(TraceInputError, match="malformed call node"):  # no library, no prefix
        flatten({**doc, "calls": [{"function": "dgemm", "args": {"m": 2}}]})
    assert flatten({**doc, "calls": [{"function": "dgemm", "library": "BLAS"}]})[0].library == "BLAS"


def test_diff_out_of_memory_is_the_inputs_fault_one_line_exit_2(monkeypatch, capsys, tmp_path):
    """A fresh user's 1M distinct calls under `ulimit -v` ended in a MemoryError traceback and
    exit 3; running out of memory on the inputs is exit 2, one line."""
    from cusolver_trace.tracing import diff as tdiff

    a = tmp_path / "a.json"
    a.write_text(json.dumps({"schema": "cusolver-trace/trace/3", "calls": []}))

    def no_memory(*args, **kw):
        raise MemoryError

    monkeypatch.setattr(tdiff, "diff_traces", no_memory)
    assert cli_main(["diff", str(a), str(a)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "out of memory" in err[0]


@pytest.mark.parametrize("node, says", [
    ({"function": "cublasDgemm_v2", "count": 10 ** 4000}, "digits"),
    ({"function": "cublasDgemm_v2", "kind": 5}, "kind"),
    ({"function": "cublasSetStream_v2", "kind": ["compute"]}, "kind"),
    ({"function": "cublasDgemm_v2", "section": 5}, "section"),
    ({"function": "cublasDgemm_v2", "section": [1]}, "section"),
])
def test_diff_refuses_a_malformed_node_in_a_short_line(capsys, tmp_path, node, says):
    """A fresh user's report: a count of 10**4000 was printed with all its digits; a node's
    kind or section of the wrong type was accepted (a kind of 5 made a setup call compared)."""
    a = tmp_path / "a.json"
    a.write_text(json.dumps({"schema": "cusolver-trace/trace/3", "calls": [node]}))
    assert cli_main(["diff", str(a), str(a)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and says in err[0] and len(err[0]) < 300, err
