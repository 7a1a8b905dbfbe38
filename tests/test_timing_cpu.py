"""CPU timing with a fixed thread count for every library, and ratios withheld where the cores
were oversubscribed (cusolver_trace.timing: pinned_threads, CpuLoad, ratio). No assertion on
wall time: only on thread counts, on the judging of measured loads, and on what is reported."""
from __future__ import annotations

import os
import subprocess
import sys
import time

import numpy as np
import pytest
import scipy.linalg
import torch
from threadpoolctl import threadpool_info

from cusolver_trace import sweep, timing
from cusolver_trace.timing import CpuLoad, Timing, pinned_threads, ratio, time_calls


def _blas_threads():
    return sorted({p["num_threads"] for p in threadpool_info()})


def test_pinned_threads_pins_torch_and_every_pool_and_restores():
    scipy.linalg.cho_factor(np.eye(4))   # OpenBLAS loaded
    torch_before, pools_before = torch.get_num_threads(), _blas_threads()
    with pinned_threads(1) as k:
        assert k == 1 and torch.get_num_threads() == 1 and _blas_threads() == [1]
    assert torch.get_num_threads() == torch_before and _blas_threads() == pools_before
    with pytest.raises(ValueError):
        with pinned_threads(0):
            pass
    assert torch.get_num_threads() == torch_before


def test_time_calls_on_the_cpu_runs_every_call_pinned_and_says_so():
    seen = []

    def torch_side():
        seen.append(("torch", torch.get_num_threads(), tuple(_blas_threads())))
        return torch.linalg.cholesky(torch.eye(8, dtype=torch.float64))

    def scipy_side():
        seen.append(("scipy", torch.get_num_threads(), tuple(_blas_threads())))
        return scipy.linalg.cho_factor(np.eye(8))

    t = time_calls({"torch": torch_side, "scipy": scipy_side}, repeat=3, warmup=1)
    assert seen and all(k == 1 and pools == (1,) for _, k, pools in seen), seen
    for v in t.values():
        assert v.threads == timing.CPU_THREADS == 1
        d = v.to_dict()
        assert d["threads"] == 1 and "oversubscribed" in d and d["cpu_load"]["cores"] >= 1
    assert all(v.clock == "thread_time" for v in t.values())   # one thread: its CPU time
    t2 = time_calls({"torch": torch_side}, repeat=2, warmup=0, threads=2)
    assert t2["torch"].threads == 2 and seen[-1][1] == 2 and t2["torch"].clock == "perf_counter"


def test_cpu_load_judging():
    ok = CpuLoad.judge(threads=1, cores=2, wall_s=0.5, cpu_s=0.49, wait_s=0.005)
    assert ok.oversubscribed is None and ok.cpu_share == pytest.approx(0.98)
    waited = CpuLoad.judge(threads=2, cores=2, wall_s=1.0, cpu_s=1.2, wait_s=0.6)
    assert "waited for a core 30 %" in waited.oversubscribed
    spun = CpuLoad.judge(threads=2, cores=2, wall_s=1.0, cpu_s=2.9, wait_s=0.0)
    assert "pinning does not reach" in spun.oversubscribed
    # one thread, timed by its own CPU time: waiting for a core does not count, other threads do
    assert CpuLoad.judge(threads=1, cores=2, wall_s=1.0, cpu_s=0.4, wait_s=0.6,
                         thread_cpu_s=0.4).oversubscribed is None
    assert "pinning does not reach" in CpuLoad.judge(threads=1, cores=2, wall_s=1.0, cpu_s=1.0,
                                                     wait_s=0.0, thread_cpu_s=0.5).oversubscribed
    assert CpuLoad.judge(threads=3, cores=2, wall_s=1, cpu_s=1, wait_s=0).oversubscribed == (
        "3 threads per library on 2 cores")
    # without schedstat (not Linux) the CPU-time test still applies
    assert CpuLoad.judge(threads=1, cores=1, wall_s=1, cpu_s=1, wait_s=None).oversubscribed is None


def test_an_oversubscribed_time_is_noisy_and_gives_no_ratio():
    busy = CpuLoad.judge(threads=1, cores=1, wall_s=1.0, cpu_s=0.4, wait_s=0.6)
    calm = CpuLoad.judge(threads=1, cores=1, wall_s=1.0, cpu_s=1.0, wait_s=0.0)
    a = Timing.from_samples([2.0, 2.0, 2.0], "perf_counter", calm)
    b = Timing.from_samples([1.0, 1.0, 1.0], "perf_counter", busy)
    assert not a.noisy and b.noisy and b.oversubscribed
    assert ratio(a, a) == 1.0 and ratio(b, a) is None and ratio(a, b) is None
    assert ratio(a, None) is None


@pytest.mark.skipif(not os.path.exists("/proc/self/task"), reason="run-queue delay is read "
                    "from Linux's /proc/self/task/*/schedstat")
def test_a_busy_machine_is_detected_when_timing_wall_time():
    """Busy processes on every core, twice over: timed on wall time with as many threads as
    cores, the block waits for a core most of the time and is oversubscribed. (With one thread
    the samples are that thread's CPU time, which waiting does not inflate.)"""
    cores = timing.available_cores()
    hogs = [subprocess.Popen([sys.executable, "-c", "import time\nt=time.time()\n"
                              "while time.time() - t < 20: pass"]) for _ in range(2 * cores)]
    try:
        time.sleep(0.3)

        def spin():
            t = time.perf_counter()
            while time.perf_counter() - t < 0.05:
                pass

        t = time_calls({"spin": spin}, repeat=10, warmup=0, threads=max(2, cores))
    finally:
        for h in hogs:
            h.kill()
            h.wait()
    assert t["spin"].oversubscribed is not None, t["spin"].cpu


def test_sweep_withholds_the_ratios_of_an_oversubscribed_point(monkeypatch):
    monkeypatch.setattr(timing, "OTHER_THREADS_SLACK_S", -1.0)   # every block oversubscribed
    case = sweep.make_case("cholesky_inverse", 16, 1, "float64", "cpu")
    rows = sweep.measure_case(case, ["potrs"], repeat=2, warmup=0, unchecked=True)
    assert rows and all(r["ratio_to_torch"] is None for r in rows)
    assert all(r["ratio_withheld"].startswith("oversubscribed CPU: ") for r in rows)
    assert all(r["threads"] == 1 and r["oversubscribed"] and r["noisy"] for r in rows)
    assert all(r.get("check_overhead") is None for r in rows)


def test_the_sweep_report_states_the_thread_count(tmp_path, capsys):
    from cusolver_trace.cli import main

    rc = main(["sweep", "--op", "cholesky_inverse", "--n", "8", "--method", "potrs",
               "--repeat", "2", "--device", "cpu", "--out", str(tmp_path / "s.json")])
    assert rc == 0
    assert "timed with 1 thread per library" in capsys.readouterr().out


def test_compare_withholds_an_oversubscribed_ratio(monkeypatch):
    from cusolver_trace.compare import compare
    from cusolver_trace.matrices import spd

    monkeypatch.setattr(timing, "OTHER_THREADS_SLACK_S", -1.0)   # every block oversubscribed
    c = compare("cholesky", spd(8), repeat=3, warmup=0, provenance=False)
    assert c.torch.timing.oversubscribed and c.torch.timing.noisy
    assert c.time_ratio is None and c.to_dict()["time_ratio_replay_over_torch"] is None
    assert "replay/torch" not in c.time_split.text
