"""benchmarks/trace_overhead.py (the GPU check of issue 26) and examples/trace_botorch.py, on
the CPU: the script's parts run, fail one at a time without stopping the others, and its
figures come from the trace JSON and the profiler dump as they should."""
from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(__file__).parent / "data" / "h200-torch2.11-cu130"
PY = sys.executable


def _script():
    spec = importlib.util.spec_from_file_location("trace_overhead",
                                                  ROOT / "benchmarks" / "trace_overhead.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_figures_from_a_trace_json(tmp_path, capsys):
    from cusolver_trace.tracing.command import main

    out = tmp_path / "t.json"
    assert main(["--from-log", str(DATA / "trace-stdout.log.gz"), "--json", str(out),
                 "--no-tree"]) == 0
    capsys.readouterr()
    f = _script().trace_figures(str(out))
    assert f["bytes"] == out.stat().st_size and f["timed"] is False
    assert f["library_gpu_ms"] is None and f["calls"] == 1631 and f["unattributed_library_kernels"] == 0


def test_table_judges_each_goal():
    mod = _script()
    results = {"untraced": {"median_s": 8.0}, "traced": {"median_s": 11.0, "bytes": 900_000,
                                                          "unattributed_library_kernels": 0,
                                                          "tracing_s": {"log parsing": 0.8}},
               "by_op": {"library_gpu_ms": 102.0}, "profiler": {"library_gpu_ms": 100.0},
               "trace_inverse": {"wall_s": [4.2, 3.1]}}
    rows = {what: (value, goal) for what, value, goal in mod.table(results, 3, 4096)}
    assert rows["traced / untraced"] == ("1.38", "goal <= 1.5: met")
    assert rows["--by op vs profiler"] == ("+2.0 %", "goal within 5 %: met")
    assert rows["trace JSON size"][1] == "goal <= 1 MB: met"
    assert rows["trace(cholesky_inverse) n=4096"] == ("4.20 s / 3.10 s", "goal <= 5 s (first call): met")
    assert "log parsing 0.80 s" in rows["tracer's own time (last traced run)"][0]
    results["traced"]["unattributed_library_kernels"] = 424
    results["untraced"] = {"error": "boom"}
    rows = {what: (value, goal) for what, value, goal in mod.table(results, 3, 4096)}
    assert rows["library kernels outside every call"] == ("424", "goal 0: NOT met")
    assert rows["traced / untraced"] == ("-", "goal <= 1.5: ")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the stdout hook is glibc only")
def test_the_script_runs_every_part_on_the_cpu(tmp_path):
    client = tmp_path / "client.py"
    client.write_text(textwrap.dedent("""\
        import ctypes, sys
        import torch
        libc = ctypes.CDLL(None)
        for n in (8, 8, 16):
            libc.printf(b"[2026-11-30 02:17:18][cusolverDn][1][Api][cusolverDnXpotrf] n=%d\\n", n)
            libc.fflush(None)
        print("client done", sys.argv[1:])
        """))
    res = subprocess.run([PY, str(ROOT / "benchmarks" / "trace_overhead.py"), str(tmp_path / "out"),
                          "--runs", "1", "--client", str(client), "--client-args", "--x 1",
                          "--n-inverse", "8", "--cpu"], capture_output=True, text=True, timeout=600,
                         cwd=ROOT)
    assert res.returncode == 0, res.stdout + res.stderr
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["traced"]["calls"] == 3 and summary["traced"]["bytes"] > 0
    assert summary["profiler"]["library_gpu_ms"] == 0.0  # no GPU here
    assert "no CUDA device" in summary["trace_inverse"]["skipped"]
    assert "client done ['--x', '1']" in (tmp_path / "out" / "untraced-0.log").read_text()
    assert all(goal.endswith("not judged (--cpu)") for _, _, goal in summary["table"] if goal)
    assert "traced / untraced" in res.stdout and "trace JSON size" in res.stdout
    # a part that fails is reported, the others still run (exit 1)
    failing = tmp_path / "failing.py"
    failing.write_text("raise SystemExit(3)\n")
    bad = subprocess.run([PY, str(ROOT / "benchmarks" / "trace_overhead.py"), str(tmp_path / "b"),
                          "--runs", "1", "--client", str(failing), "--n-inverse", "8", "--cpu"],
                         capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert bad.returncode == 1 and "failed: RuntimeError: untraced run 0 exited with 3" in bad.stdout
    assert "the client exited with 3 under the plain profiler" in bad.stdout
    assert "trace(cholesky_inverse) n=8" in bad.stdout


def test_botorch_client_says_what_it_needs():
    """On a machine without BoTorch the client says so in one line (exit 2); where BoTorch is
    installed it runs a tiny case on the CPU."""
    try:
        import botorch  # noqa: F401
        have = True
    except ImportError:
        have = False
    argv = [PY, str(ROOT / "examples" / "trace_botorch.py")]
    if have:
        res = subprocess.run(argv + ["--n", "20", "--raw-samples", "8", "--restarts", "2",
                                     "--device", "cpu"], capture_output=True, text=True, timeout=600)
        assert res.returncode == 0 and "SingleTaskGP n=20 Hartmann-6" in res.stdout, res.stderr
    else:
        res = subprocess.run(argv, capture_output=True, text=True, timeout=120)
        assert res.returncode == 2 and res.stderr.strip().count("\n") == 0
        assert "needs botorch and gpytorch" in res.stderr
    bad = subprocess.run(argv + ["--n", "0"], capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2


@pytest.mark.parametrize("argv, match", [
    (["--runs", "0"], "--runs"), (["--runs", "-1"], "--runs"), (["--timeout", "-1"], "--timeout"),
    (["--timeout", "nan"], "--timeout"), (["--n-inverse", "-5"], "--n-inverse"),
    (["--client-args", '"unbalanced'], "cannot split"),
    (["--client", "no/such/client.py"], "no such file")])
def test_bad_arguments_are_one_line_and_exit_2_before_anything_is_made(tmp_path, capsys, argv,
                                                                       match):
    out = tmp_path / "out"
    with pytest.raises(SystemExit) as e:
        _script().main([str(out), *argv])
    err = capsys.readouterr().err
    assert e.value.code == 2 and len(err.strip().splitlines()) == 1 and match in err
    assert not out.exists()


def test_outdir_empty_or_a_file_or_holding_the_client_is_refused(tmp_path, capsys, monkeypatch):
    mod = _script()
    monkeypatch.chdir(tmp_path)
    client = tmp_path / "od" / "untraced-0.log"
    client.parent.mkdir()
    client.write_text("print(1)\n")
    for argv, match in ((["", "--cpu"], "OUTDIR is empty"),
                        ([str(client), "--cpu"], "cannot make OUTDIR"),
                        (["od", "--runs", "1", "--client", "od/untraced-0.log", "--cpu"],
                         "it would be overwritten")):
        with pytest.raises(SystemExit) as e:
            mod.main(argv)
        err = capsys.readouterr().err
        assert e.value.code == 2 and len(err.strip().splitlines()) == 1 and match in err, err
    assert client.read_text() == "print(1)\n" and sorted(p.name for p in tmp_path.iterdir()) == ["od"]


def test_without_a_gpu_it_says_so(tmp_path, capsys, monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    client = tmp_path / "c.py"
    client.write_text("print(1)\n")
    assert _script().main([str(tmp_path / "out"), "--client", str(client)]) == 2
    assert "needs a CUDA GPU" in capsys.readouterr().err and not (tmp_path / "out").exists()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(runs=st.text(max_size=6), args=st.text(max_size=12))
def test_property_bad_runs_or_client_args_are_one_line_and_the_client_is_unchanged(
        tmp_path, runs, args):
    """Whatever --runs and --client-args hold: parsed as documented, or one usage line and
    exit 2; nothing is made and the client file is left as it was (no GPU: exit 2 either
    way, before any run)."""
    import contextlib
    import io
    import shlex

    client = tmp_path / "c.py"
    client.write_text("print(1)\n")
    out = tmp_path / "out-h"
    err = io.StringIO()
    from unittest import mock

    import torch

    # no run ever starts, on a GPU machine too
    with contextlib.redirect_stderr(err), mock.patch.object(torch.cuda, "is_available",
                                                            lambda: False):
        try:
            code = _script().main([str(out), "--runs", runs, "--client", str(client),
                                   "--client-args", args])
        except SystemExit as e:
            code = e.code
    assert code == 2 and len(err.getvalue().strip().splitlines()) == 1, err.getvalue()
    valid_runs = runs.isascii() and runs.isdigit() and int(runs) >= 1
    try:
        shlex.split(args)
        valid_args = True
    except ValueError:
        valid_args = False
    if valid_runs and valid_args:
        assert "needs a CUDA GPU" in err.getvalue()
    else:
        assert "error: argument" in err.getvalue()
    assert client.read_text() == "print(1)\n" and not out.exists()
