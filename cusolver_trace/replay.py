"""Layer 3: replays of exactly the library calls torch makes for its Cholesky family.

The dispatch rules live in one table, :data:`DISPATCH`, keyed by torch version
range, and were established from PyTorch's sources, the symbols of the official
wheels (2.3.1, 2.11.0, 2.12.0, 2.13.0, 2.14.1) and real cuSOLVER/cuBLAS API logs
of torch 2.11.0+cu130 on an H200 (see ``docs/dispatch.md``).

:func:`torch_path` answers "which calls does torch make for this op, shape,
version and backend preference?"; :func:`replay` runs those calls through the
raw layer on the same inputs (or, where torch runs MAGMA, which this project
does not call, the cuSOLVER path as a reference, flagged as not bitwise).

Replays mirror:

* ``torch.linalg.cholesky(A, upper)`` — CUDA: ``cusolverDnXpotrf_bufferSize`` +
  ``cusolverDnXpotrf`` (batch 1), ``cusolverDn<t>potrfBatched`` (batch > 1),
  then the other triangle zeroed; CPU: LAPACK ``?potrf`` per matrix.
* ``torch.cholesky_inverse(L, upper)`` — CUDA batch 1: identity RHS +
  ``cusolverDnXpotrs`` (nrhs = n); batch > 1: MAGMA ``potrs_batched``
  (torch <= 2.11, default preference), a loop of ``cusolverDnXpotrs``
  (torch <= 2.11, preferred = cusolver), two cuBLAS ``trsm`` solves (torch >=
  2.12: a ``trsm`` loop when batch <= 8 and n >= 64, else ``trsmBatched``);
  CPU: LAPACK ``?potri`` + mirror.
* ``torch.cholesky_solve(B, L, upper)`` — as the inverse with B for the
  identity, except that torch <= 2.11 with preferred = cusolver uses one
  ``cusolverDn<t>potrsBatched`` when nrhs == 1; CPU: LAPACK ``?potrs`` per matrix.
"""
from __future__ import annotations

import contextlib
import re
from dataclasses import asdict, dataclass

import numpy as np

from . import _lapack_impl as _cpu

__all__ = ["OPS", "TorchPath", "torch_path", "replay", "parse_version", "DISPATCH", "preferred_library"]

OPS = ("cholesky", "cholesky_inverse", "cholesky_solve")


@dataclass(frozen=True)
class TorchPath:
    """What torch runs for one call.

    ``backend``: ``"cusolver"``, ``"cublas"``, ``"magma"`` or ``"lapack"``;
    ``calls``: the library routines, in order (``{t}`` = type letter);
    ``replay``: the key of the replay that runs the same calls;
    ``bitwise``: whether the replay runs the same routines (bit-for-bit
    agreement expected); ``note``: anything a reader should know.
    """

    op: str
    backend: str
    calls: tuple
    replay: str
    bitwise: bool
    rule: str
    note: str = ""

    def to_dict(self):
        return asdict(self)


def parse_version(v) -> tuple[int, int]:
    """``"2.11.0+cu130"`` → ``(2, 11)``."""
    m = re.match(r"(\d+)\.(\d+)", str(v))
    if not m:
        raise ValueError(f"cannot parse torch version {v!r}")
    return int(m.group(1)), int(m.group(2))


# -- the dispatch table -----------------------------------------------------------------
# Each row: (op, min_version, max_version, condition(batch, n, nrhs, preferred) -> bool, path)
# Rows are tried in order; the first whose version range and condition match wins.
_XPOTRF = ("cusolverDnXpotrf_bufferSize", "cusolverDnXpotrf")
_XPOTRS = ("cusolverDnXpotrs → cublas{T}trsm_v2_64 ×2",)
_MAGMA_POTRS = ("magma_{t}potrs_batched",)
_TRSM = ("cublas{T}trsm_v2 (L⁻¹)", "cublas{T}trsm_v2 (L⁻ᴴ)")
_TRSM_BATCHED = ("cublas{T}trsmBatched (L⁻¹)", "cublas{T}trsmBatched (L⁻ᴴ)")
_ANY = (0, 0), (99, 99)
_OLD = (0, 0), (2, 11)
_NEW = (2, 12), (99, 99)


def _trsm_loop(batch, n, nrhs, pref):
    return batch <= 8 and n >= 64


DISPATCH = [
    # op, versions, condition, backend, calls, replay, bitwise, rule
    ("cholesky", *_ANY, lambda b, n, k, p: b == 1, "cusolver", _XPOTRF, "potrf_X", True,
     "batch == 1"),
    ("cholesky", *_ANY, lambda b, n, k, p: b > 1, "cusolver", ("cusolverDn{T}potrfBatched",),
     "potrf_batched", True, "batch > 1"),
    ("cholesky_inverse", *_ANY, lambda b, n, k, p: b == 1, "cusolver", _XPOTRS, "potrs_identity_X",
     True, "batch == 1: identity RHS, nrhs = n"),
    ("cholesky_inverse", *_OLD, lambda b, n, k, p: p == "cusolver", "cusolver",
     ("cusolverDnXpotrs × batch",), "potrs_identity_X", True,
     "batch > 1, preferred_linalg_library = cusolver: loop of Xpotrs"),
    ("cholesky_inverse", *_OLD, lambda b, n, k, p: True, "magma", _MAGMA_POTRS, "potrs_identity_X",
     False, "batch > 1, default preference: MAGMA (replay runs the cuSOLVER path as reference)"),
    ("cholesky_inverse", *_NEW, _trsm_loop, "cublas", _TRSM, "trsm_identity_loop", True,
     "batch > 1, batch <= 8 and n >= 64: cuBLAS trsm loop"),
    ("cholesky_inverse", *_NEW, lambda b, n, k, p: True, "cublas", _TRSM_BATCHED,
     "trsm_identity_batched", True, "batch > 1: cuBLAS trsmBatched"),
    ("cholesky_solve", *_ANY, lambda b, n, k, p: b == 1, "cusolver", _XPOTRS, "potrs_X", True,
     "batch == 1"),
    ("cholesky_solve", *_OLD, lambda b, n, k, p: p == "cusolver" and k == 1, "cusolver",
     ("cusolverDn{T}potrsBatched",), "potrs_batched", True,
     "batch > 1, preferred = cusolver, nrhs == 1"),
    ("cholesky_solve", *_OLD, lambda b, n, k, p: p == "cusolver", "cusolver",
     ("cusolverDnXpotrs × batch",), "potrs_X", True, "batch > 1, preferred = cusolver, nrhs > 1"),
    ("cholesky_solve", *_OLD, lambda b, n, k, p: True, "magma", _MAGMA_POTRS, "potrs_X", False,
     "batch > 1, default preference: MAGMA (replay runs the cuSOLVER path as reference)"),
    ("cholesky_solve", *_NEW, _trsm_loop, "cublas", _TRSM, "trsm_solve_loop", True,
     "batch > 1, batch <= 8 and n >= 64: cuBLAS trsm loop"),
    ("cholesky_solve", *_NEW, lambda b, n, k, p: True, "cublas", _TRSM_BATCHED, "trsm_solve_batched",
     True, "batch > 1: cuBLAS trsmBatched"),
]

_CPU = {
    "cholesky": (("LAPACK {t}potrf × batch",), "lapack_potrf"),
    "cholesky_inverse": (("LAPACK {t}potri", "mirror triangle"), "lapack_potri"),
    "cholesky_solve": (("LAPACK {t}potrs × batch",), "lapack_potrs"),
}


def torch_path(op: str, *, batch: int, n: int, nrhs: int | None = None, dtype="float64",
               device: str = "cuda", torch_version=None, preferred: str | None = None) -> TorchPath:
    """Which library calls torch makes for ``op`` on inputs of this shape.

    Parameters
    ----------
    op : "cholesky" | "cholesky_inverse" | "cholesky_solve"
    batch : int     number of matrices (product of the batch dimensions)
    n, nrhs : int   matrix order, right-hand sides (solve only; inverse uses n)
    device : "cuda" or "cpu"
    torch_version : str or None   default: the installed torch
    preferred : "default" | "cusolver" | "magma" | None
        ``torch.backends.cuda.preferred_linalg_library()``; None reads it.
        torch >= 2.12 ignores it for these ops.
    """
    from ._dtypes import dtype_info

    if op not in OPS:
        raise ValueError(f"op must be one of {OPS}, got {op!r}")
    t = dtype_info(dtype).prefix
    fmt = lambda calls: tuple(c.format(t=t, T=t.upper()) for c in calls)  # noqa: E731
    if device == "cpu" or str(device).startswith("cpu"):
        calls, key = _CPU[op]
        return TorchPath(op, "lapack", fmt(calls), key, False, "CPU",
                         "torch's bundled LAPACK vs scipy's LAPACK: agreement is judged by "
                         "tolerance (equal bits only by chance)")
    import torch

    ver = parse_version(torch_version or torch.__version__)
    if preferred is None:
        preferred = str(torch.backends.cuda.preferred_linalg_library()).split(".")[-1].lower()
    preferred = preferred.lower()
    k = n if nrhs is None else nrhs
    for row_op, lo, hi, cond, backend, calls, key, bitwise, rule in DISPATCH:
        if row_op == op and lo <= ver <= hi and cond(batch, n, k, preferred):
            note = ""
            if backend == "magma":
                note = ("torch runs MAGMA here, which cusolver-trace does not call: the replay runs "
                        "the cuSOLVER path as a reference and agreement is judged by tolerance")
            if preferred == "magma" and op == "cholesky":
                note = "cholesky always uses cuSOLVER in these torch versions"
            return TorchPath(op, backend, fmt(calls), key, bitwise,
                             f"torch {ver[0]}.{ver[1]}: {rule}", note)
    raise LookupError(f"no dispatch rule for {op} batch={batch} n={n} torch {ver}")  # pragma: no cover


@contextlib.contextmanager
def preferred_library(lib: str | None):
    """Set ``torch.backends.cuda.preferred_linalg_library(lib)`` inside the block, restore after
    (``None``: leave it as it is)."""
    import torch

    if lib is None:
        yield
        return
    old = torch.backends.cuda.preferred_linalg_library()
    torch.backends.cuda.preferred_linalg_library(lib)
    try:
        yield
    finally:
        torch.backends.cuda.preferred_linalg_library(old)


def _replays():
    from . import _cuda_impl as cu

    return {
        "potrf_X": lambda a, b, up: cu.potrf(a, up, "X"),
        "potrf_batched": lambda a, b, up: cu.potrf(a, up, "batched"),
        "potrs_identity_X": lambda c, b, up: cu.potrs_identity(c, up, "X"),
        "trsm_identity_loop": lambda c, b, up: cu.trsm_identity_inverse(c, up, batched=False),
        "trsm_identity_batched": lambda c, b, up: cu.trsm_identity_inverse(c, up, batched=True),
        "potrs_X": lambda c, b, up: cu.potrs(c, b, up, "X"),
        "potrs_batched": lambda c, b, up: cu.potrs(c, b, up, "batched"),
        "trsm_solve_loop": lambda c, b, up: cu.trsm_solve(c, b, up, batched=False),
        "trsm_solve_batched": lambda c, b, up: cu.trsm_solve(c, b, up, batched=True),
    }


def _cpu_replay(key, x, b, upper):
    import torch

    xn = x.resolve_conj().numpy()
    if key == "lapack_potrf":
        out, info = _cpu.potrf(xn, upper)
    elif key == "lapack_potri":
        out, info = _cpu.potri(xn, upper)
    else:
        bn = np.broadcast_to(b.resolve_conj().numpy(), xn.shape[:-2] + b.shape[-2:])
        out, info = _cpu.potrs(xn, bn, upper)
    return torch.from_numpy(np.ascontiguousarray(out)), torch.from_numpy(np.asarray(info))


def replay(op: str, x, b=None, *, upper: bool = False, path: TorchPath | None = None, **path_kw):
    """Run torch's library calls for ``op`` through the raw layer.

    Parameters
    ----------
    op : "cholesky" (x = A), "cholesky_inverse" (x = factor), "cholesky_solve" (x = factor, b = B)
    x : torch.Tensor (..., n, n)    CUDA (cuSOLVER/cuBLAS) or CPU (scipy LAPACK)
    b : torch.Tensor (..., n, k)    right-hand sides for cholesky_solve (same batch shape as x)
    path : TorchPath, optional      default: :func:`torch_path` for these inputs
    **path_kw : passed to :func:`torch_path` (``torch_version``, ``preferred``)

    Returns
    -------
    (result, info, path): ``result`` as torch returns it; ``info`` an int32
    tensor (one per matrix; potrs-type calls report illegal arguments only).
    Nothing is checked or synchronized.
    """
    batch = int(np.prod(x.shape[:-2], dtype=np.int64))
    n = x.shape[-1]
    nrhs = b.shape[-1] if b is not None else None
    if path is None:
        path = torch_path(op, batch=batch, n=n, nrhs=nrhs, dtype=x.dtype,
                          device=x.device.type, **path_kw)
    if x.device.type == "cpu":
        out, info = _cpu_replay(path.replay, x, b, upper)
    else:
        out, info = _replays()[path.replay](x, b, upper)
    return out, info, path
