"""Output that fits: tables honour COLUMNS (numbers never cut, all-"—" columns dropped, a table
too wide split into column groups), ``--format csv|md|json`` gives the same cells as records,
``--summary-only`` prints its table for any number of points, and long work shows a progress
line on stderr (cusolver_trace._console)."""
from __future__ import annotations

import csv
import io
import json

import pytest
from rich.table import Table

from cusolver_trace import _console
from cusolver_trace.cli import main
from cusolver_trace.sweep.report import fmt_number


def _lines(text):
    return [ln for ln in text.splitlines() if ln.strip()]


def _fits(text, width):
    assert "…" not in text, text
    too_wide = [ln for ln in text.splitlines() if len(ln) > width]
    assert not too_wide, too_wide


@pytest.mark.parametrize("columns", [80, 100])
def test_compare_summary_fits_and_shows_every_number(columns, monkeypatch, capsys, tmp_path):
    monkeypatch.setenv("COLUMNS", str(columns))
    out = tmp_path / "c.json"
    assert main(["compare", "--op", "cholesky", "--n", "64,128", "--summary-only", "--repeat", "3",
                 "--json", str(out)]) == 0
    text = capsys.readouterr().out
    _fits(text, columns)
    rows = [ln.split() for ln in _lines(text) if ln.startswith("float64")]
    assert {r[1] for r in rows} == {"64", "128"}   # the n column is there, whole
    for c in json.loads(out.read_text()):
        assert f" {c['differences']['max_ulp']} " in " " + " ".join(text.split()) + " "
    assert "GPU" not in text.split("time, ms")[1].split("\n")[1]   # CPU: no all-"—" GPU columns


def test_summary_only_prints_the_table_for_one_point(capsys):
    assert main(["compare", "--op", "cholesky", "--n", "64", "--summary-only", "--repeat", "2"]) == 0
    text = capsys.readouterr().out
    assert "1 comparisons on cpu" in text and "time, ms" in text


@pytest.mark.parametrize("columns", [80, 100])
def test_sweep_table_fits_and_shows_every_number(columns, monkeypatch, capsys, tmp_path):
    monkeypatch.setenv("COLUMNS", str(columns))
    out = tmp_path / "s.json"
    assert main(["sweep", "--op", "cholesky_inverse", "--n", "64,128", "--method", "torch,potrs",
                 "--repeat", "3", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    _fits(text, columns)
    flat = " " + " ".join(text.split()) + " "
    for r in json.loads(out.read_text())["results"]:
        for key, fmt in (("median_ms", ".4g"), ("gflops", ".4g")):
            assert f" {fmt_number(r[key], fmt)} " in flat, (key, r[key])


@pytest.mark.parametrize("fmt", ["csv", "md", "json"])
def test_format_gives_records_on_stdout_and_the_rest_on_stderr(fmt, capsys, tmp_path):
    assert main(["sweep", "--op", "cholesky_inverse", "--n", "16", "--method", "torch,potrs",
                 "--repeat", "2", "--out", str(tmp_path / "s.json"), "--format", fmt]) == 0
    cap = capsys.readouterr()
    assert "wrote" in cap.err and "wrote" not in cap.out
    if fmt == "csv":
        recs = list(csv.DictReader(io.StringIO(cap.out)))
    elif fmt == "json":
        recs = json.loads(cap.out)
    else:
        lines = cap.out.strip().splitlines()
        assert all(ln.startswith("|") and ln.endswith("|") for ln in lines)
        heads = [h.strip() for h in lines[0].strip("|").split("|")]
        recs = [dict(zip(heads, (c.strip() for c in ln.strip("|").split("|")))) for ln in lines[2:]]
    assert [r["method"] for r in recs] == ["torch", "potrs"]
    assert all(str(r["n"]) == "16" for r in recs)
    if fmt == "json":
        assert isinstance(recs[0]["median ms"], float) and recs[0]["check cost"] is None


def test_compare_format_json_records(capsys):
    assert main(["compare", "--op", "cholesky_solve", "--n", "8", "--summary-only", "--repeat", "2",
                 "--format", "json"]) == 0
    records = json.loads(capsys.readouterr().out)   # one JSON document: a record per point
    assert len(records) == 1
    assert records[0]["verdict"] in ("bitwise-equal", "within-tolerance") and records[0]["n"] == 8
    assert records[0]["torch CPU"] > 0 and records[0]["torch GPU"] is None


def test_json_to_stdout_and_a_record_format_are_refused(capsys):
    assert main(["compare", "--op", "cholesky", "--n", "8", "--json", "-", "--format", "csv"]) == 2
    assert "both write to stdout" in capsys.readouterr().err


# --------------------------------------------------------------------------- fit (pure)
def _table(*rows, heads=("dtype", "n", "method", "median ms", "GPU ms", "note")):
    t = Table(*heads, title="t")
    for r in rows:
        t.add_row(*r)
    return t


def test_fit_drops_all_dash_columns_only():
    t = _table(("float64", "64", "potrs", "12.345", "—", "—"), ("float64", "128", "potrs", "99.5", "—", "x"))
    (part,) = _console.fit(t, 200)
    assert [c.header for c in part.columns] == ["dtype", "n", "method", "median ms", "note"]
    assert [c.header for c in _console.fit(_table(), 200)[0].columns][-1] == "note"   # no rows


@pytest.mark.parametrize("width", [40, 50, 60])
def test_fit_never_cuts_a_number(width):
    from rich.console import Console

    long = "0.000123456789"
    t = _table(("float64", "4096", "rec_trtri_lauum", long, "1.5", "a long note that wraps"))
    con = Console(width=width, file=io.StringIO(), record=True)
    _console.emit(con, t)
    text = con.export_text()
    assert "…" not in text and long in text and "4096" in text
    assert text.count("float64") >= 2   # split into groups, each with the key columns


def test_width_follows_columns(monkeypatch):
    monkeypatch.setenv("COLUMNS", "66")
    assert _console.width() == 66 and _console.console().width == 66
    monkeypatch.delenv("COLUMNS")
    assert _console.width(io.StringIO()) in (_console.PIPED_WIDTH,) or _console.width() > 0


# --------------------------------------------------------------------------- progress
def test_progress_lines_on_a_stream_that_is_not_a_terminal():
    out = io.StringIO()
    with _console.progress("compare cholesky", 2, stream=out, after=0.0) as bar:
        bar.step("float64 n=64 L")
        bar.step("float64 n=128 L")
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("compare cholesky: 1/2 float64 n=64 L (")
    assert lines[1].startswith("compare cholesky: 2/2 float64 n=128 L (")
    assert lines[-1].startswith("compare cholesky: done in ")


def test_progress_cut_short_says_stopped_not_done():
    """Ctrl-C (or an error) inside the work: the last progress line says it stopped, never
    "done" (a fresh user saw "done in 6 s" just before "interrupted")."""
    out = io.StringIO()
    with pytest.raises(KeyboardInterrupt):
        with _console.progress("compare cholesky", 2, stream=out, after=0.0) as bar:
            bar.step("float64 n=64 L")
            raise KeyboardInterrupt
    last = out.getvalue().splitlines()[-1]
    assert last.startswith("compare cholesky: stopped after ") and "done" not in last


def test_quick_work_prints_no_progress():
    out = io.StringIO()
    with _console.progress("x", 1, stream=out) as bar:
        bar.step("fast")
    assert out.getvalue() == ""


def test_compare_shows_progress_on_stderr(monkeypatch, capsys):
    monkeypatch.setattr(_console, "PROGRESS_AFTER_S", 0.0)
    assert main(["compare", "--op", "cholesky", "--n", "8,16", "--summary-only", "--repeat", "2"]) == 0
    err = capsys.readouterr().err
    assert "compare cholesky: " in err and "n=16" in err


def test_devices_shows_progress_on_stderr(monkeypatch, capsys):
    monkeypatch.setattr(_console, "PROGRESS_AFTER_S", 0.0)
    assert main(["devices", "--n", "32", "--repeat", "2", "--device", "cpu"]) == 0
    assert "devices: 1/1 timing torch and the replay on cpu" in capsys.readouterr().err


@pytest.mark.parametrize("columns", ["\u00b9", "\u0663", "0", "-5", "wide"])
def test_a_columns_that_is_not_an_ascii_width_is_ignored(columns, monkeypatch):
    """``COLUMNS`` (or ``LINES``) that is not a plain positive ASCII integer falls back to the
    piped width instead of failing every command, ours or rich's reading of it (a superscript digit passes ``str.isdigit`` but not
    ``int``; an Arabic-Indic one passes both, and is refused as not ASCII)."""
    monkeypatch.setenv("COLUMNS", columns)
    monkeypatch.setenv("LINES", columns)   # rich reads it the same way
    assert _console.width(io.StringIO()) == _console.PIPED_WIDTH
    assert main(["compare", "--op", "cholesky", "--n", "4", "--summary-only", "--repeat", "1"]) == 0


def test_an_ascii_only_output_gets_escapes_not_a_failure(tmp_path):
    """stdout that cannot encode σ or → (PYTHONIOENCODING=ascii): the comparison still ends
    with its own status, the characters written as backslash escapes."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    env = dict(os.environ, PYTHONIOENCODING="ascii", CUDA_VISIBLE_DEVICES="",
               PYTHONPATH=os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")]))
    p = subprocess.run([sys.executable, "-m", "cusolver_trace", "compare", "--op",
                        "cholesky_inverse", "--n", "8", "--repeat", "1", "--device", "cpu"],
                       capture_output=True, env=env, cwd=tmp_path, timeout=300)
    assert p.returncode == 0, p.stderr
    assert p.stdout.isascii() and b"\\u03c3" in p.stdout
    assert b"codec" not in p.stderr
