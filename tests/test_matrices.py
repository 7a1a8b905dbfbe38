"""Input matrices (cusolver_trace.matrices)."""
import math
import sys

import numpy as np
import pytest
import scipy.io
import scipy.linalg.lapack as lapack
import scipy.sparse as sp
import torch
from hypothesis import given, settings, strategies as st

from cusolver_trace.errors import InputFileError

from cusolver_trace import checks as C
from cusolver_trace import matrices as M
from cusolver_trace._dtypes import SUPPORTED_DTYPES, dtype_info


def _hermitian_exactly(A: torch.Tensor) -> bool:
    return torch.equal(A, A.mH.resolve_conj()) and (
        not A.is_complex() or bool((A.diagonal(dim1=-2, dim2=-1).imag == 0).all()))


def _potrf_info(A: torch.Tensor) -> list[int]:
    """scipy's LAPACK ?potrf info for each matrix of the batch."""
    potrf = getattr(lapack, dtype_info(A.dtype).prefix + "potrf")
    return [potrf(a, lower=1)[1] for a in A.reshape(-1, *A.shape[-2:]).numpy()]


# --------------------------------------------------------------------------- spd
@pytest.mark.parametrize("dtype", SUPPORTED_DTYPES)
def test_spd_shape_dtype_hermitian(dtype):
    A = M.spd(9, batch=(2, 3), dtype=dtype, seed=1)
    assert A.shape == (2, 3, 9, 9) and A.dtype == dtype_info(dtype).torch
    assert _hermitian_exactly(A)
    assert M.spd(4, batch=5, dtype=dtype).shape == (5, 4, 4)
    assert _potrf_info(A) == [0] * 6


@pytest.mark.parametrize("cond", [10.0, 1e6])
@pytest.mark.parametrize("mode", M.MODES)
def test_spd_condition_number(cond, mode):
    A = M.spd(64, cond=cond, mode=mode, seed=2, batch=2)
    c = M.achieved_cond(A)
    assert c.per_matrix == pytest.approx([cond, cond], rel=0.01)
    lam = torch.linalg.eigvalsh(A[0]).flip(-1)
    assert lam[0] == pytest.approx(1, rel=1e-9) and lam[-1] == pytest.approx(1 / cond, rel=0.01)
    if mode == "arithmetic":
        steps = lam[:-1] - lam[1:]
        assert steps.numpy() == pytest.approx(np.full(63, steps.mean().item()), rel=1e-6)


def test_spd_seeds_reproducible_across_dtypes():
    a = M.spd(8, seed=11, batch=2)
    assert torch.equal(a, M.spd(8, seed=11, batch=2))
    assert not torch.equal(a, M.spd(8, seed=12, batch=2))
    assert torch.equal(M.spd(8, seed=11, batch=2, dtype="float32"), a.float())
    z = M.spd(8, seed=11, dtype="complex128")
    assert torch.equal(M.spd(8, seed=11, dtype="complex64"), z.to(torch.complex64))
    assert z.imag.abs().max() > 0.01  # Haar unitary, not orthogonal


def test_spd_small_and_errors():
    assert M.spd(0).shape == (0, 0) and M.spd(0, batch=3).shape == (3, 0, 0)
    assert M.spd(1, cond=100).item() == pytest.approx(1.0)
    with pytest.raises(ValueError):
        M.spd(4, cond=0.5)
    with pytest.raises(ValueError):
        M.spd(4, mode="random")
    with pytest.raises(TypeError):
        M.spd(4, dtype="float16")


# --------------------------------------------------------------------------- LAPACK types
@pytest.mark.parametrize("dtype", SUPPORTED_DTYPES)
@pytest.mark.parametrize("kind", M.LAPACK_TYPES)
def test_lapack_types(kind, dtype):
    n = 7
    tm = M.lapack_test_matrix(kind, n, dtype=dtype, seed=3, batch=2)
    A = tm.A
    assert A.shape == (2, n, n) and _hermitian_exactly(A) and tm.kind == f"lapack:{kind}"
    assert _potrf_info(A) == [tm.expected_info] * 2
    if kind.startswith("zero-"):
        k = tm.expected_info - 1
        assert tm.expected_info == {"zero-first": 1, "zero-last": n, "zero-middle": 4}[kind]
        assert (A[:, k, :] == 0).all() and (A[:, :, k] == 0).all()
        return
    # every positive definite type passes the factorization test at its scale
    L = torch.from_numpy(np.stack([np.tril(getattr(lapack, dtype_info(dtype).prefix + "potrf")(
        a, lower=1)[0]) for a in A.numpy()]))
    assert C.pot01(A, L) < C.THRESHOLD
    prec = 2 * dtype_info(dtype).lapack_eps
    expected_cond = {"ill-sqrt": math.sqrt(0.1 / prec), "ill": 0.1 / prec}.get(kind, 2.0)
    assert tm.cond == expected_cond
    if kind != "ill":  # an ill type's cond is at the edge of the working precision
        assert M.achieved_cond(A) == pytest.approx(expected_cond, rel=0.05)
    norm2 = torch.linalg.matrix_norm(A.to(torch.complex128), 2)
    scale = {"small": 0.25 * float(np.finfo(dtype_info(dtype).real_name).tiny) / prec}
    scale["large"] = 1 / scale["small"]
    assert norm2.numpy() == pytest.approx([scale.get(kind, 1.0)] * 2, rel=1e-3)
    if kind == "diagonal":
        assert torch.equal(A, torch.diag_embed(A.diagonal(dim1=-2, dim2=-1)))


def test_lapack_types_reference_values_and_errors():
    assert M.LAPACK_TYPES == ("diagonal", "cond2", "zero-first", "zero-last", "zero-middle",
                              "ill-sqrt", "ill", "small", "large")
    assert M.lapack_test_matrix("small", 3).A.abs().max() < 1e-292
    assert M.lapack_test_matrix("large", 3).A.abs().max() > 1e291
    assert M.lapack_test_matrix("ill", 1).cond == 1.0  # dlatb4: cond 1 for n <= 1
    assert M.lapack_test_matrix("zero-middle", 1).expected_info == 1
    with pytest.raises(ValueError):
        M.lapack_test_matrix("zero-first", 0)
    with pytest.raises(ValueError):
        M.lapack_test_matrix("singular", 4)


# --------------------------------------------------------------------------- classic3
@pytest.mark.parametrize("dtype", SUPPORTED_DTYPES)
def test_classic3(dtype):
    tm = M.classic_spd3(dtype=dtype)
    assert torch.equal(tm.L @ tm.L.mH, tm.A) and tm.expected_info == 0
    assert _potrf_info(tm.A) == [0]
    neg = M.classic_spd3(negative=True, dtype=dtype)
    assert torch.equal(neg.A, -tm.A) and neg.expected_info == 1 and neg.L is None
    assert _potrf_info(neg.A) == [1]
    assert tm.cond == pytest.approx(float(np.linalg.cond(tm.A.numpy())))


# --------------------------------------------------------------------------- files
def test_mtx_symmetric_round_trip(tmp_path):
    A = M.spd(6, seed=4)
    path = tmp_path / "a.mtx"
    scipy.io.mmwrite(path, A.numpy(), symmetry="symmetric")
    assert "symmetric" in path.read_text().splitlines()[0]
    B = M.from_file(path)
    assert B.dtype == torch.float64 and torch.equal(B, A)
    # a file is never converted silently: asking for another dtype is an error
    with pytest.raises(InputFileError, match="holds float64 data, but float32 was requested"):
        M.from_file(path, dtype="float32")


def test_mtx_sparse_hermitian(tmp_path):
    A = M.spd(5, seed=4, dtype="complex128").numpy()
    A[np.abs(A) < 0.05] = 0
    path = tmp_path / "h.mtx"
    scipy.io.mmwrite(path, sp.coo_matrix(A), symmetry="hermitian")
    assert "coordinate complex hermitian" in path.read_text().splitlines()[0]
    assert torch.equal(M.from_file(path), torch.from_numpy(A))


def test_npy_2d_and_batched(tmp_path):
    A = M.spd(4, batch=3, seed=5, dtype="float32")
    np.save(tmp_path / "b.npy", A.numpy())
    assert torch.equal(M.from_file(tmp_path / "b.npy"), A)
    np.save(tmp_path / "i.npy", np.array([[2, 1], [1, 2]]))
    with pytest.raises(InputFileError, match="int64"):  # unsupported dtypes are not converted
        M.from_file(tmp_path / "i.npy")
    np.save(tmp_path / "be.npy", A.numpy()[0].astype(">f8"))
    assert torch.equal(M.from_file(tmp_path / "be.npy"), A[0].double())


def test_file_rounding_noise_is_symmetrized(tmp_path):
    A = M.spd(5, seed=6).numpy()
    A[3, 1] = np.nextafter(A[3, 1], 1.0)
    np.save(tmp_path / "n.npy", A)
    B = M.from_file(tmp_path / "n.npy")
    assert _hermitian_exactly(B) and np.abs(B.numpy() - A).max() < 1e-16


def test_file_errors(tmp_path):
    np.save(tmp_path / "r.npy", np.ones((3, 4)))
    with pytest.raises(ValueError, match="not square"):
        M.from_file(tmp_path / "r.npy")
    A = np.eye(3)
    A[0, 2] = 0.5
    np.save(tmp_path / "u.npy", A)
    # content is not judged at read time (the ops read one triangle; users compare such
    # inputs on purpose): non-symmetric, non-Hermitian and non-finite files come back as stored
    np.testing.assert_array_equal(M.from_file(tmp_path / "u.npy").numpy(), A)
    np.save(tmp_path / "c.npy", np.diag([1.0 + 1j, 2.0]))
    np.testing.assert_array_equal(M.from_file(tmp_path / "c.npy").numpy(), np.diag([1.0 + 1j, 2.0]))
    np.save(tmp_path / "nan.npy", np.diag([1.0, np.nan]))
    np.testing.assert_array_equal(M.from_file(tmp_path / "nan.npy").numpy(), np.diag([1.0, np.nan]))
    np.save(tmp_path / "z.npy", np.array([[2, 1j], [-1j, 2]]))
    with pytest.raises(ValueError, match="imaginary"):
        M.from_file(tmp_path / "z.npy", dtype="float64")
    (tmp_path / "a.txt").write_text("1")
    with pytest.raises(ValueError, match="unsupported"):
        M.from_file(tmp_path / "a.txt")


# --------------------------------------------------------------------------- digits
def test_digits_kernel():
    pytest.importorskip("sklearn", reason="scikit-learn not installed (pip install 'cusolver-trace[data]')")
    K = M.rbf_kernel_digits(200, jitter=1e-6)
    assert K.shape == (200, 200) and _hermitian_exactly(K)
    assert torch.allclose(K.diagonal(), torch.full((200,), 1 + 1e-6, dtype=torch.float64))
    assert torch.linalg.cholesky_ex(K).info == 0
    assert M.rbf_kernel_digits(50, gamma=1e-3, dtype="float32").dtype == torch.float32
    assert M.achieved_cond(M.rbf_kernel_digits(100, gamma=1e-3)) > M.achieved_cond(K[:100, :100])
    with pytest.raises(ValueError):
        M.rbf_kernel_digits(M.DIGITS_SAMPLES + 1)


def test_digits_without_sklearn(monkeypatch):
    monkeypatch.setitem(sys.modules, "sklearn", None)
    monkeypatch.setitem(sys.modules, "sklearn.datasets", None)
    with pytest.raises(ImportError, match=r"pip install 'cusolver-trace\[data\]'"):
        M.rbf_kernel_digits(10)


# --------------------------------------------------------------------------- specs
def test_spec_random_and_lapack():
    s = M.parse_matrix_spec("random:cond=1e6,mode=arithmetic")
    assert s.kind == "random" and s.params == {"cond": 1e6, "mode": "arithmetic"}
    tm = s.make(16, batch=2, dtype="float32", seed=3)
    assert tm.A.shape == (2, 16, 16) and tm.cond == 1e6 and tm.expected_info == 0
    assert torch.equal(tm.A, M.spd(16, batch=2, cond=1e6, mode="arithmetic", dtype="float32", seed=3))
    assert "1e+06" in s.describe()
    assert M.parse_matrix_spec("random").make(4).cond == 2.0
    tm = M.parse_matrix_spec("lapack:zero-middle").make(9)
    assert tm.expected_info == 5 and "zero-middle" in tm.description
    assert M.parse_matrix_spec("lapack:ill").fixed_n() is None


def test_spec_fixed_sizes(tmp_path):
    tm = M.parse_matrix_spec("classic3").make(batch=4)
    assert tm.A.shape == (4, 3, 3) and tm.L.shape == (4, 3, 3)
    assert M.parse_matrix_spec("classic3:negative").make(3).expected_info == 1
    with pytest.raises(ValueError, match="3x3"):
        M.parse_matrix_spec("classic3").make(5)
    np.save(tmp_path / "b.npy", M.spd(4, batch=2).numpy())
    s = M.parse_matrix_spec(f"file:{tmp_path / 'b.npy'}")
    assert s.fixed_n() == 4 and s.make().A.shape == (2, 4, 4) and s.make().expected_info is None
    with pytest.raises(ValueError, match="batch"):
        s.make(batch=3)
    with pytest.raises(ValueError, match="needs a size"):
        M.parse_matrix_spec("random").make()


def test_spec_digits():
    pytest.importorskip("sklearn", reason="scikit-learn not installed (pip install 'cusolver-trace[data]')")
    s = M.parse_matrix_spec("digits:gamma=0.001")
    assert s.params == {"gamma": 0.001} and s.make(30).A.shape == (30, 30)
    assert M.parse_matrix_spec("digits").make(batch=2, n=10).A.shape == (2, 10, 10)


@pytest.mark.parametrize("bad", ["", "gaussian", "random:cond=abc", "random:cond=0.5",
                                 "random:seed=3", "random:mode=log", "lapack:", "lapack:nope",
                                 "classic3:big", "file:", "digits:gamma=-1", "digits:jitter"])
def test_spec_errors(bad):
    with pytest.raises(ValueError, match="expected random"):
        M.parse_matrix_spec(bad)


def test_spec_file_path_with_colon(tmp_path):
    p = tmp_path / "a:b.npy"
    np.save(p, np.eye(2))
    assert M.parse_matrix_spec(f"file:{p}").params["path"] == str(p)
    assert torch.equal(M.parse_matrix_spec(f"file:{p}").make().A, torch.eye(2, dtype=torch.float64))


def test_achieved_cond():
    c = M.achieved_cond(np.stack([np.diag([1.0, 0.5]), np.diag([4.0, 0.0])]))
    assert c.per_matrix.tolist() == [2.0, math.inf] and c == math.inf
    assert M.achieved_cond(torch.zeros(0, 0)) == 1.0


@pytest.mark.parametrize("kw, err", [
    (dict(n=4, batch=-1), ValueError), (dict(n=4, batch=(2, -1)), ValueError),
    (dict(n=-1), ValueError), (dict(n=2.5), TypeError), (dict(n=True), TypeError),
    (dict(n=4, batch=1.5), TypeError), (dict(n=4, batch="2"), TypeError),
    (dict(n=4, device="bogus"), ValueError), (dict(n=4, device="mps"), ValueError),
    (dict(n=4, cond=float("inf")), ValueError), (dict(n=4, cond=float("nan")), ValueError),
    (dict(n=4, cond=0.5), ValueError),
])
def test_spd_refuses_bad_arguments_with_documented_errors(kw, err):
    from cusolver_trace.matrices import spd

    n = kw.pop("n")
    with pytest.raises(err):
        spd(n, **kw)


def test_spd_on_a_missing_gpu_and_lapack_matrix_with_negative_n():
    import torch

    from cusolver_trace.errors import GPUUnavailableError
    from cusolver_trace.matrices import lapack_test_matrix, spd

    if not torch.cuda.is_available():
        with pytest.raises(GPUUnavailableError):
            spd(4, device="cuda")
    with pytest.raises(ValueError):
        lapack_test_matrix("ill", -2)
    assert spd(3, batch=(2, 1)).shape == (2, 1, 3, 3)


@settings(max_examples=150, deadline=None)
@given(
    n=st.one_of(st.integers(-3, 6), st.floats(allow_nan=True), st.booleans(),
                  st.none(), st.text(max_size=3)),
    batch=st.one_of(st.integers(-2, 3), st.lists(st.integers(-1, 2), max_size=3),
                      st.floats(allow_nan=True), st.text(max_size=2), st.none()),
    cond=st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-5, 100)),
    device=st.one_of(st.sampled_from(["cpu", "cuda", "cuda:7", "gpu", "mps", "", " cpu"]),
                       st.integers(-1, 2), st.none()))
def test_property_spd_builds_an_spd_matrix_or_raises_a_documented_error(n, batch, cond, device):
    """Any arguments: a Hermitian positive definite batch of the asked shape, or ValueError /
    TypeError / GPUUnavailableError; a list given as batch is left as it was."""
    from cusolver_trace.errors import GPUUnavailableError
    from cusolver_trace.matrices import spd

    before = list(batch) if isinstance(batch, list) else batch
    try:
        A = spd(n, batch=batch, cond=cond, device=device)
    except (ValueError, TypeError, GPUUnavailableError):
        assert (batch == before) if isinstance(batch, list) else True
        return
    dims = (batch,) if isinstance(batch, int) else tuple(batch)
    assert A.shape == (*dims, n, n) and isinstance(n, int) and n >= 0 and 1 <= cond < float("inf")
    assert batch == before
    if A.numel():
        A = A.cpu()
        assert torch.equal(A, A.mH)
        if cond <= 1e12:   # beyond, rounding to float64 may leave the smallest eigenvalue <= 0
            assert bool((torch.linalg.eigvalsh(A) > 0).all())


def test_a_deterministic_source_repeated_over_a_batch_says_so():
    """--batch 2 with one matrix (a file, classic3, digits) runs a batch of copies: the label
    says so, where it said nothing before; one matrix or a batched source keeps its label."""
    from cusolver_trace.matrices import parse_matrix_spec

    spec = parse_matrix_spec("classic3")
    one, two = spec.make(), spec.make(batch=2)
    assert "repeated" not in one.description
    assert two.description == one.description + ", the same matrix repeated over batch 2"
    assert torch.equal(two.A[0], one.A) and torch.equal(two.A[1], one.A)
    assert "repeated over batch 2x3" in spec.make(batch=(2, 3)).description
