"""`cusolver-trace devices` and the hello_cholesky workflow: CPU, one GPU, several GPUs."""
from __future__ import annotations

import json

import pytest
import torch

from cusolver_trace.cli import main
from cusolver_trace.workflow import run_op, run_workflow


def test_devices_on_cpu(tmp_path):
    if torch.cuda.is_available():
        pytest.skip("CPU variant; this machine has a GPU")
    out = tmp_path / "d.json"
    assert main(["devices", "--n", "64", "--repeat", "2", "--json", str(out)]) == 0
    (row,) = json.loads(out.read_text())
    assert row["device"] == "cpu" and row["equals_first_device_bitwise"] is True
    assert row["torch"]["clock"] == "thread_time"


@pytest.mark.gpu
def test_workflow_one_gpu_bitwise():
    (run,) = run_workflow(["cuda:0"], n=512, repeat=3)
    assert run.torch_equals_replay and run.torch.clock == "cuda-events"
    (run,) = run_op("cholesky_inverse", ["cuda:0"], n=300, repeat=3)
    assert run.torch_equals_replay


@pytest.mark.gpu
def test_workflow_every_gpu_bitwise_across_devices():
    if torch.cuda.device_count() < 2:
        pytest.skip(f"needs at least two GPUs, {torch.cuda.device_count()} visible")
    runs = run_workflow(n=1024, repeat=5)
    assert [r.device for r in runs] == [f"cuda:{i}" for i in range(torch.cuda.device_count())]
    assert all(r.torch_equals_replay for r in runs)
    from cusolver_trace.checks import bitwise_equal

    assert all(bitwise_equal(r.U, runs[0].U) for r in runs)


def test_hello_cholesky_example_runs(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    script = Path(__file__).resolve().parents[1] / "examples" / "hello_cholesky.py"
    out = subprocess.run([sys.executable, str(script), "--n", "64", "--repeat", "2"],
                         capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "hello_cholesky workflow" in out.stdout and "torch == replay (bits)" in out.stdout


def test_sweep_shards_and_spread_merge(tmp_path):
    """--gpus machinery on the CPU: two worker processes, every other point each, merged."""
    import argparse

    from rich.console import Console

    from cusolver_trace.cli.sweep import spread_over_gpus
    from cusolver_trace.sweep import run_sweep

    kw = dict(method_names=["torch", "potri"], device="cpu", repeat=1, warmup=0, progress=False)
    a = run_sweep("cholesky_inverse", [8, 12, 16], [1], ["float64"], shard=(0, 2), **kw)
    b = run_sweep("cholesky_inverse", [8, 12, 16], [1], ["float64"], shard=(1, 2), **kw)
    assert sorted({r["n"] for r in a}) == [8, 16] and {r["n"] for r in b} == {12}
    args = argparse.Namespace(op="cholesky_inverse", n=[8, 12, 16], batch=[1], dtype=["float64"],
                              method=["torch", "potri"], upper=False, nrhs=None, repeat=1, warmup=0,
                              cond=1e3, seed=0, flush_l2=False, unchecked=False, device="cpu")
    rows = spread_over_gpus(args, ["", ""], Console(file=open(tmp_path / "log", "w")))
    assert sorted((r["n"], r["method"]) for r in rows) == sorted(
        (n, m) for n in (8, 12, 16) for m in ("torch", "potri"))
    assert {r["physical_gpu"] for r in rows} == {""} and all(r["status"] == "ok" for r in rows)


def test_results_table_names_physical_gpus_of_pinned_workers():
    """Each --gpus worker sees its GPU as cuda:0; the table must say which physical GPU."""
    import io

    from rich.console import Console

    from cusolver_trace.sweep import results_table, run_sweep

    kw = dict(method_names=["torch"], device="cpu", repeat=1, warmup=0, progress=False)
    rows = run_sweep("cholesky_inverse", [8, 12], [1], ["float64"], **kw)
    rows = [dict(r, physical_gpu=g) for r, g in zip(rows, ["0", "1"])]

    def text(rs):
        c = Console(file=io.StringIO(), width=250, record=True, color_system=None)
        c.print(results_table(rs))
        return c.export_text()

    both = text(rows)
    assert "cholesky_inverse on GPUs 0, 1 (one process each" in both
    assert "┃ GPU ┃ dtype" in both
    assert [line.split("│")[1].strip() for line in both.splitlines() if "float64" in line] == ["0", "1"]
    one = text(rows[:1])
    assert "cholesky_inverse on GPU 0 (CUDA_VISIBLE_DEVICES)" in one
    plain = text([{k: v for k, v in r.items() if k != "physical_gpu"} for r in rows])
    assert "cholesky_inverse on cpu" in plain


def test_the_devices_table_marks_a_noisy_median():
    import io

    import torch
    from rich.console import Console

    from cusolver_trace.timing import Timing
    from cusolver_trace.workflow import DeviceRun, render

    steady = Timing.from_samples([1.0, 1.0, 1.01, 1.0], "perf_counter")
    noisy = Timing.from_samples([1.0, 3.0, 0.5, 9.0], "perf_counter")
    U = torch.eye(2)

    def text(replay):
        con = Console(file=io.StringIO(), width=300)
        con.print(render([DeviceRun("cpu", "CPU", steady, replay, True, U)], "t"))
        return con.file.getvalue()

    assert "~" not in text(steady) and "noisy" not in text(steady)
    out = text(noisy)
    assert "~" in out and "noisy" in out
    # unequal bits on the CPU are two LAPACKs, said under the table; on a GPU they are not
    assert "two libraries" not in out

    def unequal(device):
        con = Console(file=io.StringIO(), width=300)
        con.print(render([DeviceRun(device, "x", steady, steady, False, U)], "t"))
        return con.file.getvalue()
    assert "two libraries" in unequal("cpu") and "two libraries" not in unequal("cuda:0")


def test_sweep_and_devices_time_the_replay_with_its_decisions_taken_once(monkeypatch):
    """The replay that sweep's ``replay`` method and ``devices --op`` time is the one compare
    times: its path and branch decided when the callable is made, not on every timed call
    (run_replay re-decided per call, which added that host time to the replay's side only).
    Each call still returns the op's result, equal to a fresh run_replay's."""
    import torch

    from cusolver_trace import ops, sweep
    from cusolver_trace.matrices import spd

    decided = []

    def counting(name):
        orig = getattr(ops.Op, name)

        def wrapped(self, *a, **kw):
            decided.append((self.name, name))
            return orig(self, *a, **kw)
        return wrapped

    for name in ("torch_path", "replay_call"):   # every decision the replay takes
        monkeypatch.setattr(ops.Op, name, counting(name))
    for op in ("cholesky", "cholesky_inverse", "cholesky_solve"):
        case = sweep.make_case(op, 6, 1, "float64", "cpu", seed=0, cond=10.0)
        fn = sweep.method_callable(case, "replay")
        made = len(decided)
        outs = [fn() for _ in range(3)]
        assert len(decided) == made, op          # no decision inside the timed calls
        o = ops.get(op)
        want = o.run_replay(case.inputs, False)[0]
        assert all(torch.equal(x, want) for x in outs)
    decided.clear()
    runs = run_op("cholesky_solve", ["cpu"], n=5, repeat=3, warmup=1)
    assert decided == [("cholesky_solve", "replay_call"), ("cholesky_solve", "torch_path")]
    assert runs[0].torch_equals_replay in (True, False)


def test_hello_cholesky_sizes_n_by_the_device(monkeypatch, capsys):
    """512 on the CPU (n = 4096 took 8 min there, silent), 4096 on a GPU."""
    import importlib.util
    from pathlib import Path

    import torch

    path = Path(__file__).resolve().parents[1] / "examples" / "hello_cholesky.py"
    spec = importlib.util.spec_from_file_location("hello_cholesky", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    asked = []
    real = mod.run_workflow

    def small(devices, *, n, **kw):
        asked.append(n)
        return real(devices, n=8, **kw)

    monkeypatch.setattr(mod, "run_workflow", small)
    assert mod.main(["--repeat", "1"]) == 0
    assert asked == [512 if not torch.cuda.is_available() else 4096]
    assert f"n={asked[0]}" in capsys.readouterr().out
