"""Regression tests for the defects of the adversarial pass in issue 26: numbers of any size in
a trace JSON, a ``sections`` that is not a list, outputs that would overwrite an input (a
``diff`` input, the traced program), a partial write to a closed pipe, and a ``--keep-log``
log that ``--from-log`` must always read back."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cusolver_trace.cli import main as cli_main

ROOT = Path(__file__).resolve().parent.parent
LOG = Path(__file__).parent / "data" / "h200-torch2.11-cu130" / "trace-stdout.log.gz"
PY = sys.executable
SCHEMA = "cusolver-trace/trace/1"


def one_line(err: str) -> str:
    lines = err.strip("\n").splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def _node(**extra) -> dict:
    return {"library": "cuBLAS", "function": "cublasDtrsm_v2", "count": 1, "args": {"m": 4},
            "children": [], **extra}


@pytest.mark.parametrize("doc", [
    {"schema": SCHEMA, "calls": [_node(self_gpu_ms=10**400)]},
    {"schema": SCHEMA, "calls": [_node(self_gpu_ms=10**25)]},
    {"schema": SCHEMA, "calls": [_node()],
     "summary": {"timed": True, "outside_gpu_ms": 10**400, "outside_kernels": 3}},
    {"schema": SCHEMA, "calls": [_node()],
     "summary": {"timed": True, "outside_gpu_ms": 1.0, "outside_kernels": 10**400}},
])
def test_numbers_of_any_size_exit_0_1_or_2_never_a_traceback(tmp_path, capsys, doc):
    """``10**400`` is legal JSON: the diff shows it or refuses it in one line (exit 2)."""
    path = tmp_path / "a.json"
    path.write_text(json.dumps(doc))
    code = cli_main(["diff", str(path), str(path)])
    captured = capsys.readouterr()
    assert code in (0, 2) and "Traceback" not in captured.err
    if code == 2:
        assert "not a GPU time" in one_line(captured.err)


@pytest.mark.parametrize("value", ["x", True, [1.0], {"ms": 1}, float("nan")])
def test_a_gpu_time_that_is_not_a_number_is_refused_like_nan(tmp_path, capsys, value):
    """``"self_gpu_ms": "x"`` (or true) was taken as "not measured" (exit 0) where NaN in the
    same field is refused: every value that is not a GPU time is now one line, exit 2."""
    path = tmp_path / "a.json"
    path.write_text(json.dumps({"schema": SCHEMA, "calls": [_node(self_gpu_ms=value)]}))
    assert cli_main(["diff", str(path), str(path)]) == 2
    assert "self_gpu_ms" in one_line(capsys.readouterr().err)


def test_sections_that_is_not_a_list_is_bad_input(tmp_path, capsys):
    path = tmp_path / "a.json"
    path.write_text(json.dumps({"schema": SCHEMA, "calls": [], "sections": 5}))
    assert cli_main(["diff", str(path), str(path), "--section-a", "x"]) == 2
    assert "'sections' is not a list" in one_line(capsys.readouterr().err)


@pytest.mark.parametrize("which", ["a", "b"])
def test_diff_json_never_overwrites_an_input(tmp_path, capsys, which):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps({"schema": SCHEMA, "calls": [_node()]}))
    b.write_text(json.dumps({"schema": SCHEMA, "calls": []}))
    before = {p: p.read_bytes() for p in (a, b)}
    target = a if which == "a" else b
    assert cli_main(["diff", str(a), str(b), "--json", str(tmp_path / "." / target.name)]) == 2
    assert "it would be overwritten" in one_line(capsys.readouterr().err)
    assert {p: p.read_bytes() for p in (a, b)} == before


@pytest.mark.parametrize("option", ["--chrome", "--json", "--keep-log"])
def test_trace_outputs_never_overwrite_the_program(tmp_path, capsys, option):
    prog = tmp_path / "prog.py"
    prog.write_text("print('hello')\n")
    before = prog.read_bytes()
    assert cli_main(["trace", option, str(prog), "--", PY, str(prog)]) == 2
    line = one_line(capsys.readouterr().err)
    assert "a file the command reads" in line and option in line
    assert prog.read_bytes() == before


@pytest.mark.parametrize("form", ["--input={}", "-i={}", "if={}"])
@pytest.mark.parametrize("option", ["--chrome", "--json", "--keep-log"])
def test_trace_outputs_never_overwrite_an_input_given_after_an_equals_sign(tmp_path, capsys,
                                                                           option, form):
    """``trace --json data.txt -- python3 prog.py --input=data.txt`` replaced the program's
    input with the trace (``--keep-log`` truncated it before the program ran); only the
    separate-word form ``--input data.txt`` was refused (a fresh user's report)."""
    prog, data = tmp_path / "prog.py", tmp_path / "data.txt"
    prog.write_text("print('hello')\n")
    data.write_text("PRECIOUS DATA\n")
    before = {p: p.read_bytes() for p in (prog, data)}
    argv = ["trace", option, str(data), "--", PY, str(prog), form.format(data)]
    assert cli_main(argv) == 2
    line = one_line(capsys.readouterr().err)
    assert "a file the command reads" in line and option in line
    assert {p: p.read_bytes() for p in (prog, data)} == before


@pytest.mark.parametrize("module, target", [("mymod", "mymod.py"),
                                            ("pkg.sub", "pkg/sub/__main__.py"),
                                            ("pkg", "pkg/__init__.py")])
@pytest.mark.parametrize("option", ["--chrome", "--json", "--keep-log"])
def test_trace_outputs_never_overwrite_a_module_run_with_m(tmp_path, capsys, monkeypatch,
                                                           option, module, target):
    """``trace --json mymod.py -- python3 -m mymod`` overwrote the module (it was only
    refused for ``python3 mymod.py``)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mymod.py").write_text("print('mod')\n")
    (tmp_path / "pkg" / "sub").mkdir(parents=True)
    for f in ("pkg/__init__.py", "pkg/sub/__init__.py", "pkg/__main__.py", "pkg/sub/__main__.py"):
        (tmp_path / f).write_text("print(1)\n")
    before = {p: p.read_bytes() for p in tmp_path.rglob("*.py")}
    assert cli_main(["trace", option, target, "--", PY, "-m", module]) == 2
    line = one_line(capsys.readouterr().err)
    assert "a file the command reads" in line and option in line
    assert {p: p.read_bytes() for p in tmp_path.rglob("*.py")} == before


def _closed_pipe_status(argv: list[str], env: dict) -> tuple[int, bytes]:
    """Run the CLI with stdout into a pipe whose reader takes 10 bytes and leaves."""
    r, w = os.pipe()
    proc = subprocess.Popen([PY, "-m", "cusolver_trace", *argv], stdout=w,
                            stderr=subprocess.PIPE, cwd=ROOT, env=env)
    os.close(w)
    head = os.read(r, 10)
    os.close(r)
    err = proc.communicate(timeout=300)[1]
    return proc.returncode, head + err


@pytest.mark.parametrize("unbuffered", ["1", ""])
@pytest.mark.parametrize("command", ["trace", "diff"])
def test_partial_write_to_a_closed_pipe_exits_141(tmp_path, unbuffered, command):
    """The JSON (several hundred kB, more than a pipe holds) cannot all be written once the
    reader has gone: exit 141 as the README says, never 0 with the output cut short. With
    ``PYTHONUNBUFFERED`` a partial write used to be dropped without an error."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": unbuffered}
    if command == "trace":
        argv = ["trace", "--from-log", str(LOG), "--json", "-", "--no-tree", "--full"]
    else:
        big = {"schema": SCHEMA, "calls": [_node(args={"m": i}) for i in range(6000)]}
        other = {"schema": SCHEMA, "calls": [_node(args={"m": -i}) for i in range(6000)]}
        (tmp_path / "a.json").write_text(json.dumps(big))
        (tmp_path / "b.json").write_text(json.dumps(other))
        argv = ["diff", str(tmp_path / "a.json"), str(tmp_path / "b.json"), "--json", "-"]
    status, seen = _closed_pipe_status(argv, env)
    assert status == 141, seen[-2000:]
    assert b"Traceback" not in seen


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the stdout hook is glibc only")
@pytest.mark.parametrize("timing", [[], ["--no-timing"]])
def test_a_kept_log_is_always_read_back(tmp_path, capsys, timing):
    """``--keep-log`` of a program that prints NUL and other binary bytes: ``--from-log`` reads
    the project's own log back (it used to refuse it as 'not a text log')."""
    kept = tmp_path / "k.log"
    code = ("import sys; print('a\\x00b'); sys.stdout.flush(); "
            "sys.stdout.buffer.write(bytes(range(256)) + b'\\n'); "
            "print('[2026-11-30 02:17:18][cusolverDn][1][Api][cusolverDnXpotrf] n=8 lda=8')")
    assert cli_main(["trace", *timing, "--keep-log", str(kept), "--", PY, "-c", code]) == 0
    first = capsys.readouterr().out
    assert "cusolverDnXpotrf" in first
    out = tmp_path / "t.json"
    assert cli_main(["trace", "--from-log", str(kept), "--json", str(out)]) == 0
    captured = capsys.readouterr()
    assert "a\x00b" in captured.out and "Traceback" not in captured.err
    d = json.loads(out.read_text())
    assert [n["function"] for n in d["calls"]] == ["cusolverDnXpotrf"]
    import gzip

    (tmp_path / "k.log.gz").write_bytes(gzip.compress(kept.read_bytes()))
    assert cli_main(["trace", "--from-log", str(tmp_path / "k.log.gz")]) == 0
    assert "cusolverDnXpotrf" in capsys.readouterr().out


def test_trace_says_at_once_when_no_gpu_can_be_visible(tmp_path, monkeypatch, capsys):
    """Issue 25: on a machine without a GPU, `trace -- PROGRAM` says before the program runs
    that nothing can be logged (the program still runs, its status passed through)."""
    from cusolver_trace.tracing.command import main

    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    prog = tmp_path / "p.py"
    prog.write_text("import sys; print('ran'); sys.exit(3)\n")
    rc = main(["--no-tree", "--", sys.executable, str(prog)])
    out, err = capsys.readouterr()
    assert rc == 3 and "ran" in out
    assert "no library call can be logged" in err and "CUDA_VISIBLE_DEVICES is empty" in err


def test_compare_json_never_overwrites_its_matrix_file_through_a_hard_link(tmp_path, capsys):
    """A hard link has another path but the same inode: ``--json`` through it is refused."""
    import numpy as np

    src = tmp_path / "in.npy"
    np.save(src, np.array([[4.0, 2.0], [2.0, 3.0]]))
    link = tmp_path / "hard.npy"
    os.link(src, link)
    before = src.read_bytes()
    assert cli_main(["compare", "--op", "cholesky", "--n", "2", "--matrix", f"file:{src}",
                     "--json", str(link)]) == 2
    assert "it would be overwritten" in one_line(capsys.readouterr().err)
    assert src.read_bytes() == before


def test_sweep_outputs_that_are_one_file_through_a_hard_link_are_refused(tmp_path, capsys):
    out = tmp_path / "s.json"
    out.write_text("{}")
    link = tmp_path / "s.csv"
    os.link(out, link)
    assert cli_main(["sweep", "--op", "cholesky", "--n", "4", "--out", str(out),
                     "--csv", str(link)]) == 2
    assert "name the same file" in one_line(capsys.readouterr().err)
    assert out.read_text() == "{}"
