"""Property tests (hypothesis) over classes of input, for every public function and the CLI.

Each example asserts: the result is correct (LAPACK's ratios < 30 against what numpy / torch
say, or exact where the answer is exact) or an error of a documented type is raised; the input
is unchanged; and for the CLI, the exit code is 0, 1 or 2 as documented. Classes: NaN / Inf in
each triangle, non positive definite, zero pivots, empty, batch shapes, the four dtypes,
strides and views (column-major, conjugate and negative bits, negative strides, read-only,
requires_grad), NumPy and torch containers. CPU only (the GPU runs the same entry points in
tests/test_gpu_*.py).
"""
from __future__ import annotations

import contextlib
import io

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cusolver_trace as ct
from cusolver_trace import checks, routines
from cusolver_trace.compare import VERDICTS, compare
from cusolver_trace.matrices import spd

SETTINGS = settings(max_examples=40, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
DTYPES = ("float32", "float64", "complex64", "complex128")
BATCHES = ((), (1,), (3,), (2, 2), (0,))
DEFECTS = ("none", "nan_lower", "nan_upper", "inf_lower", "inf_upper", "nan_diag", "not_pd",
           "zero_diag")
VIEWS = ("plain", "colmajor", "conj", "neg", "flip", "readonly_numpy", "numpy", "requires_grad")


@st.composite
def matrices(draw, defects=DEFECTS):
    """(A as the routine gets it, the same values as a plain tensor, what was done to it)."""
    n = draw(st.integers(0, 6))
    batch = draw(st.sampled_from(BATCHES))
    dtype = draw(st.sampled_from(DTYPES))
    defect = draw(st.sampled_from(defects)) if n >= 2 else "none"
    upper = draw(st.booleans())
    A = spd(n, batch=batch, cond=10, dtype=dtype, seed=draw(st.integers(0, 3)))
    if defect != "none" and A.numel():
        i, j = (n - 1, 0) if defect.endswith("lower") else (0, n - 1)
        val = {"nan": float("nan"), "inf": float("inf")}.get(defect.split("_")[0])
        if defect.startswith(("nan_l", "nan_u", "inf")):
            A[..., i, j] = val
        elif defect == "nan_diag":
            A[..., 1, 1] = float("nan")
        elif defect == "not_pd":
            A[..., n - 1, n - 1] = -1.0
        elif defect == "zero_diag":
            A[..., 1, 1] = 0.0
    view = draw(st.sampled_from(VIEWS))
    return _view(A, view), A.clone(), dict(n=n, batch=batch, dtype=dtype, defect=defect,
                                            upper=upper, view=view)


def _view(A: torch.Tensor, view: str):
    """The same values (as a matrix of the op's semantics) through another layout / kind."""
    if view == "colmajor":
        return A.mT.contiguous().mT
    if view == "conj":  # the conjugate of the conjugate: same values, conj bit set
        return A.conj().clone().conj() if A.is_complex() else A
    if view == "neg":
        return -torch._neg_view(A)
    if view == "flip":  # negative strides in NumPy: same values
        return np.flip(np.flip(A.numpy().copy()[..., ::-1, ::-1], -1), -2)
    if view == "readonly_numpy":
        a = A.numpy().copy()
        a.setflags(write=False)
        return a
    if view == "numpy":
        return A.numpy().copy()
    if view == "requires_grad":
        return A.clone().requires_grad_()
    return A


def _values(x) -> torch.Tensor:
    if isinstance(x, np.ndarray):
        return torch.from_numpy(np.ascontiguousarray(x))
    return x.detach().resolve_conj().resolve_neg().clone()


def _same(before: torch.Tensor, after) -> bool:
    a = _values(after)
    return a.shape == before.shape and bool(torch.equal(torch.nan_to_num(before.resolve_conj()),
                                                        torch.nan_to_num(a))) and \
        bool(torch.equal(torch.isnan(before.resolve_conj()), torch.isnan(a)))


def _herm(A: torch.Tensor, upper: bool) -> np.ndarray:
    """The Hermitian matrix the op reads: A's upper / lower triangle."""
    T = A.triu(1) if upper else A.tril(-1)
    return (T + T.mH + torch.diag_embed(A.diagonal(dim1=-2, dim2=-1).real).to(A.dtype)).numpy()


def _is_pd(H: np.ndarray) -> np.ndarray:
    flat = H.reshape(int(np.prod(H.shape[:-2], dtype=np.int64)), *H.shape[-2:])
    out = []
    for h in flat:
        ok = bool(np.all(np.isfinite(h)))
        if ok and h.shape[-1]:
            try:
                np.linalg.cholesky(h.astype(np.complex128 if np.iscomplexobj(h) else np.float64))
            except np.linalg.LinAlgError:
                ok = False
        out.append(ok)
    return np.array(out, bool)


# --------------------------------------------------------------------------- potrf
@SETTINGS
@given(matrices())
def test_potrf_is_correct_or_raises_and_leaves_the_input(m):
    A, values, spec = m
    up = spec["upper"]
    pd = _is_pd(_herm(values, up))
    try:
        L, info = ct.potrf(A, up)
    except ct.NotPositiveDefiniteError as exc:
        assert not pd.all()
        bad = int(np.flatnonzero(~pd)[0])
        assert exc.batch_index in (None, bad)
    else:
        assert pd.all()
        assert np.all(np.asarray(_values(info)) == 0)
        if values.numel():
            assert checks.pot01(values, _values(L), up) < 30
    assert _same(values, A)


@SETTINGS
@given(matrices())
def test_potrf_unchecked_reports_info_per_matrix(m):
    A, values, spec = m
    up = spec["upper"]
    L, info = ct.potrf(A, up, check=False)
    info = np.asarray(_values(info)).reshape(-1)
    pd = _is_pd(_herm(values, up))
    assert info.shape == pd.shape
    np.testing.assert_array_equal(info == 0, pd)
    assert _same(values, A)


# --------------------------------------------------------------------------- the inverse
CPU_METHODS = [m for m in routines.METHOD_NAMES
               if m == "auto" or not routines.INVERSE_METHODS[m].gpu_only]


@SETTINGS
@given(matrices(("none", "nan_lower", "inf_upper", "zero_diag")), st.sampled_from(routines.METHOD_NAMES))
def test_cholesky_inverse_is_correct_or_raises(m, method):
    A, values, spec = m
    up = spec["upper"]
    # a factor: the Cholesky factor of a good A, or the defective matrix's triangle itself
    F = values if spec["defect"] != "none" else torch.linalg.cholesky(values, upper=up) \
        if values.numel() else values
    F_in = _view(F, spec["view"])
    F_before = F.clone()
    if method != "auto" and routines.INVERSE_METHODS[method].gpu_only:
        with pytest.raises(ValueError, match="CUDA"):
            ct.cholesky_inverse(F_in, up, method=method)
        return
    T = F.triu() if up else F.tril()
    tri_finite = bool(torch.isfinite(T).all())
    zero_pivot = bool((T.diagonal(dim1=-2, dim2=-1) == 0).any())
    try:
        X = ct.cholesky_inverse(F_in, up, method=method)
    except ct.SingularFactorError:
        assert zero_pivot
    except ct.NonFiniteError:
        assert not tri_finite or zero_pivot is False
    else:
        assert tri_finite and not zero_pivot
        if F.numel():
            Aref = T.mH @ T if up else T @ T.mH
            assert checks.pot03(Aref, _values(X)) < 30
    assert _same(F_before, F_in)


@SETTINGS
@given(matrices(("none", "zero_diag", "nan_lower")), st.booleans())
def test_trtri_is_correct_or_raises(m, unit):
    A, values, spec = m
    up = spec["upper"]
    T = values.triu() if up else values.tril()
    try:
        X = _values(ct.trtri(A, up, unit_diagonal=unit))
    except ct.SingularFactorError:
        assert not unit and bool((T.diagonal(dim1=-2, dim2=-1) == 0).any())
    else:
        if unit:
            T = T.clone()
            T.diagonal(dim1=-2, dim2=-1).fill_(1)
        if T.numel() and bool(torch.isfinite(T).all()):
            eye = torch.eye(T.shape[-1], dtype=T.dtype)
            err = (T @ X - eye).abs().amax()
            scale = T.abs().amax() * X.abs().amax() * T.shape[-1]
            assert err <= 30 * ct.dtype_info(T.dtype).lapack_eps * max(float(scale), 1.0)
            assert torch.equal(X, X.triu() if up else X.tril())
    assert _same(values, A)


@SETTINGS
@given(matrices(("none",)), st.integers(0, 3))
def test_potrs_solves(m, nrhs):
    A, values, spec = m
    up = spec["upper"]
    if values.numel() == 0:
        return
    F = torch.linalg.cholesky(values, upper=up)
    B = torch.ones(*values.shape[:-1], nrhs, dtype=values.dtype)
    B_in = B.numpy().copy() if isinstance(A, np.ndarray) else B
    F_in = F.numpy().copy() if isinstance(A, np.ndarray) else F
    X = _values(ct.potrs(F_in, B_in, up))
    assert X.shape == B.shape
    if nrhs:
        assert checks.pot02(values, X, B, up) < 30
    assert _same(B, B_in)


# --------------------------------------------------------------------------- compare
@SETTINGS
@given(matrices(), st.sampled_from(("cholesky", "cholesky_inverse", "cholesky_solve")))
def test_compare_gives_a_verdict_and_leaves_the_input(m, op):
    A, values, spec = m
    c = compare(op, A, upper=spec["upper"], timing=False, provenance=False)
    assert c.verdict in VERDICTS
    if spec["defect"] == "none":
        assert c.verdict in ("bitwise-equal", "within-tolerance"), (c.verdict, c.notes)
    assert c.verdict != "MISMATCH" or c.info_agree is False or c.nan_mismatches
    assert _same(values, A)
    with contextlib.redirect_stdout(io.StringIO()) as buf:
        str(c), repr(c)
    assert buf.getvalue() == ""


# --------------------------------------------------------------------------- the command line
def _exit(argv) -> int:
    from cusolver_trace.cli import main

    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()) as err:
        try:
            code = main(argv)
        except SystemExit as e:  # argparse
            code = e.code
    assert "Traceback" not in err.getvalue()
    return code


_TOKENS = st.one_of(st.integers(-3, 40).map(str), st.sampled_from(
    ["", "x", "1e3", "nan", "-0", "4,8", "4,", ",", "0x10", " 4", "9" * 30, "L", "U", "lower",
     "UPPER", "up", "float16", "float64", "complex64", "cuda:9", "cpu", "gpu"]))
_FLAGS = ("--n", "--batch", "--nrhs", "--uplo", "--dtype", "--repeat", "--warmup", "--seed",
          "--device", "--preferred")


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(("cholesky", "cholesky_inverse", "cholesky_solve")),
       st.lists(st.tuples(st.sampled_from(_FLAGS), _TOKENS), max_size=3))
def test_cli_exit_codes_are_0_1_or_2(op, flags):
    argv = ["compare", "--op", op, "--n", "4", "--repeat", "0"]
    for flag, value in flags:
        argv += [flag, value]
    assert _exit(argv) in (0, 1, 2)


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 9), st.sampled_from(("L", "U", "lower", "upper", "Lower,UPPER")),
       st.sampled_from(DTYPES))
def test_cli_valid_values_agree(n, uplo, dtype):
    assert _exit(["compare", "--op", "cholesky_inverse", "--n", str(n), "--uplo", uplo,
                  "--dtype", dtype, "--repeat", "0"]) == 0


_SWEEP_FLAGS = ("--batch", "--nrhs", "--dtype", "--method", "--shard", "--cond", "--seed",
                "--repeat", "--warmup", "--gpus", "--device")
_SWEEP_TOKENS = st.one_of(_TOKENS, st.sampled_from(
    ["torch", "potri", "auto", "torch,,potri", "0/1", "1/2", "5/2", "1/0", "a/b", "all", "1e3",
     "inf", "-1e3", "0.5"]))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.sampled_from(("cholesky", "cholesky_inverse", "cholesky_solve")),
       st.lists(st.tuples(st.sampled_from(_SWEEP_FLAGS), _SWEEP_TOKENS), max_size=3))
def test_sweep_exit_codes_are_0_1_or_2(tmp_path, op, flags):
    out = tmp_path / "s.json"
    out.unlink(missing_ok=True)  # tmp_path is shared by the examples
    argv = ["sweep", "--op", op, "--n", "3", "--repeat", "1", "--warmup", "0", "--out", str(out)]
    for flag, value in flags:
        argv += [flag, value]
    code = _exit(argv)
    assert code in (0, 1, 2)
    if code == 2:
        assert not out.exists()  # refused before any work


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.binary(max_size=200), st.sampled_from(("--limit", "--section-a", None)), _TOKENS)
def test_diff_exit_codes_and_files_unchanged(tmp_path, data, flag, value):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_bytes(data)
    b.write_text('{"calls": []}')
    before = a.read_bytes(), b.read_bytes()
    argv = ["diff", str(a), str(b)] + ([flag, value] if flag else [])
    assert _exit(argv) in (0, 1, 2)
    assert (a.read_bytes(), b.read_bytes()) == before


# --------------------------------------------------------------------------- the LU family's compare
LU_DEFECTS = ("none", "zero_column", "nan", "inf", "zero")


@st.composite
def general_matrices(draw):
    """(A as compare gets it, the same values as a plain tensor, what was done to it): general
    matrices of every dtype, batch shape and layout, with the LU family's defects."""
    from cusolver_trace.matrices import general

    n = draw(st.integers(0, 6))
    batch = draw(st.sampled_from(BATCHES))
    dtype = draw(st.sampled_from(DTYPES))
    defect = draw(st.sampled_from(LU_DEFECTS)) if n >= 2 else "none"
    A = general(n, batch=batch, cond=10, dtype=dtype, seed=draw(st.integers(0, 3)))
    if A.numel():
        if defect == "zero_column":
            A[..., :, n - 1] = 0
        elif defect in ("nan", "inf"):
            A[..., n - 1, 0] = float(defect)
        elif defect == "zero":
            A.zero_()
    view = draw(st.sampled_from(VIEWS))
    return _view(A, view), A.clone(), dict(n=n, batch=batch, defect=defect, view=view)


@SETTINGS
@given(general_matrices(), st.sampled_from(("lu_factor", "lu_solve", "solve", "inv", "det",
                                            "slogdet")), st.booleans())
def test_lu_compare_gives_a_verdict_and_leaves_the_input(m, op, flip):
    """Any general input, any of the LU family's ops and options: a verdict (no exception),
    MISMATCH never for a healthy matrix, and the input unchanged."""
    A, values, spec = m
    options = {"lu_solve": {"left": flip, "adjoint": not flip}, "solve": {"left": flip}}.get(op, {})
    c = compare(op, A, timing=False, provenance=False, **options)
    assert c.verdict in VERDICTS
    if spec["defect"] == "none":
        assert c.verdict in ("bitwise-equal", "within-tolerance"), (c.verdict, c.notes)
    if spec["defect"] == "zero_column" and op in ("lu_factor", "solve", "inv") and spec["n"]:
        assert c.verdict == "failed-alike" or c.torch.info == c.replay.info
    assert c.verdict != "MISMATCH", (spec, c.notes)
    assert _same(values, A)


# --------------------------------------------------------------------------- the eigensolvers
EIG_DEFECTS = ("none", "nan_read", "inf_read", "garbage_unread", "zero", "repeated")


@st.composite
def hermitian_matrices(draw):
    """(A as the op gets it, the same values as a plain tensor, what was done to it): Hermitian
    matrices of every dtype, batch shape and layout; NaN / Inf in the triangle read, garbage in
    the triangle not read, zero, repeated eigenvalues."""
    from cusolver_trace.matrices import hermitian

    n = draw(st.integers(0, 6))
    batch = draw(st.sampled_from(BATCHES))
    dtype = draw(st.sampled_from(DTYPES))
    upper = draw(st.booleans())
    defect = draw(st.sampled_from(EIG_DEFECTS)) if n >= 2 else "none"
    A = hermitian(n, batch=batch, cond=10, dtype=dtype, seed=draw(st.integers(0, 3)),
                  spectrum="repeated" if defect == "repeated" else "geometric")
    read = (0, n - 1) if upper else (n - 1, 0)
    if not A.numel():
        defect = "none"
    else:
        if defect in ("nan_read", "inf_read"):
            A[..., read[0], read[1]] = float("nan" if defect == "nan_read" else "inf")
        elif defect == "garbage_unread":
            A[..., read[1], read[0]] = 1e30
        elif defect == "zero":
            A.zero_()
    view = draw(st.sampled_from(VIEWS))
    return _view(A, view), A.clone(), dict(n=n, batch=batch, dtype=dtype, defect=defect,
                                            upper=upper, view=view)


@SETTINGS
@given(hermitian_matrices(), st.sampled_from(("eigh", "eigvalsh")))
def test_eig_compare_gives_a_verdict_and_leaves_the_input(m, op):
    """Any Hermitian input, either triangle: a verdict (no exception), never MISMATCH, a
    healthy input judged equal or within tolerance, and the input unchanged."""
    A, values, spec = m
    c = compare(op, A, timing=False, provenance=False, UPLO="U" if spec["upper"] else "L")
    assert c.verdict in VERDICTS and c.verdict != "MISMATCH", (spec, c.notes)
    if spec["defect"] in ("none", "garbage_unread", "zero", "repeated"):
        assert c.verdict in ("bitwise-equal", "within-tolerance"), (spec, c.verdict, c.notes)
    assert _same(values, A)


@SETTINGS
@given(hermitian_matrices(), st.sampled_from(("auto", "Xsyevd", "XsyevBatched", "syevd", "torch")))
def test_eigh_is_correct_or_raises_and_leaves_the_input(m, method):
    """ct.eigh / ct.eigvalsh: LAPACK's eigen ratios < 30 on what the triangle says, or a
    documented LinAlgError for NaN / Inf there; the input unchanged."""
    A, values, spec = m
    uplo = "U" if spec["upper"] else "L"
    try:
        w, V = ct.eigh(A, UPLO=uplo, method=method)
        w2 = ct.eigvalsh(A, UPLO=uplo, method=method)
    except (np.linalg.LinAlgError, torch.linalg.LinAlgError):   # method="torch": torch's own
        assert spec["defect"] in ("nan_read", "inf_read"), spec
    else:
        assert spec["defect"] not in ("nan_read", "inf_read") or method == "torch", spec
        if spec["defect"] not in ("nan_read", "inf_read"):
            assert float(checks.eig_check(values, _values(w), _values(V),
                                          upper=spec["upper"])) < 30
            assert float(checks.eig_check(values, _values(w2), upper=spec["upper"])) < 30
    assert _same(values, A)
