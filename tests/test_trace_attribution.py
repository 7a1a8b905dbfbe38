"""Per-call GPU time: which kernels each logged API call launched (tracing._hook),
and the folding of repeated call sequences in the rendered tree (CPU tests on the
real H200 captures in tests/data/h200-torch2.11-cu130/)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cusolver_trace.tracing import Trace, build_tree, fold_repeats, load_log
from cusolver_trace.tracing._hook import Attribution, attribute
from cusolver_trace.tracing.model import CallNode, RepeatBlock
from cusolver_trace.tracing.profile import attach_kernels

DATA = Path(__file__).parent / "data" / "h200-torch2.11-cu130"
SECTION = "cholesky_inverse dtype=float64 n=256 batch=1 upper=False"


def _fixture_events():
    out = []
    for line in (DATA / "kineto-cholesky_inverse.txt").read_text().splitlines():
        if line.startswith("#") or not line.strip():
            continue
        start, dur, dev, corr, name = line.split(" ", 4)
        out.append(("cuda" if dev == "DeviceType.CUDA" else "cpu", int(start), int(dur),
                    int(corr), name))
    return out


@pytest.fixture(scope="module")
def found() -> Attribution:
    return attribute(_fixture_events())


def test_markers_name_the_records(found):
    assert found.names[22:] == ["cusolverDnSetStream", "cublasSetStream_v2",
                                "cusolverDnCreateParams", "cusolverDnXpotrs",
                                "cublasDtrsm_v2_64", "cublasDtrsm_v2_64",
                                "cusolverDnDestroyParams"]


def test_kernels_go_to_the_call_that_launched_them(found):
    xpotrs, trsm_n, trsm_c = found.per_record[25], found.per_record[26], found.per_record[27]
    assert [k for k, _ in xpotrs] == ["copy_info_kernel(int, int*)"]
    # trsm with trans=N: 4 diagonal-block trsm kernels interleaved with 3 gemm (nn) updates
    assert [k.split("<")[0].split("_tilesize")[0] for k, _ in trsm_n] == \
        ["void trsm_left_kernel", "sm90_xmma_gemm_f64f64_f64f64_f64_nn_n"] * 3 + ["void trsm_left_kernel"]
    assert all("true, false, false" in k for k, _ in trsm_n if "trsm_left" in k)
    # trans=C: the transposed kernel variant and tn gemms
    assert [k.split("<")[0].split("_tilesize")[0] for k, _ in trsm_c] == \
        ["void trsm_left_kernel", "sm90_xmma_gemm_f64f64_f64f64_f64_tn_n"] * 3 + ["void trsm_left_kernel"]
    assert all("true, false, true" in k for k, _ in trsm_c if "trsm_left" in k)
    # a gemm whose launch precedes the second trsm's marker but which *starts* after it
    # on the GPU still belongs to the first trsm (attribution is by launch, not start)
    assert sum(1 for k, _ in trsm_n if "gemm" in k) == 3
    # setup calls launch nothing; torch's own fill/copy kernels come before any call
    assert all(found.per_record[i] == [] for i in (22, 23, 24, 28))
    assert len(found.outside) == 5 and all("Memcpy" in k or "at::native" in k
                                           for k, _ in found.outside)
    assert round(sum(ms for _, ms in trsm_n), 4) == 0.1071  # 25152 + 2752 + ... ns
    assert round(sum(ms for _, ms in trsm_c), 4) == 0.0635
    assert round(sum(ms for _, ms in xpotrs), 4) == 0.0006


def test_attach_and_tree_times(found):
    records = load_log(DATA / "trace-stdout.log.gz").section(SECTION)
    part = Attribution(found.names[22:], found.per_record[22:], found.outside)
    notes: list[str] = []
    outside = attach_kernels(records.records, part, notes)
    assert notes == [] and outside == part.outside  # nothing of torch's inside calls here
    tree = build_tree(records.calls, kinds=("compute", "query"))
    (xpotrs,) = tree
    assert xpotrs.function == "cusolverDnXpotrs" and xpotrs.self_kernels == 1
    trsm_n, trsm_c = xpotrs.children
    assert trsm_n.kernel_count == trsm_c.kernel_count == 7
    assert xpotrs.kernel_count == 15
    assert xpotrs.gpu_ms == pytest.approx(xpotrs.self_gpu_ms + trsm_n.gpu_ms + trsm_c.gpu_ms)
    assert xpotrs.timing_text().startswith("GPU 0.1") and "own 0.0006 ms, 1" in xpotrs.timing_text()
    t = Trace(label="x", calls=records.calls, sections=records.sections, outside_kernels=outside)
    text = t._render_text(width=250)
    assert "trans=N diag=NON_UNIT m=256 n=256 lda=256 ldb=256  [GPU 0.1071 ms, 7 kernels]" in text
    assert "ldb=256  [GPU 0.1712 ms, 15 kernels (own 0.0006 ms, 1)]" in text
    assert "5 kernels" in text and "outside" in text
    d = json.loads(t.to_json())
    node = d["calls"][[n["function"] for n in d["calls"]].index("cusolverDnXpotrs")]
    assert node["kernels"] == 15 and node["self_kernels"] == 1
    assert node["children"][0]["gpu_ms"] == pytest.approx(trsm_n.gpu_ms)


def test_records_that_do_not_line_up_get_no_times(found):
    records = load_log(DATA / "trace-stdout.log.gz").section(SECTION).records
    notes: list[str] = []
    assert attach_kernels(records, found, notes) is None  # 29 markers vs 7 records
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


def test_fold_sums_times_over_repeats(found):
    log = load_log(DATA / "trace-stdout.log.gz")
    part = Attribution(found.names[22:], found.per_record[22:], found.outside)
    rec = log.section(SECTION)
    assert attach_kernels(rec.records, part, []) is not None
    nodes = build_tree(rec.calls * 2 + log.section(
        "linalg.cholesky dtype=float64 n=256 batch=1 upper=False").calls, kinds=("compute",))
    # Xpotrs twice in a row collapses into one node "× 2" with twice the time
    assert nodes[0].count == 2
    once = sum(ms for i in (25, 26, 27) for _, ms in found.per_record[i])
    assert round(once, 4) == 0.1712
    assert nodes[0].gpu_ms == pytest.approx(2 * once, abs=1e-12)
    assert nodes[0].kernel_count == 30


def test_torch_kernels_after_a_call_are_not_counted_with_it():
    """A marker only marks a call's start: ATen kernels launched after it returns, and
    anything after a setup call, go to torch's own (the legacy potrfBatched case)."""
    log = load_log(DATA / "trace-stdout.log.gz")
    rec = log.section("linalg.cholesky dtype=float64 n=256 batch=3 upper=False").records
    names = [r.function for r in rec]
    assert "cusolverDnDpotrfBatched" in names
    i = names.index("cusolverDnDpotrfBatched")
    per = [[] for _ in names]
    per[i] = [("potrf_cta_lower_batch<double>", 0.05),
              ("void at::native::triu_tril_kernel<double, int, false, 1, true>", 0.002),
              ("Memcpy DtoH (Device -> Pinned)", 0.001)]
    if i > 0:
        per[i - 1] = [("void at::native::vectorized_elementwise_kernel<4>", 0.001)]
    outside = attach_kernels(rec, Attribution(names, per, [("Memcpy DtoD (Device -> Device)", 0.001)]), [])
    assert rec[i].kernels == [("potrf_cta_lower_batch<double>", 0.05),
                              ("Memcpy DtoH (Device -> Pinned)", 0.001)]
    assert [k for k, _ in outside] == ["Memcpy DtoD (Device -> Device)"] + (
        ["void at::native::vectorized_elementwise_kernel<4>"] if i > 0 else []) + [
        "void at::native::triu_tril_kernel<double, int, false, 1, true>"]


def test_compute_call_without_kernels_and_stray_library_kernels_are_flagged(found):
    """Honest display when the attribution found nothing for a compute call, and when
    library-named kernels ended up outside every call."""
    records = load_log(DATA / "trace-stdout.log.gz").section(SECTION)
    per = [list(k) for k in found.per_record[22:]]
    moved = per[5]  # the second trsm's kernels, as if launched outside its span
    per[5] = []
    outside = attach_kernels(records.records, Attribution(found.names[22:], per, moved), [])
    t = Trace(label="x", calls=records.calls, sections=records.sections, outside_kernels=outside)
    text = t._render_text(width=250)
    assert "trans=C diag=NON_UNIT m=256 n=256 lda=256 ldb=256  [no kernel attributed]" in text
    assert "note: 7 of them are named like cuSOLVER / cuBLAS kernels" in text
