"""Issue 28's table: eigenvalues and eigenvectors of batches of Hermitian matrices,
cusolver-trace's eigensolver rows against torch, JAX and CuPy, in one process on one GPU.

    python3 benchmarks/eigh_table.py OUT.json [--deadline 220] [--cases 100000x3,100x128]
                                              [--reps 7]

For each batch × n (float64; batch 1 is one unbatched matrix; a seeded Hermitian matrix with a
geometric spectrum of random signs, cond 1e3), single calls, each followed by a synchronize,
host wall clock (``time.perf_counter``), the median of ``--reps`` (>= 7) calls after two
warm-up calls, of

* torch: ``torch.linalg.eigh(A)`` (it raises from batch 65,536 on: reported, not fatal);
* JAX (``jax.jit(jnp.linalg.eigh)``, x64 on, no preallocation) and CuPy
  (``cupy.linalg.eigh``): a peer that is missing or fails is reported, never fatal;
* ``cusolver_trace.eigh(A, method=m)`` for ``m = "auto"`` and every row of
  ``routines.SYEV`` (checks on: the public entry point as users call it).

Every result is judged by LAPACK's eigen ratios (:func:`cusolver_trace.checks.eig_check`:
dsyt21's residual and orthogonality, eigenvalues against a float64 reference; < 30 passes).
Rows that loop over the matrices in Python (``Xsyevd``, ``syevj``, ``syevd``) are skipped above
batch 1000; a call whose predicted time (by n³ from the previous case of the same batch) passes
3 s is skipped; a first call over 1 s is its only sample. The JSON is rewritten after every case.
The short table comes last: per case, torch, JAX, CuPy, ours ``auto`` (and the row it ran), our
best row, and their ratios to torch and to the best peer.

``EIGH_TABLE_DRY=1`` runs the logic on the CPU at small sizes (torch and our CPU rows only).
"""
from __future__ import annotations

import sys

from _peer_table import Spec, main

CASES = ((100000, 3), (32768, 3), (10000, 8), (1000, 32), (100, 128), (8, 512), (1, 1024),
         (1, 4096))
DRY_CASES = ((100, 3), (10, 8), (1, 64))
LOOP_ROWS = {"Xsyevd", "syevj", "syevd"}
LOOP_MAX_BATCH = 1000


def make_inputs(P, batch, n):
    from cusolver_trace.matrices import structured

    shape = () if batch == 1 else (batch,)
    return (structured("hermitian", n, batch=shape, cond=1e3, dtype="float64", device=P.dev,
                       seed=0),)


def calls(P, inputs, batch, n):
    """``[(op, who, method label, callable returning (w, V))]``."""
    import cusolver_trace as ct
    from cusolver_trace import routines

    (A,) = inputs
    torch = P.torch
    out = [("eigh", "torch", "linalg.eigh", lambda: tuple(torch.linalg.eigh(A)))]
    if P.jax is not None:
        ja = P.jax.device_put(A.cpu().numpy(), P.jdev)
        out.append(("eigh", "jax", "jnp.linalg.eigh",
                    lambda: tuple(x.block_until_ready() for x in P.jeigh(ja))))
    if P.cupy is not None:
        ca = P.cupy.from_dlpack(A)
        out.append(("eigh", "cupy", "cupy.linalg.eigh", lambda: P.cupy.linalg.eigh(ca)))
    for m in routines.SYEV.names:
        if m in ("syevjBatched",) and n > 32 or m == "jacobi" and n > 8:
            continue
        if P.dry and m != "auto" and routines.SYEV.row(m).gpu_only:
            continue
        out.append(("eigh", "ours", m, lambda m=m: ct.eigh(A, method=m)))
    return out


def judge(P, op, result, inputs):
    """LAPACK's eigen ratios of a result (any kind), as ``(name, value)``."""
    import numpy as np

    from cusolver_trace import checks

    (A,) = inputs
    torch = P.torch

    def t(x):
        if isinstance(x, torch.Tensor):
            return x
        if hasattr(x, "__dlpack__"):
            try:
                return torch.from_dlpack(x)
            except Exception:   # a JAX array on another device: through the host
                pass
        return torch.from_numpy(np.asarray(x)).to(A.device)

    w, V = (t(x) for x in result)
    return "eig", float(checks.eig_check(A, w, V))


def resolve_auto(op, n, batch, device):
    from cusolver_trace import routines

    return routines.SYEV.resolve("auto", n, batch, "float64", device)


def skip(label, resolved, batch, n):
    if batch > LOOP_MAX_BATCH and (label in LOOP_ROWS or (label == "auto" and resolved in LOOP_ROWS)):
        return f"a Python loop over {batch} matrices"
    return None


def _jax(P, jax, jnp):
    P.jeigh = jax.jit(jnp.linalg.eigh)


SPEC = Spec(__doc__, "EIGH_TABLE_DRY", CASES, DRY_CASES, make_inputs, calls, judge,
            resolve_auto, skip, _jax,
            {"dtype": "float64", "cond": 1e3, "matrix": "structured('hermitian'): Q diag(λ) Qᴴ, "
             "|λ| geometric from 1 to 1e-3, random signs"})

if __name__ == "__main__":
    sys.exit(main(SPEC))
