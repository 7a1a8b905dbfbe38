"""General (non-symmetric) test matrices and the --matrix words for them
(cusolver_trace.matrices: general, general_singular, LAPACK's GE types, MatrixSpec.make(
structure="general"), from_file(structure="general"))."""
import math

import numpy as np
import pytest
import scipy.io
import scipy.linalg.lapack as lapack
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from cusolver_trace import checks as C
from cusolver_trace import matrices as M
from cusolver_trace._dtypes import SUPPORTED_DTYPES, dtype_info
from cusolver_trace.errors import GPUUnavailableError


def _getrf_info(A: torch.Tensor) -> list[int]:
    """scipy's LAPACK ?getrf info for each matrix of the batch."""
    getrf = getattr(lapack, dtype_info(A.dtype).prefix + "getrf")
    return [getrf(a)[2] for a in A.reshape(-1, *A.shape[-2:]).numpy()]


def _sv(A: torch.Tensor) -> torch.Tensor:
    return torch.linalg.svdvals(A.to(torch.complex128 if A.is_complex() else torch.float64))


# --------------------------------------------------------------------------- general
@pytest.mark.parametrize("dtype", SUPPORTED_DTYPES)
def test_general_shape_norm_condition_and_not_symmetric(dtype):
    A = M.general(12, batch=(2, 3), cond=1e3, dtype=dtype, seed=1)
    assert A.shape == (2, 3, 12, 12) and A.dtype == dtype_info(dtype).torch
    assert not torch.equal(A, A.mH.resolve_conj())
    s = _sv(A)
    tol = 1e-10 if dtype in ("float64", "complex128") else 1e-3
    assert s[..., 0].numpy() == pytest.approx(np.ones((2, 3)), rel=tol)          # ‖A‖₂ = 1
    assert M.achieved_cond(A, structure="general").per_matrix == pytest.approx(
        np.full((2, 3), 1e3), rel=tol * 10)
    assert _getrf_info(A) == [0] * 6
    if dtype_info(dtype).is_complex:
        assert A.imag.abs().max() > 0.01          # Haar unitary, not orthogonal


@pytest.mark.parametrize("mode", M.MODES)
def test_general_singular_values_follow_the_mode(mode):
    s = _sv(M.general(9, cond=100.0, mode=mode, seed=3))
    want = M._sigma(9, 100.0, mode)
    assert s.numpy() == pytest.approx(want.numpy(), rel=1e-10)


def test_general_seeds_reproducible_and_float32_is_the_rounded_float64():
    a = M.general(8, seed=11, batch=2)
    assert torch.equal(a, M.general(8, seed=11, batch=2))
    assert not torch.equal(a, M.general(8, seed=12, batch=2))
    assert torch.equal(M.general(8, seed=11, batch=2, dtype="float32"), a.float())
    z = M.general(8, seed=11, dtype="complex128")
    assert torch.equal(M.general(8, seed=11, dtype="complex64"), z.to(torch.complex64))
    # U and V are drawn independently: not the Hermitian matrix of the same seed
    assert not torch.allclose(a, M.spd(8, seed=11, batch=2))


def test_general_small_and_errors():
    assert M.general(0).shape == (0, 0) and M.general(0, batch=3).shape == (3, 0, 0)
    assert M.general(1, cond=100).abs().item() == pytest.approx(1.0)
    assert M.general(3, batch=(2, 0)).shape == (2, 0, 3, 3)
    for kw, err in [(dict(cond=0.5), ValueError), (dict(cond=math.inf), ValueError),
                    (dict(mode="random"), ValueError), (dict(dtype="float16"), TypeError),
                    (dict(batch=-1), ValueError), (dict(device="mps"), ValueError)]:
        with pytest.raises(err):
            M.general(4, **kw)
    if not torch.cuda.is_available():
        with pytest.raises(GPUUnavailableError):
            M.general(4, device="cuda")


# --------------------------------------------------------------------------- general_singular
@pytest.mark.parametrize("dtype", SUPPORTED_DTYPES)
@pytest.mark.parametrize("k", [1, 4, 7])
def test_general_singular_column_k_zero_getrf_info_k(dtype, k):
    A = M.general_singular(7, k, batch=3, dtype=dtype, seed=k)
    assert A.shape == (3, 7, 7) and (A[..., :, k - 1] == 0).all()
    assert _getrf_info(A) == [k] * 3
    assert (torch.linalg.det(A) == 0).all()
    others = torch.cat([A[..., :, :k - 1], A[..., :, k:]], -1)
    assert torch.equal(others, torch.cat([M.general(7, batch=3, dtype=dtype, seed=k)[..., :, :k - 1],
                                          M.general(7, batch=3, dtype=dtype, seed=k)[..., :, k:]], -1))


@pytest.mark.parametrize("k", [0, 8, -1, 2.0, True, "3", None])
def test_general_singular_refuses_k_outside_1_to_n(k):
    with pytest.raises(ValueError, match=r"within 1\.\.n = 7"):
        M.general_singular(7, k)


# --------------------------------------------------------------------------- LAPACK GE types
@pytest.mark.parametrize("dtype", SUPPORTED_DTYPES)
@pytest.mark.parametrize("kind", M.LAPACK_GE_TYPES)
def test_lapack_ge_types(kind, dtype):
    n = 7
    tm = M.lapack_test_matrix(kind, n, structure="general", dtype=dtype, seed=3, batch=2)
    A = tm.A
    assert A.shape == (2, n, n) and A.dtype == dtype_info(dtype).torch and tm.kind == f"lapack:{kind}"
    assert _getrf_info(A) == [tm.expected_info] * 2
    assert "LAPACK GE type" in tm.description
    if kind.startswith("zero-"):
        first = {"zero-first": 1, "zero-last": n, "zero-half": n // 2 + 1}[kind]
        last = n if kind == "zero-half" else first
        assert tm.expected_info == first
        kept = torch.cat([A[..., :, :first - 1], A[..., :, last:]], -1)
        assert (A[..., :, first - 1:last] == 0).all() and (kept != 0).all()
        return
    prec = 2 * dtype_info(dtype).lapack_eps
    expected_cond = {"ill-sqrt": math.sqrt(0.1 / prec), "ill": 0.1 / prec}.get(kind, 2.0)
    assert tm.cond == expected_cond
    if kind != "ill":  # at the edge of the working precision
        assert M.achieved_cond(A, structure="general") == pytest.approx(expected_cond, rel=0.05)
    small = 0.25 * float(np.finfo(dtype_info(dtype).real_name).tiny) / prec
    assert _sv(A)[..., 0].numpy() == pytest.approx(
        [{"small": small, "large": 1 / small}.get(kind, 1.0)] * 2, rel=1e-3)
    if kind == "diagonal":
        assert torch.equal(A, torch.diag_embed(A.diagonal(dim1=-2, dim2=-1)))
    if kind in ("upper", "lower"):
        tri = A.triu() if kind == "upper" else A.tril()
        assert torch.equal(A, tri) and not torch.equal(A, torch.diag_embed(A.diagonal(dim1=-2, dim2=-1)))
    # LAPACK's LU of every nonsingular type passes dget01 at its scale
    getrf = getattr(lapack, dtype_info(dtype).prefix + "getrf")
    out = [getrf(a) for a in A.numpy()]
    LU = torch.from_numpy(np.stack([o[0] for o in out]))
    piv = torch.from_numpy(np.stack([o[1] for o in out]) + 1)
    assert C.get01(A, LU, piv) < C.THRESHOLD


def test_lapack_types_keep_their_structure_apart():
    assert M.LAPACK_GE_TYPES == ("diagonal", "upper", "lower", "cond2", "zero-first", "zero-last",
                                 "zero-half", "ill-sqrt", "ill", "small", "large")
    with pytest.raises(ValueError, match="GE test type 'zero-middle'"):
        M.lapack_test_matrix("zero-middle", 4, structure="general")
    with pytest.raises(ValueError, match="PO test type 'upper'"):
        M.lapack_test_matrix("upper", 4)
    with pytest.raises(ValueError, match="structure"):
        M.lapack_test_matrix("cond2", 4, structure="symmetric")
    with pytest.raises(ValueError):
        M.lapack_test_matrix("zero-half", 0, structure="general")
    assert M.lapack_test_matrix("zero-half", 1, structure="general").expected_info == 1
    assert M.lapack_test_matrix("ill", 1, structure="general").cond == 1.0   # dlatb4: n <= 1
    # the positive definite types are unchanged by the general ones
    po = M.lapack_test_matrix("cond2", 5, seed=2)
    assert torch.equal(po.A, po.A.mH) and po.description.startswith("LAPACK PO type 2")


# --------------------------------------------------------------------------- --matrix words
def test_spec_general_words_make_the_documented_matrices():
    make = dict(batch=2, dtype="float32", seed=5, structure="general")
    tm = M.parse_matrix_spec("random").make(6, **make)
    assert torch.equal(tm.A, M.general(6, batch=2, dtype="float32", seed=5))
    assert tm.expected_info == 0 and tm.cond == 2.0 and "random general" in tm.description
    tm = M.parse_matrix_spec("random:cond=1e6,mode=arithmetic").make(6, **make)
    assert torch.equal(tm.A, M.general(6, batch=2, cond=1e6, mode="arithmetic", dtype="float32",
                                       seed=5))
    tm = M.parse_matrix_spec("singular:k=3").make(6, **make)
    assert torch.equal(tm.A, M.general_singular(6, 3, batch=2, dtype="float32", seed=5))
    assert tm.expected_info == 3 and _getrf_info(tm.A) == [3, 3] and "column 3 zero" in tm.description
    assert M.parse_matrix_spec("singular:k=2,cond=10").make(4, structure="general").cond == 10.0
    for t in M.LAPACK_GE_TYPES:
        tm = M.parse_matrix_spec(f"lapack:{t}").make(6, **make)
        assert tm.expected_info == M.lapack_test_matrix(t, 6, structure="general").expected_info
        assert torch.equal(tm.A, M.lapack_test_matrix(t, 6, structure="general", batch=2,
                                                       dtype="float32", seed=5).A)
    # the same words keep today's Hermitian positive definite matrices by default
    assert torch.equal(M.parse_matrix_spec("random").make(6, seed=5).A, M.spd(6, seed=5))
    # a condition number float32 cannot hold is allowed, and said
    tm = M.parse_matrix_spec("random:cond=1e9").make(6, dtype="float32", structure="general")
    assert tm.expected_info is None and "numerically singular in float32" in tm.description


@pytest.mark.parametrize("spec, structure, words", [
    ("classic3", "general", ["'classic3'", "general matrix"]),
    ("classic3:negative", "general", ["'classic3:negative'", "general"]),
    ("digits", "general", ["'digits'", "general"]),
    ("lapack:zero-middle", "general", ["'lapack:zero-middle'", "GE", "general"]),
    ("lapack:upper", "hpd", ["'lapack:upper'", "PO", "hpd"]),
    ("lapack:zero-half", "hpd", ["'lapack:zero-half'", "hpd"]),
    ("singular:k=2", "hpd", ["'singular:k=2'", "Hermitian positive definite"]),
    ("singular:k=9", "general", ["'singular:k=9'", "1..n = 6"]),
])
def test_spec_for_the_other_structure_is_a_clear_error(spec, structure, words):
    with pytest.raises(ValueError) as exc:
        M.parse_matrix_spec(spec).make(6, structure=structure)
    msg = str(exc.value)
    assert "\n" not in msg and all(w in msg for w in words), msg


@pytest.mark.parametrize("bad", ["singular", "singular:", "singular:k=0", "singular:k=-1",
                                 "singular:k=1.5", "singular:k=+2", "singular:k= 2",
                                 "singular:k=2,k=3", "singular:cond=3", "singular:k=2,cond=0.5",
                                 "singular:k=2,mode=log", "singular:k=2,seed=1", "lapack:half",
                                 "Singular:k=2"])
def test_spec_general_word_errors(bad):
    with pytest.raises(ValueError, match="expected random") as exc:
        M.parse_matrix_spec(bad)
    assert repr(bad) in str(exc.value)


def test_spec_needs_n_and_structure_is_checked():
    with pytest.raises(ValueError, match="needs a size"):
        M.parse_matrix_spec("singular:k=1").make(structure="general")
    with pytest.raises(ValueError, match="structure"):
        M.parse_matrix_spec("random").make(4, structure="GE")
    assert M.parse_matrix_spec("singular:k=1").fixed_n() is None


# --------------------------------------------------------------------------- files
def test_general_files_keep_their_values(tmp_path):
    A = M.spd(5, seed=6).numpy()
    A[1, 3] = np.nextafter(A[3, 1], 1.0)   # asymmetric by one ulp: hpd reads it as noise
    path = tmp_path / "g.npy"
    np.save(path, A)
    before = path.read_bytes()
    hpd = M.from_file(path)
    assert hpd[3, 1] == hpd[1, 3] and not np.array_equal(hpd.numpy(), A)
    gen = M.from_file(path, structure="general")
    assert np.array_equal(gen.numpy(), A)
    tm = M.parse_matrix_spec(f"file:{path}").make(structure="general")
    assert np.array_equal(tm.A.numpy(), A) and tm.expected_info is None
    assert tm.description == f"matrix from {path}"
    assert M.parse_matrix_spec(f"file:{path}").make(batch=2, structure="general").A.shape == (2, 5, 5)
    G = M.general(5, seed=6).numpy()
    mtx = tmp_path / "g.mtx"
    scipy.io.mmwrite(mtx, G, precision=17)
    assert np.array_equal(M.from_file(mtx, structure="general").numpy(), G)
    assert path.read_bytes() == before
    with pytest.raises(ValueError, match="structure"):
        M.from_file(path, structure="lu")


# --------------------------------------------------------------------------- properties
_DTYPES = st.sampled_from(SUPPORTED_DTYPES)


@settings(max_examples=80, deadline=None)
@given(n=st.integers(0, 9), batch=st.lists(st.integers(0, 3), max_size=2),
       cond=st.floats(1.0, 1e8), mode=st.sampled_from(M.MODES), dtype=_DTYPES,
       seed=st.integers(0, 2**40))
def test_property_general(n, batch, cond, mode, dtype, seed):
    """Shape, dtype, reproducible by seed, ‖A‖₂ = 1 and the condition number asked for
    (within 1 % where the dtype holds it), the batch list untouched."""
    before = list(batch)
    A = M.general(n, batch=batch, cond=cond, mode=mode, dtype=dtype, seed=seed)
    assert batch == before
    assert A.shape == (*batch, n, n) and A.dtype == dtype_info(dtype).torch
    assert torch.equal(A, M.general(n, batch=tuple(batch), cond=cond, mode=mode, dtype=dtype,
                                    seed=seed))
    if A.numel() and n > 1:
        eps = dtype_info(dtype).lapack_eps
        got = M.achieved_cond(A, structure="general").per_matrix
        if cond * eps * n < 1e-3:
            assert got == pytest.approx(np.full(tuple(batch), cond), rel=0.01)
        assert _sv(A)[..., 0].numpy() == pytest.approx(np.ones(tuple(batch)), rel=1e-3)


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 8), k=st.integers(-1, 10), batch=st.integers(0, 2), dtype=_DTYPES,
       seed=st.integers(0, 1000))
def test_property_general_singular(n, k, batch, dtype, seed):
    """getrf's info is k for k within 1..n; anything else is a ValueError naming the range."""
    if not 1 <= k <= n:
        with pytest.raises(ValueError, match=f"within 1..n = {n}"):
            M.general_singular(n, k, batch=batch, dtype=dtype, seed=seed)
        return
    A = M.general_singular(n, k, batch=batch, dtype=dtype, seed=seed)
    assert A.shape == (batch, n, n) and _getrf_info(A) == [k] * batch


_WORDS = st.one_of(
    st.sampled_from(["random", "classic3", "classic3:negative", "digits", "singular", "graded",
                     "graded:decades=3", "spectrum:clustered,cond=1e3", "spectrum:x"]),
    st.builds(lambda t: f"lapack:{t}", st.sampled_from(M.LAPACK_TYPES + M.LAPACK_GE_TYPES
                                                        + M.LAPACK_SY_TYPES + ("x",))),
    st.builds(lambda k, c: f"singular:k={k}" + (f",cond={c}" if c else ""),
              st.one_of(st.integers(-2, 12).map(str), st.sampled_from(["", "a", "1e1", "03"])),
              st.sampled_from(["", "10", "1e6", "0.5", "nan"])),
    st.builds(lambda c, m: f"random:cond={c}" + (f",mode={m}" if m else ""),
              st.sampled_from(["2", "1e6", "1e20", "0.9", "x"]), st.sampled_from(["", "arithmetic", "log"])),
    st.text(max_size=12))


@settings(max_examples=200, deadline=None)
@given(spec=_WORDS, n=st.integers(1, 7), structure=st.sampled_from(M.STRUCTURES),
       dtype=_DTYPES, seed=st.integers(0, 100))
def test_property_spec_words(spec, n, structure, dtype, seed):
    """Any word: a matrix of the asked structure, shape and dtype, the same for the same seed,
    whose getrf / potrf info is the one promised; or a one-line ValueError naming the word."""
    try:
        s = M.parse_matrix_spec(spec)
        tm = s.make(n if s.fixed_n(structure) is None else None, dtype=dtype, seed=seed,
                    structure=structure)
    except ValueError as exc:
        msg = str(exc)
        assert "\n" not in msg and (repr(spec) in msg or spec in msg), msg
        return
    except ImportError:       # digits without scikit-learn
        return
    fixed = s.fixed_n(structure)
    assert tm.A.shape[-2:] == ((n, n) if fixed is None else (fixed, fixed))
    assert tm.A.dtype == dtype_info(dtype).torch
    assert torch.equal(tm.A, s.make(n if fixed is None else None, dtype=dtype, seed=seed,
                                    structure=structure).A)
    if structure == "general":
        assert s.kind in ("random", "lapack", "singular")
        if tm.expected_info is not None:
            assert _getrf_info(tm.A.reshape(-1, *tm.A.shape[-2:])) == [tm.expected_info]
    else:
        assert s.kind != "singular" and torch.equal(tm.A, tm.A.mH.resolve_conj())
