"""``cusolver-trace diff`` and ``tracing.calls_equal`` on the H200 captures: torch 2.11's
cholesky_inverse paths (Xpotrs at batch 1, MAGMA at batch 3) and the torch 2.13 capture
(cuBLAS trsm loops and trsmBatched). Exit 0 equal, 1 different, 2 bad input."""
from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cusolver_trace.cli import main as cli_main
from cusolver_trace.tracing import Trace, calls_equal, diff_traces, load_log
from cusolver_trace.tracing.command import main as trace_main
from cusolver_trace.tracing.diff import TraceInputError, flatten, load_trace_json

DATA = Path(__file__).parent / "data"
LOG = DATA / "h200-torch2.11-cu130" / "trace-stdout.log.gz"
T213 = DATA / "h200-torch2.13-cu130" / "trace213.json"
B1 = "cholesky_inverse dtype=float64 n=256 batch=1 upper=False"
B3 = "cholesky_inverse dtype=float64 n=256 batch=3 upper=False"
S213 = "cholesky_inverse batch=4 n=96 upper=False"


def one_line(err: str) -> str:
    lines = err.strip("\n").splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


@pytest.fixture(scope="module")
def jsons(tmp_path_factory):
    """Trace JSONs written by `trace --from-log --json` of 2.11 sections and the whole log."""
    folder = tmp_path_factory.mktemp("traces")
    out = {}
    for name, section in (("b1", B1), ("b3", B3),
                          ("nrhs1", "cholesky_solve nrhs=1 dtype=float64 n=256 batch=1 upper=False"),
                          ("nrhs4", "cholesky_solve nrhs=4 dtype=float64 n=256 batch=1 upper=False"),
                          ("all", None)):
        path = folder / f"{name}.json"
        argv = ["--from-log", str(LOG), "--json", str(path), "--no-tree"]
        if section:
            argv += ["--section", section]
        assert trace_main(argv) == 0
        out[name] = path
    return out


def test_xpotrs_path_vs_magma_path(jsons, capsys):
    capsys.readouterr()
    assert cli_main(["diff", str(jsons["b1"]), str(jsons["b3"])]) == 1
    text = capsys.readouterr().out
    assert "3 removed (only in A)" in text and "0 added" in text
    assert "call 1 of A is not in B: cusolverDnXpotrs  uplo=LOWER n=256 nrhs=256" in text
    d = diff_traces(json.loads(jsons["b1"].read_text()), json.loads(jsons["b3"].read_text()))
    assert not d.equal and (d.removed, d.added, d.changed) == (3, 0, 0)
    assert d.by_routine["cusolverDnXpotrs"] == {"calls_a": 1, "calls_b": 0, "gpu_ms_a": None,
                                                "gpu_ms_b": None}
    assert d.by_routine["cublasDtrsm_v2_64"]["calls_a"] == 2
    # with setup calls the MAGMA section still has its handle / stream calls
    assert diff_traces(json.loads(jsons["b1"].read_text()), json.loads(jsons["b3"].read_text()),
                       all=True).calls_b > 0


def test_changed_argument_is_named(jsons, capsys):
    assert cli_main(["diff", str(jsons["nrhs1"]), str(jsons["nrhs4"]), "--limit", "1"]) == 1
    text = capsys.readouterr().out
    assert "nrhs: 1 -> 4" in text and "3 changed" in text
    ok, first = calls_equal(str(jsons["nrhs1"]), str(jsons["nrhs4"]))
    assert ok is False and first.kind == "changed" and first.fields == ["nrhs: 1 -> 4"]
    assert "nrhs: 1 -> 4" in str(first)


def test_equal_traces_exit_0(jsons, capsys, tmp_path):
    assert cli_main(["diff", str(jsons["b1"]), str(jsons["b1"])]) == 0
    assert cli_main(["diff", str(T213), str(T213)]) == 0
    assert "the call sequences are equal" in capsys.readouterr().out
    # the JSON a Trace object writes itself compares equal to the CLI's compact JSON
    sec = load_log(LOG).section(B1)
    t = Trace(label="x", calls=sec.calls, sections=sec.sections)
    assert calls_equal(t, json.loads(jsons["b1"].read_text())) == (True, None)
    out = tmp_path / "d.json"
    assert cli_main(["diff", str(jsons["b1"]), str(jsons["b1"]), "--json", str(out)]) == 0
    assert json.loads(out.read_text())["equal"] is True


def test_torch_211_vs_213_capture(jsons, capsys):
    """2.13 at batch 4, n 96: a loop of cublasDtrsm_v2 instead of 2.11's Xpotrs (batch 1)."""
    assert cli_main(["diff", str(jsons["b1"]), str(T213), "--section-b", S213]) == 1
    text = capsys.readouterr().out
    assert "cublasDtrsm_v2" in text
    d = diff_traces(json.loads(jsons["b1"].read_text()), load_trace_json(T213), section_b=S213)
    assert d.by_routine["cublasDtrsm_v2"]["calls_b"] == 8  # 4 per direction, × 4 collapsed
    assert d.by_routine["cusolverDnXpotrs"]["calls_b"] == 0
    assert d.calls_b == 8 and d.calls_a == 3
    whole = diff_traces(json.loads(jsons["all"].read_text()), load_trace_json(T213))
    assert not whole.equal and whole.calls_a > whole.calls_b


def test_flatten_expands_counts_and_nesting():
    t = load_trace_json(T213)
    calls = flatten(t, section=S213)
    assert [c.function for c in calls] == ["cublasDtrsm_v2"] * 8
    assert {dict(c.args)["trans"] for c in calls} == {"N", "T"}  # typed, as logged
    with pytest.raises(TraceInputError, match="no section"):
        flatten(t, section="nope")


@pytest.mark.parametrize("content, why", [
    (None, "no such file"),
    (b"", "not JSON"),
    (b"\xff\xfe garbage", "not JSON"),
    (b"[1, 2]", "not a cusolver-trace trace JSON"),
    (b'{"schema": "cusolver-trace/comparison/2"}', "not a cusolver-trace trace JSON"),
    (b'{"schema": "cusolver-trace/trace/999", "calls": []}', "is not one this cusolver-trace reads"),
    (b'{"schema": "cusolver-trace/trace/0", "calls": []}', "is not one this cusolver-trace reads"),
    (b'{"schema": "cusolver-trace/trace/", "calls": []}', "is not one this cusolver-trace reads"),
    (b'{"schema": "cusolver-trace/trace/\\u0663", "calls": []}', "is not one this cusolver-trace reads"),
    (b'{"schema": "cusolver-trace/trace/1", "calls": null}', "no API calls"),
    (b'{"schema": "cusolver-trace/trace/1", "calls": {}}', "not a list"),
    (b'{"schema": "cusolver-trace/trace/1", "calls": [{"function": 1}]}', "malformed call node"),
    (b'{"schema": "cusolver-trace/trace/1", "calls": [{"library": "cuBLAS", "function": "f", '
     b'"count": 100000000, "args": {}, "children": []}]}', "implausible"),
    ("dir", "is a folder"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys, content, why):
    path = tmp_path / "bad.json"
    if content == "dir":
        path.mkdir()
    elif content is not None:
        path.write_bytes(content)
    assert cli_main(["diff", str(path), str(T213)]) == 2
    assert why in one_line(capsys.readouterr().err)
    assert cli_main(["diff", str(T213), str(path)]) == 2
    capsys.readouterr()


def test_bad_usage_exits_2(capsys):
    for argv in (["diff", str(T213)], ["diff", str(T213), str(T213), "--limit", "0"],
                 ["diff", str(T213), str(T213), "--bogus"]):
        with pytest.raises(SystemExit) as e:
            cli_main(argv)
        assert e.value.code == 2
    capsys.readouterr()
    assert cli_main(["diff", str(T213), str(T213), "--section-a", "nope"]) == 2
    assert "no section 'nope'" in one_line(capsys.readouterr().err)


# --- properties: random / garbled JSON files ---------------------------------------------

_json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-10**6, 10**6) | st.floats(allow_nan=False)
    | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children,
                                                                      max_size=4),
    max_leaves=20)
_node = st.fixed_dictionaries(
    {"library": st.sampled_from(["cuSOLVER", "cuBLAS"]),
     "function": st.sampled_from(["cusolverDnXpotrs", "cublasDtrsm_v2", "cusolverDnSetStream"]),
     "count": st.integers(0, 3), "args": st.dictionaries(st.sampled_from(["n", "m", "uplo"]),
                                                         st.integers(1, 4) | st.just("LOWER")),
     "children": st.just([])},
    optional={"kind": st.sampled_from(["compute", "setup", "query"]),
              "self_gpu_ms": st.none() | st.floats(0, 1)})
_trace_like = st.builds(lambda calls, schema: {"schema": schema, "calls": calls},
                        st.lists(_node, max_size=6) | _json_values,
                        st.sampled_from(["cusolver-trace/trace/1", "cusolver-trace/trace/9", "x"]))


def _garble(data: bytes, cut: int, flip: int) -> bytes:
    if not data:
        return data
    b = bytearray(data[: max(1, cut % (len(data) + 1))])
    if flip and b:
        b[flip % len(b)] ^= 0x5A
    return bytes(b)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(a=_trace_like | _json_values, b=_trace_like | _json_values, garble=st.booleans(),
       cut=st.integers(0, 10**6), flip=st.integers(0, 10**6))
def test_property_diff_exits_0_1_or_2_and_leaves_files_alone(capsys, a, b, garble, cut, flip):
    with tempfile.TemporaryDirectory() as tmp:
        pa, pb = Path(tmp) / "a.json", Path(tmp) / "b.json"
        da = json.dumps(a).encode()
        db = json.dumps(b).encode()
        if garble:
            da = _garble(da, cut, flip)
        pa.write_bytes(da)
        pb.write_bytes(db)
        code = cli_main(["diff", str(pa), str(pb)])
        captured = capsys.readouterr()
        assert code in (0, 1, 2), captured.err
        assert "Traceback" not in captured.err
        if code == 2:
            one_line(captured.err)
        assert pa.read_bytes() == da and pb.read_bytes() == db
        if code != 2 and not garble and a == b:
            assert code == 0  # a trace always equals itself


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(doc=_trace_like | _json_values, garble=st.booleans(), cut=st.integers(0, 10**6),
       flip=st.integers(0, 10**6))
def test_property_from_log_on_json_files_exits_0_or_2_and_leaves_them_alone(capsys, doc, garble,
                                                                             cut, flip):
    data = json.dumps(doc).encode()
    if garble:
        data = _garble(data, cut, flip)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "t.json"
        path.write_bytes(data)
        code = trace_main(["--from-log", str(path), "--no-tree"])
        captured = capsys.readouterr()
        assert code in (0, 2), captured.err
        assert "Traceback" not in captured.err
        assert path.read_bytes() == data


def test_diff_shows_gpu_time_outside_library_calls():
    """A MAGMA path logs no library call: its time shows only as GPU time outside library
    calls, which the diff puts side by side (from each trace's timed summary)."""
    from cusolver_trace.tracing.diff import diff_traces

    call = {"library": "cuSOLVER", "function": "cusolverDnXpotrs", "count": 1,
            "args": {"n": 256, "nrhs": 256}, "children": []}
    a = {"schema": "cusolver-trace/trace/1", "calls": [call],
         "summary": {"timed": True, "outside_gpu_ms": 0.03, "outside_kernels": 11}}
    b = {"schema": "cusolver-trace/trace/1", "calls": [],
         "summary": {"timed": True, "outside_gpu_ms": 0.58, "outside_kernels": 37}}
    d = diff_traces(a, b)
    assert not d.equal and d.removed == 1
    assert d.outside == {"gpu_ms_a": 0.03, "gpu_ms_b": 0.58, "kernels_a": 11, "kernels_b": 37}
    assert d.to_dict()["outside"]["gpu_ms_b"] == 0.58
    untimed = dict(b, summary={"timed": False, "outside_gpu_ms": None})
    assert diff_traces(a, untimed).outside["gpu_ms_b"] is None
    assert diff_traces({**a, "summary": None}, {**b, "summary": None}).outside is None


def test_an_unwritable_json_path_fails_before_the_diff_is_printed(jsons, capsys, tmp_path):
    code = cli_main(["diff", str(jsons["b1"]), str(jsons["b1"]), "--json",
                     str(tmp_path / "no-such-folder" / "d.json")])
    out, err = capsys.readouterr()
    assert code == 2 and "no such folder" in err and "Traceback" not in err
    assert out == ""  # nothing of the diff: the path is checked first


# --- the alignment: near-linear, exact where the edits are plain ---------------------------

@settings(max_examples=200, deadline=None)
@given(base=st.lists(st.integers(0, 5), max_size=300), period=st.integers(1, 12),
       reps=st.integers(1, 40), edits=st.lists(st.tuples(st.booleans(), st.integers(0, 10**6)),
                                               max_size=6))
def test_property_alignment_finds_inserted_and_removed_calls(base, period, reps, edits):
    """A loop-like sequence (few distinct calls, no call unique) and a copy with calls inserted
    (new ones) or removed: the opcodes cover both sequences, equal stretches are equal, and the
    counts are exactly the edits made."""
    from cusolver_trace.tracing.diff import align

    a = (base[:period] or [0]) * reps + base
    b = list(a)
    inserted = removed = 0
    for k, (insert, where) in enumerate(edits):
        if insert:
            b.insert(where % (len(b) + 1), 100 + k)
            inserted += 1
        elif b:
            pos = where % len(b)
            if b[pos] < 100:  # remove an original call, not one just inserted
                del b[pos]
                removed += 1
    ops, approximate = align(a, b)
    i = j = 0
    for tag, i1, i2, j1, j2 in ops:
        assert (i1, j1) == (i, j) and tag in ("equal", "replace", "delete", "insert")
        if tag == "equal":
            assert a[i1:i2] == b[j1:j2]
        i, j = i2, j2
    assert (i, j) == (len(a), len(b)) and not approximate
    only_b = sum(j2 - j1 for t, i1, i2, j1, j2 in ops if t != "equal")
    only_a = sum(i2 - i1 for t, i1, i2, j1, j2 in ops if t != "equal")
    assert only_b - only_a == inserted - removed
    assert only_a <= removed + inserted and only_b <= removed + inserted  # never worse than the edits


def test_folded_and_unfolded_forms_diff_alike():
    """A loop folded into {"repeat": k} compares equal to the same calls listed one by one,
    and a loop with one iteration more is exactly that iteration's calls added."""
    body = [{"library": "cuBLAS", "function": "cublasDtrsm_v2", "count": 1, "args": {"m": m}}
            for m in (1, 2, 3)]
    folded = {"schema": "cusolver-trace/trace/2", "calls": [{"repeat": 500, "calls": body}]}
    listed = {"schema": "cusolver-trace/trace/1", "calls": body * 500}
    assert diff_traces(folded, listed).equal
    more = {"schema": "cusolver-trace/trace/2", "calls": [{"repeat": 501, "calls": body}]}
    d = diff_traces(folded, more)
    assert (d.added, d.removed, d.changed, d.calls_b) == (3, 0, 0, 1503)
    assert d.by_routine["cublasDtrsm_v2"] == {"calls_a": 1500, "calls_b": 1503, "gpu_ms_a": None,
                                              "gpu_ms_b": None}


@pytest.mark.slow
@pytest.mark.skipif(not __import__("os").environ.get("CUSOLVER_TRACE_SLOW"),
                    reason="a wall-time check: run with CUSOLVER_TRACE_SLOW=1")
def test_a_million_calls_diff_within_ten_seconds():
    """Issue 26: two synthetic traces of about a million calls each (a training loop, with
    scattered edits) diff in 10 s or less, written as the tracer writes them (folded)."""
    import importlib.util
    import os
    import time

    spec = importlib.util.spec_from_file_location(
        "trace_diff_1m", Path(__file__).resolve().parent.parent / "benchmarks" / "trace_diff_1m.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    a, b = bench.program(1_000_000, 0, 40)
    with tempfile.TemporaryDirectory() as tmp:
        paths = []
        for name, epochs in (("a", a), ("b", b)):
            path = os.path.join(tmp, f"{name}.json")
            Path(path).write_text(json.dumps({"schema": "cusolver-trace/trace/2",
                                              "calls": bench.folded(epochs)}))
            paths.append(path)
        t0 = time.perf_counter()
        d = diff_traces(load_trace_json(paths[0]), load_trace_json(paths[1]))
        elapsed = time.perf_counter() - t0
    assert d.calls_a > 1_000_000 and not d.equal and not d.approximate
    assert elapsed <= 10.0, f"{elapsed:.1f} s"


@pytest.mark.parametrize("argv", [["", "x.json"], ["x.json", ""]])
def test_an_empty_file_name_is_named(argv, capsys):
    assert cli_main(["diff", *argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "empty file name" in err[0]
