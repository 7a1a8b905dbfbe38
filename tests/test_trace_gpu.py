"""trace() and run_traced() on a real GPU (skipped where torch sees no CUDA device)."""
from __future__ import annotations

import sys
import textwrap

import pytest
import torch

from cusolver_trace.tracing import run_traced, trace

pytestmark = [pytest.mark.gpu, pytest.mark.gpu_torch_only]  # conftest skips, saying why
TORCH = tuple(int(p) for p in torch.__version__.split("+")[0].split(".")[:2])


def spd(n, batch=None, dtype=torch.float64):
    shape = (n, n) if batch is None else (batch, n, n)
    g = torch.Generator(device="cuda").manual_seed(0)
    x = torch.randn(*shape, device="cuda", dtype=dtype, generator=g)
    return x @ x.mH + n * torch.eye(n, device="cuda", dtype=dtype)


def test_cholesky_inverse_batch1_xpotrs_two_trsm_and_kernel_ms():
    L = torch.linalg.cholesky(spd(256))
    t = trace(torch.cholesky_inverse, L)
    (x,) = t.find("cusolverDnXpotrs")
    assert x.count == 1
    assert x.args == {"uplo": "LOWER", "n": 256, "nrhs": 256, "dataTypeA": "CUDA_R_64F",
                      "lda": 256, "dataTypeB": "CUDA_R_64F", "ldb": 256}
    assert [c.function for c in x.children] == ["cublasDtrsm_v2_64"] * 2
    assert [c.args["trans"] for c in x.children] == ["N", "C"]
    assert t.kernels and all(k.gpu_ms > 0 and k.count >= 1 for k in t.kernels)
    per = t.gpu_ms_by_library()
    assert per.get("cuBLAS", 0) > 0
    assert "aten::cholesky_inverse" in [a.name for a in t.aten_ops]
    text = str(t)
    assert "cusolverDnXpotrs" in text and "GPU ms" in text
    assert t.to_dict()["calls"]


def test_per_call_gpu_time_goes_to_the_right_library():
    """The stdout hook in the API child: each call's own kernels belong to its library."""
    from cusolver_trace.tracing import classify_kernel

    L = torch.linalg.cholesky(spd(256))
    t = trace(torch.cholesky_inverse, L)
    assert not [n for n in t.notes if "per-call" in n], t.notes
    (rec,) = [c for c in t.calls if c.function == "cusolverDnXpotrs"]
    assert rec.kernels and {classify_kernel(k.name) for k in rec.kernels} == {"cuSOLVER"}
    for child in rec.children:
        assert child.kernels and {classify_kernel(k.name) for k in child.kernels} == {"cuBLAS"}
        assert any("trsm" in k.name for k in child.kernels)
        assert all(k.parent is child and k.dur_us > 0 for k in child.kernels)
    (x,) = t.find("cusolverDnXpotrs")
    assert x.gpu_ms > 0 and x.kernel_count == len(rec.kernels) + sum(
        len(c.kernels) for c in rec.children)
    setup = [c for c in t.calls if c.kind == "setup"]
    assert setup and all(c.kernels == [] for c in setup)
    assert t.outside_kernels is not None
    assert {classify_kernel(a.name) for a in t.outside_kernels} <= {"ATen/other"}
    assert t.summary().unattributed_library_kernels == 0
    assert "[GPU " in t._render_text(width=250)


def test_linalg_cholesky_batch1_and_batched():
    t1 = trace(torch.linalg.cholesky, spd(64))
    assert [n.function for n in t1.tree()] == ["cusolverDnXpotrf_bufferSize", "cusolverDnXpotrf"]
    assert "cuSOLVER" in t1.gpu_ms_by_library()
    t3 = trace(torch.linalg.cholesky, spd(64, batch=3), upper=True)
    (b,) = t3.tree()
    assert b.function == "cusolverDnDpotrfBatched"
    assert b.args == {"uplo": "UPPER", "n": 64, "lda": 64, "batchSize": 3}


def test_batched_inverse_makes_no_cusolver_call():
    L = torch.linalg.cholesky(spd(32, batch=8))
    t = trace(torch.cholesky_inverse, L)
    assert t.calls is not None
    assert not [c for c in t.calls if c.library == "cuSOLVER" and c.kind == "compute"]
    libs = set(t.gpu_ms_by_library())
    assert ("MAGMA" in libs) if TORCH < (2, 12) else ("cuBLAS" in libs)


@pytest.mark.skipif(TORCH >= (2, 12), reason="torch >= 2.12 ignores the cusolver preference here")
def test_preferred_linalg_library_is_replayed_in_child():
    L = torch.linalg.cholesky(spd(32, batch=4, dtype=torch.float32))
    before = torch.backends.cuda.preferred_linalg_library()
    torch.backends.cuda.preferred_linalg_library("cusolver")
    try:
        t = trace(torch.cholesky_inverse, L, upper=False)
    finally:
        torch.backends.cuda.preferred_linalg_library(before)
    (x,) = t.tree()
    assert (x.function, x.count) == ("cusolverDnXpotrs", 4)
    assert [c.function for c in x.children] == ["cublasStrsm_v2_64"] * 2
    assert x.gpu_ms is not None and x.children[0].kernel_count >= 4  # summed over the 4 repeats


def test_upper_complex():
    U = torch.linalg.cholesky(spd(48, dtype=torch.complex128), upper=True)
    t = trace(torch.cholesky_inverse, U, upper=True)
    (x,) = t.find("cusolverDnXpotrs")
    assert x.args["uplo"] == "UPPER" and x.args["dataTypeA"] == "CUDA_C_64F"
    assert [c.function for c in x.children] == ["cublasZtrsm_v2_64"] * 2


def test_unimportable_function_on_cuda_raises_before_running():
    L = torch.linalg.cholesky(spd(16))
    with pytest.raises(ValueError, match="api=False"):
        trace(lambda m: torch.cholesky_inverse(m), L)
    t = trace(lambda m: torch.cholesky_inverse(m), L, api=False)
    assert t.calls is None and t.kernels


def test_run_traced_real_program(tmp_path):
    script = tmp_path / "prog.py"
    script.write_text(textwrap.dedent("""
        import torch
        a = torch.randn(128, 128, device="cuda", dtype=torch.float64)
        a = a @ a.T + 128 * torch.eye(128, device="cuda", dtype=torch.float64)
        L = torch.linalg.cholesky(a)
        torch.cuda.synchronize()
        print("#### inverse")
        torch.cholesky_inverse(L)
        torch.cuda.synchronize()
        print("#### end inverse")
        print("finished")
    """))
    run = run_traced([sys.executable, str(script)], log_path=tmp_path / "raw.log")
    # a SIGSEGV at interpreter exit was seen with the loggers on: either way the log is kept
    assert run.returncode in (0, -11), run.stderr
    assert "finished" in run.output
    sec = run.log.section("inverse")
    (x,) = [c for c in sec.calls if c.function == "cusolverDnXpotrs"]
    assert x.values()["n"] == 128 and len(x.children) == 2


def test_replay_passes_the_same_null_host_buffer_as_torch():
    """Our Xpotrf call must look like torch's in the API log, pointers' nullness included:
    torch passes bufferOnHost = NULL when workspaceInBytesOnHost is 0."""
    from cusolver_trace import routines

    A = spd(128)
    theirs = trace(torch.linalg.cholesky, A).find("cusolverDnXpotrf")
    ours = trace(routines.potrf, A).find("cusolverDnXpotrf")
    assert theirs and ours
    assert theirs[0].args == ours[0].args
    assert theirs[0].call.pointers()["bufferOnHost"] == ours[0].call.pointers()["bufferOnHost"] == "0x0"


def test_program_trace_attributes_every_library_kernel(tmp_path):
    """A whole program with the calls issue 26 found unattributed: torch's aten::bmm
    (cublasDgemmStridedBatched, m = n = 2, k = 8, batch 64, float64), next to a Cholesky
    factorization and triangular solves. Every cuSOLVER / cuBLAS kernel belongs to a call,
    with and without --by op; the JSON is small."""
    import json

    from cusolver_trace.tracing.command import main

    prog = tmp_path / "bmm.py"
    prog.write_text(textwrap.dedent("""
        import torch
        a = torch.randn(64, 2, 8, device="cuda", dtype=torch.float64)
        b = torch.randn(64, 8, 2, device="cuda", dtype=torch.float64)
        m = torch.randn(256, 256, device="cuda", dtype=torch.float64)
        m = m @ m.T + 256 * torch.eye(256, device="cuda", dtype=torch.float64)
        for _ in range(20):
            c = torch.bmm(a, b)
            L = torch.linalg.cholesky(m)
            x = torch.linalg.solve_triangular(L, m, upper=False)
        torch.cuda.synchronize()
    """))
    for extra in ([], ["--by", "op"]):
        out = tmp_path / "t.json"
        assert main([*extra, "--json", str(out), "--no-tree", "--", sys.executable, str(prog)]) == 0
        d = json.loads(out.read_text())
        s = d["summary"]
        assert s["timed"] and s["unattributed_library_kernels"] == 0, d["outside_kernels"]
        rows = {r["routine"]: r for r in s["rows"]}
        assert rows["cublasDgemmStridedBatched"]["calls"] == 20
        assert rows["cublasDgemmStridedBatched"]["total_ms"] > 0
        assert out.stat().st_size < 100_000
        if extra:
            assert {r.get("op") for r in s["rows"]} >= {"aten::bmm"}
