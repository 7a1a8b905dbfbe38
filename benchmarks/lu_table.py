"""Issue 24's table: general inverse and solve, cusolver-trace's LU routines against torch, JAX
and CuPy, in one process on one GPU.

    python3 benchmarks/lu_table.py OUT.json [--deadline 220] [--cases 10000x8,1x4096]
                                            [--reps 7]

For each batch × n (float64; batch 1 is one unbatched matrix), single calls, each followed by a
synchronize, host wall clock (``time.perf_counter``), the median of ``--reps`` (>= 7) calls
after two warm-up calls, of

* torch: ``torch.linalg.inv(A)``, ``torch.linalg.solve(A, B)`` (nrhs 1), and at batch 1
  ``torch.linalg.lu_factor(A)`` beside the getrf rows;
* JAX (``jax.jit`` of ``jnp.linalg.inv`` / ``jnp.linalg.solve``, x64 on, no preallocation:
  ``XLA_PYTHON_CLIENT_PREALLOCATE=false``) and CuPy (``cupy.linalg.inv`` /
  ``cupy.linalg.solve``): a peer that is missing or fails is reported, never fatal;
* ``cusolver_trace.inv(A, method=m)`` and ``cusolver_trace.solve(A, B, method=m)`` for
  ``m = "auto"`` and every row of ``routines.INV`` / ``routines.SOLVE`` (checks on: the
  public entry point as users call it), and ``cusolver_trace.getrf`` ``legacy`` / ``X`` at
  batch 1.

Every result is judged by LAPACK's ratio (``get03`` for inverses, ``get02`` for solves,
``get01`` for getrf; < 30 passes). Rows that loop over the matrices of a batch in Python
(``legacy``, ``X``, the ``getri`` rows) are skipped above batch 100, and the rows of cuBLAS's
small-matrix batched LU on one matrix above n = 1024; a call whose predicted time (from its
time at the previous case of the same batch, by n³) passes 3 s is skipped; a first call over
1 s is its only sample. Each skip says why. The JSON (rows, versions, device, the command) is
rewritten after every case, so a run cut short keeps what it measured. The short table comes
last: per case and op, torch, JAX, CuPy, ours with ``auto`` (and the row it ran), the best
of our rows, and their ratios to torch and to the best peer.

``LU_TABLE_DRY=1`` runs the logic on the CPU at small sizes (torch and our CPU rows only).
"""
from __future__ import annotations

import sys

from _peer_table import Spec, main

CASES = ((10000, 8), (1000, 32), (100, 128), (8, 512), (1, 4096), (1, 8192))
DRY_CASES = ((100, 8), (10, 32), (1, 160))
LOOP_ROWS = {"legacy", "X", "getri", "getri_rec", "getri_X"}
LOOP_MAX_BATCH = 100
BATCHED_ROWS = {"batched", "matinv_batched", "getri_batched"}   # cuBLAS's small-matrix LU
BATCHED_MAX_N_ALONE = 1024


def make_inputs(P, batch, n):
    from cusolver_trace.matrices import structured

    torch = P.torch
    shape = () if batch == 1 else (batch,)
    A = structured("general", n, batch=shape, cond=1e3, dtype="float64", device=P.dev, seed=0)
    g = torch.Generator(device=P.dev).manual_seed(1)
    B = torch.randn(*shape, n, 1, generator=g, dtype=torch.float64, device=P.dev)
    return A, B


def calls(P, inputs, batch, n):
    """``[(op, who, method label, callable returning the result as a torch tensor or None)]``."""
    import cusolver_trace as ct
    from cusolver_trace import routines

    A, B = inputs
    torch = P.torch
    out = [("inv", "torch", "linalg.inv", lambda: torch.linalg.inv(A)),
           ("solve", "torch", "linalg.solve", lambda: torch.linalg.solve(A, B))]
    if batch == 1:
        out.append(("getrf", "torch", "linalg.lu_factor", lambda: torch.linalg.lu_factor(A)))
    if P.jax is not None:
        ja = P.jax.device_put(A.cpu().numpy(), P.jdev)
        jb = P.jax.device_put(B.cpu().numpy(), P.jdev)
        out += [("inv", "jax", "jnp.linalg.inv", lambda: P.jinv(ja).block_until_ready()),
                ("solve", "jax", "jnp.linalg.solve", lambda: P.jsolve(ja, jb).block_until_ready())]
    if P.cupy is not None:
        ca, cb = P.cupy.from_dlpack(A), P.cupy.from_dlpack(B)
        out += [("inv", "cupy", "cupy.linalg.inv", lambda: P.cupy.linalg.inv(ca)),
                ("solve", "cupy", "cupy.linalg.solve", lambda: P.cupy.linalg.solve(ca, cb))]
    for m in routines.INV.names:
        if m == "matinv_batched" and n > 32:
            continue
        out.append(("inv", "ours", m, lambda m=m: ct.inv(A, method=m)))
    for m in routines.SOLVE.names:
        out.append(("solve", "ours", m, lambda m=m: ct.solve(A, B, method=m)))
    if batch == 1:
        for m in ("legacy", "X"):
            out.append(("getrf", "ours", m, lambda m=m: ct.getrf(A, method=m)))
    return out


def judge(P, op, result, inputs):
    """LAPACK's ratio of a result (any kind), as ``(name, value)``."""
    from cusolver_trace import checks

    A, B = inputs
    torch = P.torch
    if op == "getrf":
        LU, piv = result[0], result[1]
        return "get01", float(checks.get01(A, LU, piv))
    x = result if isinstance(result, torch.Tensor) else torch.from_dlpack(result)
    if op == "inv":
        return "get03", float(checks.get03(A, x))
    return "get02", float(checks.get02(A, x, B))


def resolve_auto(op, n, batch, device):
    from cusolver_trace import routines

    return routines.lu_method(op, "auto", n, batch, "float64", device)


def skip(label, resolved, batch, n):
    if batch > LOOP_MAX_BATCH and (label in LOOP_ROWS or (label == "auto" and resolved in LOOP_ROWS)):
        return f"a Python loop over {batch} matrices"
    if batch == 1 and n > BATCHED_MAX_N_ALONE and (
            label in BATCHED_ROWS or (label == "auto" and resolved in BATCHED_ROWS)):
        return f"cuBLAS's batched LU (made for small matrices) on one matrix of order {n}"
    return None


def _jax(P, jax, jnp):
    P.jinv, P.jsolve = jax.jit(jnp.linalg.inv), jax.jit(jnp.linalg.solve)


SPEC = Spec(__doc__, "LU_TABLE_DRY", CASES, DRY_CASES, make_inputs, calls, judge, resolve_auto,
            skip, _jax, {"dtype": "float64", "cond": 1e3})

if __name__ == "__main__":
    sys.exit(main(SPEC))
