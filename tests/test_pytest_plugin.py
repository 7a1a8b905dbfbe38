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
