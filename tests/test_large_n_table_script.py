"""benchmarks/large_n_table.py (issue 27's memory and time table) on the CPU: its arguments
are parsed strictly, without a GPU it says so and exits 2, and a row is timed alternately with
its baseline."""
from __future__ import annotations

import argparse
import importlib.util
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("large_n_table",
                                              ROOT / "benchmarks" / "large_n_table.py")
table = importlib.util.module_from_spec(spec)
spec.loader.exec_module(table)


@given(st.text(max_size=30))
def test_orders_are_ints_of_at_least_one_or_refused(text):
    try:
        got = table.orders(text)
    except argparse.ArgumentTypeError as e:
        assert repr(text) in str(e)
        return
    assert got == [int(x) for x in text.split(",")] and min(got) >= 1


@pytest.mark.parametrize("argv", [["o.json", "--n", "abc"], ["o.json", "--n", "0"],
                                  ["o.json", "--n", "4,,8"], ["o.json", "--repeat", "-3"],
                                  ["o.json", "--repeat", "1e9"]])
def test_bad_arguments_exit_2(argv, capsys):
    with pytest.raises(SystemExit) as e:
        table.main(argv)
    err = capsys.readouterr().err
    assert e.value.code == 2 and "error: argument" in err and len(err.strip().splitlines()) == 1


def test_an_output_that_cannot_be_written_is_refused_before_any_work(tmp_path, capsys):
    assert table.main([str(tmp_path / "missing" / "o.json"), "--n", "64"]) == 2
    assert "no such folder" in capsys.readouterr().err


def test_without_a_gpu_it_says_so(tmp_path, capsys):
    import torch

    if torch.cuda.is_available():
        pytest.skip("a GPU is visible: the table would run")
    out = tmp_path / "o.json"
    assert table.main([str(out), "--n", "64"]) == 2
    assert "needs a CUDA GPU" in capsys.readouterr().err and not out.exists()


@pytest.mark.parametrize("target", ["-", "script"])
def test_an_output_over_the_script_or_to_stdout_is_refused(target, capsys):
    script = ROOT / "benchmarks" / "large_n_table.py"
    before = script.read_bytes()
    assert table.main([str(script) if target == "script" else "-", "--n", "64"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and ("overwritten" in err or "to a file" in err)
    assert script.read_bytes() == before


def test_rows_are_timed_call_by_call_alternately_with_the_baseline(monkeypatch):
    """One warm-up call of each, then rounds of one call each in turn; each median is of that
    function's own calls (fake CUDA events whose elapsed time is what the call reported)."""
    import torch

    log, clock = [], [0.0]

    class Event:
        def __init__(self, enable_timing=False):
            self.t = None

        def record(self):
            self.t = clock[0]

        def synchronize(self):
            pass

        def elapsed_time(self, end):
            return end.t - self.t

    def call(name, ms):
        def fn():
            log.append(name)
            clock[0] += ms
        return fn

    monkeypatch.setattr(torch.cuda, "Event", Event)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a: None)
    got = table._time([call("row", 2.0), call("torch", 5.0)], 3)
    assert log == ["row", "torch"] + ["row", "torch"] * 3
    assert got == [2.0, 5.0]
