"""Inverse methods, recursive plans, ceilings and sweeps on the CPU (no GPU needed).

The recursive lauum / trtri plans are executed by ``run_plan_reference`` on a
flat column-major buffer with the same ``element_offset`` arithmetic the GPU
executor turns into device pointers, so the blocking and offsets are checked
here; the GPU run of the same plans is in ``tests/test_gpu_methods.py``.
"""
from __future__ import annotations

import csv
import dataclasses
import json

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from cusolver_trace import checks, ops, plans, routines, sweep
from cusolver_trace.backends import cpu as cpu_backend
from cusolver_trace.ceiling import Ceiling, ceiling, percent_of_ceiling
from cusolver_trace.cli import main
from cusolver_trace.errors import SingularFactorError
from cusolver_trace.matrices import spd
from cusolver_trace.plans import (Call, element_offset, lauum_plan, run_plan_reference,
                                  split_point, trtri_plan)
from cusolver_trace.routines import AutoRule

SMALL = dict(base=4, block=2, syrk_base=4, trmm_base=3)  # many recursion levels at small n


@pytest.fixture
def small_blocking(monkeypatch):
    monkeypatch.setattr(plans, "BLOCKING", dict(
        lauum_base=4, trtri_base=5, block=2, syrk_base=4, trmm_base=3, trtri_kernel="trsm"))


# --------------------------------------------------------------------------- auto table
def test_auto_table_rules_name_known_methods_and_cover_every_shape():
    for rule in routines.CHOLESKY_INVERSE.auto.values():
        assert rule.method in routines.METHOD_NAMES and rule.method != "auto"
    for dev in ("cpu", "cuda"):
        for n in (1, 8, 128, 129, 2047, 2048, 16384):
            for batch in (1, 2, 10000):
                assert routines.resolve_method("auto", n, batch, "float64", dev) in routines.METHOD_NAMES


def test_auto_first_matching_rule_wins(monkeypatch):
    monkeypatch.setattr(routines.CHOLESKY_INVERSE, "auto", {
        "a": AutoRule("trsm_batched", device="cuda", batch_min=2, n_max=64),
        "b": AutoRule("potri", device="cuda", n_min=32, dtypes=("float32",)),
        "c": AutoRule("trtri_lauum", device="cuda", batch_max=1, n_min=100),
    })

    def auto(n, batch, dtype, device):
        return routines.resolve_method("auto", n, batch, dtype, device)
    assert auto(64, 2, "float32", "cuda") == "trsm_batched"     # a before b
    assert auto(65, 2, "float32", "cuda") == "potri"            # b (dtype matches)
    assert auto(100, 1, "float64", "cuda") == "trtri_lauum"     # b's dtype does not match
    assert auto(100, 1, torch.float32, "cuda:0") == "potri"     # torch dtype / indexed device
    with pytest.raises(LookupError, match="no rule"):
        auto(99, 1, "float64", "cuda")
    with pytest.raises(LookupError):
        auto(8, 2, "float64", "cpu")


def test_cpu_auto_is_lapack_potri():
    assert routines.resolve_method("auto", 512, 1, "float64", "cpu") == "potri"


# --------------------------------------------------------------------------- plans
def _triangular(n, upper, dtype, seed):
    g = torch.Generator().manual_seed(seed)
    W = torch.randn(n, n, dtype=dtype, generator=g) / max(n, 1) ** 0.5
    W.diagonal().copy_(1 + torch.rand(n, generator=g, dtype=torch.float64).to(dtype))
    return W.triu() if upper else W.tril()


def _buffer(W, lda, fill):
    """Column-major copy of W in a flat buffer with leading dimension lda; padding rows and
    the unused triangle hold ``fill`` (must come back untouched)."""
    n = W.shape[0]
    buf = torch.full((lda * n + 3,), fill, dtype=W.dtype)  # 3 trailing sentinels
    view = buf.as_strided((n, n), (1, lda), 0)
    view.copy_(W)
    return buf, view


def _run(plan, W, upper, lda, fill):
    buf, view = _buffer(W, lda, fill)
    other = view.tril(-1) if upper else view.triu(1)
    other_mask = torch.ones_like(view, dtype=torch.bool)
    other_mask = other_mask.tril(-1) if upper else other_mask.triu(1)
    run_plan_reference(plan, buf, lda)
    pad = buf.as_strided((lda - W.shape[0], W.shape[0]), (1, lda), W.shape[0]) if lda > W.shape[0] else None
    assert torch.equal(view[other_mask], other[other_mask]), "the other triangle was written"
    if pad is not None:
        assert (pad == fill).all(), "padding rows (lda > n) were written"
    assert (buf[-3:] == fill).all(), "wrote past the matrix"
    return (view.triu() if upper else view.tril()).clone()


@pytest.mark.parametrize("dtype", [torch.float64, torch.complex128])
@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("n", [1, 2, 3, 5, 9, 16, 37])
@pytest.mark.parametrize("pad", [0, 3])
def test_lauum_plan_computes_the_triangle_of_WhW(dtype, upper, n, pad):
    W = _triangular(n, upper, dtype, seed=n)
    got = _run(lauum_plan(n, upper, **SMALL), W, upper, n + pad, fill=7.0)
    ref = W @ W.mH if upper else W.mH @ W
    ref = ref.triu() if upper else ref.tril()
    torch.testing.assert_close(got, ref, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("dtype", [torch.float64, torch.complex128])
@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("n", [1, 2, 5, 16, 37])
@pytest.mark.parametrize("pad", [0, 3])
@pytest.mark.parametrize("kernel", ["trsm", "xtrtri"])
def test_trtri_plan_computes_the_inverse(dtype, upper, n, pad, kernel):
    W = _triangular(n, upper, dtype, seed=n + 100)
    plan = trtri_plan(n, upper, kernel=kernel, **{k: SMALL[k] for k in ("base", "block", "trmm_base")})
    assert {c.routine for c in plan if c.routine != "trmm" and c.routine != "gemm"} \
        == {"trsm_inv" if kernel == "trsm" else "trtri"}
    got = _run(plan, W, upper, n + pad, fill=-3.0)
    eye = torch.eye(n, dtype=dtype)
    torch.testing.assert_close(got @ W, eye, rtol=1e-10, atol=1e-10)


def _in_bounds(call: Call, n):
    (i, j), ok = call.c, True
    ok &= 0 <= i and i + call.m <= n and 0 <= j and j + call.n <= n
    if call.routine == "trmm":
        r = call.m if call.side == "L" else call.n
        ok &= call.a[0] + r <= n and call.a[1] + r <= n
    if call.routine in ("syrk", "gemm"):
        rows, cols = (call.k, call.m) if call.trans == "C" else (call.m, call.k)
        ok &= call.a[0] + rows <= n and call.a[1] + cols <= n
    if call.routine == "gemm":
        rows, cols = (call.n, call.k) if call.transb == "C" else (call.k, call.n)
        ok &= call.b[0] + rows <= n and call.b[1] + cols <= n
    return ok


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 3000), upper=st.booleans(), base=st.integers(1, 600),
       block=st.sampled_from([1, 2, 32, 256]), syrk_base=st.integers(1, 3000),
       trmm_base=st.integers(1, 3000))
def test_plans_stay_in_bounds_and_tile_the_diagonal(n, upper, base, block, syrk_base, trmm_base):
    for plan in (lauum_plan(n, upper, base=base, block=block, syrk_base=syrk_base,
                            trmm_base=trmm_base),
                 trtri_plan(n, upper, base=base, block=block, trmm_base=trmm_base)):
        assert all(_in_bounds(c, n) for c in plan)
        diag = [c for c in plan if c.routine in ("lauum", "trtri", "trsm_inv")]
        assert all(c.c[0] == c.c[1] and c.n <= max(base, 1) for c in diag)
        blocks = sorted((c.c[0], c.n) for c in diag)  # they tile the diagonal, in order
        assert [s for s, _ in blocks] == [sum(m for _, m in blocks[:i]) for i in range(len(blocks))]
        assert sum(m for _, m in blocks) == n
        assert all(c.uplo == ("U" if upper else "L") for c in plan)


def test_plan_flops_match_lawn41():
    """The lauum plan does n³/3 multiply-adds' worth of work (as LAPACK's lauum): the
    blocked calls' flops plus the diagonal blocks' add up to the unblocked count."""
    def f(c):  # real flops of one call, LAWN 41 leading terms
        return {"lauum": c.n ** 3 / 3, "trtri": c.n ** 3 / 3, "trsm_inv": c.n ** 3 / 3, "syrk": c.n * c.n * c.k,
                "gemm": 2 * c.m * c.n * c.k, "trmm": c.m * c.n * (c.m if c.side == "L" else c.n)}[c.routine]
    for n in (1000, 4096):
        for plan in (lauum_plan(n, base=300, block=64, syrk_base=500, trmm_base=400),
                     trtri_plan(n, base=300, block=64, trmm_base=400)):
            assert sum(map(f, plan)) == pytest.approx(n ** 3 / 3, rel=0.01)


def test_lauum_base_by_dtype(monkeypatch):
    monkeypatch.setitem(plans.BLOCKING, "lauum_base", {"float32": 100, "float64": 1000,
                                                         "complex64": 1000, "complex128": 10})
    assert len(lauum_plan(500, dtype="float64")) == 1
    assert len(lauum_plan(500, dtype=torch.complex64)) == 1
    assert len(lauum_plan(500, dtype="float32")) > 1
    assert all(c.n <= 10 for c in lauum_plan(500, dtype="complex128") if c.routine == "lauum")
    assert len(lauum_plan(500, dtype="complex128", base=600)) == 1


@pytest.mark.parametrize("n,block", [(2, 256), (513, 256), (1000, 256), (1024, 256), (7, 2), (3, 1)])
def test_split_point(n, block):
    k = split_point(n, block)
    assert 1 <= k <= n - 1
    if n // 2 >= block:
        assert k % block == 0 and abs(k - n / 2) < block


def test_element_offset_is_column_major():
    a = torch.arange(12.0).reshape(3, 4).T.contiguous().reshape(-1)  # 4x3 column-major, lda 4
    M = a.as_strided((4, 3), (1, 4))
    for i in range(4):
        for j in range(3):
            assert a[element_offset(i, j, 4)] == M[i, j]


# --------------------------------------------------------------------------- inverse on CPU
@pytest.mark.parametrize("dtype", ["float32", "float64", "complex64", "complex128"])
@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("method", ["auto", "torch", "potri", "potrs", "trtri_lauum", "rec_trtri_lauum"])
def test_cpu_inverse_methods_pass_pot03(small_blocking, dtype, upper, method):
    A = spd(23, batch=(2,), cond=1e4, dtype=dtype, seed=3)
    F = torch.linalg.cholesky(A, upper=upper)
    X = routines.cholesky_inverse(F, upper, method=method)
    assert X.shape == A.shape and X.dtype == A.dtype
    assert checks.pot03(A, X) < checks.THRESHOLD
    if method in ("potri", "trtri_lauum", "rec_trtri_lauum"):
        assert checks.asymmetry(X) == 0


def test_recursive_and_plain_trtri_lauum_agree_with_potri(small_blocking):
    A = spd(40, cond=1e3, seed=1)
    F = torch.linalg.cholesky(A)
    ref = routines.cholesky_inverse(F, method="potri")
    for m in ("trtri_lauum", "rec_trtri_lauum"):
        assert checks.rel_fro_diff(routines.cholesky_inverse(F, method=m), ref) < 1e-12


def test_inverse_errors():
    F = torch.linalg.cholesky(spd(6, seed=0))
    with pytest.raises(ValueError, match="needs a CUDA"):
        routines.cholesky_inverse(F, method="trsm_batched")
    with pytest.raises(ValueError, match="method must be"):
        routines.cholesky_inverse(F, method="magic")
    with pytest.raises(ValueError, match=r"\(\.\.\., n, n\)"):
        routines.cholesky_inverse(F[:, :3], method="auto")
    # new design: the one entry point also takes NumPy (result as NumPy); other kinds are TypeError
    Xn = routines.cholesky_inverse(F.numpy(), method="auto")
    assert isinstance(Xn, np.ndarray)
    assert torch.equal(torch.from_numpy(Xn), routines.cholesky_inverse(F, method="auto"))
    with pytest.raises(TypeError):
        routines.cholesky_inverse(object(), method="auto")
    with pytest.raises(TypeError):
        routines.cholesky_inverse(F.to(torch.int64), method="auto")
    with pytest.raises(ValueError, match="kernel"):
        trtri_plan(8, kernel="magma")
    G = F.clone()
    G[4, 4] = 0
    for m in ("potri", "potrs", "rec_trtri_lauum", "trtri_lauum"):
        with pytest.raises(SingularFactorError) as e:
            routines.cholesky_inverse(G, method=m)
        assert e.value.index == 5
    assert routines.cholesky_inverse(torch.zeros(0, 3, 3), method="auto").shape == (0, 3, 3)
    # new design: check=False returns x only; the zero pivot (5) is found by the check record
    X = routines.cholesky_inverse(G, method="rec_trtri_lauum", check=False)
    acc = cpu_backend.inverse_status(G.numpy(), X.numpy(), False, None)
    assert (G.shape[-1] - acc[:, 0] + 1).tolist() == [5]


# --------------------------------------------------------------------------- ceiling
def test_ceiling_on_cpu_is_measured_and_cached():
    c = ceiling("cpu", "float64")
    assert isinstance(c, Ceiling) and c.gemm_gflops > 0 and c.copy_gbs > 0 and c.gemm_ms > 0
    assert c.clock == "thread_time" and c.device == "cpu"   # one thread: its CPU time
    assert ceiling("cpu", torch.float64) is c  # cached per (device, dtype)
    z = ceiling("cpu", "complex64", n=64, repeat=2)  # explicit size: measured, not cached
    assert z.gemm_n == 64 and z.gemm_gflops > 0 and ceiling("cpu", "complex64", n=64, repeat=2) is not z
    assert json.loads(json.dumps(c.to_dict()))["dtype"] == "float64"


def test_percent_of_ceiling():
    c = Ceiling("cpu", "float64", 200.0, 8, 1.0, 0.0, 10.0, 1, 1.0, "perf_counter", "")
    assert percent_of_ceiling(50.0, c) == 25.0
    assert percent_of_ceiling(50.0, 400.0) == 12.5
    assert np.isnan(percent_of_ceiling(None, c)) and np.isnan(percent_of_ceiling(1.0, 0.0))


# --------------------------------------------------------------------------- sweep
def test_flop_count_names():
    case = sweep.make_case("cholesky_inverse", 16, 1, "float64", "cpu")
    assert sweep.flop_count(case, "potrs")[0] == "inverse_potrs"
    name, fl, fl_potri = sweep.flop_count(case, "potri")
    assert name == "potri" and fl == fl_potri == checks.flops("potri", 16)
    assert sweep.flop_count(case, "torch")[0] == "potri"  # torch's CPU path is LAPACK potri
    case = sweep.make_case("spd_inverse", 16, 3, "complex128", "cpu")
    name, fl, fl_potri = sweep.flop_count(case, "potrs")
    assert name == "potrf+inverse_potrs"
    assert fl == 3 * (checks.flops("potrf", 16, complex=True) + checks.flops("inverse_potrs", 16, complex=True))
    case = sweep.make_case("cholesky_solve", 16, 1, "float64", "cpu", nrhs=4)
    assert sweep.flop_count(case, "torch") == ("potrs(nrhs=4)", checks.flops("potrs", 16, 4), None)


@pytest.mark.parametrize("op", ops.names())
def test_run_sweep_cpu_rows(op, cpu_load_ignored):
    names = sweep.default_methods(op, "cpu")
    rows = sweep.run_sweep(op, [8, 24], [1, 3], ["float64"], device="cpu", repeat=2, warmup=1,
                           progress=False, nrhs=2)
    assert len(rows) == 2 * 2 * len(names)
    for r in rows:
        assert r["status"] == "ok", r
        assert r["check"] == {"cholesky": "pot01", "cholesky_solve": "pot02", "lu_factor": "get01",
                              "lu_solve": "get02", "solve": "get02", "inv": "get03",
                              "det": "det", "slogdet": "slogdet", "eigh": "syt21",
                              "eigvalsh": "eigvals"}.get(op, "pot03")
        assert r["ratio"] < checks.THRESHOLD and r["median_ms"] > 0 and r["gflops"] > 0
        assert r["clock"] == "thread_time" and r["ceiling_gflops"] > 0
        assert r["pct_of_ceiling"] == pytest.approx(100 * r["gflops"] / r["ceiling_gflops"])
        if r["method"] == "torch":
            assert r["ratio_to_torch"] == 1.0
        if op in ("cholesky_inverse", "spd_inverse"):
            assert r["gflops_potri"] > 0 and "pct_of_ceiling_potri" in r


def test_sweep_validates_methods():
    with pytest.raises(ValueError, match="no method"):
        sweep.run_sweep("cholesky", [8], method_names=["potri"], device="cpu", progress=False)
    with pytest.raises(ValueError, match="need a CUDA"):
        sweep.run_sweep("cholesky_inverse", [8], method_names=["trsm_batched"], device="cpu",
                        progress=False)


def test_failing_method_is_marked_failed_not_fast(monkeypatch):
    real = routines.INVERSE_METHODS["potri"].cpu

    def broken(L, upper=False):
        x, info = real(L, upper)
        return x * 1.5, info

    monkeypatch.setitem(routines.INVERSE_METHODS, "potri",
                        dataclasses.replace(routines.INVERSE_METHODS["potri"], cpu=broken))
    case = sweep.make_case("cholesky_inverse", 16, 1, "float64", "cpu")
    rows = {r["method"]: r for r in sweep.measure_case(case, ["potri", "potrs"], repeat=2, warmup=0)}
    assert rows["potri"]["status"] == "FAILED" and rows["potri"]["ratio"] >= checks.THRESHOLD
    assert rows["potri"]["gflops"] is None and rows["potri"]["pct_of_ceiling_potri"] is None
    assert rows["potri"]["median_ms"] > 0  # still timed, but reported as FAILED
    assert rows["potrs"]["status"] == "ok" and list(rows) == ["torch", "potri", "potrs"]


def test_sweep_cli_writes_json_csv(tmp_path, capsys, cpu_load_ignored):
    out, cs = tmp_path / "r.json", tmp_path / "r.csv"
    rc = main(["sweep", "--op", "cholesky_inverse", "--n", "8,16", "--batch", "1,2",
               "--method", "potri,potrs,rec_trtri_lauum", "--repeat", "2", "--device", "cpu",
               "--out", str(out), "--csv", str(cs)])
    assert rc == 0
    rep = json.loads(out.read_text())
    assert {"tool", "date", "versions", "ceilings", "settings", "results"} <= set(rep)
    assert "cpu float64" in rep["ceilings"] and rep["ceilings"]["cpu float64"]["gemm_gflops"] > 0
    assert rep["versions"]["packages"]["torch"] == torch.__version__
    res = rep["results"]
    assert len(res) == 2 * 2 * 4 and {r["method"] for r in res} == {"torch", "potri", "potrs",
                                                                    "rec_trtri_lauum"}
    for case in {(r["n"], r["batch"]) for r in res}:
        sub = {r["method"]: r for r in res if (r["n"], r["batch"]) == case}
        for r in sub.values():
            assert r["ratio_to_torch"] == pytest.approx(r["median_ms"] / sub["torch"]["median_ms"])
    with open(cs) as fh:
        lines = list(csv.DictReader(fh))
    assert len(lines) == len(res)
    assert {"method", "median_ms", "gflops", "flop_count", "pct_of_ceiling", "ratio_to_torch",
            "status", "gflops_potri"} <= set(lines[0])
    assert "cholesky_inverse on cpu" in capsys.readouterr().out


def test_sweep_cli_plot(tmp_path):
    pytest.importorskip("matplotlib", reason="matplotlib not installed (pip install 'cusolver-trace[plot]')")
    png = tmp_path / "p.png"
    rc = main(["sweep", "--op", "cholesky", "--n", "8,32", "--repeat", "2", "--device", "cpu",
               "--out", str(tmp_path / "r.json"), "--plot", str(png)])
    assert rc == 0 and png.stat().st_size > 1000
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_sweep_cli_usage_errors(tmp_path, capsys):
    assert main(["sweep", "--op", "cholesky", "--n", "8", "--method", "potri", "--device", "cpu",
                 "--out", str(tmp_path / "r.json")]) == 2
    assert "no method" in capsys.readouterr().err


@pytest.mark.parametrize("argv, why", [
    (["--cond", "1e300"], "too large for float64"),
    (["--dtype", "float32", "--cond", "1e8"], "too large for float32"),
    (["--gpus", "2"], "--gpus"),
])
def test_sweep_refuses_impossible_settings_before_measuring(argv, why, tmp_path, capsys):
    """A condition number no floating-point SPD matrix can have, or GPUs that are not there:
    exit 2 with one line, before the GEMM ceiling is measured (nothing printed on stdout)."""
    from cusolver_trace.cli import main as cli_main

    code = cli_main(["sweep", "--op", "cholesky_inverse", "--n", "16", *argv,
                     "--out", str(tmp_path / "s.json")])
    out, err = capsys.readouterr()
    assert code == 2 and why in err and "Traceback" not in err
    assert "ceiling" not in out and not (tmp_path / "s.json").exists()


@settings(max_examples=25, deadline=None)
@given(dtype=st.sampled_from(["float32", "float64", "complex64", "complex128"]),
       factor=st.floats(min_value=0.5, max_value=1e300, allow_nan=False))
def test_property_a_condition_number_past_half_over_eps_is_exit_2(dtype, factor, tmp_path_factory):
    """Every cond >= 0.5 / eps of the dtype (or one that overflows to inf) is refused with
    one line and exit 2 before any work; the argument list is not changed."""
    import contextlib
    import io

    from cusolver_trace._dtypes import dtype_info
    from cusolver_trace.cli import main as cli_main

    cond = max(factor, 1.0) / (2 * dtype_info(dtype).lapack_eps)
    out = tmp_path_factory.mktemp("cond") / "s.json"
    argv = ["sweep", "--op", "cholesky_inverse", "--n", "8", "--dtype", dtype, "--cond", repr(cond),
            "--out", str(out)]
    before = list(argv)
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            code = cli_main(argv)
        except SystemExit as e:  # cond overflowed to inf: refused by the parser itself
            code = e.code
    text = err.getvalue()
    assert code == 2 and ("too large" in text or "finite" in text) and "Traceback" not in text
    assert argv == before and not out.exists()


def test_sweep_cli_notes_what_a_flag_does_not_do(tmp_path, capsys):
    """--unchecked with only check-free methods, and --flush-l2 on the CPU, are said, not
    silently ignored (fresh-user report)."""
    from cusolver_trace.cli import main

    rc = main(["sweep", "--op", "cholesky_inverse", "--n", "8", "--method", "torch,potri",
               "--unchecked", "--flush-l2", "--repeat", "1", "--warmup", "0", "--device", "cpu",
               "--out", str(tmp_path / "s.json")])
    out = " ".join(capsys.readouterr().out.split())   # the console wraps at its width
    assert rc == 0
    assert "no check=False row for torch: it runs no checks of its own" in out
    assert "--flush-l2 flushes a GPU's L2 cache; on the CPU it does nothing" in out
    rows = json.loads((tmp_path / "s.json").read_text())["results"]
    assert {(r["method"], r["checked"]) for r in rows} == {("torch", None), ("potri", True),
                                                          ("potri", False)}


def test_cholesky_torch_check_method_is_torchs_own_check():
    """sweep's ``torch_check`` (op cholesky): check=True is torch.linalg.cholesky, which raises
    on a matrix that is not positive definite; its check=False twin is cholesky_ex, which
    returns; on an SPD matrix both give torch's factor, bit for bit."""
    import torch as _torch
    from cusolver_trace import ops as _ops

    op = _ops.get("cholesky")
    m = op.methods["torch_check"]
    assert m.checkable
    spd = _torch.tensor([[4.0, 2.0], [2.0, 3.0]], dtype=_torch.float64)
    bad = _torch.tensor([[1.0, 2.0], [2.0, 1.0]], dtype=_torch.float64)
    for upper in (False, True):
        ref = _torch.linalg.cholesky(spd, upper=upper)
        for check in (True, False):
            out = m.make(op, _ops.Inputs(spd, spd, None), op.options_from(upper=upper), check)()
            assert _torch.equal(out, ref)
        with pytest.raises(_torch.linalg.LinAlgError):
            m.make(op, _ops.Inputs(bad, bad, None), op.options_from(upper=upper), True)()
        m.make(op, _ops.Inputs(bad, bad, None), op.options_from(upper=upper), False)()   # no raise
