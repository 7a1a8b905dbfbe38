"""benchmarks/first_call.py (the GPU check of issue 27's "no first-call stall") on the CPU:
its parsing, the warm-up summary, the goals and the table from recorded-shape results, and
its refusal where it cannot run. The measurement itself needs a GPU and the cuda13-fused
extra."""
from __future__ import annotations

import argparse

import importlib.util
import json
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parent.parent


def _script():
    spec = importlib.util.spec_from_file_location("first_call",
                                                  ROOT / "benchmarks" / "first_call.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


KERNELS = [
    {"op": "cholesky_inverse", "kernel": "inverse", "n": 64, "dtype": "float64", "upper": False,
     "check": True, "sm": "9.0", "status": "compiled", "seconds": 21.5, "suggested_s": 0.3,
     "stages": {"libmathdx_potrs": 12.0, "nvrtc": 2.5, "fatbin": 0.4, "nvjitlink": 6.3},
     "error": None},
    {"op": "spd_inverse", "kernel": "potrf_inverse", "n": 8, "dtype": "float32", "upper": False,
     "check": True, "sm": "9.0", "status": "compiled", "seconds": 9.0, "suggested_s": 0.0,
     "stages": {"libmathdx_potrf": 3.0, "libmathdx_potrs": 3.0, "nvrtc": 1.0, "fatbin": 0.0,
                "nvjitlink": 2.0}, "error": None},
    {"op": "spd_inverse", "kernel": "potrf_inverse", "n": 4, "dtype": "float32", "upper": False,
     "check": True, "sm": "9.0", "status": "cached", "seconds": 0.01, "suggested_s": 0.0,
     "stages": {}, "error": None},
]


def _case(**kw):
    row = {"batch": 1000, "n": 64, "dtype": "float64", "torch_s": 0.0003, "first_auto_s": 0.0005,
           "method_after_first": "torch", "first_pot03": 0.4, "ratio": 0.0005 / 0.0003,
           "calls_until_fused": 412, "s_until_fused": 22.1, "after_method": "fused",
           "after_s": 0.0002, "after_pot03": 0.5, "slowest_next_s": 0.0009}
    row.update(kw)
    return row


def test_parse_cases():
    mod = _script()
    assert mod.parse_cases("1000x64,300x100") == [(1000, 64), (300, 100)]
    for bad in ("1000x", "x64", "1000x0", "1000*64", "1000x64x2", "-1x4", "", "1000x\u00b9",
                " 1x5", "1_0x5", "\u0665x5", "99999999999999999999x5", "1000x-0"):
        with pytest.raises(argparse.ArgumentTypeError, match="BATCHxN"):
            mod.parse_cases(bad)
    with pytest.raises(argparse.ArgumentTypeError, match="named twice"):
        mod.parse_cases("1x5,1x5")


@settings(deadline=None)   # the first example imports the CLI's parsers
@given(st.text(max_size=12))
def test_timeout_is_a_finite_number_of_seconds_above_0_or_refused(text):
    import math

    try:
        got = _script().seconds(text)
    except argparse.ArgumentTypeError as e:
        assert repr(text) in str(e)
        return
    assert got == float(text) and math.isfinite(got) and got > 0
    assert text.strip() == text and "_" not in text and text.isascii()   # written plainly


@pytest.mark.parametrize("text", [" 5", "1_0", "\u0665", "\u0661e\u0663", "5 ", "inf"])
def test_timeout_and_repeat_take_only_plain_digits(text):
    mod = _script()
    with pytest.raises(argparse.ArgumentTypeError):
        mod.seconds(text)
    with pytest.raises(argparse.ArgumentTypeError):
        mod.count(text)


@pytest.mark.parametrize("argv", [["--cases", "bad"], ["--timeout", "nan"], ["--timeout", "-1"],
                                  ["--timeout", "0"], ["--cases", "4x4", "--cases", "8x8"]])
def test_bad_arguments_exit_2_with_one_line(argv, capsys):
    with pytest.raises(SystemExit) as e:
        _script().main(argv)
    err = capsys.readouterr().err
    assert e.value.code == 2 and len(err.strip().splitlines()) == 1 and "error:" in err


def test_an_output_that_cannot_be_written_is_refused_before_any_work(tmp_path, capsys):
    assert _script().main(["--json", str(tmp_path / "missing" / "out.json")]) == 2
    assert "no such folder" in capsys.readouterr().err


def test_cold_env_names_only_the_fresh_cache(monkeypatch):
    monkeypatch.setenv("CUSOLVER_TRACE_CACHE", "/somewhere/warm")
    env = _script().cold_env("/tmp/cold")
    assert env["XDG_CACHE_HOME"] == "/tmp/cold" and "CUSOLVER_TRACE_CACHE" not in env


def test_warmup_summary():
    s = _script().summarize_warmup(KERNELS)
    assert (s["count"], s["compiled"], s["cached"], s["failed"]) == (3, 2, 1, 0)
    assert s["compile_s"] == pytest.approx(30.5) and s["suggested_s"] == pytest.approx(0.3)
    assert s["slowest"] == "cholesky_inverse n=64 float64: 21.5 s"
    assert s["stage_s"] == pytest.approx({"libmathdx_potrs": 15.0, "nvrtc": 3.5, "fatbin": 0.4,
                                          "nvjitlink": 8.3, "libmathdx_potrf": 3.0})


def test_goals_and_table():
    mod = _script()
    results = {"device": "NVIDIA H200", "torch": "2.11.0", "extra_import_s": 1.2,
               "cases": [_case(), _case(batch=300, n=100, first_auto_s=0.0009, ratio=3.0)],
               "warmup": {"exit": 0, "wall_s": 48.0, **mod.summarize_warmup(KERNELS)}}
    got = {what: (value, met) for what, value, met in mod.goals(results)}
    assert got["1000 x 64: first auto call / torch (goal <= 2)"] == ("1.67", True)
    assert got["300 x 100: first auto call / torch (goal <= 2)"] == ("3.00", False)
    assert got["1000 x 64: auto runs fused once built"] == ("after 412 calls, 22.1 s", True)
    assert got["1000 x 64: call 10 after that"] == ("fused, 0.200 ms", True)
    assert got["warmup of the default list (cold cache, fresh process)"][1]
    text = mod.table(results)
    assert ("| 1000 x 64 | 0.300 | 0.500 | 1.67 | 1.67 of 1 (1.67-1.67) | torch | 412 | 22.1 | "
            "0.900 | fused | 0.200 |") in text
    assert "warmup: 3 kernels in 48.0 s (2 compiled, 1 cached, 0 failed" in text
    assert "| 300 x 100: first auto call / torch (goal <= 2) | 3.00 | NO |" in text
    # a case that never switched, a bad first result and a warm-up that failed are not met
    results["cases"] = [_case(calls_until_fused=None, s_until_fused=None, first_pot03=float("nan"))]
    for key in ("after_method", "after_s", "after_pot03"):
        results["cases"][0].pop(key)
    results["warmup"] = {"exit": 2, "wall_s": 3.0, "error": "no GPU"}
    assert [met for _, _, met in mod.goals(results)] == [False, False, False]
    assert "not within the timeout" in mod.table(results) and "warmup: exit 2" in mod.table(results)


def test_repeats_the_goal_is_on_the_median_of_the_processes(monkeypatch):
    """A first call is one sample: with --repeat, fresh processes (--first-only, each on its
    own cold cache) time it again, and the goal is on the median of the ratios; a repeat
    that failed, or whose result misses pot03 < 30, fails the goal."""
    mod = _script()
    seen = []

    def fake_run(argv, **kw):
        seen.append((argv, kw["env"]["XDG_CACHE_HOME"]))
        k = len(seen)
        rows = [_case(ratio=1.0 + k), _case(batch=300, n=100, ratio=1.5)]
        return subprocess.CompletedProcess(argv, 0, json.dumps(rows), "")
    monkeypatch.setattr(mod.subprocess, "run", fake_run)
    per = mod.run_repeats([(1000, 64), (300, 100)], 4, 60)
    assert [a[-3:] for a, _ in seen] == [["--first-only", "--cases", "1000x64,300x100"]] * 4
    assert len({env for _, env in seen}) == 4          # a cold cache each
    row = mod.with_repeats(_case(ratio=2.4), per[0])   # this process's 2.4 and 2, 3, 4, 5
    assert row["ratios"] == [2.4, 2.0, 3.0, 4.0, 5.0] and row["median_ratio"] == 3.0
    got = {what: (value, met) for what, value, met in mod.goals({"cases": [row]})}
    assert got["1000 x 64: first auto call / torch (goal <= 2)"] == (
        "3.00 (median of 5 processes, 2.00-5.00)", False)
    ok = mod.with_repeats(_case(ratio=1.2), per[1])
    assert [met for what, _, met in mod.goals({"cases": [ok]}) if "first" in what] == [True]
    assert "| 1.20 | 1.50 of 5 (1.20-1.50) |" in mod.table({"cases": [ok]})
    bad = mod.with_repeats(_case(ratio=1.2), per[1][:3] + [{"error": "exit 3"}])
    assert [met for what, _, met in mod.goals({"cases": [bad]}) if "first" in what] == [False]
    monkeypatch.setattr(mod.subprocess, "run", lambda argv, **kw: subprocess.CompletedProcess(
        argv, 1, "", "Traceback ...\nRuntimeError: boom"))
    assert mod.run_repeats([(1000, 64)], 1, 60) == [[{"error": "Traceback ...\nRuntimeError: boom"}]]


def test_cold_inputs_reaches_the_repeats_and_the_table(monkeypatch):
    """--cold-inputs (the inputs' torch ops left out of the process's warm-up) is passed to
    every fresh process, and the table says which warm-up the figures come from."""
    mod = _script()
    seen = []

    def fake_run(argv, **kw):
        seen.append(argv)
        return subprocess.CompletedProcess(argv, 0, json.dumps([_case()]), "")
    monkeypatch.setattr(mod.subprocess, "run", fake_run)
    mod.run_repeats([(1000, 64)], 2, 60, cold_inputs=True)
    mod.run_repeats([(1000, 64)], 1, 60)
    assert [a[-4:] for a in seen] == [["--first-only", "--cases", "1000x64", "--cold-inputs"]] * 2 \
        + [[mod.os.path.abspath(mod.__file__), "--first-only", "--cases", "1000x64"]]
    assert "--cold-inputs: the inputs' torch ops left out" in mod.table(
        {"cases": [_case()], "cold_inputs": True})
    assert "the inputs' torch ops warmed on 10 x 8 x 8" in mod.table({"cases": [_case()]})


@pytest.mark.parametrize("text", ["0", "-1", "x", "1.5", ""])
def test_repeat_is_an_integer_of_at_least_1(text):
    with pytest.raises(argparse.ArgumentTypeError):
        _script().count(text)
    assert _script().count("3") == 3


def test_run_warmup_reads_the_commands_json(monkeypatch):
    mod = _script()
    seen = {}

    def fake_run(argv, **kw):
        seen.update(argv=argv, env=kw["env"])
        return subprocess.CompletedProcess(argv, 0, json.dumps({"kernels": KERNELS}), "")
    monkeypatch.setattr(mod.subprocess, "run", fake_run)
    w = mod.run_warmup(60)
    assert seen["argv"][1:] == ["-m", "cusolver_trace", "warmup", "--json", "-"]
    assert seen["env"]["XDG_CACHE_HOME"].split("/")[-1].startswith("first-call-warmup-")
    assert w["exit"] == 0 and w["compiled"] == 2
    monkeypatch.setattr(mod.subprocess, "run", lambda argv, **kw: subprocess.CompletedProcess(
        argv, 2, "", "cusolver-trace warmup: error: needs the extra"))
    assert mod.run_warmup(60) == {"exit": 2, "wall_s": pytest.approx(0, abs=60),
                                  "error": "cusolver-trace warmup: error: needs the extra"}


def test_without_a_gpu_it_says_so(monkeypatch, tmp_path, capsys):
    import tempfile

    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))   # restored after main changes it
    monkeypatch.delenv("CUSOLVER_TRACE_CACHE", raising=False)
    assert _script().main(["--json", str(tmp_path / "out.json")]) == 2
    assert "needs a CUDA GPU" in capsys.readouterr().err


def test_a_repeat_without_a_gpu_says_so_and_prints_no_rows(monkeypatch, capsys):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert _script().main(["--first-only", "--cases", "1000x64"]) == 2
    out = capsys.readouterr()
    assert out.out == "" and out.err.strip() == "first_call: needs a CUDA GPU"


@pytest.mark.parametrize("target", ["-", "script"])
def test_json_to_stdout_or_over_the_script_is_refused(target, capsys):
    path = str(ROOT / "benchmarks" / "first_call.py") if target == "script" else "-"
    before = (ROOT / "benchmarks" / "first_call.py").read_bytes()
    assert _script().main(["--json", path]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and ("overwritten" in err or "to a file" in err)
    assert (ROOT / "benchmarks" / "first_call.py").read_bytes() == before


def test_help_shows_the_default_cases_as_typed(capsys):
    with pytest.raises(SystemExit):
        _script().main(["--help"])
    assert "(default: 1000x64,300x100)" in capsys.readouterr().out


@settings(deadline=None)   # the first example imports the CLI's parsers
@given(st.text(max_size=8))
def test_repeat_is_an_integer_of_at_least_1_or_refused_in_one_line(text):
    try:
        got = _script().count(text)
    except argparse.ArgumentTypeError as e:   # names what was given, on one line
        assert (repr(text) in str(e) or f"got {text}" in str(e)) and "\n" not in str(e)
        return
    assert got == int(text) >= 1
