"""The LU family's dispatch rows against what torch 2.11 called on an H200: for every section of
the API log (op × dtype × n × batch × options × backend preference), the path the op's rows
predict names the library routines the section logged (cuSOLVER getrf / getrs, cuBLAS
getrfBatched / getrsBatched / trsm), and none where torch ran MAGMA."""
from __future__ import annotations

import pathlib
import re

import pytest

from cusolver_trace import ops

DATA = pathlib.Path(__file__).parent / "data" / "h200-torch2.11-cu130" / "lu-eigh"
OPS = {"linalg.lu_factor": "lu_factor", "linalg.lu_solve": "lu_solve", "linalg.solve": "solve",
       "linalg.inv": "inv", "linalg.det": "det", "linalg.slogdet": "slogdet"}


def _sections():
    out = []
    for line in (DATA / "routines-by-section.txt").read_text().splitlines():
        if line.startswith("#") or " | " not in line and not line.endswith(" |"):
            continue
        label, _, calls = line.partition(" |")
        head = label.split()[0]
        if head not in OPS:
            continue
        kv = dict(re.findall(r"(\w+)=(\S+)", label))
        out.append((OPS[head], kv, calls.split()))
    return out


SECTIONS = _sections()


def _options(op, kv):
    o = ops.get(op)
    given = {}
    for opt in o.options:
        if opt.name in kv:
            given[opt.name] = kv[opt.name] == "True"
    return given


def _logged_kinds(calls):
    """The factorization's and the solve's kinds that the logged routines show. MAGMA logs no
    call of its own, but its routines call cuBLAS: ``getrs_gpu`` / ``getrf_gpu`` move the
    pivots with ``cublasGet/SetMatrixAsync`` (and ``trsm`` / ``gemm`` on a handle they destroy
    after), the batched ones ask ``cublasGetMathMode``; those calls are MAGMA's."""
    names = [re.sub(r"x\d+$", "", c) for c in calls]
    has = lambda pat: any(re.fullmatch(pat, c) for c in names)  # noqa: E731
    magma_solve = has(r"cublas(Get|Set)MatrixAsync")
    factor = ("loop" if has(r"cusolverDn[SDCZ]getrf") else
              "batched" if has(r"cublas[SDCZ]getrfBatched") else "magma")
    solve = ("loop" if has(r"cusolverDn[SDCZ]getrs") else
             "batched" if has(r"cublas[SDCZ]getrsBatched") else
             "triangular" if has(r"cublas[SDCZ]trsm(_v2(_64)?|Batched)") and not magma_solve
             else "magma")
    return factor, solve


def test_the_fixture_has_every_lu_op():
    assert {op for op, _, _ in SECTIONS} == set(OPS.values())
    assert len(SECTIONS) > 300


@pytest.mark.parametrize("op,kv,calls", SECTIONS,
                         ids=[f"{o}-{kv['dtype']}-n{kv['n']}-b{kv['batch']}-{kv['preferred']}-"
                              + "-".join(f"{k}{v}" for k, v in kv.items()
                                         if k in ("pivot", "left", "adjoint"))
                              for o, kv, _ in SECTIONS])
def test_rows_predict_the_logged_routines(op, kv, calls):
    o = ops.get(op)
    n, batch = int(kv["n"]), int(kv["batch"])
    path = o.torch_path(batch=batch, n=n, nrhs=int(kv["nrhs"]) if o.has_rhs else None,
                        dtype=kv["dtype"], device="cuda", torch_version="2.11.0",
                        preferred=kv["preferred"], options=_options(op, kv))
    factor, solve = _logged_kinds(calls)
    kinds = path.replay.split("_")[len(op.split("_")):]
    if op in ("lu_factor", "det", "slogdet"):
        assert kinds == [factor], (path, calls)
    elif op == "lu_solve":
        assert kinds == [solve], (path, calls)
    else:
        assert kinds == [factor, solve], (path, calls)
    assert path.bitwise == ("magma" not in kinds)
    assert (path.backend == "magma") == ("magma" in kinds)
