"""Reading matrix files (``from_file``, ``--matrix file:PATH``): never a silent wrong input,
a traceback or a crash.

Every bad file must give :class:`InputFileError` (one line naming the file and what is
wrong), a missing one ``FileNotFoundError``; a good file must come back exactly as
NumPy / an independent reading of the Matrix Market text says it holds it; the file is
never modified. scipy's Matrix Market backend can kill the process on malformed text, so
the nastiest files run in a child process.
"""
import gzip
import io
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import scipy.io
import torch

hypothesis = pytest.importorskip("hypothesis", reason="hypothesis not installed (pip install "
                                                      "'cusolver-trace[test]')")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from hypothesis.extra import numpy as hnp  # noqa: E402

from cusolver_trace import matrices as M  # noqa: E402
from cusolver_trace._dtypes import SUPPORTED_DTYPES, dtype_info  # noqa: E402
from cusolver_trace.errors import InputFileError  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
PROPERTY = settings(max_examples=50, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture,
                                           HealthCheck.too_slow])
MM_REAL = "%%MatrixMarket matrix array real general\n"


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def _bad(path, match=None, **kw) -> str:
    """from_file(path) raises InputFileError: one line, naming the file; returns the message."""
    with pytest.raises(InputFileError, match=match) as exc:
        M.from_file(path, **kw)
    msg = str(exc.value)
    assert str(path) in msg and "\n" not in msg, msg
    return msg


# --------------------------------------------------------------------------- an independent reading
def reference_mm(text: bytes) -> np.ndarray:
    """What a Matrix Market text holds, read by the format's definition with Python's
    ``int``/``float`` (no scipy): float64, or complex128 for complex files. Raises
    AssertionError / ValueError where the text does not define a matrix: a wrong entry
    count, an index out of range, an entry given twice, a token that is not a number."""
    # bytes split on ASCII whitespace only (a comment may hold any byte; str.split would also
    # split on U+00A0 and friends, which no Matrix Market reader treats as a separator)
    raw = text.split(b"\n")

    def tokens(line: bytes) -> list:
        return [t.decode("latin-1") for t in line.split()]

    banner = tokens(raw[0])
    assert banner[0] == "%%MatrixMarket" and len(banner) == 5
    fmt, field, symmetry = (t.lower() for t in banner[2:])
    rest = [tokens(ln) for ln in raw[1:] if ln.strip() and not ln.startswith(b"%")]
    size = [int(t) for t in rest[0]]
    body = rest[1:]
    n = size[0]
    assert size[1] == n
    cplx = field == "complex"
    A = np.zeros((n, n), complex if cplx else float)

    def value(tokens):
        if field == "pattern":
            assert not tokens
            return 1.0
        if field == "integer":
            (t,) = tokens
            return float(int(t))
        if cplx:
            re_, im = tokens
            return complex(float(re_), float(im))
        (t,) = tokens
        return float(t)

    def put(i, j, v, seen):
        assert 0 <= i < n and 0 <= j < n and (i, j) not in seen
        seen.add((i, j))
        A[i, j] = v
        if symmetry != "general" and i != j:
            seen.add((j, i))
            A[j, i] = {"symmetric": v, "skew-symmetric": -v,
                       "hermitian": np.conj(v)}[symmetry]

    seen: set = set()
    if fmt == "coordinate":
        assert len(size) == 3 and len(body) == size[2]
        for toks in body:
            i, j = int(toks[0]), int(toks[1])
            assert i >= 1 and j >= 1
            put(i - 1, j - 1, value(toks[2:]), seen)
    else:
        assert len(size) == 2
        start = {"general": None, "symmetric": 0, "hermitian": 0, "skew-symmetric": 1}[symmetry]
        cells = [(i, j) for j in range(n) for i in (range(n) if start is None else range(j + start, n))]
        assert len(body) == len(cells)
        for (i, j), toks in zip(cells, body):
            put(i, j, value(toks), seen)
    return A


def assert_holds(result: torch.Tensor, E: np.ndarray):
    """``result`` is what the file holds, ``E``, in E's dtype, bit for bit; the one
    documented exception: a finite E whose asymmetry is within 100·eps·max|E| comes back
    exactly Hermitian, equal to E wherever E equals its mirror and within that noise
    elsewhere."""
    assert isinstance(result, torch.Tensor) and result.device.type == "cpu"
    R, E = result.numpy(), E.astype(E.dtype.newbyteorder("="))
    assert R.dtype == E.dtype and R.shape == E.shape
    EH = np.conj(np.swapaxes(E, -1, -2))
    with np.errstate(all="ignore"):
        noise = (E.size and np.isfinite(E).all()
                 and np.abs(E - EH).max() <= 100 * dtype_info(E.dtype.name).lapack_eps * np.abs(E).max())
    if not noise:
        np.testing.assert_array_equal(R, E, strict=True)
        return
    assert np.array_equal(R, np.conj(np.swapaxes(R, -1, -2)))
    np.testing.assert_array_equal(R[E == EH], E[E == EH])
    assert np.abs(R - E).max() <= 100 * dtype_info(E.dtype.name).lapack_eps * np.abs(E).max()


def read_checked(path: Path, oracle, **kw):
    """from_file(path): a matrix equal to ``oracle()``, or InputFileError; bytes unchanged."""
    before = path.read_bytes()
    try:
        result = M.from_file(path, **kw)
    except InputFileError as exc:
        msg = str(exc)
        assert str(path) in msg and "\n" not in msg, msg
        result = None
    assert path.read_bytes() == before, "from_file modified the file"
    hypothesis.event("read" if result is not None else "InputFileError")
    if result is not None:
        assert_holds(result, oracle())
    return result


# --------------------------------------------------------------------------- Matrix Market text
_NUM_FORMS = (repr, lambda x: f"{x:.17g}", lambda x: f"{x:.17e}", lambda x: f"{x:.17E}")


@st.composite
def mm_files(draw, n_max=4):
    """A valid Matrix Market text (random layout) and the matrix it holds."""
    fmt = draw(st.sampled_from(["array", "coordinate"]))
    field = draw(st.sampled_from(["real", "double", "integer", "complex"]
                                 + (["pattern"] if fmt == "coordinate" else [])))
    sym = draw(st.sampled_from(["general", "symmetric", "skew-symmetric"]
                               + (["hermitian"] if field == "complex" else [])
                               if field != "pattern" else ["general", "symmetric"]))
    n = draw(st.integers(0, n_max))
    form = draw(st.sampled_from(_NUM_FORMS))
    floats = st.floats(allow_nan=True, allow_infinity=True) | st.sampled_from([0.0, -0.0, 1.0, 0.5])

    def entry(i, j):
        if field == "pattern":
            return 1.0, ""
        if field == "integer":
            v = draw(st.integers(-2**53, 2**53))
            return float(v), str(v)
        re_ = draw(floats)
        if field == "complex":
            im = 0.0 if (sym == "hermitian" and i == j) else draw(floats)
            return complex(re_, im), f"{form(re_)} {form(im)}"
        return re_, form(re_)

    lower = {"general": None, "symmetric": 0, "hermitian": 0, "skew-symmetric": 1}[sym]
    cells = [(i, j) for j in range(n) for i in (range(n) if lower is None else range(j + lower, n))]
    if fmt == "coordinate":
        cells = draw(st.permutations(cells))
        cells = cells[:draw(st.integers(0, len(cells)))]
    A = np.zeros((n, n), complex if field == "complex" else float)
    ws = st.sampled_from(["", " ", "\t", "  "])
    sep = st.sampled_from([" ", "\t", "  "])
    rows = []
    for i, j in cells:
        v, text = entry(i, j)
        A[i, j] = v
        if i != j and sym != "general":
            A[j, i] = {"symmetric": v, "skew-symmetric": -v, "hermitian": np.conj(v)}[sym]
        toks = ([str(i + 1), str(j + 1)] if fmt == "coordinate" else []) + text.split()
        rows.append(draw(ws) + draw(sep).join(toks) + draw(ws))
        if draw(st.integers(0, 9)) == 0:
            rows.append(draw(ws))  # a blank line
    case = draw(st.sampled_from([str.lower, str.upper, str.title]))
    banner = "%%MatrixMarket " + " ".join(case(t) for t in ("matrix", fmt, field, sym))
    comments = draw(st.lists(st.sampled_from(["%", "% a comment", "%%x 1 2", ""]), max_size=2))
    size = f"{n} {n}" + (f" {len(cells)}" if fmt == "coordinate" else "")
    eol = draw(st.sampled_from(["\n", "\r\n"]))
    text = eol.join([banner, *comments, size, *rows]) + draw(st.sampled_from(["", eol]))
    return text.encode(), A


_MUTATION_ALPHABET = list(b"0123456789.eE+-_xX \t\r\n%iInNfFaA,") + [0, 0xFF]


@st.composite
def mutated(draw, text: bytes) -> bytes:
    """``text`` after 1 to 3 random edits: truncation, deletion, insertion, replacement,
    a dropped or doubled line, a dropped final newline, an inserted digit or whitespace."""
    for _ in range(draw(st.integers(1, 3))):
        k = draw(st.integers(0, len(text)))
        op = draw(st.sampled_from(["truncate", "delete", "insert", "replace", "line", "eol",
                                   "digit", "digit", "space"]))  # the last two often stay valid
        if op in ("digit", "space"):
            text = text[:k] + draw(st.sampled_from([b"0", b"1", b"7", b"9"] if op == "digit"
                                                   else [b" ", b"\t", b"\n"])) + text[k:]
        elif op == "truncate":
            text = text[:k]
        elif op == "delete":
            text = text[:k] + text[k + draw(st.integers(1, 4)):]
        elif op == "insert":
            text = text[:k] + bytes(draw(st.lists(st.sampled_from(_MUTATION_ALPHABET),
                                                  min_size=1, max_size=3))) + text[k:]
        elif op == "replace" and text:
            k = min(k, len(text) - 1)
            text = text[:k] + bytes([draw(st.sampled_from(_MUTATION_ALPHABET))]) + text[k + 1:]
        elif op == "line":
            lines = text.split(b"\n")
            i = draw(st.integers(0, len(lines) - 1))
            lines[i:i + 1] = [] if draw(st.booleans()) else [lines[i], lines[i]]
            text = b"\n".join(lines)
        else:
            text = text.rstrip(b"\r\n")
    return text


@PROPERTY
@given(st.data())
def test_property_valid_mtx_reads_exactly(tmp_path, data):
    text, A = data.draw(mm_files())
    gz = data.draw(st.booleans())
    path = _write(tmp_path / ("v.mtx.gz" if gz else "v.mtx"), gzip.compress(text) if gz else text)
    result = read_checked(path, lambda: A)
    assert result is not None, f"a valid file was rejected: {text!r}"
    np.testing.assert_array_equal(reference_mm(text), A)  # the test's own reading agrees


@PROPERTY
@given(st.data())
def test_property_mutated_mtx(tmp_path, data):
    text, _ = data.draw(mm_files(n_max=3))
    bad = data.draw(mutated(text))
    read_checked(_write(tmp_path / "m.mtx", bad), lambda: reference_mm(bad))


@PROPERTY
@given(st.data())
def test_property_gzip_truncations(tmp_path, data):
    text, A = data.draw(mm_files(n_max=3))
    z = gzip.compress(text)
    cut = data.draw(st.integers(0, len(z) - 1))
    path = _write(tmp_path / "t.mtx.gz", z[:cut])
    assert read_checked(path, lambda: A) is None  # every strict prefix of a gzip stream is bad


@PROPERTY
@given(prefix=st.sampled_from([b"", b"%%MatrixMarket matrix ", MM_REAL.encode(),
                               MM_REAL.encode() + b"2 2\n", b"\x93NUMPY", b"\x1f\x8b"]),
       tail=st.binary(max_size=120),
       suffix=st.sampled_from([".mtx", ".npy", ".mtx.gz"]))
def test_property_random_bytes(tmp_path, prefix, tail, suffix):
    raw = prefix + tail
    path = _write(tmp_path / f"r{suffix}", raw)

    def oracle():
        if suffix == ".npy":
            return np.load(io.BytesIO(raw), allow_pickle=False)
        return reference_mm(gzip.decompress(raw) if suffix.endswith(".gz") else raw)

    read_checked(path, oracle)


_NPY_DTYPES = ["float32", "float64", "complex64", "complex128", ">f8", ">c8", "<f4", "float16",
               "int64", "int32", "uint8", "bool", "longdouble", "clongdouble"]


@st.composite
def npy_arrays(draw):
    dt = np.dtype(draw(st.sampled_from(_NPY_DTYPES)))
    ndim = draw(st.integers(0, 4))
    shape = list(draw(st.lists(st.integers(0, 3), min_size=ndim, max_size=ndim)))
    if ndim >= 2 and draw(st.integers(0, 3)):
        shape[-1] = shape[-2]  # usually square
    a = draw(hnp.arrays(dt, tuple(shape)))
    if ndim >= 2 and shape[-1] == shape[-2] and draw(st.booleans()):
        a = (a + np.conj(np.swapaxes(a, -1, -2))) if dt.kind in "fc" else a  # often Hermitian
    return a


@PROPERTY
@given(a=npy_arrays(), requested=st.sampled_from([None, *SUPPORTED_DTYPES]),
       fortran=st.booleans())
def test_property_npy_dtypes_and_shapes(tmp_path, a, requested, fortran):
    path = tmp_path / "a.npy"
    np.save(path, np.asfortranarray(a) if fortran else a)
    supported = a.dtype.name in SUPPORTED_DTYPES
    ok = (supported and a.ndim >= 2 and a.shape[-1] == a.shape[-2]
          and requested in (None, a.dtype.name))
    result = read_checked(path, lambda: a, dtype=requested)
    assert (result is not None) == ok, (a.dtype, a.shape, requested)
    if not supported:
        _bad(path, match="float32, float64, complex64, complex128")
    elif ok is False and a.ndim >= 2 and a.shape[-1] == a.shape[-2]:
        _bad(path, match=f"holds {a.dtype.name} data, but {requested} was requested", dtype=requested)


# --------------------------------------------------------------------------- crashes: child process
_CHILD = textwrap.dedent("""
    import sys
    from cusolver_trace.matrices import from_file
    from cusolver_trace.errors import InputFileError
    for path in sys.argv[1:]:
        try:
            A = from_file(path)
        except (InputFileError, FileNotFoundError) as exc:
            print("2", exc, flush=True)
        else:
            print("0", path, tuple(A.shape), A.flatten().tolist(), flush=True)
""")

_NASTY = {  # each of these kills the process inside scipy 1.17's mmread (SIGSEGV; "0 n": SIGFPE)
    "truncated_exponent": (MM_REAL + "2 2\n1\n2\n3\n2E").encode(),
    "exponent_sign_at_eof": (MM_REAL + "2 2\n1\n2\n3\n2e-").encode(),
    "underscore_at_eof": (MM_REAL + "2 2\n1\n2\n3\n1_0").encode(),
    "hex_at_eof": (MM_REAL + "2 2\n1\n2\n3\n0x10").encode(),
    "nul_in_number": (MM_REAL + "1 1\n2\x005\n").encode(),
    "zero_rows_array": (MM_REAL + "0 3\n").encode(),
    "zero_size_array": (MM_REAL + "0 0\n").encode(),  # a valid empty matrix
}


def _child_env():
    return dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))


def test_nasty_mtx_files_in_a_child_process(tmp_path):
    """One child reads every nasty file: it must end normally (a signal = a crash) with
    a one-line InputFileError for each bad file and the empty matrix for ``0 0``."""
    paths = [_write(tmp_path / f"{name}.mtx", data) for name, data in _NASTY.items()]
    proc = subprocess.run([sys.executable, "-c", _CHILD, *map(str, paths)], capture_output=True,
                          text=True, timeout=300, env=_child_env(), cwd=tmp_path)
    assert proc.returncode == 0, f"child died (return code {proc.returncode}): {proc}"
    assert "Traceback" not in proc.stderr, proc.stderr
    out = proc.stdout.splitlines()
    assert len(out) == len(paths), proc.stdout
    for path, line in zip(paths, out):
        if path.stem == "zero_size_array":
            assert line == f"0 {path} (0, 0) []"
        else:
            assert line.startswith(f"2 {path}: "), line
        assert path.read_bytes() == _NASTY[path.stem]


def test_cli_compare_bad_file_exits_2(tmp_path):
    """``cusolver-trace compare --matrix file:PATH`` on the crashing file: exit 2, one line."""
    path = _write(tmp_path / "crash.mtx", _NASTY["truncated_exponent"])
    proc = subprocess.run([sys.executable, "-m", "cusolver_trace", "compare", "--op", "cholesky",
                           "--matrix", f"file:{path}", "--repeat", "0"],
                          capture_output=True, text=True, timeout=300, env=_child_env())
    assert proc.returncode == 2, proc
    assert f"error: {path}: not a valid Matrix Market file: line 6" in proc.stderr, proc.stderr


# --------------------------------------------------------------------------- regressions
def test_truncated_symmetric_array_is_not_zero_padded(tmp_path):
    A = M.spd(3, seed=1).numpy()
    full = tmp_path / "full.mtx"
    scipy.io.mmwrite(full, A, symmetry="symmetric")
    lines = full.read_bytes().split(b"\n")
    body = [i for i, ln in enumerate(lines) if ln and not ln.startswith(b"%")][1:]
    cut = _write(tmp_path / "cut.mtx", b"\n".join(lines[:body[2]]) + b"\n")  # 2 of 6 entries
    _bad(cut, match=r"expected 6 entries \(3x3 symmetric array, one triangle\), found 2")
    assert torch.equal(M.from_file(full), torch.from_numpy(A))


def test_truncated_coordinate_file_names_counts(tmp_path):
    p = _write(tmp_path / "c.mtx", b"%%MatrixMarket matrix coordinate real symmetric\n"
                                   b"3 3 4\n1 1 4\n2 1 1\n3 3 2\n")
    _bad(p, match="expected 4 entries .*, found 3")
    p = _write(tmp_path / "d.mtx", b"%%MatrixMarket matrix coordinate real symmetric\n"
                                   b"3 3 2\n1 1 4\n2 1 1\n3 3 2\n")
    _bad(p, match="expected 2 entries .*, found 3")


_MALFORMED = {  # name: (text, what the message must say); "was": what the old code returned
    "trailing_E": (MM_REAL + "2 2\n1\n2\n3\n2E\n", "line 6: expected one real number, got '2E'"),
    "surplus_token": (MM_REAL + "2 2\n1\n2\n3\n4 5\n", "line 6: .* got '4 5'"),  # was 4
    "hex": (MM_REAL + "2 2\n1\n2\n3\n0x10\n", "got '0x10'"),  # was 0
    "trailing_letters": (MM_REAL + "2 2\n1\n2\n3\n4abc\n", "got '4abc'"),  # was 4
    "decimal_in_integer_file": ("%%MatrixMarket matrix array integer general\n1 1\n2.5\n",
                                "expected one integer"),  # was 2
    "duplicate": ("%%MatrixMarket matrix coordinate real general\n2 2 2\n1 2 5\n1 2 7\n",
                  r"entry \(1, 2\) is given more than once"),  # was summed: 12
    "duplicate_mirrored": ("%%MatrixMarket matrix coordinate real symmetric\n2 2 2\n1 2 5\n2 1 7\n",
                           r"entry \(2, 1\) is given more than once"),  # was summed: 12
    "integer_beyond_2_53": ("%%MatrixMarket matrix coordinate integer general\n1 1 1\n"
                            "1 1 9007199254740993\n", "no exact float64 value"),  # was rounded
    "banner_extra_token": ("%%MatrixMarket matrix array real general extra\n1 1\n1\n", "first line"),
    "size_line_3_for_array": (MM_REAL + "2 2 4\n1\n2\n3\n4\n", "size line"),
    "vector": ("%%MatrixMarket vector array real general\n2\n1\n2\n", "object 'vector'"),
    "array_pattern": ("%%MatrixMarket matrix array pattern general\n1 1\n1\n", "pattern"),
    "index_out_of_range": ("%%MatrixMarket matrix coordinate real general\n2 2 1\n3 1 5\n",
                           "(?i)index"),
    "not_square": ("%%MatrixMarket matrix coordinate real general\n2 3 1\n1 1 5\n",
                   "not square.*2x3"),
    "comment_in_data": (MM_REAL + "1 1\n1\n% late comment\n", "line 4"),
    "no_size_line": (MM_REAL, "no size line"),
    "empty": ("", "first line"),
}


@pytest.mark.parametrize("name", list(_MALFORMED))
def test_malformed_mtx(tmp_path, name):
    text, match = _MALFORMED[name]
    p = _write(tmp_path / "bad.mtx", text.encode())
    _bad(p, match=match)


def test_bad_files_one_line_each(tmp_path):
    _bad(_write(tmp_path / "empty.npy", b""), "empty")
    z = gzip.compress((MM_REAL + "2 2\n1\n2\n2\n5\n").encode())
    _bad(_write(tmp_path / "cut.mtx.gz", z[:-6]), "truncated gzip")
    _bad(_write(tmp_path / "plain.mtx.gz", (MM_REAL + "1 1\n1\n").encode()), "not gzip data")
    (tmp_path / "dir.npy").mkdir()
    _bad(tmp_path / "dir.npy", "is a directory")
    (tmp_path / "dir.mtx").mkdir()
    _bad(tmp_path / "dir.mtx", "is a directory")
    np.save(tmp_path / "rect.npy", np.ones((3, 4)))
    _bad(tmp_path / "rect.npy", r"not square: shape \(3, 4\)")
    _bad(_write(tmp_path / "rect.mtx", (MM_REAL + "2 1\n1\n2\n").encode()), "not square")
    np.save(tmp_path / "vec.npy", np.ones(4))
    _bad(tmp_path / "vec.npy", r"1-D array of shape \(4,\)")
    np.save(tmp_path / "obj.npy", np.array([[1.0, None], [None, 1.0]], dtype=object),
            allow_pickle=True)
    _bad(tmp_path / "obj.npy", "pickled object array")
    _bad(_write(tmp_path / "text.npy", b"1 2\n3 4\n"), "not a .npy file")
    good = io.BytesIO()
    np.save(good, np.eye(2))
    _bad(_write(tmp_path / "trail.npy", good.getvalue() + b"junk"), "data after the end")
    _bad(_write(tmp_path / "short.npy", good.getvalue()[:-8]), "not a readable .npy file")
    _bad(_write(tmp_path / "a.txt", b"1"), "unsupported file type")
    (tmp_path / "folder").mkdir()
    _bad(tmp_path / "folder", "is a directory")       # before its (missing) extension
    os.mkfifo(tmp_path / "fifo.npy")
    _bad(tmp_path / "fifo.npy", "not a regular file")  # and does not block


def test_missing_file_names_the_path(tmp_path):
    for name in ("nope.npy", "nope.mtx", "nope.mtx.gz", "nope"):
        with pytest.raises(FileNotFoundError) as exc:
            M.from_file(tmp_path / name)
        assert str(tmp_path / name) in str(exc.value)
        with pytest.raises(FileNotFoundError):
            M.parse_matrix_spec(f"file:{tmp_path / name}").make()


def test_permission_denied(tmp_path):
    p = tmp_path / "locked.npy"
    np.save(p, np.eye(2))
    p.chmod(0)
    if os.geteuid() != 0:
        _bad(p, "permission denied")
        return
    try:  # root reads any file: drop the effective uid for the call
        os.seteuid(65534)
    except PermissionError:
        pytest.skip("running as root without CAP_SETUID: cannot make a file unreadable")
    try:
        with pytest.raises(InputFileError, match="permission denied") as exc:
            M.from_file(p)
    finally:
        os.seteuid(0)
    assert str(p) in str(exc.value)


# --------------------------------------------------------------------------- dtypes: strict
@pytest.mark.parametrize("dt", SUPPORTED_DTYPES)
def test_npy_keeps_its_dtype_and_never_converts(tmp_path, dt):
    A = M.spd(4, seed=2, dtype=dt)
    np.save(tmp_path / "a.npy", A.numpy())
    B = M.from_file(tmp_path / "a.npy")
    assert B.dtype == A.dtype and torch.equal(B, A)
    assert torch.equal(M.from_file(tmp_path / "a.npy", dtype=dt), A)
    for other in SUPPORTED_DTYPES:
        if other != dt:
            _bad(tmp_path / "a.npy", f"the file holds {dt} data, but {other} was requested",
                 dtype=other)


@pytest.mark.parametrize("dt", ["float16", "int64", "int32", "bool", "longdouble", "uint8"])
def test_npy_unsupported_dtype(tmp_path, dt):
    np.save(tmp_path / "a.npy", np.eye(3).astype(dt))
    msg = _bad(tmp_path / "a.npy", "float32, float64, complex64, complex128")
    assert f"dtype {np.dtype(dt).name}" in msg


def test_mtx_dtypes(tmp_path):
    A = M.spd(3, seed=3).numpy()
    scipy.io.mmwrite(tmp_path / "r.mtx", A, symmetry="symmetric")
    assert torch.equal(M.from_file(tmp_path / "r.mtx"), torch.from_numpy(A))
    _bad(tmp_path / "r.mtx", "holds float64 data, but float32 was requested", dtype="float32")
    i = _write(tmp_path / "i.mtx", b"%%MatrixMarket matrix array integer symmetric\n2 2\n"
                                   b"4\n-9007199254740992\n3\n")
    B = M.from_file(i)
    assert B.dtype == torch.float64 and B[1, 0].item() == -2.0**53 and B[0, 1] == B[1, 0]
    c = _write(tmp_path / "c.mtx", b"%%MatrixMarket matrix coordinate complex hermitian\n"
                                   b"2 2 2\n1 1 2 0\n2 1 1 -1\n")
    C = M.from_file(c)
    assert C.dtype == torch.complex128 and C.tolist() == [[2, 1 + 1j], [1 - 1j, 0]]
    _bad(c, "holds complex128 data, but float64 was requested.*imaginary", dtype="float64")
    p = _write(tmp_path / "p.mtx", b"%%MatrixMarket matrix coordinate pattern symmetric\n"
                                   b"2 2 2\n1 1\n2 1\n")
    assert M.from_file(p).tolist() == [[1, 1], [1, 0]]


def test_spec_make_dtype_none_means_the_files_own(tmp_path):
    A = M.spd(3, seed=4, dtype="float32")
    np.save(tmp_path / "a.npy", A.numpy())
    s = M.parse_matrix_spec(f"file:{tmp_path / 'a.npy'}")
    assert s.make().A.dtype == torch.float32 and torch.equal(s.make(batch=2).A[1], A)
    assert s.make(dtype="float32").A.dtype == torch.float32
    with pytest.raises(InputFileError, match="holds float32 data, but float64 was requested"):
        s.make(dtype="float64")
    assert M.parse_matrix_spec("random").make(4).A.dtype == torch.float64  # generators: float64
    assert M.parse_matrix_spec("classic3").make(dtype=None).A.dtype == torch.float64


# --------------------------------------------------------------------------- content is not judged
def test_nonfinite_and_nonsymmetric_content_is_returned_as_is(tmp_path):
    U = np.array([[1.0, 2.0], [0.5, 3.0]])
    np.save(tmp_path / "u.npy", U)
    assert np.array_equal(M.from_file(tmp_path / "u.npy").numpy(), U)
    N = np.array([[1.0, np.nan], [np.inf, -np.inf]], dtype=np.float32)
    np.save(tmp_path / "n.npy", N)
    R = M.from_file(tmp_path / "n.npy")
    assert R.dtype == torch.float32
    np.testing.assert_array_equal(R.numpy(), N)
    H = np.array([[1 + 1j, 2], [2, 3]])
    np.save(tmp_path / "h.npy", H)
    assert np.array_equal(M.from_file(tmp_path / "h.npy").numpy(), H)
    t = _write(tmp_path / "n.mtx", (MM_REAL + "2 2\n1\nnan\n-inf\nInfinity").encode())
    np.testing.assert_array_equal(M.from_file(t).numpy(), [[1, -np.inf], [np.nan, np.inf]])


def test_rounding_noise_near_overflow_stays_finite(tmp_path):
    big = np.finfo(np.float64).max
    A = np.array([[big, big], [np.nextafter(big, 0), 1.0]])
    np.save(tmp_path / "big.npy", A)
    B = M.from_file(tmp_path / "big.npy").numpy()
    assert np.isfinite(B).all() and B[0, 1] == B[1, 0] and B[0, 0] == big


@pytest.mark.parametrize("text", [
    "%%MatrixMarket matrix array real symmetric\n2 2\n1e400\n0\n2\n",
    "%%MatrixMarket matrix array real general\n2 2\n4\n0\n0\n-1e309\n",
    "%%MatrixMarket matrix array complex hermitian\n2 2\n4 0\n0 1e999\n2 0\n",
    "%%MatrixMarket matrix coordinate real symmetric\n2 2 2\n1 1 4\n2 2 1e400\n",
    "%%MatrixMarket matrix array real general\n2 2\ninf\n0\n0\n1e400\n",   # a written inf too
    "%%MatrixMarket matrix array real general\n2 2\n4\n0\n0\n1e-400\n",    # rounds to 0
])
def test_a_number_past_float64s_range_is_a_bad_file(tmp_path, text):
    """1e400 in a file was read as inf and compared as if the file said inf (exit 0): the
    file does not hold the matrix it writes, so it is refused; an inf written as inf is
    taken as it is."""
    msg = _bad(_write(tmp_path / "x.mtx", text.encode()))
    assert "out of float64's range" in msg
    if "1e-400" in text:
        assert "read as 0" in msg
        ok = M.from_file(_write(tmp_path / "y.mtx", text.replace("1e-400", "1e-320").encode()))
        assert ok[1, 1] == 1e-320   # a subnormal is in range
        return
    ok = M.from_file(_write(tmp_path / "y.mtx", text.replace("1e400", "inf").replace(
        "-1e309", "-inf").replace("1e999", "inf").encode()))
    assert torch.isinf(torch.view_as_real(ok) if ok.is_complex() else ok).any()
