"""Log parsing, nesting, collapsing and rendering, on the real H200 captures.

tests/data/h200-torch2.11-cu130/: torch 2.11.0+cu130, cuSOLVER 12.0.4, cuBLAS 13.1.0.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from cusolver_trace.tracing import Trace, build_tree, load_log, parse_log
from cusolver_trace.tracing.command import main
from cusolver_trace.tracing.logparse import Pointer, call_kind, render_enum

DATA = Path(__file__).parent / "data" / "h200-torch2.11-cu130"
STDOUT_LOG = DATA / "trace-stdout.log.gz"
DTYPES = {"float64": ("D", "CUDA_R_64F"), "float32": ("S", "CUDA_R_32F"),
          "complex128": ("Z", "CUDA_C_64F")}


@pytest.fixture(scope="module")
def log():
    return load_log(STDOUT_LOG)


def tag(dtype="float64", n=256, batch=1, upper=False):
    return f"dtype={dtype} n={n} batch={batch} upper={upper}"


def compute(calls):
    return [c for c in calls if c.kind != "setup"]


def solver_calls(section):
    return [c for c in section.records if c.library == "cuSOLVER"]


# --- whole-log facts -------------------------------------------------------------

def test_sections_and_no_program_output(log):
    # 3 dtypes x 3 shapes x 2 uplo x 6 workloads, plus the final '#### done'
    assert len(log.sections) == 3 * 3 * 2 * 6 + 1
    assert log.sections[0] == "linalg.cholesky " + tag()
    assert log.sections[-1] == "done"
    assert log.output == []  # capture.py prints nothing but markers
    assert log.ordered and log.libraries == {"cuSOLVER", "cuBLAS"}
    assert len(log.records) == 2505


def test_cusolver_record_fields(log):
    first = log.records[[r.library for r in log.records].index("cuSOLVER")]
    assert first.function == "cusolverDnCreate"
    assert first.pid == 423 and first.time == "2026-11-30 02:17:18"
    assert first.args == {"handle": "0x2072de10"} and isinstance(first.args["handle"], Pointer)
    assert first.activity == "api" and first.line == 43 and first.correlation == 5  # 6th record


# --- the sections the brief names ---------------------------------------------------

def test_cholesky_inverse_batch1_is_one_xpotrs_with_two_trsm(log):
    sec = log.section("cholesky_inverse " + tag())
    assert [c.function for c in sec.calls] == [
        "cusolverDnSetStream", "cusolverDnCreateParams", "cusolverDnXpotrs", "cusolverDnDestroyParams"]
    (xpotrs,) = [c for c in sec.calls if c.function == "cusolverDnXpotrs"]
    assert xpotrs.values() == {"uplo": "LOWER", "n": 256, "nrhs": 256, "dataTypeA": "CUDA_R_64F",
                               "lda": 256, "dataTypeB": "CUDA_R_64F", "ldb": 256}
    assert set(xpotrs.pointers()) == {"handle", "A", "B", "info"}
    assert [c.function for c in xpotrs.children] == ["cublasDtrsm_v2_64"] * 2
    first, second = xpotrs.children
    common = {"side": "LEFT", "uplo": "LOWER", "diag": "NON_UNIT", "m": 256, "n": 256,
              "lda": 256, "ldb": 256}
    assert first.values() == {**common, "trans": "N"}
    assert second.values() == {**common, "trans": "C"}  # L^H solve, logged as OP_C for reals too
    # the solve's B is the trsm's B, and A is A
    assert first.args["A"] == xpotrs.args["A"] and first.args["B"] == xpotrs.args["B"]
    # cuSOLVER's SetStream forwards to its internal cuBLAS handle
    assert [c.function for c in sec.calls[0].children] == ["cublasSetStream_v2"]
    assert sum(r.library == "cuBLAS" for r in sec.records) == 3


def test_linalg_cholesky_batch1_is_bufferSize_plus_xpotrf(log):
    sec = log.section("linalg.cholesky " + tag())
    calls = compute(sec.calls)
    assert [c.function for c in calls] == ["cusolverDnXpotrf_bufferSize", "cusolverDnXpotrf"]
    assert [c.kind for c in calls] == ["query", "compute"]
    size, potrf = calls
    for c in calls:
        assert c.values()["uplo"] == "LOWER" and c.values()["n"] == 256 and c.values()["lda"] == 256
        assert c.values()["dataTypeA"] == c.values()["computeType"] == "CUDA_R_64F"
        assert c.children == []
    assert size.args["A"] == "0x0"  # workspace query with A = NULL
    assert potrf.values()["workspaceInBytesOnDevice"] == 384
    assert isinstance(size.args["workspaceInBytesOnDevice"], Pointer)  # out-pointer there


@pytest.mark.parametrize("upper", [False, True])
def test_linalg_cholesky_batch3_is_one_potrfBatched(log, upper):
    sec = log.section("linalg.cholesky " + tag(batch=3, upper=upper))
    (call,) = compute(sec.calls)
    assert call.function == "cusolverDnDpotrfBatched"
    assert call.values() == {"uplo": "UPPER" if upper else "LOWER", "n": 256, "lda": 256,
                             "batchSize": 3}
    assert call.children == []


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("n,batch", [(256, 3), (32, 64)])
@pytest.mark.parametrize("op", ["cholesky_inverse", "cholesky_solve nrhs=1", "cholesky_solve nrhs=4"])
@pytest.mark.parametrize("upper", [False, True])
def test_magma_sections_have_no_cusolver_call(log, dtype, n, batch, op, upper):
    sec = log.section(f"{op} " + tag(dtype, n, batch, upper))
    assert solver_calls(sec) == []
    # what is logged there is torch's own cuBLAS housekeeping (MAGMA uses torch's handle)
    assert all(r.library == "cuBLAS" for r in sec.records)
    assert not any("trsm" in r.function for r in sec.records)


def test_preferred_cusolver_batch64_inverse_collapses_to_xpotrs_x64(log):
    sec = log.section("cholesky_inverse preferred=cusolver " + tag(n=32, batch=64))
    assert sum(c.function == "cusolverDnXpotrs" for c in sec.calls) == 64
    (node,) = build_tree(sec.calls, kinds=("compute", "query"))
    assert node.function == "cusolverDnXpotrs" and node.count == 64
    assert node.label().startswith("cusolverDnXpotrs × 64  uplo=LOWER n=32 nrhs=32")
    assert len(node.lines) == 64 and node.lines == sorted(node.lines)
    assert [c.function for c in node.children] == ["cublasDtrsm_v2_64"] * 2
    assert [c.args["trans"] for c in node.children] == ["N", "C"]
    assert all(c.count == 1 for c in node.children)
    # the full tree keeps the setup calls around the loop
    full = build_tree(sec.calls)
    assert [(n.function, n.count) for n in full] == [
        ("cusolverDnSetStream", 1), ("cusolverDnCreateParams", 1), ("cusolverDnXpotrs", 64),
        ("cusolverDnDestroyParams", 1)]


def test_preferred_cusolver_solve_nrhs1_batch3_is_potrsBatched(log):
    sec = log.section("cholesky_solve nrhs=1 preferred=cusolver " + tag(batch=3, upper=True))
    (call,) = compute(sec.calls)
    assert call.function == "cusolverDnDpotrsBatched"
    assert call.values() == {"uplo": "UPPER", "n": 256, "nrhs": 1, "lda": 256, "ldb": 256,
                             "batchSize": 3}


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("upper", [False, True])
def test_inverse_batch1_per_dtype_and_uplo(log, dtype, upper):
    letter, cuda_type = DTYPES[dtype]
    sec = log.section("cholesky_inverse " + tag(dtype, upper=upper))
    (x,) = compute(sec.calls)
    assert x.function == "cusolverDnXpotrs"
    assert x.values()["uplo"] == ("UPPER" if upper else "LOWER")
    assert x.values()["dataTypeA"] == x.values()["dataTypeB"] == cuda_type
    assert [c.function for c in x.children] == [f"cublas{letter}trsm_v2_64"] * 2
    assert {c.args["uplo"] for c in x.children} == {x.values()["uplo"]}
    # U^H U: conjugate-transpose solve first; L L^H: plain solve first
    assert [c.args["trans"] for c in x.children] == (["C", "N"] if upper else ["N", "C"])


def test_solve_nrhs4_batch1(log):
    sec = log.section("cholesky_solve nrhs=4 " + tag())
    (x,) = compute(sec.calls)
    assert (x.function, x.values()["nrhs"], x.values()["ldb"]) == ("cusolverDnXpotrs", 4, 256)
    assert [c.values()["n"] for c in x.children] == [4, 4]


# --- the nesting rule ----------------------------------------------------------------

def test_nesting_uses_cusolver_owned_handle_not_just_adjacency():
    """Without the markers, torch's own cuBLAS calls follow cusolverDnDpotrfBatched
    directly; they must stay top-level (their handle is torch's, not cuSOLVER's)."""
    import gzip

    text = gzip.open(STDOUT_LOG, "rt").read()
    bare = "\n".join(l for l in text.splitlines() if not l.startswith("####"))
    log = parse_log(bare)
    flat = parse_log(bare, nest=False)
    follows = [i for i, r in enumerate(flat.records[:-1])
               if r.function == "cusolverDnDpotrfBatched" and flat.records[i + 1].library == "cuBLAS"]
    assert follows, "the fixture no longer exercises the rule"
    batched = [c for c in log.calls if c.function == "cusolverDnDpotrfBatched"]
    assert batched and all(c.children == [] for c in batched)
    xpotrs = [c for c in log.calls if c.function == "cusolverDnXpotrs"]
    assert len(xpotrs) == 432 and all(len(c.children) == 2 for c in xpotrs)
    nested_handles = {ch.handle for c in log.calls if c.library == "cuSOLVER" for ch in c.children
                      if ch.function != "cublasCreate_v2"}
    top_handles = {c.handle for c in log.calls if c.library == "cuBLAS"
                   and c.function != "cublasCreate_v2"}
    assert nested_handles == {"0x2d4d3b50"} and top_handles == {"0x28439130"}
    # cusolverDnCreate creates its cuBLAS handle; cusolverDnDestroy destroys it
    create = next(c for c in log.calls if c.function == "cusolverDnCreate")
    assert [c.function for c in create.children] == [
        "cublasCreate_v2", "cublasGetMathMode", "cublasSetAtomicsMode"]
    destroy = next(c for c in log.calls if c.function == "cusolverDnDestroy")
    assert [c.function for c in destroy.children] == ["cublasDestroy_v2"]


def test_separate_logger_files_are_not_nested():
    solver = load_log(DATA / "cusolverdn-api.log")
    blas = load_log(DATA / "cublas-api.log")
    assert not solver.ordered and not blas.ordered
    assert solver.libraries == {"cuSOLVER"} and blas.libraries == {"cuBLAS"}
    assert len(solver.records) == 105 and len(blas.records) == 260
    assert all(c.children == [] for c in solver.calls + blas.calls)
    n_xpotrs = sum(r.function == "cusolverDnXpotrs" for r in solver.records)
    n_trsm = sum(r.function == "cublasDtrsm_v2_64" for r in blas.records)
    assert (n_xpotrs, n_trsm) == (70, 140)  # two trsm per Xpotrs, even across files
    # legacy API spells its dimensions in upper case; kept as logged
    getrf = next(r for r in solver.records if r.function == "cusolverDnDgetrf")
    assert getrf.values() == {"M": 256, "N": 256, "LDA": 256, "deterministicMode": 1}


# --- strictness ------------------------------------------------------------------

def _fixture_xpotrs_block() -> list[str]:
    import gzip

    lines = gzip.open(STDOUT_LOG, "rt").read().splitlines()
    start = lines.index("#### cholesky_inverse " + tag())
    end = lines.index("#### end cholesky_inverse " + tag())
    return lines[start + 1:end]


RESEMBLING = [
    "I! cuBLAS (v13.1.0) function cublasStatus_t cublasDtrsm_v2_64(cublasHandle_t) called:",
    "this line breaks the would-be record above",
    "[2026-11-30 02:17:18][cusolverDn][423][Api][cusolverDnXpotrs] not key-value text",
    "[cusolverDn][423][Api][cusolverDnXpotrs] handle=0x1 n=3",
    "[2026-11-30 02:17:18][cusolverDn][423][Api][cusolverDnXpotrs]handle=0x1",
    "i!  m: type=long; val=256",
    "cusolverDnXpotrs uplo=0 n=256 nrhs=256",
    "I! cuBLAS (v13.1.0) function cublasStatus_t cublasSgemm_v2(int) called:",
    "i!  m: type=int; val=3",
    "i! Time: 2026-11-30T02:17:18 elapsed from start 0.066667 minutes or 4.000000 seconds",
    "Process=423; but no i! prefix",
    "#### end a-section-that-never-opened",
    "I! cuBLAS function cublasDtrsm_v2_64() called:",
]


def test_lines_resembling_records_are_program_output():
    real = _fixture_xpotrs_block()
    text = "\n".join(["hello"] + RESEMBLING + real + ["bye"])
    log = parse_log(text)
    assert [o.text for o in log.output] == ["hello"] + RESEMBLING + ["bye"]
    assert [o.line for o in log.output][:3] == [1, 2, 3]
    assert [r.function for r in log.records] == [
        "cusolverDnSetStream", "cublasSetStream_v2", "cusolverDnCreateParams", "cusolverDnXpotrs",
        "cublasDtrsm_v2_64", "cublasDtrsm_v2_64", "cusolverDnDestroyParams"]
    assert log.records[0].line == len(RESEMBLING) + 2


def test_record_cut_off_at_end_of_log_is_kept_and_flagged():
    block = _fixture_xpotrs_block()
    trsm_start = next(i for i, l in enumerate(block) if "cublasDtrsm_v2_64" in l)
    cut = block[: trsm_start + 4]  # header + 3 argument lines, then the process died
    log = parse_log("\n".join(cut))
    last = log.records[-1]
    assert last.function == "cublasDtrsm_v2_64" and last.truncated
    assert last.args["side"] == "LEFT" and last.args["uplo"] == "LOWER"
    assert last in log.calls[-1].children  # still nested under its Xpotrs
    assert not any(r.truncated for r in log.records[:-1])


def test_cusolver_non_api_lines_are_messages():
    line = "[2026-11-30 02:17:18][cusolverDn][423][Error][cusolverDnXpotrf] invalid parameter"
    log = parse_log(line + "\nprogram line")
    assert log.messages == [line] and log.records == []
    assert [o.text for o in log.output] == ["program line"]


def test_nested_and_unclosed_sections():
    text = "#### outer\n#### inner\nx\n#### end outer\ny\n#### tail\nz"
    log = parse_log(text)
    assert log.sections == ["outer", "inner", "tail"]
    assert [(o.text, o.section) for o in log.output] == [("x", "inner"), ("y", None), ("z", "tail")]
    with pytest.raises(KeyError, match="no section 'nope'"):
        log.section("nope")


# --- enum table and call kinds ---------------------------------------------------------

@pytest.mark.parametrize("arg,value,shown", [
    ("uplo", 0, "LOWER"), ("uplo", 1, "UPPER"), ("uplo", "CUBLAS_FILL_MODE_UPPER", "UPPER"),
    ("side", "CUBLAS_SIDE_RIGHT", "RIGHT"), ("side", 0, "LEFT"),
    ("trans", 2, "C"), ("transa", "CUBLAS_OP_T", "T"), ("transb", 0, "N"),
    ("diag", 1, "UNIT"), ("diag", "CUBLAS_DIAG_NON_UNIT", "NON_UNIT"),
    ("n", 1, 1), ("mode", "CUBLAS_DEFAULT_MATH", "CUBLAS_DEFAULT_MATH"), ("uplo", 7, 7),
])
def test_render_enum(arg, value, shown):
    assert render_enum(arg, value) == shown


@pytest.mark.parametrize("function,kind", [
    ("cusolverDnXpotrf_bufferSize", "query"), ("cusolverDnDpotrf_bufferSize", "query"),
    ("cusolverDnSetStream", "setup"), ("cusolverDnCreateParams", "setup"),
    ("cusolverDnDestroy", "setup"), ("cublasSetMathMode", "setup"), ("cublasCreate_v2", "setup"),
    ("cusolverDnXpotrs", "compute"), ("cusolverDnDgetrf", "compute"),
    ("cublasDtrsm_v2_64", "compute"), ("cublasDgemmBatched", "compute"),
])
def test_call_kind(function, kind):
    assert call_kind(function) == kind


# --- Trace: JSON and rendering -----------------------------------------------------

def _trace_of(log, label):
    sec = log.section(label)
    return Trace(label=label, calls=sec.calls, sections=sec.sections)


def test_json_schema_round_trip(log):
    t = _trace_of(log, "cholesky_inverse preferred=cusolver " + tag("complex128", 32, 64, True))
    d = t.to_dict()
    assert set(d) == {"schema", "format", "label", "calls", "call_times", "sources", "summary",
                      "outside_kernels", "gpu_ms_by_library", "aten_ops", "notes", "sections",
                      "returncode", "signal", "signal_name", "exit_status", "wall_s", "tracing_s"}
    assert d["schema"] == "cusolver-trace/trace/3" and d["format"] == "compact"
    assert d["call_times"] is False and d["sources"] == []
    assert json.loads(t.to_json()) == d
    (sec,) = d["calls"]  # one section: its calls in one item
    assert set(sec) == {"section", "calls"}
    node = next(n for n in sec["calls"] if n.get("function") == "cusolverDnXpotrs")
    # no kind and no library (they follow from the function), no times (a log has none),
    # no line (no log kept)
    assert set(node) == {"function", "count", "args", "children"}
    assert node["count"] == 64
    assert node["args"]["uplo"] == "UPPER" and node["args"]["dataTypeA"] == "CUDA_C_64F"
    assert [c["function"] for c in node["children"]] == ["cublasZtrsm_v2_64"] * 2
    assert set(node["children"][0]) == {"function", "args"}  # count 1
    assert d["outside_kernels"] is None and d["aten_ops"] is None and d["signal"] is None
    assert d["summary"]["timed"] is False
    with_lines = next(n for n in t.to_dict(lines=True)["calls"][0]["calls"]
                      if n.get("function") == "cusolverDnXpotrs")
    assert with_lines["line"] == t.find("cusolverDnXpotrs")[0].call.line
    assert {k: v for k, v in with_lines.items() if k not in ("line", "children")} == {
        k: v for k, v in node.items() if k != "children"}
    assert all("line" in c for c in with_lines["children"])
    full = t.to_dict(full=True)
    assert full["format"] == "full" and len(full["records"]) == len(t.records())
    assert "sources" not in full and "call_times" not in full
    (full_sec,) = full["calls"]  # every field of every node
    node = next(n for n in full_sec["calls"] if n.get("function") == "cusolverDnXpotrs")
    assert set(node) == {"library", "function", "count", "args", "line", "children"}
    assert node["count"] == 64 and node["library"] == "cuSOLVER"
    xp = next(r for r in full["records"] if r["function"] == "cusolverDnXpotrs")
    assert set(xp["pointers"]) == {"handle", "A", "B", "info"} and xp["kernels"] is None
    trsm = next(r for r in full["records"] if r["function"] == "cublasZtrsm_v2_64")
    assert full["records"][trsm["parent"]]["function"] == "cusolverDnXpotrs"


def test_rendering(log):
    t = _trace_of(log, "cholesky_inverse preferred=cusolver " + tag(n=32, batch=64))
    text = str(t)
    assert "cusolverDnXpotrs × 64  uplo=LOWER n=32 nrhs=32" in text
    assert text.count("cublasDtrsm_v2_64") == 2
    assert "cusolverDnSetStream" not in text and "4 setup calls hidden" in text
    full = t.renderable(all=True)
    from rich.console import Console
    c = Console(record=True, width=200, file=open("/dev/null", "w"))
    c.print(full)
    assert "cusolverDnSetStream" in c.export_text()
    html = t._repr_html_()
    assert html.startswith("<!DOCTYPE html>") or "<pre" in html
    assert "cusolverDnXpotrs" in html
    assert t.__rich__() is not None


def test_rendering_groups_sections_when_several(log):
    t = Trace(label="all", calls=log.calls, sections=log.sections)
    text = str(t)
    assert "cholesky_inverse " + tag() in text and "done" in text


# --- CLI on captured logs ----------------------------------------------------------

def test_cli_from_log_section(tmp_path, capsys):
    out = tmp_path / "t.json"
    label = "cholesky_inverse " + tag()
    assert main(["--from-log", str(STDOUT_LOG), "--section", label, "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "cusolverDnXpotrs" in printed and printed.count("cublasDtrsm_v2_64") == 2
    d = json.loads(out.read_text())
    assert [n["function"] for n in d["calls"][0]["calls"]] == [
        "cusolverDnSetStream", "cusolverDnCreateParams", "cusolverDnXpotrs", "cusolverDnDestroyParams"]


def test_cli_from_log_errors(tmp_path, capsys):
    assert main(["--from-log", str(STDOUT_LOG), "--section", "nope"]) == 2
    assert "no section 'nope'" in capsys.readouterr().err
    assert main(["--from-log", str(tmp_path / "missing.log")]) == 2
    assert "no such log file" in capsys.readouterr().err
    assert main(["--from-log", str(STDOUT_LOG), "--", "python3"]) == 2


def test_cli_from_single_logger_file(capsys):
    assert main(["--from-log", str(DATA / "cublas-api.log")]) == 0
    printed = capsys.readouterr().out
    assert "only cuBLAS records" in printed and "no nesting" in printed
    assert "cublasDtrsmBatched  side=LEFT uplo=LOWER trans=N diag=UNIT" in printed


def test_cli_folds_a_loop_and_no_fold_lists_it(tmp_path, capsys):
    """A log where the same calls repeat (a loop in the program): folded by default."""
    import gzip

    label = "linalg.cholesky dtype=float64 n=256 batch=1 upper=False"
    with gzip.open(STDOUT_LOG, "rt") as fh:
        lines = fh.read().splitlines()
    body = lines[lines.index(f"#### {label}") + 1:lines.index(f"#### end {label}")]
    log = tmp_path / "loop.log"
    log.write_text("\n".join(body * 3) + "\n")
    assert main(["--from-log", str(log)]) == 0
    folded = capsys.readouterr().out
    assert "× 3  the 2 calls below, repeated back to back" in folded
    assert folded.count("cusolverDnXpotrf ") == 1
    assert main(["--from-log", str(log), "--no-fold"]) == 0
    listed = capsys.readouterr().out
    assert listed.count("cusolverDnXpotrf ") == 3 and "repeated back to back" not in listed


def test_cli_json_to_stdout_is_pure_json(capsys):
    label = "cholesky_inverse " + tag()
    assert main(["--from-log", str(STDOUT_LOG), "--section", label, "--json", "-"]) == 0
    captured = capsys.readouterr()
    d = json.loads(captured.out)  # nothing but the JSON on stdout
    assert d["schema"] == "cusolver-trace/trace/3"
    assert "cusolverDnXpotrs" in captured.err  # the tree went to stderr


def test_cli_does_not_wrap_lines_when_piped(capsys):
    label = "cholesky_inverse " + tag()
    assert main(["--from-log", str(STDOUT_LOG), "--section", label]) == 0
    out = capsys.readouterr().out
    assert ("cusolverDnXpotrs  uplo=LOWER n=256 nrhs=256 dataTypeA=CUDA_R_64F lda=256 "
            "dataTypeB=CUDA_R_64F ldb=256") in out
