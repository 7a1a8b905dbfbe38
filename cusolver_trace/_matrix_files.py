"""Reading matrix files: ``.npy`` and Matrix Market ``.mtx`` / ``.mtx.gz``, strictly.

Used through :func:`cusolver_trace.matrices.from_file` (and ``--matrix file:PATH``); this
module holds the readers and their checks, apart from the generators.
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
from pathlib import Path

import numpy as np
import torch

from ._dtypes import SUPPORTED_DTYPES, dtype_info
from .errors import InputFileError

__all__ = ["from_file"]


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


def from_file(path, *, dtype=None, structure: str = "hpd") -> torch.Tensor:
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
    The one change, for ``structure="hpd"`` only: a finite matrix whose asymmetry
    max|A − Aᴴ| is within 100·eps·max|A| (rounding noise of the program that wrote
    it) is returned as its exactly Hermitian part ``(A + Aᴴ)/2`` (real diagonal).
    ``structure="general"`` and ``structure="hermitian"`` return every value as stored
    (an eigensolver reads one triangle of a Hermitian input and ignores the other, so
    nothing needs symmetrizing: the file's values are what the solver is given).

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
    structure : "hpd", "general" or "hermitian"
        What the matrix is read for: a Hermitian positive definite input of potrf
        (rounding-noise asymmetry removed, as above), a general input of getrf or a
        Hermitian input of syevd (values kept).

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
    ValueError
        ``structure`` is not "hpd", "general" or "hermitian".

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
    if structure not in ("hpd", "general", "hermitian"):
        raise ValueError(f"structure must be one of hpd, general, hermitian, got {structure!r}")
    path = Path(path)
    name = path.name.lower()
    if name.endswith(".npy"):
        a = _read_npy(path)
    elif name.endswith((".mtx", ".mtx.gz")):
        a = _read_mtx(path)
    else:   # a missing file or a folder is named as such, before its type
        _open_regular(path).close()
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
    A = torch.from_numpy(a)
    return _symmetrize_noise(A, own) if structure == "hpd" else A


def _rounds_to(text, value: float) -> str | None:
    """``"inf"`` / ``"0"`` when the decimal ``text`` (str or bytes, read as ``value``) lies
    outside float64's range and was rounded to that, else None. The one range rule for
    numbers the user writes (:func:`plain_float`, Matrix Market data)."""
    if math.isinf(value):
        return "inf"
    mantissa = re.split(r"[eE]", text if isinstance(text, str) else text.decode("ascii"))[0]
    return "0" if value == 0 and re.search(r"[1-9]", mantissa) else None
