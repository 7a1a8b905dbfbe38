"""``cusolver-trace trace`` on bad input: weird records, non-text / damaged logs, output
paths that cannot be written, bad ``--timeout`` values, programs that leave children.

Exit codes: 0 ok, 2 bad usage or bad input (one line on stderr, no traceback), 3 or more
an internal error; a traced program's own exit status is passed through.
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import signal
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from cusolver_trace.tracing import Trace, load_log, parse_log, run_traced
from cusolver_trace.tracing.command import main, run
from cusolver_trace.tracing import logparse

PY = sys.executable
DATA = Path(__file__).parent / "data" / "h200-torch2.11-cu130"
HUGE = "7" * 5000  # more digits than Python converts by default (4300)
SOLVER = "[2026-11-30 02:17:18][cusolverDn][423][Api][cusolverDnXpotrs] handle=0x2d48d7a0 uplo=0 n={n}"
BLAS = [
    "I! cuBLAS (v13.1.0) function cublasStatus_t cublasDtrsm_v2_64(cublasHandle_t, long) called:",
    "i!  handle: type=cublasHandle_t; val=POINTER (IN HEX:0x0x2d4d3b50)",
    "i!  m: type=long; val={m}",
    "i! Time: 2026-11-30T02:17:18 elapsed from start 0.066667 minutes or 4.000000 seconds",
    "i!Process={pid}; Thread=140627230728512; GPU=0; Handle=POINTER (IN HEX:0x0x2d4d3b50); "
    "StreamId=POINTER (IN HEX:0x0x3); MathMode=CUBLAS_DEFAULT_MATH",
    "i! COMPILED WITH: GNU GCC/G++ / 8.5.0 20210514 (Red Hat 8.5.0-26)",
]


def py(code: str) -> list[str]:
    return [PY, "-c", textwrap.dedent(code)]


def one_error_line(err: str) -> str:
    """The stderr of a predictable failure: exactly one line, no traceback."""
    lines = err.strip("\n").splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("cusolver-trace trace: error: "), err
    assert "Traceback" not in err
    return lines[0]


def cli_main(argv):
    """The project's CLI entry point, ``cusolver-trace trace ...``."""
    from cusolver_trace.cli import main as project_main

    return project_main(["trace", *argv])


# --- 1. weird record content ------------------------------------------------------

def test_huge_integers_in_records_are_kept_as_text():
    text = "\n".join([SOLVER.format(n=HUGE), *[b.format(m=HUGE, pid=HUGE) for b in BLAS],
                      "[2026-11-30 02:17:18][cusolverDn][" + HUGE + "][Api][cusolverDnXpotrs] n=1e999"])
    log = parse_log(text)
    xpotrs, trsm, second = log.records
    assert xpotrs.args["n"] == HUGE and xpotrs.args["uplo"] == "LOWER"
    assert trsm.args["m"] == HUGE and trsm.pid == HUGE and not trsm.truncated
    assert second.pid == HUGE and second.args["n"] == "1e999"  # overflows a float: kept as logged
    assert [c.function for c in xpotrs.children] == ["cublasDtrsm_v2_64"]
    assert json.loads(Trace(calls=log.calls).to_json())["calls"][0]["args"]["n"] == HUGE


@pytest.mark.parametrize("entry", [main, cli_main], ids=["tracing.main", "cli.main"])
def test_program_exit_status_survives_a_huge_integer_record(entry, tmp_path, capsys):
    record = tmp_path / "record.txt"
    record.write_text(SOLVER.format(n=HUGE) + "\n")
    code = f"import sys; sys.stdout.write(open({str(record)!r}).read()); sys.exit(3)"
    out = tmp_path / "t.json"
    assert entry(["--json", str(out), "--", PY, "-c", code]) == 3
    printed = capsys.readouterr().out
    assert "cusolverDnXpotrs" in printed and "exit status 3" in printed
    assert json.loads(out.read_text())["calls"][0]["args"]["n"] == HUGE


def test_binary_program_output_is_parsed_not_refused():
    run = run_traced(py("""
        import sys
        sys.stdout.buffer.write(b"\\x1f\\x8b\\x00\\x01 binary\\n")
        sys.exit(4)
    """))
    assert run.exit_status == 4 and run.output == ["\x1f\ufffd\x00\x01 binary"]  # not gunzipped


# --- 2. logs that cannot be read as text logs ---------------------------------------

def _bad_logs(tmp: Path) -> dict[str, Path]:
    data = gzip.compress("".join(f"line {i * 7919 % 10007}\n" for i in range(3000)).encode())
    (tmp / "truncated.log.gz").write_bytes(data[: len(data) // 2])
    (tmp / "plain.log.gz").write_text("hello\n")
    (tmp / "binary.log").write_bytes(bytes(range(256)))
    (tmp / "binary-in.log.gz").write_bytes(gzip.compress(b"ok\n\x00\x01\x02\n"))
    (tmp / "c1.log").write_text("ok\n\x9b31m red\n", encoding="utf-8")
    (tmp / "a-folder").mkdir()
    (tmp / "damaged.log.gz").write_bytes(data[:20] + bytes(200) + data[220:])
    # broken in the first bytes (read when the header is looked for): answered as an empty log
    (tmp / "head-only.gz").write_bytes(b"\x1f\x8b")
    (tmp / "bad-header.gz").write_bytes(b"\x1f\x8b\x08garbage")
    (tmp / "bad-header.log").write_bytes(b"\x1f\x8b\x08\x00" + bytes(6) + b"\xff" * 40)
    return {p.name: p for p in tmp.iterdir()}


@pytest.mark.parametrize("name", ["truncated.log.gz", "plain.log.gz", "binary.log",
                                  "binary-in.log.gz", "c1.log", "a-folder", "damaged.log.gz",
                                  "missing.log", "head-only.gz", "bad-header.gz",
                                  "bad-header.log"])
@pytest.mark.parametrize("entry", [main, cli_main], ids=["tracing.main", "cli.main"])
def test_from_log_bad_file_is_one_error_line_and_exit_2(entry, name, tmp_path, capsys):
    path = _bad_logs(tmp_path).get(name, tmp_path / name)
    before = path.read_bytes() if path.is_file() else None
    assert entry(["--from-log", str(path)]) == 2
    captured = capsys.readouterr()
    line = one_error_line(captured.err)
    assert str(path) in line
    assert captured.out == ""  # nothing of the file is echoed
    assert (path.read_bytes() if path.is_file() else None) == before


def test_load_log_errors_name_the_problem(tmp_path):
    logs = _bad_logs(tmp_path)
    with pytest.raises(logparse.LogReadError, match="truncated gzip"):
        load_log(logs["truncated.log.gz"])
    with pytest.raises(logparse.LogReadError, match="not a gzip file"):
        load_log(logs["plain.log.gz"])
    with pytest.raises(logparse.LogReadError, match=r"binary byte 0x00 at offset 0"):
        load_log(logs["binary.log"])
    with pytest.raises(logparse.LogReadError, match=r"U\+009B on line 2"):
        load_log(logs["c1.log"])
    with pytest.raises(IsADirectoryError):
        load_log(logs["a-folder"])


def test_gzip_log_under_another_name_and_ansi_colours_are_text(tmp_path, capsys):
    log = tmp_path / "captured.log"  # gzip data, recognised by its magic bytes
    log.write_bytes(gzip.compress(("\x1b[32mgreen\x1b[0m\r\n\ttab\n" + SOLVER.format(n=8) + "\n")
                                  .encode()))
    assert main(["--from-log", str(log)]) == 0
    out = capsys.readouterr().out
    assert "\x1b[32mgreen\x1b[0m\n\ttab\n" in out and "cusolverDnXpotrs" in out


# --- 3. output paths are checked before the program runs ----------------------------

@pytest.mark.parametrize("option,target,why", [("--keep-log", "missing/x.log", "no such folder"),
                                               ("--json", "missing/x.json", "no such folder"),
                                               ("--keep-log", ".", "is a folder"),
                                               ("--json", ".", "is a folder")])
def test_unwritable_output_path_fails_before_running(option, target, why, tmp_path, capsys):
    marker = tmp_path / "ran"
    path = tmp_path / target
    status = main([option, str(path), "--", PY, "-c", f"open({str(marker)!r}, 'w')"])
    assert status == 2
    line = one_error_line(capsys.readouterr().err)
    assert option in line and why in line
    assert not marker.exists()  # the program was not run


def test_missing_keep_log_folder_message_and_127_only_for_missing_program(tmp_path, capsys):
    assert main(["--keep-log", str(tmp_path / "nope" / "x.log"), "--", PY, "-c", "pass"]) == 2
    line = one_error_line(capsys.readouterr().err)
    assert "--keep-log" in line and "no such folder" in line
    assert main(["--", str(tmp_path / "no-such-program")]) == 127
    assert "no such program" in one_error_line(capsys.readouterr().err)
    assert main(["--", str(tmp_path)]) == 126   # a folder: said so, as the shell's 126
    assert "it is a folder" in one_error_line(capsys.readouterr().err)


@pytest.mark.parametrize("name", ["", " ", "\t"])
def test_an_empty_program_name_is_bad_usage(name, capsys):
    assert main(["--", name, "x"]) == 2
    assert "give a program" in one_error_line(capsys.readouterr().err)


@pytest.mark.parametrize("label", ["", "  "])
def test_an_empty_section_is_refused_before_the_program_runs(label, tmp_path, capsys):
    marker = tmp_path / "ran"
    assert main(["--section", label, "--", PY, "-c", f"open({str(marker)!r}, 'w')"]) == 2
    assert "--section: empty label" in one_error_line(capsys.readouterr().err)
    assert not marker.exists()


def test_json_over_the_input_log_is_refused(tmp_path, capsys):
    log = tmp_path / "captured.log"
    log.write_text(SOLVER.format(n=8) + "\n")
    before = log.read_bytes()
    assert main(["--from-log", str(log), "--json", str(tmp_path / "." / "captured.log")]) == 2
    assert "same file" in one_error_line(capsys.readouterr().err)
    assert log.read_bytes() == before


def test_json_to_dev_full_is_an_error_line_not_a_traceback(capsys):
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full on this system")
    assert main(["--from-log", str(DATA / "cusolverdn-api.log"), "--json", "/dev/full"]) == 2
    assert "No space left on device" in one_error_line(capsys.readouterr().err)


# --- 4. --timeout is parsed strictly -------------------------------------------------

@pytest.mark.parametrize("value", ["-1", "0", "nan", "inf", "-inf", "abc", ""])
def test_timeout_must_be_a_positive_finite_number(value, tmp_path, capsys):
    marker = tmp_path / "ran"
    with pytest.raises(SystemExit) as exc:
        main(["--timeout", value, "--", PY, "-c", f"open({str(marker)!r}, 'w')"])
    assert exc.value.code == 2
    assert "--timeout" in capsys.readouterr().err
    assert not marker.exists()


@pytest.mark.parametrize("value", [-1, 0, float("nan"), float("inf")])
def test_run_traced_rejects_bad_timeouts(value):
    with pytest.raises(ValueError, match="timeout"):
        run_traced([PY, "-c", "pass"], timeout=value)


# --- 5. a time limit ends the whole process group ------------------------------------

def _gone(pid: int) -> bool:
    """The process no longer runs (absent, or a zombie waiting to be reaped)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except FileNotFoundError:
        return True
    except OSError:  # pragma: no cover - no /proc: ask the kernel
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        return False


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs /proc")
def test_timeout_kills_grandchildren_too(tmp_path):
    log = tmp_path / "raw.log"
    code = """
        import subprocess, sys, time
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        print(child.pid, flush=True)
        time.sleep(60)
    """
    pid = None
    try:
        run = run_traced(py(code), timeout=3, log_path=log)
        pid = int(run.output[0])
        assert run.timed_out and run.signal in (signal.SIGTERM, signal.SIGKILL)
        for _ in range(200):  # bounded: up to ~10 s for the kernel to finish it
            if _gone(pid):
                break
            time.sleep(0.05)
        assert _gone(pid), f"grandchild {pid} outlived the time limit"
    finally:
        if pid is not None and not _gone(pid):
            os.kill(pid, signal.SIGKILL)  # don't leave it behind if the test failed


# --- 6. predictable failures vs internal errors ---------------------------------------

def test_internal_error_exits_3_with_traceback_never_1(capsys):
    # A Namespace without the parser's attributes: trace's own code fails (a bug).
    status = run(argparse.Namespace(json=None))
    assert status >= 3
    err = capsys.readouterr().err
    assert "Traceback" in err and "internal error" in err


def test_from_log_and_command_together_is_a_usage_error(capsys):
    assert main(["--from-log", str(DATA / "cusolverdn-api.log"), "--", PY]) == 2
    assert "not both" in one_error_line(capsys.readouterr().err)


# --- property tests: --from-log never crashes and never changes its input -------------

_huge_int = st.tuples(st.integers(4301, 6000), st.sampled_from("123456789")).map(
    lambda t: t[1] * t[0])
_value = st.one_of(_huge_int, st.integers().map(str), st.sampled_from(["0x0", "0x7fe357e00000",
                                                                      "1e999", "-0.5", "CUDA_R_64F"]))
_token = st.text(st.characters(codec="ascii", categories=["L", "N"]), min_size=1, max_size=8)


@st.composite
def _log_like(draw) -> tuple[list[str], int]:
    """Lines of a plausible log (records with huge integers, markers, output) and
    the number of well-formed records among them."""
    lines, records = [], 0
    for _ in range(draw(st.integers(0, 12))):
        kind = draw(st.sampled_from(["solver", "blas", "marker", "output"]))
        if kind == "solver":
            args = " ".join(f"{draw(_token)}={draw(_value)}"
                            for _ in range(draw(st.integers(0, 4))))
            pid = draw(st.one_of(_huge_int, st.integers(0, 10**6).map(str)))
            lines.append(f"[2026-11-30 02:17:18][cusolverDn][{pid}][Api][cusolverDnX{draw(_token)}]"
                         + (f" {args}" if args else ""))
            records += 1
        elif kind == "blas":
            lines += [b.format(m=draw(_value), pid=draw(_huge_int)) for b in BLAS]
            records += 1
        elif kind == "marker":
            lines.append(f"#### {draw(st.sampled_from(['end ', '']))}{draw(_token)}")
        else:
            lines.append(draw(st.text(st.characters(codec="utf-8", exclude_categories=["Cc", "Cs"]),
                                      max_size=40).filter(lambda s: not s.startswith(("[", "I!", "i!", "#")))))
    return lines, records


_content = st.one_of(
    st.binary(max_size=600),
    st.text(max_size=300).map(lambda s: s.encode("utf-8", "surrogatepass")),
    _log_like().map(lambda lr: ("\n".join(lr[0]) + "\n").encode()),
)


@settings(max_examples=50, deadline=None)
@given(text=st.one_of(st.text(max_size=400), _log_like().map(lambda lr: "\n".join(lr[0]))))
def test_property_parse_log_never_raises(text):
    log = parse_log(text)
    # every line is one of: part of a record, program output, a logger message, a marker
    assert len(log.records) + len(log.output) + len(log.messages) <= len(text.splitlines())
    Trace(calls=log.calls, output=[o.text for o in log.output]).to_json()


def _from_log_property(capsys, content: bytes, container: str, cut: float) -> None:
    data = content
    if container != "plain":
        data = gzip.compress(content)
        if container == "gzip-truncated":
            data = data[: int(len(data) * cut)]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / ("log.gz" if container != "plain" else "log.txt")
        path.write_bytes(data)
        status = main(["--from-log", str(path), "--json", str(Path(tmp) / "t.json")])
        captured = capsys.readouterr()
        assert path.read_bytes() == data  # the input is never changed
    assert status in (0, 2), captured.err
    event(f"{container}: exit {status}")
    if status == 2:
        one_error_line(captured.err)
    else:
        assert "Traceback" not in captured.err
        assert "\x00" not in captured.out  # nothing binary echoed


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(content=_content, container=st.sampled_from(["plain", "gzip", "gzip-truncated"]),
       cut=st.floats(0.0, 0.99))
def test_property_from_log_exits_0_or_2_and_leaves_the_file_alone(capsys, content, container, cut):
    _from_log_property(capsys, content, container, cut)


def _count(node: dict) -> int:
    """Calls a JSON tree item stands for: a node's ``count`` repeats, each with the calls
    nested in it; a folded loop's ``repeat`` times its calls; a section's calls."""
    if "function" not in node:  # a folded loop, or a section's calls
        return node.get("repeat", 1) * sum(_count(c) for c in node["calls"])
    return node.get("count", 1) * (1 + sum(_count(c) for c in node.get("children", [])))


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(log=_log_like(), gz=st.booleans())
def test_property_log_like_text_is_always_parsed(capsys, log, gz):
    lines, records = log
    data = ("\n".join(lines) + "\n").encode()
    if gz:
        data = gzip.compress(data)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / ("log.gz" if gz else "log.txt")
        path.write_bytes(data)
        assert len(load_log(path).records) == records
        out = Path(tmp) / "t.json"
        assert main(["--from-log", str(path), "--json", str(out)]) == 0, capsys.readouterr().err
        assert sum(_count(n) for n in json.loads(out.read_text())["calls"]) == records
        capsys.readouterr()
        assert path.read_bytes() == data


def test_a_missing_script_or_module_ends_as_the_interpreter_would(tmp_path, capfd):
    """``trace -- python3 missing.py`` passes the interpreter's own answer through: its one
    line and status 2 (1 for ``-m missing``), never runpy's traceback."""
    missing = tmp_path / "missing.py"
    assert cli_main(["--", PY, str(missing)]) == 2
    out, err = capfd.readouterr()
    assert "can't open file" in out + err and "Traceback" not in out + err
    assert cli_main(["--", PY, "-m", "no_such_module_xyz"]) == 1
    out, err = capfd.readouterr()
    assert "No module named no_such_module_xyz" in out + err and "Traceback" not in out + err
