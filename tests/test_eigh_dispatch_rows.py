"""The eigensolvers' dispatch rows against what torch 2.11 called on an H200: for every eigh /
eigvalsh section of the API log (dtype × n × batch × UPLO × backend preference), the path the
rows predict names the cuSOLVER routines the section logged (one ``XsyevBatched``, a loop of
``Xsyevd``, a loop of ``Ssyevj``), MAGMA's cuBLAS calls where torch ran ``syevd_gpu``, and no call
at all where torch copied the matrices to the CPU."""
from __future__ import annotations

import pathlib
import re

import pytest

from cusolver_trace import ops

DATA = pathlib.Path(__file__).parent / "data" / "h200-torch2.11-cu130" / "lu-eigh"
OPS = {"linalg.eigh": "eigh", "linalg.eigvalsh": "eigvalsh"}


def _sections():
    out = []
    for line in (DATA / "routines-by-section.txt").read_text().splitlines():
        if line.startswith("#") or " |" not in line:
            continue
        label, _, calls = line.partition(" |")
        head = label.split()[0]
        if head in OPS:
            out.append((OPS[head], dict(re.findall(r"(\w+)=(\S+)", label)), calls.split()))
    return out


SECTIONS = _sections()


def _logged_kind(calls, batch: int) -> str:
    names = [re.sub(r"x(\d+)$", "", c) for c in calls]
    counts: dict = {}
    for c in calls:   # "namexK": K calls in a row
        m = re.search(r"x(\d+)$", c)
        counts[names[calls.index(c)]] = counts.get(names[calls.index(c)], 0) + (
            int(m.group(1)) if m else 1)
    if "cusolverDnXsyevBatched" in names:
        assert counts["cusolverDnXsyevBatched"] == 1
        return "batched"
    if "cusolverDnXsyevd" in names:
        assert counts["cusolverDnXsyevd"] == batch and counts["cusolverDnXsyevd_bufferSize"] == 1
        return "xsyevd"
    if "cusolverDnXsyevj_legacy" in names:   # cusolverDnSsyevj, as cuSOLVER's logger names it
        assert counts["cusolverDnXsyevj_legacy"] == batch
        assert names[0] == "cusolverDnCreateSyevjInfo" and names[-1] == "cusolverDnDestroySyevjInfo"
        return "syevj"
    if not names:
        return "host"
    assert not any(n.startswith("cusolverDn") for n in names), names
    return "magma"      # MAGMA's syevd_gpu moves data and multiplies with cuBLAS


def test_the_fixture_has_both_ops_and_every_kind():
    kinds = {_logged_kind(c, int(kv["batch"])) for _, kv, c in SECTIONS}
    assert {o for o, _, _ in SECTIONS} == {"eigh", "eigvalsh"}
    assert kinds == {"batched", "xsyevd", "syevj", "magma", "host"}
    assert len(SECTIONS) > 100


@pytest.mark.parametrize("op,kv,calls", SECTIONS,
                         ids=[f"{o}-{kv['dtype']}-n{kv['n']}-b{kv['batch']}-{kv['preferred']}-"
                              f"{kv['UPLO']}" for o, kv, _ in SECTIONS])
def test_rows_predict_the_logged_routines(op, kv, calls):
    o = ops.get(op)
    batch = int(kv["batch"])
    path = o.torch_path(batch=batch, n=int(kv["n"]), dtype=kv["dtype"], device="cuda",
                        torch_version="2.11.0", preferred=kv["preferred"],
                        options={"UPLO": kv["UPLO"]})
    kind = _logged_kind(calls, batch)
    assert path.replay == f"{op}_{kind}", (path, calls)
    assert path.bitwise == (kind not in ("magma", "host"))
    assert path.backend == {"magma": "magma", "host": "lapack"}.get(kind, "cusolver")


@pytest.mark.parametrize("op", ["eigh", "eigvalsh"])
@pytest.mark.parametrize("preferred", ["default", "cusolver", "magma"])
@pytest.mark.parametrize("dtype", ["float32", "float64", "complex64", "complex128"])
@pytest.mark.parametrize("n,batch", [(1, 1), (8, 1), (8, 100000), (64, 4), (1024, 1)])
def test_from_torch_2_12_every_shape_is_one_xsyev_batched(op, preferred, dtype, n, batch):
    for version in ("2.12.0", "2.13.0", "2.14.1"):
        path = ops.get(op).torch_path(batch=batch, n=n, dtype=dtype, torch_version=version,
                                      preferred=preferred)
        assert path.replay == f"{op}_batched" and path.bitwise
        assert path.calls == ("cusolverDnXsyevBatched_bufferSize", "cusolverDnXsyevBatched")


def test_the_raw_eigensolver_names_are_the_c_names():
    """``cusolver_trace.raw.cusolver_eig`` binds one name per C function and type: the real
    types' ``syev*``, the complex types' ``heev*``."""
    from cusolver_trace.raw import cusolver_eig as ce

    for base in ("evd", "evd_bufferSize", "evj", "evj_bufferSize", "evjBatched",
                 "evjBatched_bufferSize"):
        for t in "SDCZ":
            name = f"{t}{'he' if t in 'CZ' else 'sy'}{base}"
            assert callable(getattr(ce, name)), name
            assert f"cusolverDn{name}" in getattr(ce, name).__doc__
