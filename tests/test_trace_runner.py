"""run_traced / the trace CLI / trace() on the CPU, with small Python programs."""
from __future__ import annotations

import gzip
import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

from cusolver_trace.tracing import run_traced, trace
from cusolver_trace.tracing.command import main
from cusolver_trace.tracing.profile import api_calls_many, qualified_name
from cusolver_trace.tracing.runner import LOGGER_ENV

DATA = Path(__file__).parent / "data" / "h200-torch2.11-cu130"
LABEL = "cholesky_inverse dtype=float64 n=256 batch=1 upper=False"
PY = sys.executable


def py(code: str) -> list[str]:
    return [PY, "-c", textwrap.dedent(code)]


@pytest.fixture(scope="module")
def fixture_block(tmp_path_factory) -> Path:
    """The real records of one section (Xpotrs + 2 trsm), as a file a program can print."""
    lines = gzip.open(DATA / "trace-stdout.log.gz", "rt").read().splitlines()
    block = lines[lines.index(f"#### {LABEL}") + 1: lines.index(f"#### end {LABEL}")]
    path = tmp_path_factory.mktemp("block") / "block.txt"
    path.write_text("\n".join(block) + "\n")
    return path


def test_program_output_resembling_records_is_not_parsed():
    fake = [
        "I! cuBLAS (v13.1.0) function cublasStatus_t cublasDtrsm_v2_64(int) called:",
        "i!  m: type=long; val=256",
        "[2026-11-30 02:17:18][cusolverDn][423][Api][cusolverDnXpotrs] n=256 oops, spaces",
        "[cusolverDn][Api][cusolverDnXpotrs] n=256",
        "cusolverDnXpotrs uplo=0 n=256",
        "done",
    ]
    run = run_traced(py(f"for line in {fake!r}: print(line)"))
    assert run.returncode == 0 and run.exit_status == 0 and run.signal is None
    assert run.records == []
    assert run.output == fake
    assert any("no cuSOLVER / cuBLAS API record" in n for n in run.notes)


def test_fake_but_well_formed_records_are_parsed(fixture_block):
    run = run_traced(py(f"""
        import sys
        print("start")
        sys.stdout.write(open({str(fixture_block)!r}).read())
        print("end")
    """))
    assert run.returncode == 0
    assert run.output == ["start", "end"]
    tops = [c.function for c in run.log.calls]
    assert tops == ["cusolverDnSetStream", "cusolverDnCreateParams", "cusolverDnXpotrs",
                    "cusolverDnDestroyParams"]
    xpotrs = run.log.calls[2]
    assert xpotrs.values()["nrhs"] == 256 and xpotrs.values()["uplo"] == "LOWER"
    assert [c.function for c in xpotrs.children] == ["cublasDtrsm_v2_64"] * 2
    t = run.to_trace()
    assert "cusolverDnXpotrs" in str(t) and t.exit_status == 0


def test_sections_marked_by_the_program(fixture_block):
    run = run_traced(py(f"""
        import sys
        print("#### mine")
        sys.stdout.write(open({str(fixture_block)!r}).read())
        print("#### end mine")
        print("#### empty")
        print("#### end empty")
    """))
    assert run.log.sections == ["mine", "empty"] and run.output == []
    whole = str(run.to_trace())
    assert "mine" in whole and "sections with no call shown" in whole
    one = run.to_trace(section="mine")
    assert "sections with no call shown" not in str(one)
    assert [n.function for n in one.tree()] == ["cusolverDnXpotrs"]
    with pytest.raises(KeyError):
        run.to_trace(section="missing")


def test_program_that_raises_passes_status_through():
    run = run_traced(py("""
        print("before the error")
        raise ValueError("boom")
    """))
    assert run.returncode == 1 and run.exit_status == 1 and run.signal is None
    assert run.output == ["before the error"]
    assert "ValueError: boom" in run.stderr


@pytest.mark.parametrize("sig", [signal.SIGSEGV, signal.SIGKILL])
def test_program_killed_by_signal_keeps_the_log(fixture_block, sig):
    run = run_traced(py(f"""
        import os, signal, sys
        print("work done")
        sys.stdout.write(open({str(fixture_block)!r}).read())
        os.kill(os.getpid(), {int(sig)})
    """))
    assert run.returncode == -sig and run.signal == sig
    assert run.signal_name == sig.name and run.exit_status == 128 + sig
    assert run.output == ["work done"]
    assert [r.function for r in run.records].count("cublasDtrsm_v2_64") == 2
    assert any(sig.name in n and "7 records" in n for n in run.notes)
    t = run.to_trace()
    assert t.signal == sig and t.exit_status == 128 + sig and t.to_dict()["signal_name"] == sig.name


def test_environment_turns_loggers_on_and_stdout_is_unbuffered(tmp_path):
    code = """
        import ctypes, os
        libc = ctypes.CDLL(None)
        print(os.environ["CUSOLVERDN_LOG_LEVEL"], os.environ["CUBLAS_LOGINFO_DBG"],
              os.environ["CUBLAS_LOGDEST_DBG"], os.environ.get("CUSOLVERDN_LOG_FILE"),
              os.environ["EXTRA"])
        libc.printf(b"from C stdio\\n")   # no fflush: unbuffered C stdout keeps the order
        print("from python")
        os.kill(os.getpid(), 9)
    """
    run = run_traced(py(code), env={"CUSOLVERDN_LOG_FILE": "/tmp/elsewhere.log", "EXTRA": "x",
                                    "PYTHONUNBUFFERED": ""},
                     log_path=tmp_path / "raw.log")
    assert run.output == ["5 1 stdout None x", "from C stdio", "from python"]
    assert LOGGER_ENV["CUSOLVERDN_LOG_LEVEL"] == "5"
    kept = (tmp_path / "raw.log").read_text().splitlines()
    assert kept[0].startswith("#cusolver-trace-log 1: [") and kept[1:] == run.output
    assert run.log_path == str(tmp_path / "raw.log")


def test_timeout_kills_and_reports():
    run = run_traced(py("import time; print('sleeping', flush=True); time.sleep(60)"), timeout=2)
    # the whole process group gets SIGTERM first, SIGKILL after a grace period
    assert run.timed_out and run.signal in (signal.SIGTERM, signal.SIGKILL)
    assert run.output == ["sleeping"]
    assert any("time limit" in n for n in run.notes)


def test_large_output_streams_through_a_file():
    run = run_traced(py("import sys\nfor i in range(100000): sys.stdout.write(f'line {i}\\n')"))
    assert len(run.output) == 100000 and run.output[-1] == "line 99999"


def test_missing_program():
    with pytest.raises(FileNotFoundError, match="no-such-program-xyz"):
        run_traced(["no-such-program-xyz"])
    with pytest.raises(ValueError):
        run_traced([])


# --- CLI -------------------------------------------------------------------------

def test_cli_runs_program_prints_output_then_tree(fixture_block, tmp_path, capsys):
    out = tmp_path / "run.json"
    code = f"import sys; print('hello from the program'); " \
           f"sys.stdout.write(open({str(fixture_block)!r}).read()); sys.exit(3)"
    status = main(["--json", str(out), "--full", "--", PY, "-c", code])
    assert status == 3
    printed = capsys.readouterr().out
    assert printed.index("hello from the program") < printed.index("cusolverDnXpotrs")
    assert "exit status 3" in printed
    d = json.loads(out.read_text())
    assert d["returncode"] == 3 and d["exit_status"] == 3 and d["signal"] is None
    assert d["output"] == ["hello from the program"]  # the program's output: --full only
    assert [n["function"] for n in d["calls"]][2] == "cusolverDnXpotrs"


def test_cli_reports_signal_and_returns_128_plus_signum(capsys):
    status = main(["--", PY, "-c", "import os, signal; print('ok'); os.kill(os.getpid(), signal.SIGSEGV)"])
    assert status == 128 + signal.SIGSEGV
    printed = capsys.readouterr().out
    assert "killed by SIGSEGV" in printed and "ok" in printed


def test_cli_usage_errors(capsys):
    assert main([]) == 2
    assert main(["--", "no-such-program-xyz"]) == 127
    assert "no such program" in capsys.readouterr().err


def test_python_dash_m_entry_point():
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    done = subprocess.run([PY, "-m", "cusolver_trace.tracing", "--", PY, "-c",
                           "print('inner'); raise SystemExit(5)"],
                          capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 5
    assert "inner" in done.stdout and "exit status 5" in done.stdout
    helped = subprocess.run([PY, "-m", "cusolver_trace.tracing", "--help"], capture_output=True,
                            text=True, env=env, timeout=120)
    assert helped.returncode == 0 and "--from-log" in helped.stdout


def test_register_adds_trace_subcommand():
    import argparse

    from cusolver_trace.tracing.command import register, run

    parser = argparse.ArgumentParser(prog="cusolver-trace")
    register(parser.add_subparsers(dest="cmd"))
    args = parser.parse_args(["trace", "--all", "--", "python3", "x.py", "--flag"])
    assert args.func is run and args.all and args.command[-3:] == ["python3", "x.py", "--flag"]


# --- trace() on the CPU ---------------------------------------------------------------

def _spd_factor(n=6, dtype=torch.float64):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(n, n, dtype=dtype, generator=g)
    return torch.linalg.cholesky(x @ x.mT + n * torch.eye(n, dtype=dtype))


def test_trace_on_cpu_profiles_but_skips_api():
    L = _spd_factor()
    t = trace(torch.cholesky_inverse, L)
    assert t.calls is None and t.kernels == []
    assert any("CPU" in n and "cuSOLVER" in n for n in t.notes)
    names = [a.name for a in t.aten_ops]
    assert "aten::cholesky_inverse" in names
    assert all(a.count >= 1 and a.cpu_ms >= 0 for a in t.aten_ops)
    assert t.label == "torch.cholesky_inverse(float64[6, 6] cpu)"
    d = json.loads(t.to_json(full=True))
    assert d["calls"] is None and d["kernels"] == [] and d["gpu_ms_by_library"] == {}
    assert "API calls not traced" in str(t)


def test_trace_api_false_accepts_any_callable():
    L = _spd_factor()
    t = trace(lambda m: torch.cholesky_inverse(m, upper=False), L, api=False)
    assert t.calls is None and "api=False" in t.notes[0]


@pytest.mark.parametrize("fn,name", [
    (torch.cholesky_inverse, "torch.cholesky_inverse"),
    (torch.linalg.cholesky, "torch.linalg.cholesky"),
    (torch.cholesky_solve, "torch.cholesky_solve"),
    (torch.Tensor.cholesky_inverse, "torch.Tensor.cholesky_inverse"),
    (textwrap.dedent, "textwrap.dedent"),
])
def test_qualified_name(fn, name):
    assert qualified_name(fn) == name


def test_qualified_name_rejects_unimportable():
    def local(x):
        return x

    for fn in (lambda x: x, local, torch.ones(1).cholesky_inverse):
        with pytest.raises(ValueError, match="named, importable function"):
            qualified_name(fn)


def test_api_child_machinery_on_cpu():
    """The child saves/loads inputs, resolves the name, writes both markers and
    exits through os._exit; on CPU tensors it logs no record."""
    L = _spd_factor()
    found = api_calls_many([("call", "torch.cholesky_inverse", (L,), {"upper": False})], "cpu")
    calls, notes, activities = found["call"]
    assert calls == [] and notes == [] and activities is None
    found = api_calls_many([("call", "torch.no_such_function", (L,), {})], "cpu")
    calls, notes, activities = found["call"]
    assert calls is None and activities is None and "no attribute 'no_such_function'" in notes[0]
