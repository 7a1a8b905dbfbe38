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
    assert row["torch"]["clock"] == "perf_counter"


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
