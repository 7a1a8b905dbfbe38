"""Issue 15 (trace real programs), CPU part: the summary table, --by, the whole-program
bootstrap (on a CPU-only torch: no kernels, the note says so), the Chrome-trace export,
the JSON size, nvtx_range and the GP example. Data: the H200 captures in tests/data/."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from cusolver_trace.tracing import Event, Trace, load_log, nvtx_range
from cusolver_trace.tracing._hook import correlate
from cusolver_trace.tracing.chrome import chrome_trace, validate_chrome_trace
from cusolver_trace.tracing.command import main
from cusolver_trace.tracing.nvtx import nvtx_available, nvtx_note
from cusolver_trace.tracing.program import attach, load_profile, program_command
from cusolver_trace.tracing.summary import parse_by, shape_of, summarize
from test_trace_attribution import _fixture_events, timed_section  # the capture's reader, one copy

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(__file__).parent / "data" / "h200-torch2.11-cu130"
LOG = DATA / "trace-stdout.log.gz"
SECTION = "cholesky_inverse dtype=float64 n=256 batch=1 upper=False"
PY = sys.executable


@pytest.fixture(scope="module")
def log():
    return load_log(LOG)


def _timed_section():
    """The cholesky_inverse section's records with the kernels of the kineto fixture, and
    the activities outside every call."""
    log, acts = timed_section()
    return log, [a for a in acts if a.parent is None]


# --- summarize: pure function -----------------------------------------------------------

def test_summary_of_a_log_counts_calls_and_says_why_no_times(log):
    s = summarize(log.records, why_no_times="a log")
    assert not s.timed and s.why_no_times == "a log"
    by_name = {r.key["routine"]: r for r in s.rows}
    compute = [r for r in log.records if r.kind != "setup"]
    assert s.calls == len(compute) and s.setup_calls == len(log.records) - len(compute)
    assert sum(r.calls for r in s.rows) == len(compute)
    assert by_name["cusolverDnXpotrs"].calls == sum(1 for r in log.records
                                                     if r.function == "cusolverDnXpotrs")
    assert all(r.total_ms is None and r.pct_all is None for r in s.rows)
    # sorted by GPU time, then calls: without times the most frequent routine comes first
    assert [r.calls for r in s.rows] == sorted((r.calls for r in s.rows), reverse=True)
    assert s.to_dict()["rows"][0]["calls"] == s.rows[0].calls


def test_summary_by_shape_splits_distinct_sizes(log):
    s = summarize(log.section("cholesky_solve nrhs=4 dtype=float64 n=256 batch=1 upper=False").records
                  + log.section("cholesky_solve nrhs=1 dtype=float64 n=256 batch=1 upper=False").records,
                  by=("shape",))
    assert s.by == ("routine", "shape")
    shapes = {(r.key["routine"], r.key["shape"]): r.calls for r in s.rows}
    assert shapes[("cusolverDnXpotrs", "n=256 nrhs=4 lda=256")] == 1
    assert shapes[("cusolverDnXpotrs", "n=256 nrhs=1 lda=256")] == 1
    assert shapes[("cublasDtrsm_v2_64", "m=256 n=4 lda=256")] == 2
    assert shapes[("cublasDtrsm_v2_64", "m=256 n=1 lda=256")] == 2


def test_summary_with_kernel_times_from_the_kineto_capture():
    rec, outside = _timed_section()
    s = summarize(rec.records, outside_kernels=outside, wall_s=1.5)
    assert s.timed and s.wall_s == 1.5
    rows = {r.key["routine"]: r for r in s.rows}
    trsm, xpotrs = rows["cublasDtrsm_v2_64"], rows["cusolverDnXpotrs"]
    assert [r.key["routine"] for r in s.rows] == ["cublasDtrsm_v2_64", "cusolverDnXpotrs"]
    assert trsm.calls == 2 and round(trsm.total_ms, 4) == round(0.1071 + 0.0635, 4)
    assert round(trsm.max_ms, 4) == 0.1071 and trsm.mean_ms == pytest.approx(trsm.total_ms / 2)
    assert round(xpotrs.total_ms, 4) == 0.0006  # its own copy_info_kernel; trsm has its own row
    assert s.library_ms == pytest.approx(trsm.total_ms + xpotrs.total_ms)
    assert s.outside_kernels == 5 and s.outside_ms == pytest.approx(sum(a.gpu_ms for a in outside))
    assert s.attributed_kernels == 15 and s.unattributed_library_kernels == 0
    assert sum(r.pct_library for r in s.rows) == pytest.approx(100.0)
    assert sum(r.pct_all for r in s.rows) == pytest.approx(100.0 * s.library_ms / s.total_ms)
    assert all(r.pct_all < r.pct_library for r in s.rows)
    d = s.to_dict()
    assert d["timed"] and d["rows"][0]["routine"] == "cublasDtrsm_v2_64"
    assert d["library_gpu_ms"] + d["outside_gpu_ms"] == pytest.approx(d["total_gpu_ms"])


def test_parse_by():
    assert parse_by("routine") == ("routine",)
    assert parse_by("line,routine") == ("routine", "line")
    for bad in ("", "routine,", "size", "op,,line"):
        with pytest.raises(ValueError):
            parse_by(bad)
    assert shape_of({"uplo": "LOWER"}) == "-"


# --- whole-program attribution from profiler events ---------------------------------------

def test_attach_sets_kernels_ops_lines_and_spans():
    rec = load_log(LOG).section(SECTION).records
    events = [(*e, 1, 0, 0, 0, "") for e in _fixture_events(shift=22)]
    xpotrs_tick = next(e for e in events if e[4].endswith("cusolverDnXpotrs"))
    # an aten op around the Xpotrs marker and the two trsm markers, on the same thread
    events.append(("cpu", xpotrs_tick[1] - 10, 10**6, 900, "aten::cholesky_inverse", 1, 0, 0, 0,
                   "cpu_op"))
    events.append(("cpu", xpotrs_tick[1] - 5, 10**6 - 10, 901, "aten::_cholesky_inverse_helper",
                   1, 0, 0, 0, "cpu_op"))
    found = correlate(events)
    found["sources"] = [["/x/prog.py", 10 + i, f"line {i}"] for i in range(len(rec))]
    notes: list[str] = []
    acts = attach(rec, found, notes)
    assert notes == [] and len([a for a in acts if a.parent is None]) == 5
    by_fn = {r.function: r for r in rec}
    assert by_fn["cusolverDnXpotrs"].op == "aten::cholesky_inverse"  # the outermost aten op
    assert by_fn["cusolverDnSetStream"].op is None
    assert [r.where for r in rec] == [f"/x/prog.py:{10 + i}" for i in range(len(rec))]
    assert rec[3].code == "line 3"
    assert all(r.start_us is not None and r.dur_us >= 1.0 for r in rec)
    t = Trace(label="x", calls=load_log(LOG).section(SECTION).calls)  # untimed copy
    assert t.summary().timed is False
    s = summarize(rec, by=("op",), outside_kernels=[a for a in acts if a.parent is None])
    ops = {(r.key["routine"], r.key["op"]) for r in s.rows}
    assert ("cublasDtrsm_v2_64", "aten::cholesky_inverse") in ops


def test_program_command_rewrites_python_commands_only(tmp_path):
    out = str(tmp_path)
    cmd, why = program_command(["python3", "-u", "-X", "dev", "prog.py", "--n", "4"], out)
    assert why is None and cmd[:4] == ["python3", "-u", "-X", "dev"] and cmd[4] == "-c"
    assert cmd[-6:] == [out, "calls", "path", "prog.py", "--n", "4"]
    cmd, _ = program_command([PY, "-m", "pkg.mod", "a"], out, all_ops=True)
    assert cmd[-5:] == [out, "ops", "module", "pkg.mod", "a"]
    cmd, _ = program_command(["python", "-c", "print(1)", "x"], out)
    assert cmd[-5:] == [out, "calls", "code", "print(1)", "x"]
    for argv in (["bash", "x.sh"], ["python3"], ["python3", "-"], ["python3", "-i", "x.py"],
                 ["python3", "--version"], ["python3", "-m"]):
        cmd, why = program_command(argv, out)
        assert cmd is None and why, argv
    assert load_profile(str(tmp_path / "missing"))[0]["timing"] is False


# --- the CLI: summary first, --no-tree, JSON -------------------------------------------

def test_from_log_prints_the_summary_first_then_the_tree(tmp_path, capsys):
    out = tmp_path / "t.json"
    assert main(["--from-log", str(LOG), "--section", SECTION, "--by", "routine,shape",
                 "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert text.index("Summary: calls per routine, shape") < text.index("├── cusolverDnXpotrs")
    assert "no GPU times: a captured log holds the calls but no kernel times" in text
    assert "wall time: not known" in text
    d = json.loads(out.read_text())
    assert d["summary"]["by"] == ["routine", "shape"] and d["summary"]["timed"] is False
    assert {(r["routine"], r["shape"], r["calls"]) for r in d["summary"]["rows"]} == {
        ("cusolverDnXpotrs", "n=256 nrhs=256 lda=256", 1),
        ("cublasDtrsm_v2_64", "m=256 n=256 lda=256", 2)}
    assert d["format"] == "compact" and "records" not in d
    assert [n["function"] for n in d["calls"][0]["calls"]][2] == "cusolverDnXpotrs"


def test_no_tree_leaves_the_tree_out(capsys):
    assert main(["--from-log", str(LOG), "--section", SECTION, "--no-tree"]) == 0
    text = capsys.readouterr().out
    assert "Xpotrs" in text and "cusolverDnXpotrs" not in text  # summary only
    assert "├──" not in text and "└──" not in text
    assert main(["--from-log", str(LOG), "--section", SECTION, "--tree"]) == 0
    assert "├── cusolverDnXpotrs" in capsys.readouterr().out


def test_by_op_on_a_log_says_it_needs_a_profiled_run(capsys):
    assert main(["--from-log", str(LOG), "--section", SECTION, "--by", "op"]) == 0
    text = capsys.readouterr().out
    assert "does not say which torch op" in text and "(no torch op" in text


def test_bad_flag_values_are_usage_errors(tmp_path, capsys):
    for argv in (["--by", "size", "--from-log", str(LOG)], ["--from-log", str(LOG), "--tree=1"]):
        with pytest.raises(SystemExit) as e:
            main(argv)
        assert e.value.code == 2
    assert main(["--from-log", str(LOG), "--overhead"]) == 2
    assert "--overhead runs a program" in capsys.readouterr().err
    assert main(["--no-timing", "--overhead", "--", PY, "-c", "pass"]) == 2
    assert main(["--chrome", str(tmp_path / "no" / "c.json"), "--from-log", str(LOG)]) == 2
    assert "no such folder" in capsys.readouterr().err


def test_default_json_of_the_whole_log_is_small_and_full_keeps_every_record(tmp_path, capsys, log):
    small, full = tmp_path / "small.json", tmp_path / "full.json"
    assert main(["--from-log", str(LOG), "--json", str(small), "--no-tree"]) == 0
    assert main(["--from-log", str(LOG), "--json", str(full), "--full", "--no-tree"]) == 0
    capsys.readouterr()
    assert small.stat().st_size < 250_000  # 2505 records: well under 1 MB (--full is larger)
    assert full.stat().st_size > small.stat().st_size
    d_small, d_full = json.loads(small.read_text()), json.loads(full.read_text())
    assert "records" not in d_small and len(d_full["records"]) == len(log.records) == 2505
    assert d_full["records"][0]["pointers"] and "pointers" not in d_small["calls"][0]
    from cusolver_trace.tracing import calls_equal

    assert calls_equal(d_small, d_full, all=True) == (True, None)  # same calls, two forms


# --- the whole-program bootstrap on this CPU machine -------------------------------------

FAKE = textwrap.dedent("""\
    import ctypes, sys
    import torch
    libc = ctypes.CDLL(None)
    def log_record(n):
        libc.printf(b"[2026-11-30 02:17:18][cusolverDn][1][Api][cusolverDnXpotrf] n=%d lda=%d\\n", n, n)
        libc.fflush(None)
    print("program output", sys.argv[1:])
    x = torch.ones(4) * 2
    log_record(8)
    log_record(8)
    log_record(16)
    sys.exit(int(sys.argv[1]))
""")


@pytest.fixture()
def fake_program(tmp_path):
    p = tmp_path / "fake_prog.py"
    p.write_text(FAKE)
    return p


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the stdout hook is glibc only")
def test_program_under_the_bootstrap_cpu_torch(fake_program, tmp_path, capsys):
    out, chrome = tmp_path / "t.json", tmp_path / "c.json"
    status = main(["--by", "line", "--json", str(out), "--chrome", str(chrome), "--",
                   PY, str(fake_program), "7"])
    assert status == 7  # the program's exit status, through the bootstrap
    text = capsys.readouterr().out
    assert "program output ['7']" in text
    d = json.loads(out.read_text())
    rows = d["summary"]["rows"]
    assert [(r["routine"], r["calls"]) for r in rows] == [("cusolverDnXpotrf", 3)]
    # the hook saw each record being written from the program's line 5 (inside log_record)
    assert rows[0]["line"].startswith(f"{fake_program}:5  libc.printf(")
    import torch

    if not torch.cuda.is_available():
        assert d["summary"]["timed"] is False
        assert "no CUDA device visible to torch" in d["summary"]["why_no_times"]
        assert any("no CUDA device visible" in n for n in d["notes"])
    assert d["summary"]["wall_s"] is not None
    obj = json.loads(chrome.read_text())
    assert validate_chrome_trace(obj) == []
    api = [e for e in obj["traceEvents"] if e["ph"] == "X"]
    assert [e["name"] for e in api] == ["cusolverDnXpotrf"] * 3
    assert [e["args"]["n"] for e in api] == [8, 8, 16]
    assert obj["otherData"]["synthetic_time"] is False  # spans from the profiler's markers
    assert d["sources"][d["calls"][0]["src"]]["where"] == f"{fake_program}:5"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the stdout hook is glibc only")
def test_program_errors_and_modes_through_the_bootstrap(tmp_path, capsys):
    assert main(["--no-tree", "--", PY, "-c", "raise ValueError('boom')"]) == 1
    err = capsys.readouterr().err
    assert "ValueError: boom" in err and "_progboot" not in err  # the program's own traceback
    mod = tmp_path / "mymod_ct.py"
    mod.write_text("import sys; print('module ran', sys.argv[1:])\n")
    env_before = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = str(tmp_path)
    try:
        assert main(["--no-tree", "--", PY, "-m", "mymod_ct", "a"]) == 0
    finally:
        if env_before is None:
            os.environ.pop("PYTHONPATH")
        else:
            os.environ["PYTHONPATH"] = env_before
    assert "module ran ['a']" in capsys.readouterr().out


def test_no_timing_and_non_python_commands_say_why(fake_program, capsys):
    assert main(["--no-timing", "--", PY, str(fake_program), "0"]) == 0
    text = capsys.readouterr().out
    assert "no per-call GPU time: --no-timing was given" in text
    assert "cusolverDnXpotrf" in text
    assert main(["--", "sh", "-c", "echo hi; exit 4"]) == 4
    assert "not a Python command" in capsys.readouterr().out


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the stdout hook is glibc only")
def test_overhead_runs_twice_and_reports_both_wall_times(fake_program, tmp_path, capsys):
    out = tmp_path / "t.json"
    assert main(["--overhead", "--no-tree", "--json", str(out), "--",
                 PY, str(fake_program), "0"]) == 0
    text = capsys.readouterr().out
    assert "with the profiler" in text and "without" in text and "profiling overhead" in text
    assert text.count("program output") == 1  # the unprofiled run's output is not echoed
    s = json.loads(out.read_text())["summary"]
    assert s["wall_s"] is not None and s["wall_s_unprofiled"] is not None


# --- Chrome trace -----------------------------------------------------------------------

def test_chrome_trace_of_a_log_is_valid_and_nests_cublas_in_cusolver(tmp_path, capsys):
    path = tmp_path / "c.json"
    assert main(["--from-log", str(LOG), "--section", SECTION, "--chrome", str(path)]) == 0
    obj = json.loads(path.read_text())
    assert validate_chrome_trace(obj) == []
    assert obj["otherData"]["synthetic_time"] is True
    x = {e["name"]: e for e in obj["traceEvents"] if e["ph"] == "X"}
    xp, trsm = x["cusolverDnXpotrs"], x["cublasDtrsm_v2_64"]
    assert xp["ts"] <= trsm["ts"] and trsm["ts"] + trsm["dur"] <= xp["ts"] + xp["dur"]
    assert xp["args"]["nrhs"] == 256 and xp["args"]["uplo"] == "LOWER" and xp["cat"] == "cuSOLVER"
    meta = [e for e in obj["traceEvents"] if e["ph"] == "M"]
    assert {e["name"] for e in meta} == {"process_name", "thread_name"}
    # the section is a range event on its own track, spanning its calls
    (sec,) = [e for e in obj["traceEvents"] if e.get("cat") == "range"]
    assert sec["name"] == SECTION and sec["tid"] != xp["tid"] and sec["args"]["calls"] == 7
    assert sec["ts"] <= xp["ts"] and xp["ts"] + xp["dur"] <= sec["ts"] + sec["dur"]


def test_chrome_trace_with_gpu_events_from_the_kineto_capture():
    log, acts = timed_section()
    t = Trace(label="x", calls=log.calls, activities=acts)
    obj = chrome_trace(t)
    assert validate_chrome_trace(obj) == []
    kernels = [e for e in obj["traceEvents"] if e["ph"] == "X" and e["pid"] == 2]
    assert len(kernels) == len(acts) == 20
    assert sum(1 for k in kernels if k["args"].get("call") == "cublasDtrsm_v2_64") == 14
    assert sum(1 for k in kernels if "call" not in k["args"]) == 5  # torch's own
    api = {e["name"]: e for e in obj["traceEvents"] if e["ph"] == "X" and e["pid"] == 1}
    xp, trsm = api["cusolverDnXpotrs"], api["cublasDtrsm_v2_64"]
    assert xp["ts"] <= trsm["ts"] and trsm["ts"] + trsm["dur"] <= xp["ts"] + xp["dur"]
    assert obj["otherData"]["synthetic_time"] is False


SCHEMA = Path(__file__).parent / "data" / "trace-event-format.schema.json"


@pytest.mark.parametrize("timed", [False, True])
def test_chrome_file_loads_against_the_trace_event_format_schema(tmp_path, capsys, timed):
    """The file ``--chrome`` writes, read back from disk, is valid Trace Event Format (JSON
    Object Format) by a JSON Schema of that format (tests/data/trace-event-format.schema.json)."""
    jsonschema = pytest.importorskip("jsonschema")
    path = tmp_path / "c.json"
    if timed:
        from cusolver_trace.tracing.chrome import write_chrome_trace

        log, acts = timed_section()
        write_chrome_trace(Trace(label="x", calls=log.calls, activities=acts), str(path))
    else:
        assert main(["--from-log", str(LOG), "--chrome", str(path), "--no-tree"]) == 0
        capsys.readouterr()
    obj = json.loads(path.read_text(encoding="utf-8"))
    validator = jsonschema.Draft202012Validator(json.loads(SCHEMA.read_text()))
    assert [e.message for e in validator.iter_errors(obj)] == []
    assert validate_chrome_trace(obj) == []
    x = [e for e in obj["traceEvents"] if e["ph"] == "X"]
    assert x and all(e["dur"] >= 0 for e in x)
    # the schema is not vacuous: a complete event without its duration is refused
    broken = {"traceEvents": [dict(x[0])]}
    del broken["traceEvents"][0]["dur"]
    assert list(validator.iter_errors(broken))


@pytest.mark.parametrize("bad, problem", [
    ({}, "traceEvents"),
    ({"traceEvents": [{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 0, "dur": -1}]}, "dur"),
    ({"traceEvents": [{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": "0", "dur": 1}]}, "ts"),
    ({"traceEvents": [{"ph": "X", "name": "a", "pid": "1", "tid": 1, "ts": 0, "dur": 1}]}, "pid"),
    ({"traceEvents": [{"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": "p"}},
                      {"ph": "M", "name": "thread_name", "pid": 1, "tid": 1, "args": {"name": "t"}},
                      {"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 5, "dur": 1},
                      {"ph": "X", "name": "b", "pid": 1, "tid": 1, "ts": 4, "dur": 1}]}, "back in time"),
    ({"traceEvents": [{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 0, "dur": 1}]}, "thread_name"),
    ({"traceEvents": [{"ph": "B", "name": "a", "pid": 1, "tid": 1}]}, "phase"),
])
def test_chrome_validator_catches_bad_timelines(bad, problem):
    problems = validate_chrome_trace(bad)
    assert problems and any(problem in p for p in problems), problems


def test_nvtx_range_is_usable_with_or_without_the_package():
    with nvtx_range("cusolver-trace test range"):
        value = 41 + 1
    assert value == 42
    with pytest.raises(ZeroDivisionError):
        with nvtx_range("raises"):
            1 / 0
    assert (nvtx_note() is None) == nvtx_available()


# --- the GP example ------------------------------------------------------------------------

def test_gp_example_runs_tiny_on_the_cpu():
    res = subprocess.run([PY, str(ROOT / "examples" / "trace_gp.py"), "--n", "40", "--steps", "2",
                          "--impl", "torch", "--device", "cpu"],
                         capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert res.returncode == 0, res.stderr
    assert "exact GP (torch) n=40 d=3 float64 on cpu: 2 Adam steps" in res.stdout
    bad = subprocess.run([PY, str(ROOT / "examples" / "trace_gp.py"), "--n", "0"],
                         capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert bad.returncode == 2


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the stdout hook is glibc only")
@pytest.mark.parametrize("tail,status", [("", 0), ("sys.exit(5)", 5), ("sys.exit('bye')", 1),
                                         ("raise RuntimeError('late')", 1)])
def test_program_leaves_like_python_without_teardown(tmp_path, capsys, tail, status):
    """The bootstrap ends a hooked program with os._exit (no interpreter teardown, where the
    libraries' destructors would write through the Python stdout hook), but only after what
    Python does at exit: non-daemon threads joined, atexit handlers run, streams flushed."""
    prog = tmp_path / "leave.py"
    prog.write_text(
        "import atexit, sys, threading, time\n"
        "atexit.register(lambda: print('atexit ran', flush=False))\n"
        "def work():\n"
        "    time.sleep(0.2)\n"
        "    print('thread done')\n"
        "threading.Thread(target=work).start()\n"
        "print('main done', end='')\n"
        + tail + "\n")
    assert main(["--no-tree", "--", PY, str(prog)]) == status
    out, err = capsys.readouterr()
    assert "main done" in out and "thread done" in out and "atexit ran" in out
    if tail == "sys.exit('bye')":
        assert "bye" in err
    if "RuntimeError" in tail:
        assert "RuntimeError: late" in err


def test_summary_of_a_program_without_library_calls_keeps_its_gpu_time():
    """torch 2.11's batched cholesky_inverse runs MAGMA and logs no call: the summary is still
    timed, with every kernel outside library calls (what `diff` puts beside the Xpotrs path)."""
    from cusolver_trace.tracing.summary import summarize

    magma = [Event("magma_dpotrs_batched_kernel", "kernel", 0.0, 250.0),
             Event("at::fill", "kernel", 300.0, 10.0)]
    s = summarize([], outside_kernels=magma)
    assert s.timed and s.library_ms == 0.0
    assert s.to_dict()["outside_gpu_ms"] == pytest.approx(0.26) and s.to_dict()["outside_kernels"] == 2
    assert s.to_dict()["unattributed_library_kernels"] == 0  # MAGMA's: not cuSOLVER / cuBLAS
    assert not summarize([]).timed  # nothing measured: untimed
    assert not summarize([], outside_kernels=magma[:1], why_no_times="no GPU").timed


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the stdout hook is glibc only")
def test_by_op_records_the_ops_and_the_default_run_does_not(tmp_path, capsys):
    """``--by op`` has the traced program record every op (the op that issued each call: here a
    record_function range, as no aten op calls the libraries on the CPU); without it only the
    markers are recorded, and the op is unknown."""
    prog = tmp_path / "ops.py"
    prog.write_text(textwrap.dedent("""\
        import ctypes
        import torch
        libc = ctypes.CDLL(None)
        with torch.profiler.record_function("my_region"):
            torch.ones(4).sum()
            libc.printf(b"[2026-11-30 02:17:18][cusolverDn][1][Api][cusolverDnXpotrf] n=4\\n")
            libc.fflush(None)
        """))
    out = tmp_path / "t.json"
    assert main(["--by", "op", "--json", str(out), "--", PY, str(prog)]) == 0
    rows = json.loads(out.read_text())["summary"]["rows"]
    assert [(r["routine"], r["op"]) for r in rows] == [("cusolverDnXpotrf", "my_region")]
    assert main(["--json", str(out), "--", PY, str(prog)]) == 0
    d = json.loads(out.read_text())
    (node,) = d["calls"]
    source = d["sources"][node["src"]]  # the node's op / where / code
    assert "op" not in source and source["where"] == f"{prog}:6"
    capsys.readouterr()
