"""The cases behind docs/bad-input.md: each row runs, on the CPU, what each path answers for
one class of bad input. ``tests/test_bad_input_doc.py`` checks that the committed page is what
these cases produce now; regenerate it with

    python3 tests/bad_input_cases.py > docs/bad-input.md
"""
from __future__ import annotations

import contextlib
import io
import os
import re
import subprocess
import sys
import tempfile

import numpy as np
import torch

if __name__ == "__main__":   # run as a script: this checkout's package, not an installed one
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import cusolver_trace as ct  # noqa: E402
from cusolver_trace.compare import compare  # noqa: E402
from cusolver_trace.matrices import spd  # noqa: E402


def _outcome(fn) -> str:
    """What a call answers, as one table cell: the value's summary or the error's first line."""
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            out = fn()
    except Exception as exc:  # the point of the page: which error, with which message
        msg = str(exc).splitlines()[0] if str(exc) else ""
        return f"`{type(exc).__name__}`: {msg[:110]}".replace("|", "\\|")
    return out


#: What the page records where two different LAPACK builds agree: whether torch's bundled
#: LAPACK and scipy's give the same bits depends on the machine (builds, CPU kernels, thread
#: counts), so the page never records which of the two it was.
AGREE = "`bitwise-equal` or `within-tolerance` (two LAPACK builds: which one depends on the machine)"


def _verdict(op, *a, **kw) -> str:
    c = compare(op, *a, timing=False, provenance=False, **kw)
    extra = f" (info torch {c.torch.info[:3]}, replay {c.replay.info[:3]})" if c.torch.info and (
        any(c.torch.info) or any(c.replay.info)) else ""
    empty = c.spec["n"] == 0 or c.spec["batch"] == 0   # nothing computed: equal anywhere
    if c.verdict in ("bitwise-equal", "within-tolerance") and not c.path.bitwise and not empty:
        return AGREE + extra
    return f"`{c.verdict}`{extra}"


def _cli(*argv, cwd=None) -> str:
    # this checkout's package, also from a scratch folder (not an installed copy elsewhere)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="",
               PYTHONPATH=os.pathsep.join([root, *filter(None, [os.environ.get("PYTHONPATH")])]))
    p = subprocess.run([sys.executable, "-m", "cusolver_trace", *argv], capture_output=True,
                       text=True, timeout=300, env=env, cwd=cwd)
    stream = p.stdout if p.returncode in (0, 1) else p.stderr
    line = (stream.strip().splitlines() or [""])[-1]
    line = re.sub(r"^cusolver-trace [a-z]+: error: ", "", line).replace("usage: ", "")
    line = re.sub(r"has [0-9.]+ GiB", "has … GiB", line)  # the machine's memory varies
    line = re.sub(r" \(see cusolver-trace [a-z]+ --help\)$", "", line)
    return f"exit {p.returncode}: {line[:110]}".replace("|", "\\|")


def _kind(fn) -> str:
    """What a call raises, by type only (the LAPACK build decides the message's numbers)."""
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            fn()
    except Exception as exc:
        if type(exc).__name__ in ("NoConvergenceError", "NonFiniteError"):
            return ("`NoConvergenceError` or `NonFiniteError` (which one: the LAPACK build's "
                    "info)")
        return f"`{type(exc).__name__}`"
    return "returns"


def _nan_lower():
    A = _a()
    A[3, 1] = float("nan")
    return A


def _json_onto_input_cli() -> str:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "in.npy")
        np.save(path, np.eye(3))
        out = _cli("compare", "--op", "eigh", "--repeat", "0", "--matrix", f"file:{path}",
                   "--json", path).replace(tmp, "DIR")
        return out + ("; the input unchanged" if np.array_equal(np.load(path), np.eye(3))
                      else "; THE INPUT WAS OVERWRITTEN")


def _info(A, **kw) -> str:
    L, info = ct.potrf(A, check=False, **kw)
    return f"info = {np.asarray(info).tolist()}"


def _a(n=5, seed=1, **kw):
    return spd(n, seed=seed, **kw)


def _nan_diag():
    A = _a()
    A[1, 1] = float("nan")
    return A


def _garbage_upper():
    A = _a()
    A[0, 4] = float("nan")
    A[1, 3] = 1e300
    return A


def _negdef():
    return -torch.tensor([[4.0, 12, -16], [12, 37, -43], [-16, -43, 98]], dtype=torch.float64)


def _batch_non_pd():
    A = _a(batch=(3,))
    A[2, 3, 3] = -5.0
    return A


_FILES = {"truncated-number.mtx": "%%MatrixMarket matrix array real symmetric\n2 2\n1\n0\n2E",
          "truncated.mtx": "%%MatrixMarket matrix array real symmetric\n3 3\n4\n1\n"}


def _file_cli(name) -> str:
    """The CLI on a bad file, run in a scratch folder so the message names only the file."""
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, name), "w") as fh:
            fh.write(_FILES[name])
        return _cli("compare", "--op", "cholesky", "--matrix", f"file:{name}", cwd=d)


def cases():
    """Rows: (input, routines, compare (CPU), command line)."""
    neg_view = torch._neg_view(_a(dtype="complex128"))
    L_zero = torch.zeros(3, 3, dtype=torch.float64)
    return [
        ("NaN on the diagonal of A", _outcome(lambda: _info(_nan_diag())),
         _outcome(lambda: _verdict("cholesky", _nan_diag())), ""),
        ("NaN / 1e300 in the triangle the op does not read (lower op, garbage above)",
         _outcome(lambda: _info(_garbage_upper()) + ", result bitwise equal to a clean input's"
                  if torch.equal(ct.potrf(_garbage_upper())[0], ct.potrf(_a())[0]) else "DIFFERS"),
         _outcome(lambda: _verdict("cholesky_inverse", _garbage_upper())), ""),
        ("negative definite (−1 × LAPACK's classic 3×3)", _outcome(lambda: _info(_negdef())),
         _outcome(lambda: _verdict("cholesky", _negdef())),
         _cli("compare", "--op", "cholesky", "--matrix", "classic3:negative", "--repeat", "0")),
        ("non positive definite member of a batch (element 2, minor 4)",
         _outcome(lambda: ct.potrf(_batch_non_pd())),
         _outcome(lambda: _verdict("cholesky_inverse", _batch_non_pd())), ""),
        ("`cholesky_inverse` of an all-zero factor", _outcome(lambda: ct.cholesky_inverse(L_zero)),
         _outcome(lambda: _verdict("cholesky_inverse", factor=L_zero)), ""),
        ("`potri` of an all-Inf factor", _outcome(lambda: ct.potri(np.full((3, 3), np.inf))),
         _outcome(lambda: _verdict("cholesky_inverse", factor=torch.full((3, 3), float("inf"),
                                                                        dtype=torch.float64))), ""),
        ("`trtri(T, unit_diagonal=True)`, T = [[4, 0], [2, 3]]",
         _outcome(lambda: f"{ct.trtri(np.array([[4.0, 0], [2, 3]]), unit_diagonal=True).tolist()}"),
         "", ""),
        ("n = 0 and batch = 0", _outcome(lambda: f"shape {tuple(ct.potrf(np.zeros((0, 3, 3)))[0].shape)}"),
         _outcome(lambda: _verdict("cholesky_solve", torch.zeros((0, 0), dtype=torch.float64))),
         _cli("compare", "--op", "cholesky_inverse", "--n", "0", "--repeat", "0")),
        ("float16", _outcome(lambda: ct.potrf(np.eye(2, dtype=np.float16))),
         _outcome(lambda: _verdict("cholesky", torch.eye(2, dtype=torch.float16))),
         _cli("compare", "--op", "cholesky", "--dtype", "float16")),
        ("non-square / 1-D", _outcome(lambda: ct.potrf(np.ones((2, 3)))),
         _outcome(lambda: _verdict("cholesky_solve", _a(4), np.ones(4))), ""),
        ("`requires_grad`, conjugate and negative-bit views",
         _outcome(lambda: "values read, result tracks no gradient: requires_grad = "
                  f"{ct.potrf(_a().requires_grad_())[0].requires_grad}"),
         _outcome(lambda: _verdict("cholesky", -neg_view)), ""),
        ("negative strides, big-endian, read-only NumPy",
         _outcome(lambda: "same values as a contiguous copy: " + str(bool(np.array_equal(
             ct.potrf(_a().numpy()[::-1, ::-1])[0], ct.potrf(np.ascontiguousarray(_a().numpy()[::-1, ::-1]))[0])))),
         _outcome(lambda: _verdict("cholesky", _a().numpy().astype(">f8"))), ""),
        ("`numpy.matrix`; a masked array",
         _outcome(lambda: "matrix read as a plain array: " + str(np.allclose(
             ct.potri(np.matrix([[2.0, 0.0], [1.0, 1.0]])), [[0.5, -0.5], [-0.5, 1.0]])))
         + "; masked: " + _outcome(lambda: ct.potrf(np.ma.masked_array(
             np.eye(2), mask=[[0, 1], [0, 0]]))),
         _outcome(lambda: _verdict("cholesky_inverse", np.matrix([[4.0, 2.0], [2.0, 2.0]]))),
         ""),
        ("meta tensor", _outcome(lambda: ct.potrf(torch.empty(2, 2, device="meta"))),
         _outcome(lambda: _verdict("cholesky", torch.empty(2, 2, device="meta"))), ""),
        ("`--uplo up`, `--batch 0`, `--repeat -1`", "", "",
         " / ".join(_cli("compare", "--op", "cholesky", *a).split(":")[0] for a in (
             ("--uplo", "up"), ("--batch", "0"), ("--repeat", "-1")))),
        ("`--device gpu`, `--n 1000000000`", "", "",
         _cli("compare", "--op", "cholesky", "--n", "4", "--device", "gpu") + "; "
         + _cli("compare", "--op", "cholesky", "--n", "1000000000")),
        ("Matrix Market file ending in a truncated number (`2E`)", "", "",
         _file_cli("truncated-number.mtx")),
        ("truncated symmetric Matrix Market file", "", "", _file_cli("truncated.mtx")),
        ("`eigh`: NaN in the triangle read", _kind(lambda: ct.eigh(_nan_lower())),
         _outcome(lambda: f"`{compare('eigh', _nan_lower(), timing=False, provenance=False).verdict}`"),
         ""),
        ("`eigh`: finite input whose eigenvalues overflow (every entry 1.5e308)",
         _kind(lambda: ct.eigh(np.full((4, 4), 1.5e308))),
         _outcome(lambda: _verdict("eigh", torch.full((4, 4), 1.5e308, dtype=torch.float64))),
         ""),
        ("`--json` naming the `--matrix file:` input", "", "", _json_onto_input_cli()),
        ("`warmup --n 0` / `--sm 9`; `warmup --n 200 --dtype complex128`", "", "",
         " / ".join(_cli("warmup", *a).split(":")[0] for a in (("--n", "0"), ("--sm", "9")))
         + "; " + _cli("warmup", "--n", "200", "--dtype", "complex128")),
    ]


HEADER = """# Bad input and edge cases: what each path answers

Generated by `python3 tests/bad_input_cases.py > docs/bad-input.md` on the CPU (torch's CPU
path against the replay through scipy's LAPACK); `tests/test_bad_input_doc.py` fails when this
page is not what the cases produce now. The same classes run on an H200 in
`tests/test_gpu_edge.py` and `tests/test_gpu_routines.py`; there cuSOLVER itself is silent in
several of them (potrs never reports a singular factor; potrf can return `info = 0` on NaN
input), and the routines' checks report them instead. Property tests over these classes:
`tests/test_properties.py`; regression tests: `tests/test_bad_input.py`,
`tests/test_matrix_files.py`, `tests/test_trace_bad_input.py`. Inputs are never modified.

| input | cusolver-trace routines | `compare` (CPU) | command line |
|---|---|---|---|
"""


def render() -> str:
    rows = [f"| {a} | {b} | {c} | {d} |" for a, b, c, d in cases()]
    return HEADER + "\n".join(rows) + "\n"


if __name__ == "__main__":
    sys.stdout.write(render())
