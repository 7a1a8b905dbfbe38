"""Per-call GPU time: which GPU activities each logged API call launched (tracing._hook's
correlation, program.attach's join), and the folding of repeated call sequences in the
rendered tree (CPU tests on the real H200 captures in tests/data/h200-torch2.11-cu130/, and
on synthetic profiler events for the cases the capture does not have)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cusolver_trace.tracing import Trace, build_tree, fold_repeats, load_log, parse_log
from cusolver_trace.tracing._hook import attribute, correlate
from cusolver_trace.tracing.model import CallNode, RepeatBlock
from cusolver_trace.tracing.program import attach

DATA = Path(__file__).parent / "data" / "h200-torch2.11-cu130"
SECTION = "cholesky_inverse dtype=float64 n=256 batch=1 upper=False"


def _fixture_events(shift: int = 0):
    """The kineto capture of one ``cholesky_inverse`` (5-field events); ``shift`` renumbers
    the markers (the capture's records 22.. are the section's 0..)."""
    out = []
    for line in (DATA / "kineto-cholesky_inverse.txt").read_text().splitlines():
        if line.startswith("#") or not line.strip():
            continue
        start, dur, dev, corr, name = line.split(" ", 4)
        if shift and name.startswith("ct_api#"):
            i, fn = name[len("ct_api#"):].split(":")
            name = f"ct_api#{int(i) - shift}:{fn}"
        out.append(("cuda" if dev == "DeviceType.CUDA" else "cpu", int(start), int(dur),
                    int(corr), name))
    return out


def _per_record(found: dict) -> list[list[str]]:
    per = [[] for _ in found["names"]]
    for _kind, k, _s, _d, _st, _dev, rec in found["activities"]:
        if rec >= 0:
            per[rec].append(found["kernel_names"][k])
    return per


@pytest.fixture(scope="module")
def found() -> dict:
    return correlate(_fixture_events())


def timed_section():
    """The section's records with the capture's activities attached; returns (log, activities)."""
    log = load_log(DATA / "trace-stdout.log.gz").section(SECTION)
    notes: list[str] = []
    acts = attach(log.records, correlate(_fixture_events(shift=22)), notes)
    assert notes == [] and acts is not None
    return log, acts


def test_markers_name_the_records(found):
    assert found["names"][22:] == ["cusolverDnSetStream", "cublasSetStream_v2",
                                   "cusolverDnCreateParams", "cusolverDnXpotrs",
                                   "cublasDtrsm_v2_64", "cublasDtrsm_v2_64",
                                   "cusolverDnDestroyParams"]


def test_kernels_go_to_the_call_that_launched_them(found):
    per = _per_record(found)
    xpotrs, trsm_n, trsm_c = per[25], per[26], per[27]
    assert xpotrs == ["copy_info_kernel(int, int*)"]
    # trsm with trans=N: 4 diagonal-block trsm kernels interleaved with 3 gemm (nn) updates
    assert [k.split("<")[0].split("_tilesize")[0] for k in trsm_n] == \
        ["void trsm_left_kernel", "sm90_xmma_gemm_f64f64_f64f64_f64_nn_n"] * 3 + ["void trsm_left_kernel"]
    assert [k.split("<")[0].split("_tilesize")[0] for k in trsm_c] == \
        ["void trsm_left_kernel", "sm90_xmma_gemm_f64f64_f64f64_f64_tn_n"] * 3 + ["void trsm_left_kernel"]
    # setup calls launch nothing; torch's own fill/copy kernels come before any call
    assert all(per[i] == [] for i in (22, 23, 24, 28))
    outside = [found["kernel_names"][a[1]] for a in found["activities"] if a[6] < 0]
    assert len(outside) == 5 and all("Memcpy" in k or "at::native" in k for k in outside)
    ms = {i: sum(a[3] for a in found["activities"] if a[6] == i) / 1e3 for i in (25, 26, 27)}
    assert (round(ms[26], 4), round(ms[27], 4), round(ms[25], 4)) == (0.1071, 0.0635, 0.0006)
    # a call's span on the host runs from its marker to the end of its last launch
    start, end, op = found["records"][26]
    assert end > start + 50 and op is None  # no aten ops in the capture


def test_compat_attribution_for_the_timing_module(found):
    """timing.gpu_busy_from_events sums per marker, torch's own kernels included."""
    old = attribute(_fixture_events())
    assert old.names[22:] == found["names"][22:]
    assert [len(p) for p in old.per_record[22:]] == [0, 0, 0, 1, 7, 7, 0]
    assert len(old.outside) == 5 and old.outside[0][1] > 0


def test_attach_and_tree_times():
    log, acts = timed_section()
    assert len(acts) == 20 and sum(a.parent is None for a in acts) == 5
    tree = build_tree(log.calls, kinds=("compute", "query"))
    (xpotrs,) = tree
    assert xpotrs.function == "cusolverDnXpotrs" and xpotrs.self_kernels == 1
    trsm_n, trsm_c = xpotrs.children
    assert trsm_n.kernel_count == trsm_c.kernel_count == 7
    assert xpotrs.kernel_count == 15
    assert xpotrs.gpu_ms == pytest.approx(xpotrs.self_gpu_ms + trsm_n.gpu_ms + trsm_c.gpu_ms)
    assert xpotrs.timing_text().startswith("GPU 0.1") and "own 0.0006 ms, 1" in xpotrs.timing_text()
    t = Trace(label="x", calls=log.calls, sections=log.sections, activities=acts)
    text = t._render_text(width=250)
    assert "trans=N diag=NON_UNIT m=256 n=256 lda=256 ldb=256  [GPU 0.1071 ms, 7 kernels]" in text
    assert "ldb=256  [GPU 0.1712 ms, 15 kernels (own 0.0006 ms, 1)]" in text
    assert "5 GPU activities" in text and "outside" in text
    d = json.loads(t.to_json())
    (sec,) = d["calls"]  # the section's calls, in one {"section": ..., "calls": [...]} item
    assert sec["section"] == SECTION
    node = sec["calls"][[n["function"] for n in sec["calls"]].index("cusolverDnXpotrs")]
    assert node["kernels"] == 15 and node["self_kernels"] == 1
    assert node["children"][0]["gpu_ms"] == pytest.approx(trsm_n.gpu_ms)
    assert d["summary"]["attributed_kernels"] == 15 and d["summary"]["outside_kernels"] == 5
    assert d["summary"]["unattributed_library_kernels"] == 0
    assert {k["name"][:20] for k in d["outside_kernels"]} >= {"Memcpy DtoD (Device "}
    assert all(set(k) == {"name", "library", "count", "total_ms", "mean_ms"}
               for k in d["outside_kernels"])


def test_records_that_do_not_line_up_get_no_times(found):
    records = load_log(DATA / "trace-stdout.log.gz").section(SECTION).records
    notes: list[str] = []
    assert attach(records, found, notes) is None  # 29 markers vs 7 records
    assert "do not line up" in notes[0] and all(r.kernels is None for r in records)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="fopencookie is glibc (Linux) only")
def test_stdout_hook_passes_text_through_and_counts_records(tmp_path):
    """In a fresh process: C stdout is routed through the hook, text reaches fd 1
    byte for byte, and each record head is counted once."""
    script = tmp_path / "p.py"
    script.write_text(
        "import ctypes, json, sys\n"
        "from cusolver_trace.tracing._hook import install_stdout_hook\n"
        "h = install_stdout_hook()\n"
        "libc = ctypes.CDLL(None)\n"
        "libc.printf(b'[2026-11-30 02:05:05][cusolverDn][1][Api][cusolverDnXpotrs] n=4 nrhs=4\\n')\n"
        "libc.printf(b'I! cuBLAS (v13.1.0) function cublasStatus_t cublasDtrsm_v2_64(int) called:\\n')\n"
        "libc.printf(b'i!  m: type=long; val=4\\nplain line\\n')\n"
        "libc.fflush(None)\n"
        "sys.stderr.write(json.dumps(h.names))\n")
    root = str(Path(__file__).resolve().parent.parent)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([root, os.environ.get("PYTHONPATH", "")])}
    res = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60,
                         cwd=root, env=env)
    assert res.returncode == 0, res.stderr
    assert res.stdout.splitlines() == [
        "[2026-11-30 02:05:05][cusolverDn][1][Api][cusolverDnXpotrs] n=4 nrhs=4",
        "I! cuBLAS (v13.1.0) function cublasStatus_t cublasDtrsm_v2_64(int) called:",
        "i!  m: type=long; val=4", "plain line"]
    assert json.loads(res.stderr) == ["cusolverDnXpotrs", "cublasDtrsm_v2_64"]


# --- correlation cases the capture does not have (synthetic kineto events) ---------------

def _mark(t, i, fn, thread=1):
    return ("cpu", t, 0, 0, f"ct_api#{i}:{fn}", thread, 0, 0, 0, "user_annotation")


def _launch(t, corr, thread=99, name="cudaLaunchKernel", linked=0):
    return ("cpu", t, 3, corr, name, thread, 0, 0, linked, "cuda_runtime")


def _kernel(t, corr, name, dur=1000, linked=0, kind="kernel"):
    return ("cuda", t, dur, corr, name, 0, 0, 7, linked, kind)


def _op(t, end, corr, name, thread=1):
    return ("cpu", t, end - t, corr, name, thread, 0, 0, 0, "cpu_op")


BMM = "sm90_xmma_gemm_f64f64_f64f64_f64_nn_n_tilesize32x32x32_stage5_warpsize2x2x1_cublas"


def test_a_record_written_after_its_launch_still_gets_its_kernels():
    """torch's aten::bmm: SetMathMode, the gemm (logged after its kernel's launch), GetMathMode.
    The kernel used to land on SetMathMode, a setup call, and so outside every call."""
    ev = [_mark(100, 0, "cublasSetMathMode"), _launch(110, 50), _kernel(200, 50, BMM),
          _mark(120, 1, "cublasDgemmStridedBatched"), _mark(130, 2, "cublasGetMathMode")]
    for all_ops in (False, True):
        found = correlate(ev, all_ops=all_ops)
        assert [a[6] for a in found["activities"]] == [1]


def test_a_get_call_between_a_record_and_its_launch_does_not_end_the_call():
    """The H200 order of torch's aten::bmm (torch 2.11, a BoTorch run: 1360 kernels were left
    outside every call without --by op): the cublasDgemmStridedBatched record, then
    cublasGetMathMode (logged from inside it), then the launch. A Set* call still ends it."""
    ev = [_mark(100, 0, "cublasSetMathMode"), _mark(120, 1, "cublasDgemmStridedBatched"),
          _mark(130, 2, "cublasGetMathMode"), _launch(140, 50), _kernel(200, 50, BMM)]
    for all_ops in (False, True):
        found = correlate(ev, all_ops=all_ops)
        assert [a[6] for a in found["activities"]] == [1], all_ops
    ev = [_mark(120, 0, "cublasDgemmStridedBatched"), _mark(130, 1, "cublasSetStream_v2"),
          _launch(140, 50), _kernel(200, 50, BMM)]
    assert [a[6] for a in correlate(ev, all_ops=False)["activities"]] == [-1]


def test_a_kernel_without_its_launch_event_is_placed_by_correlation_order():
    """No runtime event carries the kernel's correlation id (a launch CUPTI did not report):
    the API event just before it in correlation order stands for the launch, not the
    kernel's own (late) start on the GPU, which is after the next, setup, call."""
    ev = [_mark(100, 0, "cublasDgemm_v2"), _launch(110, 49, name="cudaFuncGetAttributes"),
          _kernel(200, 50, BMM), _mark(130, 1, "cublasGetMathMode"), _launch(140, 51)]
    found = correlate(ev)
    assert [a[6] for a in found["activities"]] == [0]


def test_ops_keep_torch_work_out_of_library_calls():
    """With every op recorded, a launch only looks for its call inside the op that launched it
    (kineto's linked correlation id): a memcpy torch issues in another op right after the call
    returns is torch's own, a kernel of the call is the call's whatever its name."""
    ev = [_op(100, 300, 11, "aten::linalg_cholesky_ex"),
          _mark(110, 0, "cusolverDnXpotrf"),
          _launch(120, 60, linked=11), _kernel(130, 60, "some_new_potrf_kernel_name", linked=11),
          _op(200, 250, 12, "aten::copy_"),
          _launch(210, 61, name="cudaMemcpyAsync", linked=12),
          _kernel(220, 61, "Memcpy DtoD (Device -> Device)", linked=12, kind="gpu_memcpy")]
    found = correlate(ev)
    assert found["all_ops"] and [a[6] for a in found["activities"]] == [0, -1]
    assert [a[0] for a in found["activities"]] == ["kernel", "memcpy"]
    assert found["records"][0][2] == "aten::linalg_cholesky_ex"
    assert found["aten"][0][:2] == ["aten::linalg_cholesky_ex", 1]
    # without ops the memcpy lands on the call, as the marker is the last one before it
    assert [a[6] for a in correlate(ev, all_ops=False)["activities"]] == [0, 0]


def test_ops_on_other_threads_and_in_backward_are_told_apart():
    ev = [
        _op(100, 200, 1, "aten::linalg_cholesky", thread=1),
        _mark(110, 0, "cusolverDnXpotrf", thread=1),
        _mark(150, 1, "cusolverDnXpotrs", thread=2),      # no op on thread 2 here
        _op(300, 400, 2, "autograd::engine::evaluate_function: CholeskyBackward0", thread=3),
        _op(310, 360, 3, "aten::cholesky_inverse", thread=3),
        _mark(320, 2, "cusolverDnXpotrs", thread=3),
        _mark(500, 3, "cublasDtrsm_v2", thread=1),         # after every op
    ]
    assert [r[2] for r in correlate(ev)["records"]] == [
        "aten::linalg_cholesky", None, "aten::cholesky_inverse (in CholeskyBackward0)", None]


def test_torch_and_magma_kernels_are_never_a_library_calls():
    """A marker only marks a call's start: ATen / MAGMA kernels launched after the legacy
    potrfBatched returns are torch's own; its memcpy cannot be told apart and stays."""
    ev = [_mark(100, 0, "cusolverDnSetStream"),
          _launch(105, 1), _kernel(106, 1, "void at::native::vectorized_elementwise_kernel<4>"),
          _mark(110, 1, "cusolverDnDpotrfBatched"),
          _launch(120, 2), _kernel(121, 2, "potrf_cta_lower_batch<double>"),
          _launch(130, 3), _kernel(131, 3, "void at::native::triu_tril_kernel<double, int>"),
          _launch(140, 4, name="cudaMemcpyAsync"),
          _kernel(141, 4, "Memcpy DtoH (Device -> Pinned)", kind="gpu_memcpy"),
          _launch(150, 5), _kernel(151, 5, "magma_dtrsm_kernel<(magma_uplo_t)121>")]
    found = correlate(ev)
    assert [a[6] for a in found["activities"]] == [-1, 1, -1, 1, -1]


def test_compute_call_without_kernels_and_stray_library_kernels_are_flagged():
    """Honest display when the attribution found nothing for a compute call, and when
    library-named kernels ended up outside every call."""
    log, acts = timed_section()
    trsm_c = [r for r in log.records if r.name == "cublasDtrsm_v2_64"][1]
    for a in trsm_c.kernels:  # as if they had been launched outside its span
        a.parent = None
    trsm_c.kernels = []
    t = Trace(label="x", calls=log.calls, sections=log.sections, activities=acts)
    text = t._render_text(width=250)
    assert "trans=C diag=NON_UNIT m=256 n=256 lda=256 ldb=256  [no kernel attributed]" in text
    assert "note: 7 of them are named like cuSOLVER / cuBLAS kernels" in text
    s = t.summary()
    assert s.unattributed_library_kernels == 7 and s.attributed_kernels == 8
    from rich.console import Console
    import io

    c = Console(file=io.StringIO(), width=250, record=True, color_system=None)
    c.print(t.renderable(summary=True, tree=False))
    assert "library kernels outside every logged call: 7 (named like" in c.export_text()


# --- folding repeated call sequences -------------------------------------------------

def _loop_tree():
    """hello_cholesky-like: (potrf, potrs{trsm, trsm}) three times, then one potrf."""
    log = load_log(DATA / "trace-stdout.log.gz")
    fact = log.section("linalg.cholesky dtype=float64 n=256 batch=1 upper=False").calls
    inv = log.section(SECTION).calls
    return build_tree(fact + inv + fact + inv + fact + inv + fact, kinds=("compute", "query"))


def test_fold_repeats_finds_the_loop():
    nodes = _loop_tree()
    names = [n.function for n in nodes]
    assert names == ["cusolverDnXpotrf_bufferSize", "cusolverDnXpotrf", "cusolverDnXpotrs"] * 3 + \
        ["cusolverDnXpotrf_bufferSize", "cusolverDnXpotrf"]
    folded = fold_repeats(nodes)
    assert isinstance(folded[0], RepeatBlock) and folded[0].count == 3
    assert [n.function for n in folded[0].nodes] == names[:3]
    assert [n.function for n in folded[1:]] == names[-2:]
    assert all(isinstance(n, CallNode) for n in folded[1:])
    assert len(nodes) == 11  # the input list is left alone


def test_fold_repeats_leaves_non_repeating_sequences():
    nodes = _loop_tree()[:4]
    assert fold_repeats(nodes) == nodes


def test_a_loop_around_a_loop_folds_twice():
    a = "[2026-11-30 02:17:18][cusolverDn][1][Api][cusolverDnXpotrf] n={}"
    inner = [a.format(1), a.format(2)] * 3 + [a.format(3)]
    nodes = build_tree(parse_log("\n".join(inner * 4)).calls)
    (outer,) = fold_repeats(nodes)
    assert outer.count == 4 and isinstance(outer.nodes[0], RepeatBlock)
    assert outer.nodes[0].count == 3 and outer.calls == 3
    d = outer.to_dict()
    assert d["repeat"] == 4 and d["calls"][0]["repeat"] == 3


def test_rendered_tree_folds_and_no_fold_lists_all():
    log = load_log(DATA / "trace-stdout.log.gz")
    fact = log.section("linalg.cholesky dtype=float64 n=256 batch=1 upper=False").calls
    t = Trace(label="loop", calls=fact * 4)  # bufferSize, potrf: four times
    folded = t._render_text(width=200)
    assert "× 4  the 2 calls below, repeated back to back" in folded
    assert folded.count("cusolverDnXpotrf ") == 1
    from rich.console import Console
    import io

    c = Console(file=io.StringIO(), width=200, record=True, color_system=None)
    c.print(t.renderable(fold=False))
    assert c.export_text().count("cusolverDnXpotrf ") == 4


def test_fold_sums_times_over_repeats():
    log, _acts = timed_section()
    nodes = build_tree(log.calls * 2 + load_log(DATA / "trace-stdout.log.gz").section(
        "linalg.cholesky dtype=float64 n=256 batch=1 upper=False").calls, kinds=("compute",))
    # Xpotrs twice in a row collapses into one node "× 2" with twice the time
    assert nodes[0].count == 2
    once = sum(r.gpu_ms for r in log.records if r.kernels)
    assert round(once, 4) == 0.1712
    assert nodes[0].gpu_ms == pytest.approx(2 * once, abs=1e-12)
    assert nodes[0].kernel_count == 30
