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
    assert "GPU results merged" not in text and "(cpu)" in text and "thread_time" in text
    assert "147.3 (above the measured GEMM rate)" in text and "20 " in text
    assert "noisy" in text and "True" in text


# --------------------------------------------------------------------------- GPU skips
pytest_plugins = ("pytester",)

import pytest  # noqa: E402


def test_extras_table_is_pyprojects():
    import pathlib
    import re

    tomllib = pytest.importorskip("tomllib", reason="Python < 3.11 has no tomllib")
    root = pathlib.Path(__file__).resolve().parents[1]
    extras = tomllib.loads((root / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    for name, dists in plugin.EXTRAS.items():
        got = tuple(re.match(r"[A-Za-z0-9._-]+", r).group(0) for r in extras[name])
        assert got == dists, name


def test_verdict_skips_only_for_no_gpu_or_a_missing_extra_and_names_it():
    assert plugin.verdict("no CUDA GPU visible", "cuda13", [], OSError("x")) == (
        "skip", "GPU test skipped: no CUDA GPU visible")
    kind, why = plugin.verdict(None, "cuda13-fused", ["nvidia-libmathdx-cu13"], None)
    assert kind == "skip" and "'cuda13-fused'" in why and "nvidia-libmathdx-cu13" in why
    kind, why = plugin.verdict(None, "cuda12", [], ImportError("libcublas.so.12: cannot open"))
    assert kind == "fail" and "ImportError: libcublas.so.12: cannot open" in why
    assert plugin.verdict(None, "cuda13", [], None) == ("run", None)


def test_missing_distributions():
    assert plugin.missing_distributions("cuda13", installed=lambda d: True) == []
    assert plugin.missing_distributions("cuda13-fused", installed=lambda d: d.startswith("cupy")) == [
        "nvmath-python", "numba-cuda", "nvidia-libmathdx-cu13", "nvidia-cuda-nvrtc",
        "nvidia-nvjitlink"]


GPU_TESTS = """
import pytest

@pytest.mark.gpu
def test_bindings():
    pass

@pytest.mark.gpu
@pytest.mark.needs_extra("cuda13-fused")
def test_fused():
    pass

@pytest.mark.gpu
@pytest.mark.gpu_torch_only
def test_torch_only():
    pass

def test_cpu():
    pass
"""


@pytest.fixture
def fake_machine(monkeypatch):
    """Set what the plugin sees: a visible GPU or not, which distributions are installed,
    whether each extra's bindings load."""
    def make(gpu=True, installed=(), broken=()):
        monkeypatch.setattr(plugin, "cuda_unavailable_reason",
                            lambda: None if gpu else "no CUDA GPU visible to torch (faked)")
        monkeypatch.setattr(plugin, "cuda_extra", lambda: "cuda13")
        real = plugin.missing_distributions
        monkeypatch.setattr(plugin, "missing_distributions",
                            lambda extra: real(extra, installed=lambda d: d in installed))

        def probe(extra):
            def run():
                if extra in broken:
                    raise ImportError(f"{extra} bindings: libfoo.so: cannot open shared object file")
            return run
        monkeypatch.setattr(plugin, "PROBES", {e: probe(e) for e in plugin.EXTRAS})
        plugin.extra_verdict.cache_clear()
    yield make
    plugin.extra_verdict.cache_clear()


def _run(pytester):
    pytester.makepyfile(test_fake=GPU_TESTS)
    return pytester.runpytest_inprocess("-p", "cusolver_trace._pytest_gpus", "-rsf", "-q",
                                        "-p", "no:cacheprovider")


def test_no_gpu_skips_every_gpu_test(pytester, fake_machine):
    fake_machine(gpu=False)
    r = _run(pytester)
    r.assert_outcomes(passed=1, skipped=3)
    r.stdout.fnmatch_lines(["*GPU test skipped: no CUDA GPU visible to torch (faked)*"])


def test_gpu_without_the_extra_skips_naming_it(pytester, fake_machine):
    fake_machine(gpu=True, installed=("cupy-cuda13x", "nvmath-python"))
    r = _run(pytester)
    r.assert_outcomes(passed=3, skipped=1)
    r.stdout.fnmatch_lines(["*needs the optional extra 'cuda13-fused'*numba-cuda*"])


def test_gpu_with_broken_bindings_fails_with_the_import_error(pytester, fake_machine):
    fake_machine(gpu=True, installed=plugin.EXTRAS["cuda13-fused"], broken=("cuda13",))
    r = _run(pytester)
    r.assert_outcomes(passed=2, errors=2)   # test_cpu and the torch-only test run
    r.stdout.fnmatch_lines(["*the extra 'cuda13' is installed, but its bindings fail to load: "
                            "ImportError: cuda13 bindings: libfoo.so*"])


def test_broken_fused_extra_fails_only_the_fused_tests(pytester, fake_machine):
    fake_machine(gpu=True, installed=plugin.EXTRAS["cuda13-fused"], broken=("cuda13-fused",))
    r = _run(pytester)
    r.assert_outcomes(passed=3, errors=1)


def test_project_modules_are_imported_not_skipped():
    """No test turns the project's own import errors (or a broad exception) into a skip."""
    import pathlib
    import re

    root = pathlib.Path(__file__).resolve().parents[1]
    for f in sorted([*root.glob("tests/*.py"), *root.glob("benchmarks/*.py")]):
        text = f.read_text()
        assert not re.search(r"importorskip\(\s*['\"]cusolver_trace", text), f.name
        assert not re.search(r"except\s+(Exception|NotImplementedError|BaseException)\b[^:]*:"
                             r"\s*\n\s*pytest\.skip", text), f.name
