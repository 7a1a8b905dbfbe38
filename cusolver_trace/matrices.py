"""Input matrices: random Hermitian positive definite, LAPACK's test types, files, data.

Every generator builds its matrix in float64/complex128 on the CPU with a
``torch.Generator`` seeded by ``seed`` (so the same seed gives the same matrix on
every device, and the float32 matrix is the rounded float64 one), makes it exactly
Hermitian (``(A + Aᴴ)/2``, real diagonal; rounding to a lower precision keeps
that exact), then casts and moves it. Shapes are ``(*batch, n, n)``; dtypes are
those of :mod:`cusolver_trace._dtypes`.
"""
from __future__ import annotations

import errno
import gzip
import io
import math
import os
import re
import stat
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from ._dtypes import SUPPORTED_DTYPES, dtype_info
from .checks import BatchMax, batch_max, as_tensor
from .errors import InputFileError

__all__ = [
    "TestMatrix", "LAPACK_TYPES", "MODES", "spd", "lapack_test_matrix", "classic_spd3",
    "from_file", "rbf_kernel_digits", "DIGITS_SAMPLES", "MatrixSpec", "parse_matrix_spec",
    "achieved_cond",
]

MODES = ("geometric", "arithmetic")
"""Eigenvalue distributions: dlatms MODE 3 (σᵢ = cond^(−(i−1)/(n−1))) and MODE 4
(σᵢ = 1 − (i−1)/(n−1)·(1 − 1/cond))."""

LAPACK_TYPES = ("diagonal", "cond2", "zero-first", "zero-last", "zero-middle",
                "ill-sqrt", "ill", "small", "large")
"""LAPACK's positive-definite test types (``dchkpo`` IMAT 1–9, ``dlatb4`` path PO)."""

DIGITS_SAMPLES = 1797


@dataclass(frozen=True)
class TestMatrix:
    """A test input with what a correct potrf must report for it.

    Attributes
    ----------
    A : torch.Tensor, (..., n, n)
    expected_info : int or None
        potrf's ``info`` for every matrix of the batch: 0 = positive definite,
        k > 0 = the leading minor of order k is not; None = not known in advance.
    description : str
    cond : float or None
        The 2-norm condition number the matrix was built with (None if unknown).
    kind : str
    L : torch.Tensor or None
        The exact lower Cholesky factor, when known (``classic_spd3``).
    """

    __test__ = False  # not a pytest test class

    A: torch.Tensor
    expected_info: int | None = 0
    description: str = ""
    cond: float | None = None
    kind: str = ""
    L: torch.Tensor | None = None


def _order(n) -> int:
    """``n`` as a matrix order: an int >= 0 (TypeError / ValueError otherwise)."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise TypeError(f"n must be an int >= 0, got {n!r}")
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    return int(n)


def _batch(batch) -> tuple[int, ...]:
    """``batch`` (an int or a tuple of ints, each >= 0) as a tuple."""
    dims = (batch,) if isinstance(batch, (int, np.integer)) and not isinstance(batch, bool) \
        else batch
    try:
        dims = tuple(dims)
    except TypeError:
        raise TypeError(f"batch must be an int or a tuple of ints, got {batch!r}") from None
    for d in dims:
        if isinstance(d, bool) or not isinstance(d, (int, np.integer)):
            raise TypeError(f"batch must be an int or a tuple of ints, got {batch!r}")
        if d < 0:
            raise ValueError(f"batch dimensions must be >= 0, got {batch!r}")
    return tuple(int(d) for d in dims)


def _device(device) -> torch.device:
    """``device`` as a torch device: cpu or cuda (ValueError), a visible GPU for cuda
    (:class:`~cusolver_trace.errors.GPUUnavailableError` otherwise)."""
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError):
        raise ValueError(f"device must be 'cpu', 'cuda' or 'cuda:N', got {device!r}") from None
    if dev.type not in ("cpu", "cuda"):
        raise ValueError(f"device must be 'cpu', 'cuda' or 'cuda:N', got {device!r}")
    if dev.type == "cuda" and not torch.cuda.is_available():
        from .errors import GPUUnavailableError

        raise GPUUnavailableError(f"device {device!r}: no CUDA GPU is visible to torch "
                                  f"{torch.__version__}")
    return dev


def _finish(A64: torch.Tensor, dtype, device) -> torch.Tensor:
    """Make exactly Hermitian (real diagonal) in 64-bit, then cast and move."""
    A64 = (A64 + A64.mH) / 2
    return A64.to(dtype_info(dtype).torch).to(device)


def _sigma(n: int, cond: float, mode: str) -> torch.Tensor:
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    if not 1 <= cond < float("inf"):
        raise ValueError(f"cond must be a finite number >= 1, got {cond}")
    t = torch.arange(n, dtype=torch.float64) / max(n - 1, 1)
    return cond ** -t if mode == "geometric" else 1 - t * (1 - 1 / cond)


def _spd64(n, batch, cond, mode, is_complex, seed, rotate=True) -> torch.Tensor:
    """Q·diag(σ)·Qᴴ in float64/complex128 (CPU), σ from 1 down to 1/cond."""
    cdtype = torch.complex128 if is_complex else torch.float64
    sigma = _sigma(n, cond, mode).to(cdtype)
    if not rotate or n == 0:
        return torch.diag_embed(sigma.expand(*batch, n)).clone()
    gen = torch.Generator().manual_seed(seed)
    Q, R = torch.linalg.qr(torch.randn(*batch, n, n, dtype=cdtype, generator=gen))
    d = R.diagonal(dim1=-2, dim2=-1)
    Q = Q * torch.where(d == 0, 1, d / d.abs()).unsqueeze(-2)  # Haar: fix the signs
    return (Q * sigma) @ Q.mH


def spd(n: int, *, batch=(), cond: float = 2.0, dtype="float64", device="cpu",
        seed: int = 0, mode: str = "geometric") -> torch.Tensor:
    """Random Hermitian positive definite A = Q·diag(σ)·Qᴴ, shape ``(*batch, n, n)``.

    Q is Haar-distributed (QR of a Gaussian, real or complex, with the signs of
    R's diagonal moved into Q); σ runs from 1 down to 1/cond, geometrically or
    arithmetically (``mode``, as dlatms MODE 3 / 4), so ‖A‖₂ = 1 and the
    2-norm condition number is ``cond`` (before rounding to ``dtype``).

    Parameters
    ----------
    n : int >= 0
    batch : int or tuple of int
    cond : float >= 1
    dtype : str or torch/numpy dtype — float32, float64, complex64, complex128
    device : str or torch.device
    seed : int — seeds a CPU ``torch.Generator``: same matrix on every device
    mode : "geometric" or "arithmetic"

    Raises
    ------
    ValueError
        cond not a finite number >= 1, unknown mode, n or a batch dimension < 0, a device
        other than cpu / cuda.
    TypeError
        Unsupported dtype; n or batch not ints.
    cusolver_trace.errors.GPUUnavailableError
        ``device`` is a CUDA device and no GPU is visible.

    Examples
    --------
    >>> A = spd(3, batch=2, cond=10.0)
    >>> A.shape, bool(torch.allclose(A, A.mT))
    (torch.Size([2, 3, 3]), True)
    """
    n, dims, dev = _order(n), _batch(batch), _device(device)
    A = _spd64(n, dims, cond, mode, dtype_info(dtype).is_complex, seed)
    return _finish(A, dtype, dev)


def lapack_test_matrix(kind: str, n: int, *, dtype="float64", seed: int = 0, batch=(),
                       device="cpu") -> TestMatrix:
    """One of LAPACK's positive-definite test matrices (``dchkpo`` + ``dlatb4``).

    ==========  ====  =========================================================
    kind        IMAT  matrix (σ geometric, MODE 3; ‖A‖₂ = anorm)
    ==========  ====  =========================================================
    diagonal    1     diag(σ), cond 2 (no rotation)
    cond2       2     Q·diag(σ)·Qᴴ, cond 2
    zero-first  3     cond 2, row and column 1 zeroed → expected info 1
    zero-last   4     cond 2, row and column n zeroed → expected info n
    zero-middle 5     cond 2, row and column n//2 + 1 zeroed → that info
    ill-sqrt    6     cond = sqrt(0.1/prec)  (2.1e7 double, 916 single)
    ill         7     cond = 0.1/prec        (4.5e14 double, 8.4e5 single)
    small       8     cond 2, anorm = 0.25·sfmin/prec (2.5e-293 / 2.5e-32)
    large       9     cond 2, anorm = 1/small          (4.0e292 / 4.1e31)
    ==========  ====  =========================================================

    ``prec`` is dlatb4's ``dlamch('Precision')`` = eps·base = 2·``lapack_eps``
    (2**-52 / 2**-23), ``sfmin`` the smallest normal number; cond is 1 for n <= 1,
    as in dlatb4. A zeroed row/column leaves the leading minors before it
    positive definite and makes the one of that order exactly singular.

    Raises
    ------
    ValueError  unknown kind; n < 0, or n < 1 for a zero-* kind; a batch dimension < 0;
                a device other than cpu / cuda.
    TypeError   unsupported dtype; n or batch not ints.
    """
    if kind not in LAPACK_TYPES:
        raise ValueError(f"unknown LAPACK test type {kind!r}; choose from {', '.join(LAPACK_TYPES)}")
    n, batch = _order(n), _batch(batch)
    _device(device)
    info = dtype_info(dtype)
    prec = 2 * info.lapack_eps
    small = 0.25 * float(np.finfo(info.real_name).tiny) / prec
    cond = {"ill-sqrt": math.sqrt(0.1 / prec), "ill": 0.1 / prec}.get(kind, 2.0)
    cond = 1.0 if n <= 1 else cond
    anorm = {"small": small, "large": 1 / small}.get(kind, 1.0)
    A = _spd64(n, _batch(batch), cond, "geometric", info.is_complex, seed,
               rotate=kind != "diagonal") * anorm
    imat = LAPACK_TYPES.index(kind) + 1
    desc = f"LAPACK PO type {imat} ({kind}), n={n}, cond={cond:.3g}"
    izero = 0
    if kind.startswith("zero-"):
        if n < 1:
            raise ValueError(f"{kind} needs n >= 1")
        izero = {"zero-first": 1, "zero-last": n, "zero-middle": n // 2 + 1}[kind]
        A[..., izero - 1, :] = 0
        A[..., :, izero - 1] = 0
        desc += f", row/column {izero} zeroed (singular)"
    elif anorm != 1.0:
        desc += f", scaled to norm {anorm:.3g}"
    return TestMatrix(_finish(A, dtype, device), izero, desc, cond, f"lapack:{kind}")


_CLASSIC_A = [[4.0, 12.0, -16.0], [12.0, 37.0, -43.0], [-16.0, -43.0, 98.0]]
_CLASSIC_L = [[2.0, 0.0, 0.0], [6.0, 1.0, 0.0], [-8.0, 5.0, 3.0]]


def classic_spd3(*, negative: bool = False, dtype="float64", device="cpu") -> TestMatrix:
    """The classic 3×3 SPD example and its exact factor (every step exact in binary).

    A = [[4, 12, −16], [12, 37, −43], [−16, −43, 98]] = L·Lᵀ with
    L = [[2, 0, 0], [6, 1, 0], [−8, 5, 3]]. ``negative=True`` gives −A
    (negative definite: expected info 1, no factor).
    """
    t = dtype_info(dtype).torch
    A = torch.tensor(_CLASSIC_A, dtype=torch.float64)
    cond = float(achieved_cond(A))
    if negative:
        return TestMatrix((-A).to(t).to(device), 1, "classic 3x3, negated (negative definite)",
                          cond, "classic3:negative")
    return TestMatrix(A.to(t).to(device), 0, "classic 3x3 SPD [[4,12,-16],[12,37,-43],[-16,-43,98]]",
                      cond, "classic3", torch.tensor(_CLASSIC_L, dtype=t, device=device))


_HERMITIAN_RTOL = 100  # × lapack_eps of the stored precision, relative to max |a_ij|
_NPY_MAGIC = b"\x93NUMPY"
_INT_EXACT = 2**53  # integers of magnitude up to 2**53 are exact in float64


def _os_error(path: Path, exc: OSError) -> Exception:
    """The exception to raise for an OS error met opening or reading ``path``."""
    if isinstance(exc, FileNotFoundError):
        return FileNotFoundError(errno.ENOENT, "no such file (expected a .npy or .mtx matrix file)",
                                 str(path))
    if isinstance(exc, PermissionError):
        return InputFileError(f"{path}: cannot read the file: permission denied")
    if isinstance(exc, IsADirectoryError):
        return InputFileError(f"{path}: is a directory, not a matrix file")
    return InputFileError(f"{path}: cannot read the file: {exc.strerror or exc}")


def _open_regular(path: Path):
    """``open(path, "rb")`` for a regular file; a clear error for anything else.

    A FIFO or device would block or never end, so only regular files are opened.
    """
    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        raise _os_error(path, exc) from None
    if stat.S_ISDIR(mode):
        raise InputFileError(f"{path}: is a directory, not a matrix file")
    if not stat.S_ISREG(mode):
        raise InputFileError(f"{path}: is not a regular file")
    try:
        return open(path, "rb")
    except OSError as exc:
        raise _os_error(path, exc) from None


def _read_npy(path: Path) -> np.ndarray:
    """Load an ``.npy`` file of a supported dtype (native byte order), else InputFileError."""
    with _open_regular(path) as fh:
        try:
            magic = fh.read(len(_NPY_MAGIC))
            if not magic:
                raise InputFileError(f"{path}: the file is empty; expected a NumPy .npy array")
            if magic[:2] == b"PK":
                raise InputFileError(f"{path}: is a zip archive (.npz?), not a .npy array")
            if magic != _NPY_MAGIC:
                raise InputFileError(f"{path}: not a .npy file (it does not start with "
                                     f"NumPy's magic string)")
            fh.seek(0)
            version = np.lib.format.read_magic(fh)
            if version in ((1, 0), (2, 0)):  # peek at the header: reject before reading the data
                read = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                        else np.lib.format.read_array_header_2_0)
                _, _, descr = read(fh)
                _check_npy_dtype(path, descr)
            fh.seek(0)
            a = np.load(fh, allow_pickle=False)
            trailing = fh.read(1)
        except OSError as exc:
            raise _os_error(path, exc) from None
        except InputFileError:
            raise
        except Exception as exc:  # noqa: BLE001 - whatever np.load raises here comes from the bytes
            reason = " ".join(str(exc).split()) or type(exc).__name__
            raise InputFileError(f"{path}: not a readable .npy file: {reason}") from None
    _check_npy_dtype(path, a.dtype)
    if trailing:
        raise InputFileError(f"{path}: has data after the end of the array "
                             f"(corrupt, or several arrays written to one file)")
    return a.astype(a.dtype.newbyteorder("="), copy=False)


def _check_npy_dtype(path: Path, dt: np.dtype) -> None:
    if dt.hasobject:
        raise InputFileError(f"{path}: holds a pickled object array; it is not loaded (unpickling "
                             f"can run code) and a matrix needs one of {', '.join(SUPPORTED_DTYPES)}")
    if dt.fields is not None or dt.subdtype is not None or dt.name not in SUPPORTED_DTYPES:
        raise InputFileError(f"{path}: holds dtype {dt.name if dt.fields is None else dt}, which "
                             f"is not supported; save the matrix as one of "
                             f"{', '.join(SUPPORTED_DTYPES)}")


# Matrix Market. scipy.io.mmread is the reader, but its C++ backend (fast_matrix_market,
# scipy >= 1.12; seen with scipy 1.17) is not safe on malformed text: a last number with trailing characters and
# no final newline ("2E", "1_0", "0x10"), or a NUL byte inside a number, makes it read out
# of bounds and the process dies with SIGSEGV; an array file of size "0 n" dies with
# SIGFPE. Elsewhere it silently accepts a number's prefix ("2abc" -> 2, "2.5" in an
# integer file -> 2), ignores surplus tokens on a line, zero-pads a truncated symmetric
# array and sums duplicate coordinates. So the text is checked here first, token by
# token, against a strict Matrix Market grammar that is a subset of what that backend
# reads correctly; only text that passes is handed to scipy. This check is the guard
# that stops the crash, not a second parser: it produces no values.
_MM_FIELDS = {"real": "float64", "double": "float64", "integer": "float64",
              "pattern": "float64", "complex": "complex128"}
_MM_SYMMETRIES = ("general", "symmetric", "hermitian", "skew-symmetric")
_MM_NUM = rb"-?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|-?(?i:inf(?:inity)?|nan)"
_MM_VALUE = {"real": _MM_NUM, "double": _MM_NUM, "integer": rb"-?[0-9]+",
             "complex": rb"(?:" + _MM_NUM + rb")[ \t]+(?:" + _MM_NUM + rb")", "pattern": None}
_MM_VALUE_TEXT = {"real": "one real number", "double": "one real number",
                  "integer": "one integer", "complex": "two real numbers (real, imaginary part)",
                  "pattern": "no value"}
_MM_BANNER = re.compile(rb"%%MatrixMarket[ \t]+(\S+)[ \t]+(\S+)[ \t]+(\S+)[ \t]+(\S+)[ \t]*\r?")
_MM_SIZE = re.compile(rb"[ \t]*([0-9]+)[ \t]+([0-9]+)(?:[ \t]+([0-9]+))?[ \t]*\r?")
_MM_BLANK = re.compile(rb"[ \t]*\r?")
_MM_BLANK_LINES = re.compile(rb"\n[ \t]*\r?(?=\n|\Z)")  # each match: one blank line
_MM_INT64 = 2**63 - 1
# a number with an exponent of 3+ digits, or 300+ digits before any exponent: the only
# tokens that can overflow or underflow float64 (their values are checked one by one)
_MM_EXTREME = re.compile(rb"-?(?:[0-9]+\.?[0-9]*|\.[0-9]+)[eE][+-]?0*[0-9]{3,}|[0-9]{300,}")


def _mm_bad_line_re(fmt: str, mm_field: str) -> re.Pattern:
    """A regex whose first match is the newline before the first line that is neither
    one entry of this format and field nor blank (a literal first character lets the
    regex engine skip ahead to each newline)."""
    value = _MM_VALUE[mm_field]
    if fmt == "array":
        entry = rb"[ \t]*(?:" + value + rb")"
    else:
        entry = rb"[ \t]*[0-9]+[ \t]+[0-9]+" + (b"" if value is None else rb"[ \t]+(?:" + value + rb")")
    return re.compile(rb"\n(?!(?:" + entry + rb")?[ \t]*\r?(?:\n|\Z))")


def _short(line: bytes) -> str:
    text = repr(line.rstrip(b"\r").decode("ascii", "backslashreplace"))
    return text if len(text) <= 50 else text[:46] + "...'"


def _read_mtx(path: Path) -> np.ndarray:
    """Read a Matrix Market file (``.mtx``, or gzip-compressed ``.mtx.gz``) into a dense array.

    Returns float64 (real, double, integer, pattern fields) or complex128 (complex).
    """
    with _open_regular(path) as fh:
        try:
            data = fh.read()
        except OSError as exc:
            raise _os_error(path, exc) from None
    if path.name.lower().endswith(".gz"):
        if data[:2] != b"\x1f\x8b":
            raise InputFileError(f"{path}: the name ends in .gz but the file is not gzip data")
        try:
            data = gzip.decompress(data)
        except EOFError:
            raise InputFileError(f"{path}: truncated gzip data (the stream ends early)") from None
        except (OSError, zlib.error) as exc:
            raise InputFileError(f"{path}: corrupt gzip data: {exc}") from None
        except MemoryError:
            raise InputFileError(f"{path}: too large to decompress in memory") from None

    def bad(why):
        return InputFileError(f"{path}: not a valid Matrix Market file: {why}")

    # banner line, then comment ('%') and blank lines, then the size line
    end = data.find(b"\n")
    line, pos = (data, len(data)) if end < 0 else (data[:end], end + 1)
    m = _MM_BANNER.fullmatch(line)
    if m is None:
        raise bad("the first line must be '%%MatrixMarket matrix FORMAT FIELD SYMMETRY', got "
                  + _short(line))
    obj, fmt, mm_field, symmetry = (t.decode("ascii", "replace").lower() for t in m.groups())
    if obj != "matrix":
        raise bad(f"object {obj!r} is not supported; expected 'matrix'")
    if fmt not in ("coordinate", "array"):
        raise bad(f"format {fmt!r}; expected 'coordinate' or 'array'")
    if mm_field not in _MM_FIELDS:
        raise bad(f"field {mm_field!r}; expected one of {', '.join(_MM_FIELDS)}")
    if symmetry not in _MM_SYMMETRIES:
        raise bad(f"symmetry {symmetry!r}; expected one of {', '.join(_MM_SYMMETRIES)}")
    if fmt == "array" and mm_field == "pattern":
        raise bad("an array file cannot have the 'pattern' field (it stores no values)")
    lineno = 1
    while True:
        if pos >= len(data):
            raise bad("no size line after the header")
        end = data.find(b"\n", pos)
        line, pos = (data[pos:], len(data)) if end < 0 else (data[pos:end], end + 1)
        lineno += 1
        if not (line.startswith(b"%") or _MM_BLANK.fullmatch(line)):
            break
    m = _MM_SIZE.fullmatch(line)
    want = "'ROWS COLUMNS ENTRIES'" if fmt == "coordinate" else "'ROWS COLUMNS'"
    if m is None or (m.group(3) is None) != (fmt == "array"):
        raise bad(f"line {lineno}: the size line of a {fmt} file must be {want}, got {_short(line)}")
    rows, cols = int(m.group(1)), int(m.group(2))
    if max(rows, cols, int(m.group(3) or 0)) > _MM_INT64:
        raise bad(f"line {lineno}: size {_short(line)} is out of range")
    if rows != cols:
        raise InputFileError(f"{path}: matrix is not square: the size line declares {rows}x{cols}")
    n = rows
    if fmt == "coordinate":
        expected, why = int(m.group(3)), "as the size line declares"
    else:
        expected = {"general": n * n, "symmetric": n * (n + 1) // 2,
                    "hermitian": n * (n + 1) // 2, "skew-symmetric": n * (n - 1) // 2}[symmetry]
        why = f"{n}x{n} {symmetry} array" + (
            "" if symmetry == "general" else
            ", one triangle" if symmetry != "skew-symmetric" else ", strictly lower triangle")

    # every data line: exactly one entry of this format and field, or blank. The body
    # starts at the newline that ends the size line; each newline starts one line.
    # (Searched in place, from ``body``: no copy of a large text.)
    body = pos - 1 if data[pos - 1:pos] == b"\n" else len(data)
    b = _mm_bad_line_re(fmt, mm_field).search(data, body)
    if b is not None:
        stop = data.find(b"\n", b.start() + 1)
        line = data[b.start() + 1:] if stop < 0 else data[b.start() + 1:stop]
        where = lineno + data.count(b"\n", body, b.start() + 1)
        layout = ("ROW COLUMN and " if fmt == "coordinate" else "") + _MM_VALUE_TEXT[mm_field]
        raise bad(f"line {where}: expected {layout}, got {_short(line)}")
    found = data.count(b"\n", body) - len(_MM_BLANK_LINES.findall(data, body))
    if found != expected:
        raise InputFileError(f"{path}: expected {expected} entries ({why}), found {found}"
                             + (" (truncated?)" if found < expected else ""))
    dtype = np.dtype(_MM_FIELDS[mm_field])
    if n == 0:  # nothing to read (and scipy's backend dies with SIGFPE on some empty arrays)
        return np.zeros((0, 0), dtype)
    if n >= 2**31:  # >= 2**62 dense entries: no memory holds them (and row·n + col overflows)
        raise InputFileError(f"{path}: the dense {n}x{n} matrix does not fit in memory")

    import scipy.io

    if not data.endswith(b"\n"):
        data += b"\n"  # a final newline: the backend never meets a number at the end of its buffer
    try:
        a = scipy.io.mmread(io.BytesIO(data))
        if fmt == "coordinate":
            key = a.row.astype(np.int64) * n + a.col.astype(np.int64)
            uniq, counts = np.unique(key, return_counts=True)
            if len(uniq) != len(key):
                i, j = divmod(int(uniq[np.argmax(counts > 1)]), n)
                i, j = (i, j) if symmetry == "general" else (max(i, j), min(i, j))
                raise InputFileError(f"{path}: entry ({i + 1}, {j + 1}) is given more than once"
                                     + ("" if symmetry == "general" else
                                        f" (a {symmetry} file stores one triangle)"))
            a = a.toarray()
        a = np.asarray(a)
    except InputFileError:
        raise
    except MemoryError:
        raise InputFileError(f"{path}: the dense {n}x{n} matrix does not fit in memory") from None
    except Exception as exc:  # noqa: BLE001 - any error of the reader comes from the file's text
        reason = " ".join(str(exc).split()) or type(exc).__name__
        raise bad(reason) from None
    for m in _MM_EXTREME.finditer(data, body):
        # a number whose exponent (or length) can leave float64's range: the reader would
        # round it to inf or to 0, and the file would not hold the matrix it writes. Only
        # such tokens are converted here (rare), not every number of the file.
        token = m.group()
        read_as = _rounds_to(token, float(token))
        if read_as:
            where = 1 + data.count(b"\n", 0, m.start())
            raise InputFileError(f"{path}: line {where}: {token.decode()[:40]} is out of "
                                 f"float64's range (it would be read as {read_as})")
    if a.dtype.kind in "iu" and a.size and (a.max() > _INT_EXACT or a.min() < -_INT_EXACT):
        big = int(a.max()) if a.max() > _INT_EXACT else int(a.min())
        raise InputFileError(f"{path}: integer entry {big} has no exact float64 value "
                             f"(|value| > 2**53)")
    return a.astype(dtype)


def _symmetrize_noise(A: torch.Tensor, info) -> torch.Tensor:
    """A's Hermitian part when A is finite and its asymmetry is rounding noise; else A.

    Entries already equal to their mirror are kept bit for bit; the others become
    a/2 + b/2, which equals (a + b)/2 rounded once but cannot overflow near the
    largest float (a + b can). Addition commutes exactly, so the result is exactly
    Hermitian (its diagonal real).
    """
    if A.numel() == 0 or not bool(torch.isfinite(A).all()):
        return A
    AH = A.mH.resolve_conj()
    asym = float((A - AH).abs().max())
    scale = float(A.abs().max())
    if asym > _HERMITIAN_RTOL * info.lapack_eps * scale:
        return A
    return torch.where(A == AH, A, A / 2 + AH / 2)


def from_file(path, *, dtype=None) -> torch.Tensor:
    """Read a matrix (or a batch) from ``.npy`` or Matrix Market ``.mtx`` / ``.mtx.gz``.

    ``.npy`` may hold (n, n) or (..., n, n) in float32, float64, complex64 or
    complex128 (either byte order; loaded without pickle). Matrix Market files
    are read with ``scipy.io.mmread`` after a strict check of their text (see
    below); coordinate (sparse) files become dense, and symmetric, hermitian or
    skew-symmetric storage (one triangle in the file) is expanded by scipy.

    The dtype is the file's own and is never converted:

    ======================================  ==========================================
    file                                    dtype
    ======================================  ==========================================
    .npy float32/float64/complex64/128      that dtype (native byte order)
    .npy of any other dtype                 InputFileError (float16, int64, bool, ...)
    .mtx real, double, pattern              float64
    .mtx integer                            float64 (exact: entries beyond ±2**53,
                                            which float64 cannot hold, are an error)
    .mtx complex                            complex128
    ======================================  ==========================================

    Content is not judged: non-finite entries and non-symmetric matrices are
    returned as the file holds them (they are legitimate inputs to compare).
    The one change: a finite matrix whose asymmetry max|A − Aᴴ| is within
    100·eps·max|A| (rounding noise of the program that wrote it) is returned
    as its exactly Hermitian part ``(A + Aᴴ)/2`` (real diagonal).

    A Matrix Market file must follow the format strictly: the banner
    ``%%MatrixMarket matrix {coordinate|array}
    {real|double|integer|complex|pattern}
    {general|symmetric|hermitian|skew-symmetric}``, then ``%`` comment and
    blank lines, the size line, and exactly the entries the size line calls
    for, one per line, each a complete number (no leading ``+``; ``inf`` /
    ``nan`` allowed); coordinate indices within the size; no entry twice.

    Parameters
    ----------
    path : str or os.PathLike
        A ``.npy``, ``.mtx`` or ``.mtx.gz`` file. The file is only read.
    dtype : str, torch.dtype or numpy dtype, optional
        None (default): the file's own dtype (table above). Given: it must be
        the file's dtype, else InputFileError; it only asserts what you expect.

    Returns
    -------
    torch.Tensor
        On the CPU, shape (n, n) or (..., n, n), of the file's dtype.

    Raises
    ------
    InputFileError
        (a ``ValueError``) Unsupported extension; a directory, unreadable or
        non-regular file; an empty, truncated or corrupt ``.npy`` or gzip
        stream; a pickled object array; a malformed Matrix Market file (the
        message gives the line); fewer or more entries than declared; a
        duplicate entry; not a matrix or a batch of square matrices; an
        unsupported dtype; a ``dtype`` different from the file's.
    FileNotFoundError
        ``path`` does not exist (the message names it).
    TypeError
        ``dtype`` is not float32, float64, complex64 or complex128.

    Examples
    --------
    >>> import os, tempfile
    >>> import numpy as np
    >>> from cusolver_trace.matrices import from_file
    >>> d = tempfile.mkdtemp()
    >>> np.save(os.path.join(d, "a.npy"), np.array([[4, 2], [2, 3]], dtype=np.float32))
    >>> from_file(os.path.join(d, "a.npy"))
    tensor([[4., 2.],
            [2., 3.]])
    >>> from_file(os.path.join(d, "a.npy")).dtype
    torch.float32
    >>> from_file(os.path.join(d, "a.npy"), dtype="float64")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    cusolver_trace.errors.InputFileError: .../a.npy: the file holds float32 data, but float64 was requested; ...
    >>> with open(os.path.join(d, "b.mtx"), "w") as f:
    ...     _ = f.write("%%MatrixMarket matrix coordinate real symmetric\\n2 2 2\\n1 1 4\\n2 1 2\\n")
    >>> from_file(os.path.join(d, "b.mtx"))
    tensor([[4., 2.],
            [2., 0.]], dtype=torch.float64)
    """
    path = Path(path)
    name = path.name.lower()
    if name.endswith(".npy"):
        a = _read_npy(path)
    elif name.endswith((".mtx", ".mtx.gz")):
        a = _read_mtx(path)
    else:
        raise InputFileError(f"{path}: unsupported file type; expected .npy, .mtx or .mtx.gz")
    if a.ndim < 2:
        raise InputFileError(f"{path}: holds a {a.ndim}-D array of shape {a.shape}; expected a "
                             f"matrix (n, n) or a batch of them (..., n, n)")
    if a.shape[-1] != a.shape[-2]:
        raise InputFileError(f"{path}: matrix is not square: shape {a.shape}")
    own = dtype_info(a.dtype.name)
    if dtype is not None:
        want = dtype_info(dtype)
        if want.name != own.name:
            lose = (" (and would drop its imaginary parts)" if own.is_complex and not want.is_complex
                    else "")
            raise InputFileError(
                f"{path}: the file holds {own.name} data, but {want.name} was requested; it is "
                f"not converted{lose}: request {own.name} (or no dtype), or save the file as "
                f"{want.name}")
    return _symmetrize_noise(torch.from_numpy(a), own)


def rbf_kernel_digits(n: int | None = None, *, gamma: float | None = None,
                      jitter: float = 1e-6, dtype="float64") -> torch.Tensor:
    """RBF kernel Gram matrix of scikit-learn's bundled digits data, + jitter·I.

    K[i, j] = exp(−gamma·‖xᵢ − xⱼ‖²) over the first ``n`` of the 1797 8×8 digit
    images (64 features, pixel values 0–16; the data ship inside scikit-learn,
    no download). ``gamma`` defaults to scikit-learn's 1/64. A realistic
    Gaussian-process / kernel-ridge input; smaller gamma = worse conditioned.

    Returns
    -------
    torch.Tensor (n, n) on the CPU, exactly symmetric (built in float64).

    Raises
    ------
    ImportError  scikit-learn is not installed.
    ValueError   n outside 0..1797, gamma <= 0, jitter < 0.
    """
    try:
        from sklearn.datasets import load_digits
        from sklearn.metrics.pairwise import rbf_kernel
    except ImportError as e:
        raise ImportError("the digits kernel needs scikit-learn: "
                          "pip install 'cusolver-trace[data]'") from e
    n = DIGITS_SAMPLES if n is None else n
    if not 0 <= n <= DIGITS_SAMPLES:
        raise ValueError(f"digits has {DIGITS_SAMPLES} samples; n must be in 0..{DIGITS_SAMPLES}, got {n}")
    if (gamma is not None and not gamma > 0) or not jitter >= 0:
        raise ValueError(f"need gamma > 0 and jitter >= 0, got gamma={gamma}, jitter={jitter}")
    X = load_digits().data[:n].astype(np.float64)
    K = torch.from_numpy(rbf_kernel(X, gamma=gamma)) + jitter * torch.eye(n, dtype=torch.float64)
    return _finish(K, dtype, "cpu")


# --------------------------------------------------------------------------- --matrix SPEC
_SPEC_HELP = ("random | random:cond=C[,mode=geometric|arithmetic] | lapack:TYPE | classic3 | "
              "classic3:negative | file:PATH | digits | digits:gamma=G[,jitter=J]")
_PLAIN_FLOAT = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


def plain_float(text) -> float:
    """A number written plainly (digits, one point, an exponent): no spaces, underscores,
    ``inf`` / ``nan`` or hexadecimal, which Python's ``float`` would take. The one parser of
    numbers typed on the command line (``--cond``, ``--matrix random:cond=…``).

    Examples
    --------
    >>> plain_float("1e6"), plain_float("-2.5"), plain_float(".5")
    (1000000.0, -2.5, 0.5)
    >>> plain_float(" 1e3")
    Traceback (most recent call last):
    ...
    ValueError: expected a number written plainly (digits, '.', an exponent), got ' 1e3'
    """
    if not isinstance(text, str) or not _PLAIN_FLOAT.fullmatch(text):
        raise ValueError(f"expected a number written plainly (digits, '.', an exponent), got "
                         f"{text!r}")
    v = float(text)
    if _rounds_to(text, v) == "0":
        raise ValueError(f"{text!r} is not 0 but rounds to 0 in float64 (below 4.9e-324)")
    return v


def _rounds_to(text, value: float) -> str | None:
    """``"inf"`` / ``"0"`` when the decimal ``text`` (str or bytes, read as ``value``) lies
    outside float64's range and was rounded to that, else None. The one range rule for
    numbers the user writes (:func:`plain_float`, Matrix Market data)."""
    if math.isinf(value):
        return "inf"
    mantissa = re.split(r"[eE]", text if isinstance(text, str) else text.decode("ascii"))[0]
    return "0" if value == 0 and re.search(r"[1-9]", mantissa) else None


def max_cond(dtype) -> float:
    """The largest condition number a generated SPD matrix of ``dtype`` may ask for:
    ``0.5 / eps`` (NumPy's eps, one ulp at 1). From ``cond·eps >= 1/2`` on, rounding can make
    such a matrix indefinite, so it would not be the positive definite matrix it is called.

    Examples
    --------
    >>> f"{max_cond('float32'):.3g}", f"{max_cond('float64'):.3g}"
    ('4.19e+06', '2.25e+15')
    """
    return 0.5 / (2 * dtype_info(dtype).lapack_eps)


def check_cond(cond: float, dtype) -> None:
    """Raise ``ValueError`` unless ``1 <= cond <`` :func:`max_cond` for ``dtype`` (sweep's
    ``--cond`` and compare's ``--matrix random:cond=…`` alike)."""
    limit = max_cond(dtype)
    if not 1 <= cond:   # NaN too
        raise ValueError(f"cond must be a number >= 1, got {cond!r}")
    if cond >= limit:
        name = dtype_info(dtype).name
        raise ValueError(f"cond {cond:.7g} is too large for {name}: a matrix that ill-conditioned "
                         f"(cond·eps >= 0.5, eps = {0.5 / limit:.3g}) is not positive definite "
                         f"after rounding; use less than {limit:.7g}")


_KEYS = {"random": {"cond": plain_float, "mode": str},
         "digits": {"gamma": plain_float, "jitter": plain_float}}


@dataclass(frozen=True)
class MatrixSpec:
    """A parsed ``--matrix SPEC``; see :func:`parse_matrix_spec`."""

    kind: str
    params: dict = field(default_factory=dict)
    text: str = ""

    def fixed_n(self) -> int | None:
        """The order the source implies (classic3, file, digits default), else None."""
        if self.kind == "classic3":
            return 3
        if self.kind == "file":
            return from_file(self.params["path"]).shape[-1]
        if self.kind == "digits":
            return DIGITS_SAMPLES
        return None

    def describe(self) -> str:
        p = self.params
        if self.kind == "random":
            return f"random Hermitian PD (Haar Q, {p.get('mode', 'geometric')} σ), cond={p.get('cond', 2.0):.3g}"
        if self.kind == "lapack":
            return f"LAPACK PO test type {p['type']}"
        if self.kind == "classic3":
            return "classic 3x3 " + ("negative definite" if p.get("negative") else "SPD")
        if self.kind == "file":
            return f"matrix from {p['path']}"
        return (f"RBF kernel of sklearn digits, gamma={p.get('gamma', 1 / 64):.3g}, "
                f"jitter={p.get('jitter', 1e-6):.3g}")

    def make(self, n: int | None = None, batch=(), dtype=None, device="cpu",
             seed: int = 0) -> TestMatrix:
        """Build the input, shape (*batch, n, n).

        Parameters
        ----------
        n : int, optional
            Required for random and lapack. classic3 and file fix n (None takes
            it; a different n is an error); digits takes n <= 1797 (None: all).
        batch : int or tuple of int
            Deterministic sources are repeated over ``batch``; a batched
            ``.npy`` keeps its own batch (a different ``batch`` is an error).
        dtype : str, torch.dtype or numpy dtype, optional
            None (default): a file's own dtype (see :func:`from_file`), float64
            for every generated source. Given explicitly: the generated
            matrix's dtype; for a file it must equal the file's dtype (a file
            is never converted), else :class:`~cusolver_trace.errors.InputFileError`.
            A command-line ``--dtype`` that the user did not give should be
            passed as None.
        device : str or torch.device
        seed : int
            Seeds random and lapack; ignored by the deterministic sources.

        Returns
        -------
        TestMatrix

        Raises
        ------
        ValueError
            n missing or conflicting; batch conflicting with a file's.
        InputFileError
            (a ``ValueError``) ``file:PATH`` cannot be read, is malformed, or
            holds another dtype than ``dtype``; see :func:`from_file`.
        FileNotFoundError
            ``file:PATH`` does not exist.
        TypeError
            Unsupported ``dtype``.

        Examples
        --------
        >>> from cusolver_trace.matrices import parse_matrix_spec
        >>> parse_matrix_spec("classic3").make(batch=2).A.shape
        torch.Size([2, 3, 3])
        >>> parse_matrix_spec("random").make(4, dtype="float32").A.dtype
        torch.float32
        """
        batch, p = _batch(batch), self.params
        file_dtype, dtype = dtype, "float64" if dtype is None else dtype
        if self.kind in ("random", "lapack") and n is None:
            raise ValueError(f"--matrix {self.text} needs a size n")
        if self.kind == "random":
            A = spd(n, batch=batch, dtype=dtype, device=device, seed=seed, **p)
            desc, cond = self.describe(), p.get("cond", 2.0)
            try:
                check_cond(cond, dtype)
            except ValueError:
                # allowed here (compare on inputs that fail on purpose), but never called
                # positive definite: rounding to dtype can make it indefinite
                desc = desc.replace("Hermitian PD", "Hermitian") + (
                    f", past {max_cond(dtype):.3g} = 0.5/eps of {dtype_info(dtype).name}: "
                    "not positive definite after rounding, expect info > 0")
            return TestMatrix(A, 0, desc, cond, self.text)
        if self.kind == "lapack":
            return lapack_test_matrix(p["type"], n, dtype=dtype, seed=seed, batch=batch, device=device)
        L = info = cond = None
        if self.kind == "classic3":
            tm = classic_spd3(negative=p["negative"], dtype=dtype, device=device)
            A, L, info, cond = tm.A, tm.L, tm.expected_info, tm.cond
        elif self.kind == "file":
            A = from_file(p["path"], dtype=file_dtype)
        else:
            A = rbf_kernel_digits(n, dtype=dtype, **p)
        fixed = A.shape[-1]
        if n is not None and n != fixed:
            raise ValueError(f"--matrix {self.text} is {fixed}x{fixed}; got n={n}")
        if A.ndim > 2:
            if batch and batch != tuple(A.shape[:-2]):
                raise ValueError(f"{p['path']} holds a batch of shape {tuple(A.shape[:-2])}; "
                                 f"got batch={batch}")
        desc = self.describe()
        if A.ndim == 2 and batch:
            A = A.expand(*batch, fixed, fixed).clone()
            L = None if L is None else L.expand(*batch, fixed, fixed).clone()
            # said in the label: a batch of copies of one matrix, not a batch the source held
            desc += f", the same matrix repeated over batch {'x'.join(map(str, batch))}"
        return TestMatrix(A.to(device), info, desc, cond, self.text, L)


def parse_matrix_spec(spec: str) -> MatrixSpec:
    """Parse a ``--matrix SPEC`` string.

    ===============================  ===========================================
    SPEC                             input
    ===============================  ===========================================
    ``random``                       :func:`spd`, cond 2, geometric σ
    ``random:cond=1e6``              :func:`spd` with cond 1e6
    ``random:cond=1e6,mode=arithmetic``  … arithmetic σ
    ``lapack:TYPE``                  :func:`lapack_test_matrix`, TYPE one of
                                     :data:`LAPACK_TYPES` (e.g. ``lapack:ill``)
    ``classic3`` / ``classic3:negative``  :func:`classic_spd3` (n = 3)
    ``file:PATH``                    :func:`from_file` (.npy / .mtx; n from file)
    ``digits`` / ``digits:gamma=0.001,jitter=1e-8``  :func:`rbf_kernel_digits`
    ===============================  ===========================================

    Raises
    ------
    ValueError  unknown kind, key, value or LAPACK type (the message lists the forms).
    """
    # strict and case-sensitive, like every other value: kinds, keys and names are lower case
    kind, colon, arg = spec.partition(":")

    def bad(why):
        return ValueError(f"bad --matrix {spec!r}: {why}; expected {_SPEC_HELP}")

    params: dict = {}
    if kind in _KEYS:
        if colon and not arg:
            raise bad(f"{kind}: needs options after ':' (or no ':')")
        for item in arg.split(",") if arg else ():
            key, eq, val = item.partition("=")
            if key not in _KEYS[kind] or not eq or not val:
                raise bad(f"unknown or malformed option {item!r} (options: {', '.join(_KEYS[kind])})")
            if key in params:
                raise bad(f"option {key!r} given twice")
            try:
                params[key] = _KEYS[kind][key](val)
            except ValueError:
                raise bad(f"{key}={val!r} is not a number") from None
        if params.get("mode", "geometric") not in MODES:
            raise bad(f"mode must be one of {', '.join(MODES)}")
        numbers = [v for v in params.values() if isinstance(v, float)]
        if not all(np.isfinite(numbers)) or not params.get("cond", 1.0) >= 1 \
                or not params.get("gamma", 1.0) > 0 or not params.get("jitter", 0.0) >= 0:
            raise bad("need a finite cond >= 1, gamma > 0, jitter >= 0")
    elif kind == "lapack":
        if arg not in LAPACK_TYPES:
            raise bad(f"LAPACK type must be one of {', '.join(LAPACK_TYPES)}")
        params["type"] = arg
    elif kind == "classic3":
        if arg not in ("", "negative"):
            raise bad(f"classic3 takes no option but 'negative', got {arg!r}")
        params["negative"] = arg == "negative"
    elif kind == "file":
        if not arg:
            raise bad("file: needs a path")
        params["path"] = arg
    else:
        raise bad(f"unknown kind {kind!r}")
    return MatrixSpec(kind, params, spec)


def achieved_cond(A) -> BatchMax:
    """2-norm condition number max|λ| / min|λ| of Hermitian A, (..., n, n), per matrix.

    Computed with ``torch.linalg.eigvalsh`` in float64/complex128 on A's device
    (lower triangle referenced); inf for a singular matrix, 1 for n = 0.
    """
    A = as_tensor(A)
    A = A.to(torch.complex128 if A.is_complex() else torch.float64)
    if A.shape[-1] == 0:
        return batch_max(torch.ones(A.shape[:-2]))
    lam = torch.linalg.eigvalsh(A).abs()
    return batch_max(lam.amax(-1) / lam.amin(-1))
