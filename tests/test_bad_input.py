"""Regression tests for the defects a new user's trial and ~11,000 adversarial inputs found
(issue "No silent wrong answer, no traceback, exit codes that mean what the README says").
Each test failed on 8718e21. CPU only; the GPU side of the same paths is in
tests/test_gpu_edge.py."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
import torch

import cusolver_trace as ct
from cusolver_trace.cli import main
from cusolver_trace.compare import compare
from cusolver_trace.matrices import spd


def run_cli(*argv):
    """The CLI in a child process: exit code, stdout, stderr (tracebacks are visible)."""
    p = subprocess.run([sys.executable, "-m", "cusolver_trace", *argv], capture_output=True,
                       text=True, timeout=300)
    return p.returncode, p.stdout, p.stderr


# --------------------------------------------------------------------------- silent wrong answers
@pytest.mark.parametrize("text,upper", [("U", True), ("UPPER", True), ("upper", True), ("u", True),
                                        ("L", False), ("Lower", False), ("l", False)])
def test_uplo_is_parsed_strictly(text, upper, tmp_path):
    out = tmp_path / "c.json"
    assert main(["compare", "--op", "cholesky", "--n", "8", "--uplo", text, "--repeat", "0",
                 "--json", str(out)]) == 0
    assert json.loads(out.read_text())[0]["spec"]["options"]["upper"] is upper


@pytest.mark.parametrize("argv", [
    ["compare", "--op", "cholesky", "--n", "4", "--n", "8", "--repeat", "0"],
    ["compare", "--op", "cholesky", "--n=4", "--n", "8", "--repeat", "0"],
    ["compare", "--op", "cholesky", "--op", "cholesky_solve", "--n", "4", "--repeat", "0"],
    ["compare", "--op", "cholesky", "--n", "4", "--repeat", "0", "--repeat", "1"],
    ["sweep", "--op", "cholesky", "--n", "8", "--dtype", "float64", "--dtype", "float32"],
    ["trace", "--json", "-", "--json", "-", "--", sys.executable, "-c", "pass"],
])
def test_an_option_given_twice_is_refused(argv, capsys):
    """argparse keeps the last of a repeated option and drops the first silently (--n 4 --n 8
    ran n = 8 only); every subcommand refuses it, exit 2, naming the option."""
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2
    opt = next(a for i, a in enumerate(argv) if a.startswith("--") and
               a.split("=")[0] in [b.split("=")[0] for b in argv[i + 1:]])
    assert f"{opt.split('=')[0]} given more than once" in capsys.readouterr().err


@pytest.mark.parametrize("argv,hint", [
    (["sweep", "--op", "cholesky", "--n", "-5,6", "--out", "x.json"], "write --n=-5,6"),
    (["compare", "--op", "cholesky", "--n", "-4,8"], "write --n=-4,8"),
    (["sweep", "--op", "cholesky", "--n", "8", "--cond", "-1e3", "--out", "x.json"],
     "write --cond=-1e3"),
])
def test_a_value_starting_with_a_dash_is_explained(argv, hint, capsys):
    """argparse reads a value such as -5,6 as an option (only plain negative numbers, -3 or
    -0.5, pass as values) and says only "expected one argument"; the message says how to
    pass it (one line, exit 2), and passed that way the option's own parser judges it."""
    with pytest.raises(SystemExit) as e:
        main(argv)
    err = capsys.readouterr().err
    assert e.value.code == 2 and err.count("\n") == 1 and hint in err
    opt = hint.split()[-1]
    fixed = [a for a in argv if a not in (opt.split("=")[0], opt.split("=", 1)[1])]
    with pytest.raises(SystemExit) as e:
        main(fixed + [opt])
    err = capsys.readouterr().err
    assert e.value.code == 2 and err.count("\n") == 1 and "expected one argument" not in err


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(tail=st.text(alphabet="0123456789,.xe-", min_size=1, max_size=8))
def test_any_dash_value_of_a_list_option_is_one_line_and_exit_2(tail, capsys):
    """Every value that starts with '-' given to --n, before the option's own parser sees it
    or after (argparse takes plain negative numbers as values): exit 2, one line, no
    traceback; the argument list is not changed."""
    argv = ["compare", "--op", "cholesky", "--n", "-" + tail, "--repeat", "0"]
    before = list(argv)
    with pytest.raises(SystemExit) as e:
        main(argv)
    err = capsys.readouterr().err
    assert e.value.code == 2 and err.count("\n") == 1 and "Traceback" not in err
    assert argv == before


def test_a_missing_value_is_not_given_the_dash_hint(capsys):
    with pytest.raises(SystemExit) as e:
        main(["compare", "--op", "cholesky", "--n"])
    err = capsys.readouterr().err
    assert e.value.code == 2 and "expected one argument" in err and "write" not in err


def test_options_given_once_parse_as_before(tmp_path):
    """The check leaves nothing behind in the parsed arguments, and a repeatable option
    (devices --device) and the program's own arguments after -- are not counted."""
    from cusolver_trace.cli import _common, build_parser

    args = build_parser().parse_args(["compare", "--op", "cholesky", "--n", "4,8", "--repeat", "0"])
    assert not hasattr(args, _common._SEEN) and args.n == [4, 8]
    args = build_parser().parse_args(["devices", "--device", "cpu", "--device", "cpu"])
    assert args.device == ["cpu", "cpu"]
    args = build_parser().parse_args(["trace", "--json", "-", "--", "prog", "--json", "x"])
    assert not hasattr(args, _common._SEEN)


@pytest.mark.parametrize("text", ["up", "foo", "", "lower,", "upperr", "1", " lower", "upper "])
def test_uplo_rejects_what_it_does_not_understand(text, capsys):
    with pytest.raises(SystemExit) as e:
        main(["compare", "--op", "cholesky", "--n", "8", "--uplo", text])
    assert e.value.code == 2
    assert "uplo" in capsys.readouterr().err


def test_trtri_unit_diagonal_returns_ones():
    T = np.array([[4.0, 0.0], [2.0, 3.0]])
    np.testing.assert_array_equal(ct.trtri(T, unit_diagonal=True), [[1.0, 0.0], [-2.0, 1.0]])
    bad = np.array([[np.nan, 0.0], [2.0, 0.0]])  # the diagonal is not read with a unit diagonal
    np.testing.assert_array_equal(ct.trtri(bad, unit_diagonal=True), [[1.0, 0.0], [-2.0, 1.0]])
    np.testing.assert_array_equal(ct.trtri(T.T, upper=True, unit_diagonal=True), [[1.0, -2.0], [0.0, 1.0]])


def test_compare_upper_reads_only_the_upper_triangle():
    A = spd(6, dtype="float64", seed=2)
    garbage = A.clone()
    garbage[..., 3, 0] = float("nan")  # below the diagonal: never read with upper=True
    garbage[..., 5, 1] = 1e300
    for op in ("cholesky", "cholesky_inverse", "cholesky_solve"):
        c = compare(op, garbage, upper=True, timing=False, provenance=False)
        assert c.verdict in ("bitwise-equal", "within-tolerance"), (op, c.verdict)
        assert c.torch.ratio < 30 and c.replay.ratio < 30
    ns = torch.tensor([[4.0, 0.0], [2.0, 3.0]], dtype=torch.float64)  # not Hermitian
    c = compare("cholesky_inverse", ns, upper=True, timing=False, provenance=False)
    assert c.verdict in ("bitwise-equal", "within-tolerance") and c.torch.ratio < 30


def test_identical_nonfinite_outputs_are_equal():
    F = torch.tensor([[float("nan"), 0.0], [1.0, 1.0]], dtype=torch.float64)
    c = compare("cholesky_inverse", factor=F, timing=False, provenance=False)
    assert c.verdict != "MISMATCH" and c.info_agree
    B = spd(4, batch=(3,), seed=1)
    L = torch.linalg.cholesky(B)
    L[1] = 0  # a zero factor in a solve batch: inf / nan on both sides
    c = compare("cholesky_solve", factor=L, timing=False, provenance=False)
    assert c.verdict != "MISMATCH"


def test_empty_input_is_compared_without_lapack(capfd):
    for op in ("cholesky", "cholesky_inverse", "cholesky_solve"):
        c = compare(op, torch.zeros((0, 0), dtype=torch.float64), timing=False, provenance=False)
        assert c.verdict == "bitwise-equal", op
        c = compare(op, torch.zeros((0, 3, 3), dtype=torch.float64), timing=False, provenance=False)
        assert c.verdict == "bitwise-equal", op
    assert "illegal value" not in capfd.readouterr().err
    assert main(["compare", "--op", "cholesky_inverse", "--n", "0", "--repeat", "0"]) == 0


def test_potri_of_an_all_inf_factor_raises():
    with pytest.raises(ct.NonFiniteError, match="non-finite"):
        ct.potri(np.full((3, 3), np.inf))
    with pytest.raises(ct.NonFiniteError):
        ct.cholesky_inverse(torch.full((2, 3, 3), float("inf"), dtype=torch.float64), method="potri")
    assert np.all(np.isinf(ct.potri(np.full((3, 3), np.inf), check=False))
                  | (ct.potri(np.full((3, 3), np.inf), check=False) == 0))


def test_cholesky_replay_reports_a_nan_pivot_as_torch_does():
    A = spd(5, seed=3)
    A[1, 1] = float("nan")
    c = compare("cholesky", A, timing=False, provenance=False)
    assert c.torch.info == c.replay.info == [2]
    assert c.verdict == "failed-alike"
    L, info = ct.potrf(A.numpy(), check=False)
    assert int(info) == 2


def test_a_non_pd_matrix_names_its_minor_and_prints_no_distances():
    A = spd(6, batch=(3,), seed=4)
    A[2, 3, 3] = -5.0
    c = compare("cholesky_inverse", A, timing=False, provenance=False)
    assert any("leading minor of order 4 of batch element 2" in n for n in c.notes)
    assert c.torch.ratio is None and c.replay.ratio is None  # ratios do not apply
    c = compare("cholesky", A, timing=False, provenance=False)
    assert c.verdict == "failed-alike" and c.max_ulp_distance is None and c.max_abs_diff is None
    assert any("batch element 2: the leading minor of order 4" in n for n in c.notes)
    assert "max ULP" not in str(c)


@pytest.mark.parametrize("argv", [
    ["devices", "--n", "0"], ["devices", "--op", "cholesky_solve", "--nrhs", "-1"],
    ["compare", "--op", "cholesky", "--n", "4", "--repeat", "-1"],
    ["compare", "--op", "cholesky", "--n", "4", "--warmup", "-1"],
    ["compare", "--op", "cholesky", "--n", "4", "--batch", "0"],
    ["compare", "--op", "cholesky", "--n", "4", "--batch", "-2"],
    ["compare", "--op", "cholesky_solve", "--n", "4", "--nrhs", "-1"],
    ["compare", "--op", "cholesky", "--n", "4", "--dtype", "float16"],
    ["compare", "--op", "cholesky", "--n", "4,x"],
    ["sweep", "--op", "cholesky", "--n", "4", "--repeat", "0", "--out", "x.json"],
    ["sweep", "--op", "cholesky", "--n", "4", "--shard", "5/2", "--out", "x.json"],
    ["sweep", "--op", "cholesky", "--n", "4", "--cond", "nan", "--out", "x.json"],
    ["devices", "--repeat", "0"],
])
def test_bad_values_are_usage_errors(argv, capsys):
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2
    assert "Traceback" not in capsys.readouterr().err


@pytest.mark.parametrize("extra,needle", [(["--trace-timeout", "5"], "--trace-timeout is for --trace"),
                                          (["--uplo", "lower,lower"], "listed twice"),
                                          (["--uplo", "U,upper"], "listed twice"),
                                          (["--n", "4,4"], "listed twice"),
                                          (["--dtype", "float64,float64"], "listed twice")])
def test_compare_flags_that_would_do_nothing_or_repeat_are_errors(extra, needle, capsys):
    """A flag without effect (--trace-timeout without --trace) or a case asked for twice is
    refused before any work, never silently ignored."""
    try:
        code = main(["compare", "--op", "cholesky", "--n", "4", "--repeat", "0", *extra])
    except SystemExit as e:  # refused by the parser itself
        code = e.code
    assert code == 2
    err = capsys.readouterr().err
    assert needle in err and "Traceback" not in err


def test_nrhs_for_an_op_without_right_hand_sides_is_an_error(capsys):
    assert main(["compare", "--op", "cholesky", "--n", "4", "--nrhs", "3"]) == 2
    assert "takes none" in capsys.readouterr().err


# --------------------------------------------------------------------------- no tracebacks, exit 2
@pytest.mark.parametrize("argv,needle", [
    (["compare", "--op", "cholesky", "--n", "1000000000"], "GiB"),
    (["compare", "--op", "cholesky", "--n", "4", "--device", "gpu"], "--device"),
    (["compare", "--op", "cholesky", "--n", "4", "--device", "mps"], "--device"),
    (["compare", "--op", "cholesky", "--n", "4", "--device", "cuda:7"], "--device"),
    (["devices", "--device", "cuda:1"], "--device"),
    (["compare", "--op", "cholesky", "--n", "4", "--device", "cuda:\u00b9"], "--device"),   # "¹": isdigit, not int
])
def test_predictable_failures_exit_2_with_one_line(argv, needle):
    if (torch.cuda.is_available() and "cuda:7" not in argv and "cuda:1" not in argv
            and "cuda:\u00b9" not in argv):
        pytest.skip("the GPU-less answers are checked on a machine without a GPU")
    rc, out, err = run_cli(*argv)
    assert rc == 2, err
    assert "Traceback" not in err and needle in err
    assert len(err.strip().splitlines()) == 1


def test_output_paths_are_checked_before_any_work(tmp_path):
    for argv in (["compare", "--op", "cholesky", "--n", "4", "--json", str(tmp_path)],
                 ["compare", "--op", "cholesky", "--n", "4", "--json", str(tmp_path / "no" / "x.json")],
                 ["sweep", "--op", "cholesky", "--n", "4", "--out", str(tmp_path / "no" / "r.json")],
                 ["sweep", "--op", "cholesky", "--n", "4", "--out", str(tmp_path)],
                 ["devices", "--json", str(tmp_path)]):
        rc, out, err = run_cli(*argv)
        assert rc == 2 and "Traceback" not in err, (argv, err)
        assert out == "" or "Running" not in out  # nothing ran


def test_an_internal_error_is_exit_3_never_1(monkeypatch, capsys):
    import cusolver_trace.cli.info as info

    def boom(args):
        raise KeyError("a bug")

    monkeypatch.setattr(info, "run", boom)  # the parser is built per call: it takes this one
    assert main(["info"]) == 3
    err = capsys.readouterr().err
    assert "Traceback" in err and "internal error" in err


# --------------------------------------------------------------------------- Python API
def test_requires_grad_neg_and_conj_views_everywhere():
    A = spd(5, dtype="complex128", seed=5).requires_grad_()
    L, _ = ct.potrf(A)
    assert not L.requires_grad
    F = torch.linalg.cholesky(A.detach()).requires_grad_()
    B = torch.ones(5, 2, dtype=torch.complex128, requires_grad=True)
    ct.potrs(F, B)
    ct.potri(F)
    ct.cholesky_inverse(F, method="rec_trtri_lauum")
    ct.trtri(F)
    c = compare("cholesky_inverse", A, timing=False, provenance=False)
    assert c.verdict in ("bitwise-equal", "within-tolerance")
    neg = torch._neg_view(A.detach())  # a negative-bit view: -A
    c = compare("cholesky", -neg, timing=False, provenance=False)
    assert c.verdict in ("bitwise-equal", "within-tolerance")
    c = compare("cholesky", A.detach().conj(), timing=False, provenance=False)
    assert c.verdict in ("bitwise-equal", "within-tolerance")


def test_compare_takes_numpy_and_checks_b():
    A = spd(4, seed=6).numpy()
    c = compare("cholesky_solve", A, np.ones((4, 2)), timing=False, provenance=False)
    assert c.verdict in ("bitwise-equal", "within-tolerance")
    with pytest.raises(ValueError, match="at least 2-D"):
        compare("cholesky_solve", A, np.ones(4))
    with pytest.raises(ValueError, match="must have shape"):
        compare("cholesky_solve", A, np.ones((3, 2)))
    with pytest.raises(ValueError):
        compare("cholesky_inverse", factor=np.ones(3))
    with pytest.raises(TypeError):
        compare("cholesky_inverse", factor="not a matrix")
    with pytest.raises(ValueError, match="meta"):
        compare("cholesky", torch.empty(3, 3, device="meta"))
    with pytest.raises(ValueError):
        compare("cholesky", A, repeat=-1)
    c = compare("cholesky", A, repeat=0, provenance=False)
    assert c.torch.timing is None


def test_compare_solve_with_batch_0_and_0x0():
    for shape in ((0, 3, 3), (0, 0)):
        c = compare("cholesky_solve", torch.zeros(shape, dtype=torch.float64), timing=False,
                    provenance=False)
        assert c.verdict == "bitwise-equal"


def test_compare_negative_stride_and_big_endian_numpy():
    A = spd(5, seed=7).numpy()
    for X in (A[::-1, ::-1], A.astype(">f8")):
        before = X.copy()
        c = compare("cholesky", X, timing=False, provenance=False)
        assert c.verdict in ("bitwise-equal", "within-tolerance")
        np.testing.assert_array_equal(X, before)


# --------------------------------------------------------------------------- notebook and output
def test_one_display_short_repr_and_scoped_html(monkeypatch):
    c = compare("cholesky", spd(4), timing=False, provenance=False)
    r = repr(c)
    assert r.startswith("<Comparison cholesky") and len(r) < 200
    html = c._repr_html_()
    assert html.lstrip().startswith("<pre") and "<body" not in html and "<style" not in html
    import io
    import contextlib

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        text = str(c)
    assert buf.getvalue() == "" and "verdict" in text


def test_render_leaks_no_file_handle():
    import gc
    import os
    import warnings

    c = compare("cholesky", spd(4), timing=False, provenance=False)
    before = len(os.listdir("/proc/self/fd"))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        for _ in range(20):
            c._repr_html_()
            str(c)
        gc.collect()
    assert not [w for w in caught if issubclass(w.category, ResourceWarning)]  # no unclosed file
    assert len(os.listdir("/proc/self/fd")) <= before


def test_json_is_always_a_list_with_seed_and_date(tmp_path, capsys):
    out = tmp_path / "one.json"
    assert main(["compare", "--op", "cholesky", "--n", "4", "--repeat", "0", "--seed", "7",
                 "--json", str(out)]) == 0
    data = json.loads(out.read_text())
    assert isinstance(data, list) and len(data) == 1
    assert data[0]["spec"]["seed"] == 7 and data[0]["spec"]["date"]
    capsys.readouterr()
    assert main(["compare", "--op", "cholesky", "--n", "4", "--repeat", "0", "--json", "-"]) == 0
    stdout = capsys.readouterr().out
    assert isinstance(json.loads(stdout), list)  # pure JSON on stdout
    assert not (tmp_path / "-").exists()


def test_noisy_timing_is_flagged():
    from cusolver_trace.timing import Timing

    assert Timing.from_samples([1.0, 1.0, 2.0, 3.0], "x").noisy
    assert not Timing.from_samples([1.0, 1.01, 1.02, 1.0], "x").noisy


def test_version_flag(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0 and ct.__version__ in capsys.readouterr().out


def test_devices_cpu_default_is_small(tmp_path):
    if torch.cuda.is_available():
        pytest.skip("the CPU default applies on a machine without a GPU")
    out = tmp_path / "d.json"
    rc, _, err = run_cli("devices", "--repeat", "1", "--warmup", "0", "--json", str(out))
    assert rc == 0, err
    assert json.loads(out.read_text())[0]["device"] == "cpu"


# --------------------------------------------------------------------------- a new user's attack (round 2)
def _code(argv) -> tuple[int, str]:
    import contextlib
    import io

    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as e:
            code = e.code
    return code, err.getvalue()


@pytest.mark.parametrize("argv", [
    ["compare", "--op", "cholesky", "--n", "4", "--uplo", "lower", "--upper"],
    ["compare", "--op", "cholesky", "--n", "4", "--json", ""],
    ["devices", "--json", ""],
    ["sweep", "--op", "cholesky", "--n", "4", "--nrhs", "4", "--out", "s.json"],
    ["sweep", "--op", "cholesky", "--n", "4", "--out", "s.json", "--csv", "s.json"],
    ["sweep", "--op", "cholesky", "--n", "4", "--out", "s.json", "--plot", "p.txt"],
    ["sweep", "--op", "cholesky", "--n", "4", "--out", "s.json", "--csv", ""],
    ["compare", "--op", "cholesky", "--matrix", "random:cond=2,cond=3"],
    ["compare", "--op", "cholesky", "--matrix", "random:"],
    ["compare", "--op", "cholesky", "--matrix", "RANDOM"],
    ["compare", "--op", "cholesky", "--matrix", "random:COND=2"],
    ["compare", "--op", "cholesky", "--matrix", "random:cond=inf"],
    ["compare", "--op", "cholesky", "--n", " 8"],
    ["compare", "--op", "cholesky", "--n", "1_000"],
    ["compare", "--op", "cholesky", "--n", "4", "--repeat", "1000000000"],
    ["compare", "--op", "cholesky", "--n", "4", "--seed", "18446744073709551616"],
    ["trace", "--from-log", "tests/data/h200-torch2.11-cu130/cusolverdn-api.log", "--keep-log", "k.log"],
    ["trace", "--from-log", "tests/data/h200-torch2.11-cu130/cusolverdn-api.log", "--timeout", "5"],
    ["trace", "--keep-log", "-", "--", sys.executable, "-c", "pass"],
    ["trace", "--from-log", ""],
])
def test_values_that_used_to_be_ignored_are_errors(argv, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path) if "s.json" in argv else None
    code, err = _code(argv)
    assert code == 2, (argv, err)
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "s.json").exists()  # nothing ran


def test_an_empty_shard_is_not_a_crash(tmp_path):
    out = tmp_path / "s.json"
    code, err = _code(["sweep", "--op", "cholesky_inverse", "--n", "16", "--repeat", "1",
                       "--shard", "1/2", "--out", str(out)])
    assert code == 0, err
    assert json.loads(out.read_text())["results"] == []


def test_an_unknown_section_in_a_run_is_exit_2(tmp_path):
    rc, _, err = run_cli("trace", "--section", "foo", "--", sys.executable, "-c", "print(1)")
    assert rc == 2 and "no section 'foo'" in err


def test_write_errors_name_the_flag_and_path(tmp_path):
    if not pathlib_exists("/dev/full"):
        pytest.skip("no /dev/full here")
    code, err = _code(["compare", "--op", "cholesky", "--n", "4", "--repeat", "0", "--json",
                       "/dev/full"])
    assert code == 2 and "--json /dev/full" in err


def pathlib_exists(p):
    import os

    return os.path.exists(p)


def test_python_flags_and_options_are_strict():
    L = np.linalg.cholesky(spd(4).numpy())
    for fn in (lambda: ct.cholesky_inverse(L, upper="False"), lambda: ct.potrf(L @ L.T, "yes"),
               lambda: ct.potri(L, check="no"), lambda: ct.trtri(L, upper=None),
               lambda: compare("cholesky", spd(4), upper=1)):
        with pytest.raises(TypeError, match="must be True or False"):
            fn()
    for kw in (dict(preferred="foo"), dict(torch_version="foo"), dict(seed=-1)):
        with pytest.raises(ValueError):
            compare("cholesky", spd(4), timing=False, **kw)
    c = compare("cholesky", spd(4), timing=False, provenance=False)
    assert c.spec["matrix"] == "given A"


def test_big_endian_and_read_only_numpy_through_every_method():
    import warnings

    L = np.linalg.cholesky(spd(5).numpy())
    want = ct.cholesky_inverse(L, method="potri")
    ro = L.copy()
    ro.setflags(write=False)
    for X in (L.astype(">f8"), ro):
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no torch "not writable" warning either
            for m in ("torch", "potrs", "potri", "rec_trtri_lauum", "auto"):
                np.testing.assert_allclose(ct.cholesky_inverse(X, method=m), want, rtol=1e-10)


def test_trace_by_keys_are_strict():
    from cusolver_trace.tracing.summary import parse_by

    assert parse_by("shape,routine") == ("routine", "shape")
    for bad in ("routine,routine", "", "foo", "op,"):
        with pytest.raises(ValueError):
            parse_by(bad)


def test_property_trace_timeout_values():
    """Any text for --trace-timeout is a positive finite number of seconds or exit 2 with
    one line (argparse), before any work; the argv list is left as it was."""
    import math

    from hypothesis import given, settings
    from hypothesis import strategies as st

    from cusolver_trace.tracing.command import positive_seconds

    @settings(max_examples=60, deadline=None)
    @given(st.one_of(st.text(max_size=8), st.floats().map(repr), st.integers(-5, 5).map(str)))
    def check(text):
        try:
            v = float(text)
        except ValueError:
            v = None
        ok = v is not None and math.isfinite(v) and v > 0
        try:
            got = positive_seconds(text)
        except Exception as e:  # argparse.ArgumentTypeError
            assert not ok, (text, e)
            assert "\n" not in str(e)
        else:
            assert ok and got == v

    check()
    argv = ["compare", "--op", "cholesky", "--n", "4", "--trace", "--trace-timeout", "-3"]
    before = list(argv)
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2 and argv == before


def test_an_infinite_pivot_is_not_a_failure_a_nan_pivot_is():
    """Reference LAPACK's dpotrf2 stops at a pivot <= 0 or NaN only: +Inf on the diagonal
    factors (info 0, as torch and cuSOLVER), NaN does not; compare agrees with torch there
    (a fresh user's report: an Inf pivot gave info 1 and a false MISMATCH)."""
    import numpy as np

    import cusolver_trace as ct

    L, info = ct.potrf(np.diag([np.inf, 4.0, 4.0]), check=False)
    assert int(info) == 0 and L[0, 0] == np.inf and L[1, 1] == 2.0
    _, info_t = torch.linalg.cholesky_ex(torch.diag(torch.tensor([float("inf"), 4.0, 4.0],
                                                                  dtype=torch.float64)))
    assert int(info_t) == 0
    _, info = ct.potrf(np.diag([4.0, np.nan, 4.0]), check=False)
    assert int(info) == 2
    with pytest.raises(ct.NotPositiveDefiniteError):
        ct.potrf(np.diag([4.0, np.nan, 4.0]))
    r = ct.compare("cholesky", torch.diag(torch.tensor([float("inf"), 4.0, 4.0], dtype=torch.float64)),
                   timing=False)
    assert r.verdict != "MISMATCH", r.verdict


def test_a_reader_that_goes_away_is_141_not_mismatch(tmp_path):
    """``cusolver-trace compare … | head -1``: the broken pipe is the shell's 141 (never 1,
    the CLI's MISMATCH), with no traceback."""
    script = (f"{sys.executable} -m cusolver_trace compare --op cholesky_inverse --n 16,32 "
              "--uplo lower,upper --repeat 0 | head -c 10 > /dev/null; "
              "echo ${PIPESTATUS[0]}")
    done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=300)
    assert done.stdout.strip() == "141", (done.stdout, done.stderr[-2000:])
    assert "Traceback" not in done.stderr


def test_compare_reads_a_read_only_numpy_array_without_torchs_warning():
    import warnings

    import numpy as np

    import cusolver_trace as ct
    from cusolver_trace.matrices import spd

    A = spd(4).numpy()
    A.setflags(write=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        c = ct.compare("cholesky", A, timing=False, provenance=False)
    assert c.verdict in ("bitwise-equal", "within-tolerance") and not A.flags.writeable
    with pytest.raises(TypeError, match="unsupported dtype"):
        ct.compare("cholesky", np.eye(3, dtype=np.longdouble), timing=False, provenance=False)


@pytest.mark.parametrize("flag", [("--device", " cpu"), ("--matrix", " random"), ("--device", "cpu ")])
def test_device_and_matrix_refuse_surrounding_spaces_like_every_other_value(flag, capsys):
    code = None
    try:
        code = main(["compare", "--op", "cholesky", "--n", "4", "--repeat", "0", *flag])
    except SystemExit as e:
        code = e.code
    assert code == 2
    assert flag[1] in capsys.readouterr().err


def test_compare_names_a_non_square_factor_not_an_a_never_passed():
    import cusolver_trace as ct

    with pytest.raises(ValueError, match=r"factor must have shape \(\.\.\., n, n\), got \(2, 3\)"):
        ct.compare("cholesky_inverse", factor=torch.zeros(2, 3, dtype=torch.float64),
                   timing=False, provenance=False)


# --------------------------------------------------------------------------- a fresh user's trial, 2026-12-02
@pytest.mark.parametrize("argv", [
    ["sweep", "--op", "cholesky", "--n", "8", "--shard", "+0/1_0", "--out", "x.json"],
    ["sweep", "--op", "cholesky", "--n", "8", "--shard", " 0/2", "--out", "x.json"],
    ["sweep", "--op", "cholesky", "--n", "8", "--cond", "1_000", "--out", "x.json"],
    ["sweep", "--op", "cholesky", "--n", "8", "--cond", " 1e3", "--out", "x.json"],
    ["compare", "--op", "cholesky", "--n", "8", "--matrix", "random:cond=1_000"],
    ["compare", "--op", "cholesky", "--n", "8", "--matrix", "random:cond= 1e6"],
    ["compare", "--op", "cholesky", "--n", "8", "--matrix", "random:cond=1e6 "],
    ["compare", "--op", "cholesky", "--n", "8", "--trace", "--trace-timeout", "1_0"],
    ["trace", "--timeout", " 10", "--", sys.executable, "-c", "pass"],
    ["trace", "--tree", "--no-tree", "--", sys.executable, "-c", "pass"],
    ["devices", "--device", "cpu", "--device", "cpu", "--n", "8"],
])
def test_numbers_shards_and_flags_are_parsed_strictly(argv, capsys, tmp_path, monkeypatch):
    """float() and int() take ' 1e3', '1_000' and '+0': '--shard +0/1_0' ran shard 0/10, a
    tenth of the sweep, without a word. Numbers are written plainly; contradicting flags and
    a device named twice are refused (exit 2, one line)."""
    monkeypatch.chdir(tmp_path)
    try:
        rc = main(argv)
    except SystemExit as e:   # argparse's refusals exit, the command's own return 2
        rc = e.code
    assert rc == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "error:" in err
    assert not (tmp_path / "x.json").exists()


@given(st.text(max_size=12))
@settings(max_examples=300, deadline=None)
def test_plain_float_takes_exactly_plain_decimal_numbers(text):
    """plain_float: the value float() gives, for text of digits, one point and an exponent
    only; anything else (spaces, underscores, inf / nan, hex, unicode digits) a ValueError."""
    import re

    from cusolver_trace.matrices import plain_float

    plain = re.fullmatch(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?", text, re.ASCII)
    if plain:
        assert plain_float(text) == float(text)
    else:
        with pytest.raises(ValueError, match="written plainly"):
            plain_float(text)


def test_python_m_tracing_is_the_trace_subcommand():
    """``python3 -m cusolver_trace.tracing`` parses as ``cusolver-trace trace``: an option given
    twice is exit 2 with one line (it used to keep the last --json and write only that file)."""
    rc, out, err = run_cli_module("cusolver_trace.tracing", "--json", "a.json", "--json", "b.json",
                                  "--no-timing", "--", sys.executable, "-c", "pass")
    assert rc == 2 and err.count("\n") == 1 and "--json given more than once" in err


def run_cli_module(module, *argv):
    p = subprocess.run([sys.executable, "-m", module, *argv], capture_output=True, text=True,
                       timeout=300)
    return p.returncode, p.stdout, p.stderr


def test_a_random_matrix_past_half_over_eps_is_not_called_positive_definite(tmp_path):
    """compare --matrix random:cond=C with C·eps >= 1/2 runs (failure agreement is worth
    comparing) but its label no longer says PD; sweep refuses such a cond for timing."""
    out = tmp_path / "c.json"
    assert main(["compare", "--op", "cholesky", "--n", "8", "--matrix", "random:cond=1e20",
                 "--repeat", "0", "--json", str(out)]) in (0, 1)
    label = json.loads(out.read_text())[0]["spec"]["matrix"]
    assert "PD" not in label and "not positive definite after rounding" in label
    assert main(["compare", "--op", "cholesky", "--n", "8", "--matrix", "random:cond=1e6",
                 "--repeat", "0", "--json", str(out)]) == 0
    assert "Hermitian PD" in json.loads(out.read_text())[0]["spec"]["matrix"]


def test_an_explicit_batch_must_match_a_batched_file(tmp_path):
    """--batch 1 on a file holding a batch of 2 used to be taken for the default and ran the
    file's batch: now exit 2; no --batch runs the file's batch, --batch 2 too."""
    path = tmp_path / "b.npy"
    np.save(path, np.stack([np.eye(3) * 2, np.eye(3) * 3]))
    out = tmp_path / "c.json"
    base = ["compare", "--op", "cholesky", "--matrix", f"file:{path}", "--repeat", "0",
            "--json", str(out)]
    assert main(base) == 0
    assert json.loads(out.read_text())[0]["spec"]["batch"] == 2
    assert main([*base, "--batch", "2"]) == 0
    assert main([*base, "--batch", "1"]) == 2
    assert main([*base, "--batch", "1,2"]) == 2
    out.unlink()
    assert main([*base, "--batch", "2,1"]) == 2 and not out.exists()   # refused before any work
    assert main([*base, "--keep-batch-dim"]) == 0   # the file's batch, not a batch of 1
    assert json.loads(out.read_text())[0]["spec"]["batch"] == 2


def test_trace_with_a_reader_that_goes_away_is_141():
    """``cusolver-trace trace … | head -1`` is 141 with no message, as every other command (it
    could end with exit 2 and 'output closed early'), whichever write meets the closed pipe."""
    script = (f"{sys.executable} -m cusolver_trace trace --no-timing -- {sys.executable} -c "
              "\"print('x\\n' * 50000)\" | head -1 > /dev/null; echo ${PIPESTATUS[0]}")
    for _ in range(3):
        done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=300)
        assert done.stdout.strip() == "141", (done.stdout, done.stderr[-2000:])
        assert "error" not in done.stderr and "Traceback" not in done.stderr


def test_compare_names_the_factor_of_another_dtype():
    """compare(..., factor=) of another dtype than A: a TypeError naming factor and A (it
    named "A and Ainv", the check it reached later)."""
    A = spd(4)
    L = torch.linalg.cholesky(A)
    with pytest.raises(TypeError, match="factor is float32 but A is float64"):
        compare("cholesky_inverse", A, factor=L.float(), timing=False)
    assert compare("cholesky_inverse", A, factor=L, timing=False).verdict != "MISMATCH"


def test_numbers_that_round_to_zero_and_the_cond_limit():
    """plain_float refuses a nonzero number that rounds to 0 (digits:jitter=1e-400 ran with
    jitter 0); check_cond refuses cond·eps >= 1/2 (the limit itself too), NaN and cond < 1."""
    from cusolver_trace.matrices import check_cond, max_cond, plain_float

    with pytest.raises(ValueError, match="rounds to 0"):
        plain_float("1e-400")
    assert plain_float("0e-999") == 0 and plain_float("1e-320") == 1e-320
    for cond in (max_cond("float32"), float("nan"), -5.0, 0.5):
        with pytest.raises(ValueError):
            check_cond(cond, "float32")
    check_cond(max_cond("float32") * (1 - 1e-9), "float32")
    assert main(["compare", "--op", "cholesky", "--n", "8", "--repeat", "0",
                 "--matrix", "digits:jitter=1e-400"]) == 2


def test_trace_keeps_the_programs_stderr_when_stdouts_reader_goes_away():
    """The program's own stderr (still open) is shown before the exit for the broken pipe;
    it was lost when echoing its stdout met the closed pipe first."""
    prog = ("import sys\nfor i in range(100000): print(i)\n"
            "sys.stderr.write('IMPORTANT: something failed\\n'); sys.exit(5)")
    script = (f"{sys.executable} -m cusolver_trace trace --no-timing -- {sys.executable} -c "
              f"\"{prog}\" | head -1 > /dev/null; echo ${{PIPESTATUS[0]}}")
    done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=300)
    assert done.stdout.strip() == "141", (done.stdout, done.stderr[-2000:])
    assert "IMPORTANT: something failed" in done.stderr and "Traceback" not in done.stderr


def test_compare_digits_takes_any_n_up_to_its_samples():
    """--matrix digits --n 8 was refused ('has n = 1797') though the source takes the first
    n samples for any n <= 1797."""
    assert main(["compare", "--op", "cholesky", "--n", "8", "--matrix", "digits",
                 "--repeat", "0"]) == 0
    assert main(["compare", "--op", "cholesky", "--n", "1800", "--matrix", "digits",
                 "--repeat", "0"]) == 2


@given(text=st.text(alphabet="0123456789/+-_ .e٣", max_size=8),
       repeat=st.sampled_from(["--n", "--dtype", "--method", "--shard"]))
@settings(max_examples=200, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])   # capsys: read each time
def test_shard_and_cond_text_and_repeated_options_parse_strictly(text, repeat, capsys):
    """sweep's --shard I/K and --cond take plain digits only, and any value option given twice
    is refused: each either parses to the plain reading or is exit 2 with one line; the argv
    list is never changed."""
    import re

    from cusolver_trace.cli import build_parser

    def parse(argv):
        before = list(argv)
        try:
            args = build_parser().parse_args(argv)
        except SystemExit as e:
            assert e.code == 2
            err = capsys.readouterr().err
            assert err.count("\n") == 1 and "error:" in err
            args = None
        assert argv == before
        return args

    base = ["sweep", "--op", "cholesky", "--n", "8", "--out", "x.json"]
    args = parse([*base, "--shard", text])
    m = re.fullmatch(r"([0-9]+)/([0-9]+)", text)
    ok = m is not None and 0 <= int(m[1]) < int(m[2])
    assert (args is not None) == ok
    if ok:
        assert tuple(args.shard) == (int(m[1]), int(m[2]))
    args = parse([*base, "--cond", text])
    plain = re.fullmatch(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?", text)
    if args is not None:
        assert plain and args.cond == float(text) and args.cond >= 1
    value = {"--n": "8", "--dtype": "float64", "--method": "torch", "--shard": "0/2"}[repeat]
    assert parse([*base, repeat, value, repeat, value]) is None


def _refuse(name):
    raise AssertionError(f"not JSON: {name}")


@settings(max_examples=60, deadline=None)
@given(st.recursive(st.floats(allow_nan=True, allow_infinity=True) | st.integers() | st.text()
                    | st.none(),
                    lambda inner: st.lists(inner, max_size=4)
                    | st.dictionaries(st.text(max_size=5), inner, max_size=4), max_leaves=20))
def test_property_written_json_is_strict(obj):
    """Every JSON the package writes for a reader goes through _json.dumps: strict JSON
    (no NaN / Infinity tokens) whatever the floats; finite values unchanged, non-finite
    ones null."""
    import json
    import math

    from cusolver_trace import _json

    text = _json.dumps(obj)
    back = json.loads(text, parse_constant=_refuse)

    def same(a, b):
        if isinstance(a, float):
            return b is None if not math.isfinite(a) else a == b
        if isinstance(a, (list, tuple)):
            return isinstance(b, list) and len(a) == len(b) and all(map(same, a, b))
        if isinstance(a, dict):
            return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
        return a == b
    assert same(obj, back)


def test_compare_json_of_a_nan_input_is_strict_json(tmp_path, capsys):
    """A NaN in the input made compare write "asymmetry": NaN, which strict parsers
    refuse; every number in the file is now JSON, a non-finite one null."""
    import json

    A = spd(5).numpy()
    A[2, 1] = np.nan
    f = tmp_path / "nan.npy"
    np.save(f, A)
    out = tmp_path / "c.json"
    code = main(["compare", "--op", "cholesky_inverse", "--matrix", f"file:{f}", "--repeat", "2",
                 "--json", str(out)])
    capsys.readouterr()
    assert code in (0, 1)
    text = out.read_text()
    data = json.loads(text, parse_constant=_refuse)
    assert data[0]["torch"]["nonfinite"] > 0 or data[0]["verdict"] == "failed-alike"


def test_compare_memory_estimate_counts_the_right_hand_sides(capsys):
    """--nrhs huge with a small n used to pass the memory check and fail at allocation (or
    meet the OOM killer): the estimate now counts the n x nrhs matrices too."""
    code = main(["compare", "--op", "cholesky_solve", "--n", "4", "--nrhs", "1000000000",
                 "--device", "cpu"])
    err = capsys.readouterr().err
    assert code == 2 and "nrhs = 1000000000 needs about" in err and "Traceback" not in err
    assert main(["compare", "--op", "cholesky_solve", "--n", "4", "--nrhs", "3", "--repeat", "0",
                 "--device", "cpu"]) == 0


@pytest.mark.parametrize("argv", [
    ["compare", "--op", "cholesky", "--n", "+4"],
    ["compare", "--op", "cholesky", "--n", "4", "--seed", "+1"],
    ["compare", "--op", "cholesky", "--n", "4", "--rep", "2"],          # --repeat, abbreviated
    ["compare", "--op", "cholesky", "--n", "4", "--summ"],              # --summary-only
    ["sweep", "--op", "cholesky", "--n", "4", "--meth", "torch", "--out", "x.json"],
])
def test_plus_signs_and_abbreviated_options_are_refused(argv, capsys, tmp_path, monkeypatch):
    """Integers are plain digits (a '+' was read, while ' 4' and '4_0' were refused) and an
    option is written in full: argparse took any unambiguous prefix (--rep for --repeat),
    which a later option sharing it would silently change."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as stop:
        main(argv + ["--device", "cpu"])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert not (tmp_path / "x.json").exists()


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs Linux's /proc")
def test_an_output_path_that_cannot_be_written_is_refused_before_any_work(capsys, tmp_path,
                                                                          monkeypatch):
    """os.access says yes to root in /proc: the file is now tried before the run (a new one as
    a temporary file beside it, removed at once), not found unwritable after minutes."""
    import importlib

    cli_compare = importlib.import_module("cusolver_trace.cli.compare")
    monkeypatch.setattr(cli_compare, "_profile_last",
                        lambda *a: pytest.fail("work started before the path was checked"))
    assert main(["compare", "--op", "cholesky", "--n", "4", "--device", "cpu", "--json",
                 "/proc/x.json"]) == 2
    assert "/proc/x.json: cannot write there" in capsys.readouterr().err
    monkeypatch.undo()
    out = tmp_path / "c.json"
    assert main(["compare", "--op", "cholesky", "--n", "4", "--device", "cpu", "--repeat", "0",
                 "--json", str(out)]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.json"]   # no check file left


def test_output_paths_are_tried_the_same_way_by_every_command(tmp_path, monkeypatch):
    """One check (_paths.output_problem) for compare, sweep, diff, devices and trace: a
    trailing slash, a name too long, a link into a missing folder or into /proc are refused
    before any work; an existing file keeps its bytes, /dev/null and a pipe are accepted
    (a pipe is not opened: its reader would get an end of file), nothing is left behind."""
    from cusolver_trace._paths import output_problem

    monkeypatch.chdir(tmp_path)
    keep = tmp_path / "keep.json"
    keep.write_text("precious")
    (tmp_path / "dangling.json").symlink_to("/nonexistent-folder/x.json")
    bad = {"new.json/": "is a folder", "a" * 300 + ".json": "cannot write there",
           "dangling.json": "no such folder: /nonexistent-folder", "": "empty file name"}
    if os.path.isdir("/proc/self"):
        (tmp_path / "to-proc.json").symlink_to("/proc/x.json")
        bad["to-proc.json"] = "cannot write there"
    for path, why in bad.items():
        assert why in output_problem(path, "--json"), path
    os.mkfifo(tmp_path / "pipe")
    for path in ("keep.json", "new.json", os.devnull, "pipe"):
        assert output_problem(path, "--json") is None, path
    assert keep.read_text() == "precious"
    before = sorted(p.name for p in tmp_path.iterdir())
    assert "new.json" not in before
    # trace refuses before running the program
    ran = tmp_path / "ran"
    assert main(["trace", "--json", "dangling.json", "--", sys.executable, "-c",
                 f"open({str(ran)!r}, 'w')"]) == 2
    assert not ran.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == before


@pytest.mark.parametrize("value", ["+4", " 4", "4_0", "0", "-1", "9" * 5000])
def test_diff_limit_and_huge_integers_follow_the_integer_rule(value, capsys):
    """diff --limit had its own int() (took '+4', ' 4', '4_0'); a 5000-digit number made
    argparse print 'invalid parse value' with the number: one rule, one short line."""
    with pytest.raises(SystemExit) as stop:
        main(["diff", "a.json", "b.json", "--limit", value])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and "--limit" in err and len(err) < 300


@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")   # numpy's on np.matrix
@pytest.mark.parametrize("fn", [lambda a: ct.potri(np.linalg.cholesky(a)),
                                lambda a: ct.cholesky_inverse(np.linalg.cholesky(a)),
                                lambda a: ct.spd_inverse(a), lambda a: ct.potrf(a)[0]])
def test_numpy_matrix_is_read_as_a_plain_array_and_masked_arrays_are_refused(fn):
    a = np.array([[4.0, 2.0], [2.0, 3.0]])
    want = fn(a)
    m = np.matrix(a)
    got = fn(m)
    assert type(got) is np.ndarray and np.array_equal(got, want)
    assert np.array_equal(m, a)   # unchanged
    with pytest.raises(TypeError, match="masked array"):
        fn(np.ma.masked_array(a, mask=[[0, 1], [0, 0]]))
