"""The table scripts under benchmarks/ refuse what they cannot do with one line and exit 2,
never a traceback: a bad argument anywhere, no GPU on a CPU-only machine, an unreadable file."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]


def run(*argv, env_extra=None):
    env = dict(os.environ, PYTHONPATH=str(ROOT), **(env_extra or {}))
    for name in ("PLANS_DRY", "EIGH_TABLE_DRY", "LU_TABLE_DRY"):
        env.pop(name, None)
    return subprocess.run([sys.executable, *argv], capture_output=True, text=True, env=env,
                          cwd=ROOT, timeout=300)


def one_line(p, code=2):
    assert p.returncode == code, p.stderr
    assert "Traceback" not in p.stderr and len(p.stderr.strip().splitlines()) == 1, p.stderr


@pytest.mark.parametrize("arg", ["out.json", "nan", "-5", "1_0", " 5"])
def test_plans_table_refuses_a_deadline_that_is_not_a_number_of_seconds(arg):
    one_line(run("benchmarks/plans_table.py", arg))


def test_plans_table_help_reads_no_argument_as_a_deadline():
    p = run("benchmarks/plans_table.py", "--help")
    assert p.returncode == 0 and "deadline" in p.stdout


@pytest.mark.skipif(torch.cuda.is_available(), reason="a GPU is visible: the scripts would run")
@pytest.mark.parametrize("argv", [["benchmarks/plans_table.py", "10"],
                                  ["benchmarks/eigh_table.py", "out.json"],
                                  ["benchmarks/lu_table.py", "out.json"]])
def test_without_a_gpu_the_tables_say_so_in_one_line(argv, tmp_path):
    p = run(*argv[:1], *[str(tmp_path / a) if a.endswith(".json") else a for a in argv[1:]])
    one_line(p)
    assert "no CUDA GPU" in p.stderr and not list(tmp_path.iterdir())


@pytest.mark.parametrize("content", [None, b"not json", b"{}", b"\xff\xfe"])
def test_trace_json_size_refuses_a_file_that_is_not_a_trace(content, tmp_path):
    path = tmp_path / "t.json"
    if content is not None:
        path.write_bytes(content)
    one_line(run("benchmarks/trace_json_size.py", str(path)))
