"""The sweep's memory column on the CPU: :func:`cusolver_trace.sweep.peak_extra`'s arithmetic
with ``torch.cuda`` faked, None on the CPU, the row keys, the stated workspace of each
method's table row, and the column in the CLI's table and JSON. The GPU run is in
``tests/test_gpu_sweep_memory.py``."""
from __future__ import annotations

import dataclasses
import json

import pytest
import torch

from cusolver_trace import ops, routines, sweep
from cusolver_trace.cli import main
from cusolver_trace.sweep import measure, report


@pytest.fixture
def fake_cuda(monkeypatch):
    """``torch.cuda``'s memory functions faked: 1000 bytes allocated before the call, the
    peak set by the test; every call logged."""
    log, state = [], {"peak": 1000}

    def record(name, value=None):
        def fn(*args, **kw):
            log.append((name, args))
            return value() if callable(value) else value
        return fn

    monkeypatch.setattr(torch.cuda, "synchronize", record("synchronize"))
    monkeypatch.setattr(torch.cuda, "reset_peak_memory_stats", record("reset"))
    monkeypatch.setattr(torch.cuda, "memory_allocated", record("allocated", 1000))
    monkeypatch.setattr(torch.cuda, "max_memory_allocated",
                        record("max", lambda: state["peak"]))
    return log, state


def test_peak_extra_subtracts_the_base_and_divides_by_batch_n2_itemsize(fake_cuda):
    log, state = fake_cuda
    state["peak"] = 1000 + 2 * 3 * 8 * 8 * 8         # two n × n float64 buffers per matrix

    def call():
        log.append(("call", ()))
        return "result"

    assert sweep.peak_extra(call, "cuda:0", batch=3, n=8, itemsize=8) == pytest.approx(2.0)
    assert [what for what, _ in log] == ["synchronize", "reset", "allocated", "call",
                                         "synchronize", "max"]
    assert log[1][1] == (torch.device("cuda:0"),)   # the peak of the case's device
    state["peak"] = 1000 + 16 * 16 * 4 // 2         # half an n × n float32 buffer
    assert sweep.peak_extra(lambda: None, "cuda", batch=1, n=16, itemsize=4) == pytest.approx(0.5)


def test_peak_extra_is_none_on_the_cpu(fake_cuda):
    log, _ = fake_cuda
    for device in (None, "cpu", torch.device("cpu")):
        assert sweep.peak_extra(lambda: pytest.fail("called"), device, batch=1, n=8,
                                itemsize=8) is None
    assert log == []


def test_cpu_rows_carry_the_memory_keys_as_none():
    case = sweep.make_case("cholesky_inverse", 8, 2, "float64", "cpu")
    rows = sweep.measure_case(case, ["potri", "potrs"], repeat=2, warmup=0)
    assert [r["method"] for r in rows] == ["torch", "potri", "potrs"]
    for r in rows:
        assert "peak_extra_n2" in r and "workspace_n2" in r
        assert r["peak_extra_n2"] is None and r["workspace_n2"] is None


class _CudaCase(measure.Case):
    """A CPU case that says it is on CUDA (what measure_case does with the memory)."""

    @property
    def on_cuda(self) -> bool:
        return True


def test_gpu_rows_get_the_measured_peak_and_the_rows_stated_workspace(monkeypatch):
    base = sweep.make_case("cholesky_inverse", 8, 2, "float64", "cpu")
    case = _CudaCase(**{f.name: getattr(base, f.name) for f in dataclasses.fields(base)})
    seen = []

    def fake_peak(fn, device, *, batch, n, itemsize):
        seen.append((device, batch, n, itemsize))
        fn()
        return 1.25

    monkeypatch.setattr(measure, "peak_extra", fake_peak)
    monkeypatch.setattr(measure, "time_calls", lambda fns, **kw: {})
    rows = {r["method"]: r for r in sweep.measure_case(case, ["potri", "potrs", "auto"],
                                                       repeat=1, warmup=0)}
    assert seen == [("cpu", 2, 8, 8)] * 4            # one untimed call per method, torch too
    assert all(r["peak_extra_n2"] == 1.25 for r in rows.values())
    assert rows["torch"]["workspace_n2"] is None     # torch's own call: no routine row
    assert rows["potri"]["workspace_n2"] == routines.INVERSE_METHODS["potri"].workspace == 1.0
    assert rows["potrs"]["workspace_n2"] == routines.INVERSE_METHODS["potrs"].workspace == 2.0
    auto = rows["auto"]   # on these CPU inputs auto resolves to potri
    assert auto["resolved"] == "potri" and auto["workspace_n2"] == 1.0


@pytest.mark.parametrize("op, method, table, row", [
    ("cholesky_inverse", "gemm_lauum", routines.CHOLESKY_INVERSE, "gemm_lauum"),
    ("spd_inverse", "gemm_lauum", routines.SPD_INVERSE_TABLE, "gemm_lauum"),
    ("spd_inverse", "potri", routines.SPD_INVERSE_TABLE, "potri"),
    ("inv", "getri", routines.INV, "getri"),
    ("solve", "auto", routines.SOLVE, "legacy"),
    ("lu_factor", "batched", routines.GETRF, "batched"),
    ("lu_solve", "triangular", routines.LU_SOLVE, "triangular"),
    ("eigh", "auto", routines.SYEV, "Xsyevd"),
])
def test_methods_state_their_rows_workspace(op, method, table, row):
    case = sweep.make_case(op, 8, 1, "float64", "cpu")
    m = ops.get(op).method(method)
    assert m.resolved(case.inputs) == row
    assert m.stated_workspace(case.inputs) == table.rows[row].workspace is not None
    assert ops.get(op).method("torch").stated_workspace(case.inputs) is None


def test_every_cuda_row_states_its_workspace():
    for table in (routines.POTRF, routines.POTRS, routines.CHOLESKY_INVERSE,
                  routines.SPD_INVERSE_TABLE, routines.GETRF, routines.GETRS, routines.SOLVE,
                  routines.INV, routines.SYEV):
        for name, impl in table.rows.items():
            if impl.cuda is not None:
                assert isinstance(impl.workspace, float) and 0 <= impl.workspace < 8, (
                    table.operation, name)
    # issue 27's targets: gemm_lauum (auto for large float64) and potri within 2.0 n², the
    # A -> A^-1 row auto runs for large n within 3.0; torch's own rows as measured
    inv, spd = routines.INVERSE_METHODS, routines.SPD_INVERSE_TABLE.rows
    assert inv["gemm_lauum"].workspace <= 2.0 and inv["potri"].workspace <= 2.0
    assert inv["torch"].workspace == 2.0 and spd["torch"].workspace == 3.0
    assert routines.resolve_spd_method("auto", 8192, 1, "float64", "cpu") == "potri"
    big = routines.CHOLESKY_INVERSE.resolve("auto", 8192, 1, "float64", "cuda")
    assert spd[big].workspace <= 3.0


def _rows(peak, stated):
    case = sweep.make_case("cholesky_inverse", 8, 1, "float64", "cpu")
    rows = sweep.measure_case(case, ["potri"], repeat=2, warmup=0)
    for r in rows:
        r.update(peak_extra_n2=peak, workspace_n2=stated)
    return rows


def test_table_shows_the_columns_and_drops_them_when_all_dash():
    from cusolver_trace._console import fit, records, render_records

    heads, cells = records(report.results_table(_rows(2.0, 4.13)))
    assert "peak n²" in heads and "stated n²" in heads
    i = heads.index("peak n²")
    assert heads[i - 1] == "IQR ms" and {c[i] for c in cells} == {"2.00"}
    got = json.loads(render_records(report.results_table(_rows(2.0, 4.13)), "json"))
    assert got[0]["peak n²"] == 2.0 and got[0]["stated n²"] == 4.13
    cpu = report.results_table(_rows(None, None))   # the CPU: only "—", dropped
    shown = [c.header for part in fit(cpu, 400) for c in part.columns]
    assert "peak n²" not in shown and "stated n²" not in shown


def test_cli_json_has_the_memory_column(tmp_path, capsys, monkeypatch, cpu_load_ignored):
    out = tmp_path / "r.json"
    argv = ["sweep", "--op", "cholesky_inverse", "--n", "8", "--method", "potri",
            "--repeat", "2", "--device", "cpu", "--out", str(out), "--format", "json"]
    assert main(argv) == 0
    recs = json.loads(capsys.readouterr().out)
    assert all(r["peak n²"] is None for r in recs)   # the CPU: null
    assert all(r["peak_extra_n2"] is None and r["workspace_n2"] is None
               for r in json.loads(out.read_text())["results"])
    monkeypatch.setattr(measure, "peak_extra", lambda fn, device, **kw: 3.5)
    assert main(argv) == 0
    recs = json.loads(capsys.readouterr().out)
    assert [r["peak n²"] for r in recs] == [3.5, 3.5]
    assert [r["peak_extra_n2"] for r in json.loads(out.read_text())["results"]] == [3.5, 3.5]


def test_auto_takes_torchs_path_where_its_pick_does_not_fit_in_free_memory(monkeypatch):
    """Table._fitting: a row stating more workspace than torch's runs only where the device
    has that much free; otherwise auto runs torch's row (never an out-of-memory error that
    torch would not raise). Small needs do not ask the device at all."""
    from cusolver_trace.routines import _table

    asked = []

    def free(device):
        asked.append(device)
        return free.bytes

    import dataclasses

    monkeypatch.setattr(_table, "free_device_bytes", free)
    t = routines.CHOLESKY_INVERSE
    big = dataclasses.replace(t.rows["rec_trtri_lauum"], workspace=4.0)   # more than torch's
    monkeypatch.setitem(t.rows, "rec_trtri_lauum", big)
    monkeypatch.setattr(t, "auto", {"all": routines.AutoRule("rec_trtri_lauum")})
    n, isz = 8192, 8
    need = t.rows["rec_trtri_lauum"].workspace * n * n * isz
    free.bytes = int(need) + 1
    assert t.resolve("auto", n, 1, "float64", "cuda:1") == "rec_trtri_lauum"
    assert asked == ["cuda:1"]
    free.bytes = int(need) - 1
    assert t.resolve("auto", n, 1, "float64", "cuda:1") == "torch"
    free.bytes = 0
    assert t.resolve("auto", 64, 1, "float64", "cuda") == "rec_trtri_lauum"   # not asked
    assert t.resolve("rec_trtri_lauum", n, 1, "float64", "cuda") == "rec_trtri_lauum"  # explicit
    assert len(asked) == 2
    monkeypatch.setattr(t, "auto", {"all": routines.AutoRule("potrs")})   # no more than torch
    assert t.resolve("auto", n, 1, "float64", "cuda") == "potrs" and len(asked) == 2
    free.bytes = None                                                      # no CUDA device
    monkeypatch.setattr(t, "auto", {"all": routines.AutoRule("rec_trtri_lauum")})
    assert t.resolve("auto", n, 1, "float64", "cuda") == "rec_trtri_lauum"


def test_resolve_takes_only_well_formed_device_strings():
    """``cuda:x``, ``cuda:-1``, ``cpu:abc`` and friends were accepted (a fresh user's report);
    the device string also names the device whose free memory counts."""
    for bad in ("cuda:x", "cuda:-1", "cuda:", "cuda:0 ", "cuda:99999999999999999999", "cpu:abc",
                "CUDA", "gpu"):
        with pytest.raises(ValueError, match="device"):
            routines.CHOLESKY_INVERSE.resolve("auto", 64, 1, "float64", bad)
    for good in ("cuda", "cuda:0", "cuda:12", "cpu"):
        assert routines.CHOLESKY_INVERSE.resolve("auto", 64, 1, "float64", good)
