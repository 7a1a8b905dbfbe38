"""The project's pytest plugin: xdist workers pinned one per GPU, rows merged across workers."""
from __future__ import annotations

import json

from cusolver_trace import _pytest_gpus as plugin


def test_workers_pinned_round_robin(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3,5")
    assert plugin.pin_worker_gpu("gw0") == "3"
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3,5")
    assert plugin.pin_worker_gpu("gw1") == "5"
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3,5")
    assert plugin.pin_worker_gpu("gw2") == "3"
    import os

    assert os.environ["CUDA_VISIBLE_DEVICES"] == "3"
    assert plugin.pin_worker_gpu(None) is None and plugin.pin_worker_gpu("master") is None


def test_no_gpus_no_pinning(monkeypatch):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.setattr(plugin, "_gpu_ids", lambda: [])
    assert plugin.pin_worker_gpu("gw0") is None


def test_merge_orders_rows_from_every_worker(tmp_path):
    (tmp_path / "gw0.jsonl").write_text(json.dumps({"group": "b", "name": "torch", "worker": "gw0"}) + "\n")
    (tmp_path / "gw1.jsonl").write_text(json.dumps({"group": "a", "name": "potri", "worker": "gw1"}) + "\n"
                                        + json.dumps({"group": "a", "name": "auto", "worker": "gw1"}) + "\n")
    rows = plugin.merge(tmp_path)
    assert [(r["group"], r["name"]) for r in rows] == [("a", "auto"), ("a", "potri"), ("b", "torch")]


def test_summary_says_what_its_figures_are():
    from rich.console import Console

    rows = [{"group": "g", "name": "potri", "device": "cpu", "worker": "main", "median_ms": 0.5,
             "pct_of_ceiling": 147.3, "noisy": True},
            {"group": "g", "name": "torch", "device": "cpu", "worker": "main", "median_ms": 0.4,
             "pct_of_ceiling": 20.0, "noisy": False}]
    con = Console(width=400, record=True, file=__import__("io").StringIO())
    con.print(plugin.summary_table(rows, "out.json"))
    text = con.export_text()
    assert "GPU results merged" not in text and "(cpu)" in text and "perf_counter" in text
    assert "147.3 (above the measured GEMM rate)" in text and "20 " in text
    assert "noisy" in text and "True" in text
