"""Test setup lives in the project's pytest plugin ``cusolver_trace._pytest_gpus``
(loaded by ``addopts`` in pyproject.toml): ``gpu`` tests skip with the reason where no usable
GPU is present, and xdist workers are pinned one per GPU."""

import math

import pytest


@pytest.fixture
def cpu_load_ignored(monkeypatch):
    """CPU timings judged as if the cores were free, so that a test of what a sweep computes
    from its times does not depend on this machine's load (tests/test_timing_cpu.py tests the
    judging itself)."""
    from cusolver_trace import timing

    monkeypatch.setattr(timing, "WAIT_SHARE_MAX", math.inf)
    monkeypatch.setattr(timing, "CPU_SHARE_MAX", math.inf)
    monkeypatch.setattr(timing, "OTHER_THREADS_SLACK_S", math.inf)


@pytest.fixture(autouse=True)
def _no_inherited_columns(monkeypatch):
    """Output width as on a pipe: a ``COLUMNS`` the environment exports (pytest-xdist's workers
    get ``COLUMNS=80``; a user's shell may export one) would wrap the lines tests look for.
    Tests of the width set it themselves."""
    monkeypatch.delenv("COLUMNS", raising=False)
