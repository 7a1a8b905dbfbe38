"""Dispatch table, CPU replays, compare() and its JSON / CLI, without a GPU."""
from __future__ import annotations

import json

import pytest
import torch

from cusolver_trace import ops
from cusolver_trace.cli import main
from cusolver_trace.compare import VERDICTS, compare
from cusolver_trace.matrices import spd
from cusolver_trace.replay import parse_version, replay, torch_path


def path(op, batch, n=256, nrhs=None, ver="2.11.0", pref="default", dtype="float64"):
    return torch_path(op, batch=batch, n=n, nrhs=nrhs, dtype=dtype, torch_version=ver, preferred=pref)


def test_parse_version():
    assert parse_version("2.11.0+cu130") == (2, 11)
    assert parse_version("2.14.1") == (2, 14)
    with pytest.raises(ValueError):
        parse_version("nightly")


@pytest.mark.parametrize("ver", ["2.3.1", "2.11.0", "2.12.0", "2.14.1"])
def test_cholesky_paths_same_in_every_version(ver):
    p = path("cholesky", 1, ver=ver)
    assert p.calls == ("cusolverDnXpotrf_bufferSize", "cusolverDnXpotrf") and p.bitwise
    p = path("cholesky", 3, ver=ver, dtype="complex64")
    assert p.calls == ("cusolverDnCpotrfBatched",) and p.replay == "potrf_batched"


def test_inverse_paths_torch_2_11():
    p = path("cholesky_inverse", 1, dtype="float32")
    assert p.backend == "cusolver" and p.replay == "potrs_identity_X"
    assert p.calls == ("cusolverDnXpotrs → cublasStrsm_v2_64 ×2",)
    p = path("cholesky_inverse", 64)
    assert p.backend == "magma" and not p.bitwise and "MAGMA" in p.note
    assert p.calls == ("magma_dpotrs_batched",)
    p = path("cholesky_inverse", 64, pref="cusolver")
    assert p.backend == "cusolver" and p.bitwise and p.replay == "potrs_identity_X"


def test_solve_paths_torch_2_11():
    assert path("cholesky_solve", 1, nrhs=4).replay == "potrs_X"
    assert path("cholesky_solve", 8, nrhs=1, pref="cusolver").replay == "potrs_batched"
    assert path("cholesky_solve", 8, nrhs=4, pref="cusolver").replay == "potrs_X"
    assert path("cholesky_solve", 8, nrhs=1).backend == "magma"


@pytest.mark.parametrize("op,key", [("cholesky_inverse", "identity"), ("cholesky_solve", "solve")])
def test_torch_2_12_uses_cublas_trsm(op, key):
    # batch <= 8 and n >= 64 -> trsm loop, else trsmBatched; preference ignored
    for pref in ("default", "cusolver"):
        assert path(op, 8, n=64, nrhs=2, ver="2.12.0", pref=pref).replay == f"trsm_{key}_loop"
        assert path(op, 9, n=64, nrhs=2, ver="2.13.0", pref=pref).replay == f"trsm_{key}_batched"
        assert path(op, 8, n=63, nrhs=2, ver="2.14.1", pref=pref).replay == f"trsm_{key}_batched"
    assert path(op, 1, ver="2.12.0").backend == "cusolver"


def test_every_row_has_a_replay_and_each_op_is_covered():
    import cusolver_trace.ops.cholesky_solve  # noqa: F401  (import must not need a GPU)

    rows = [(op, row) for op in ops.names() for row in ops.get(op).dispatch]
    assert all(isinstance(row, ops.DispatchRule) and callable(row.replay) for _, row in rows)
    covered = {op for op, _ in rows}
    assert covered >= {"cholesky", "cholesky_inverse", "cholesky_solve", "lu_factor", "lu_solve",
                       "solve", "inv"}
    assert set(ops.names(replayable=True)) == covered
    for op in covered:   # a path names its replay: the names are unique within an op
        names = [row.replay.__name__ for row in ops.get(op).dispatch]
        assert len(set(names)) == len({id(row.replay) for row in ops.get(op).dispatch})
    keys = {row.replay.__name__ for op, row in rows if op.startswith("cholesky")}
    assert keys <= {"potrf_X", "potrf_batched", "potrs_identity_X", "trsm_identity_loop",
                    "trsm_identity_batched", "potrs_X", "potrs_batched", "trsm_solve_loop",
                    "trsm_solve_batched"}


def test_cpu_path_and_replay():
    p = torch_path("cholesky_inverse", batch=2, n=5, device="cpu")
    assert p.backend == "lapack" and p.calls[0] == "LAPACK dpotri"
    A = spd(5, batch=(2,), seed=1)
    L = torch.linalg.cholesky(A)
    out, info, _ = replay("cholesky_inverse", L)
    torch.testing.assert_close(out, torch.cholesky_inverse(L), rtol=1e-12, atol=1e-12)
    B = torch.ones(2, 5, 3, dtype=torch.float64)
    out, info, p = replay("cholesky_solve", L, B)
    torch.testing.assert_close(out, torch.cholesky_solve(B, L), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("op", ["cholesky", "cholesky_inverse", "cholesky_solve"])
@pytest.mark.parametrize("dtype", ["float32", "complex128"])
def test_compare_on_cpu(op, dtype):
    A = spd(30, batch=(2,), dtype=dtype, seed=2)
    c = compare(op, A, repeat=2, warmup=1, provenance=False)
    assert c.verdict in ("bitwise-equal", "within-tolerance")
    assert c.torch.ratio < 30 and c.replay.ratio < 30 and c.info_agree
    assert c.torch.timing.clock == "thread_time"
    assert any("CPU" in n for n in c.notes)
    text = str(c)
    assert "verdict" in text and op in text


def test_compare_failed_factorization_is_not_a_mismatch():
    c = compare("cholesky", -spd(3), timing=False, provenance=False)
    assert c.verdict == "failed-alike" and c.torch.info == [1] and c.replay.info == [1]


def test_comparison_json_schema():
    c = compare("cholesky_inverse", spd(8), repeat=2, warmup=0)
    d = json.loads(c.to_json())
    assert d["schema"] == "cusolver-trace/comparison/4"  # 4: spec.options, parts_equal
    assert d["verdict"] in VERDICTS
    assert set(d) >= {"op", "spec", "torch_path", "differences", "torch", "replay",
                      "time_ratio_replay_over_torch", "time_split", "call_sequences", "notes",
                      "provenance"}
    assert set(d["differences"]) == {"max_abs", "max_ulp", "rel_fro", "nan_mismatches"}
    assert set(d["torch"]) >= {"ratio", "ratio_name", "passes", "info", "nonfinite", "timing"}
    assert set(d["torch"]["timing"]) == {"events", "gpu_busy", "host"}
    assert set(d["torch"]["timing"]["events"]) >= {"available", "median_ms", "q1_ms", "q3_ms",
                                                   "iqr_ms", "repeat", "clock"}
    assert d["torch"]["timing"]["events"]["available"] is True
    for k in ("gpu_busy", "host"):  # the CPU cannot split the time: unavailable, with the reason
        assert d["torch"]["timing"][k] == {"available": False, "reason": d["torch"]["timing"][k]["reason"]}
        assert "CPU" in d["torch"]["timing"][k]["reason"]
    assert d["time_split"]["kind"] in ("alike", "noisy", "not-separated") and d["call_sequences"] is None
    assert d["spec"]["n"] == 8 and d["torch_path"]["backend"] == "lapack"
    assert d["spec"]["options"] == {"upper": False} and d["parts_equal"] == {}
    assert d["torch"]["ratio_name"] == "pot03" and d["torch"]["asymmetry"] == 0.0


def test_cli_compare_exit_codes(tmp_path, capsys):
    out = tmp_path / "c.json"
    rc = main(["compare", "--op", "cholesky_solve", "--n", "16,20", "--nrhs", "3", "--repeat", "2",
               "--json", str(out), "--device", "cpu"])
    assert rc == 0
    data = json.loads(out.read_text())
    assert [d["spec"]["n"] for d in data] == [16, 20] and data[0]["spec"]["nrhs"] == 3
    assert "Running on the CPU" in capsys.readouterr().out
    with pytest.raises(SystemExit) as e:  # new design: --dtype is checked by argparse (exit 2)
        main(["compare", "--op", "cholesky", "--n", "8", "--dtype", "float16", "--device", "cpu"])
    assert e.value.code == 2
    assert main(["compare", "--op", "cholesky", "--matrix", "classic3", "--n", "5", "--device", "cpu"]) == 2
    with pytest.raises(SystemExit) as e:
        main(["compare", "--op", "nope"])
    assert e.value.code == 2


def test_top_level_names_stay_functions_after_submodule_imports():
    import importlib

    import cusolver_trace as ct

    for mod in ("compare", "replay", "versions", "tracing", "sweep"):
        importlib.import_module(f"cusolver_trace.{mod}")
    A = spd(6)
    assert ct.compare("cholesky", A, timing=False, provenance=False).verdict != "MISMATCH"
    assert ct.compare("cholesky", A, timing=False, provenance=False).op == "cholesky"  # twice
    assert callable(ct.versions) and callable(ct.replay) and callable(ct.trace)
    assert isinstance(ct.versions(load_gpu_libraries=False), dict)


@pytest.mark.parametrize("op", ["cholesky_inverse", "cholesky_solve"])
def test_not_pd_input_for_inverse_and_solve_is_failed_alike(op):
    A = -torch.tensor([[4.0, 12, -16], [12, 37, -43], [-16, -43, 98]], dtype=torch.float64)
    c = compare(op, A, timing=False, provenance=False)
    assert c.verdict in ("failed-alike", "bitwise-equal")
    assert any("not positive definite" in n for n in c.notes)


def test_a_cuda_library_preference_on_the_cpu_is_noted_not_silently_ignored():
    import cusolver_trace as ct
    from cusolver_trace.matrices import spd

    c = ct.compare("cholesky", spd(8), preferred="magma", timing=False, provenance=False)
    assert any("preferred='magma' has no effect" in n for n in c.notes)
    c = ct.compare("cholesky", spd(8), timing=False, provenance=False)
    assert not any("has no effect" in n for n in c.notes)
