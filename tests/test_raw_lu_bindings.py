"""The LU family's raw wrappers pass every C argument to the right parameter of the binding.

The bindings cannot be imported here (no CuPy, no nvmath-python), so each one is stood in for
by a function with the binding's own parameter list, copied from its source:

* CuPy 14.2.0 ``cupy_backends/cuda/libs/cusolver.pyx``: ``<t>getrf_bufferSize(handle, m, n,
  A, lda)``, ``<t>getrf(handle, m, n, A, lda, work, devIpiv, devInfo)``, ``<t>getrs(handle,
  trans, n, nrhs, A, lda, devIpiv, B, ldb, devInfo)``;
* CuPy 14.2.0 ``cupy_backends/cuda/libs/cublas.pyx``: ``<t>getrfBatched(handle, n, Aarray,
  lda, PivotArray, infoArray, batchSize)``, ``<t>getrsBatched(handle, trans, n, nrhs, Aarray,
  lda, devIpiv, Barray, ldb, info, batchSize)``, ``<t>getriBatched(handle, n, Aarray, lda,
  PivotArray, Carray, ldc, infoArray, batchSize)``;
* nvmath-python ``nvmath/bindings/cublas.pyx``: ``<t>matinv_batched(handle, n, a, lda, ainv,
  lda_inv, info, batch_size)`` (CuPy 14 does not bind matinvBatched);
* nvmath-python 1.0.0 ``nvmath/bindings/cusolverDn.pxd``: ``xgetrf_buffer_size(handle,
  params, m, n, data_type_a, a, lda, compute_type)``, ``xgetrf(handle, params, m, n,
  data_type_a, a, lda, ipiv, compute_type, buffer_on_device, workspace_in_bytes_on_device,
  buffer_on_host, workspace_in_bytes_on_host, info)``, ``xgetrs(handle, params, trans, n,
  nrhs, data_type_a, a, lda, ipiv, data_type_b, b, ldb, info)``.

Each wrapper is called with a distinct value per argument, by keyword with the C API's name,
and the stand-in checks which value reached which binding parameter.
"""
from __future__ import annotations

import inspect

import pytest

from cusolver_trace.errors import CuBlasStatusError, CuSolverStatusError
from cusolver_trace.raw import _load
from cusolver_trace.raw import cublas as rcb
from cusolver_trace.raw import cusolver as rcs

CUPY_CUSOLVER = {
    "getrf_bufferSize": "handle m n A lda",
    "getrf": "handle m n A lda work devIpiv devInfo",
    "getrs": "handle trans n nrhs A lda devIpiv B ldb devInfo",
}
CUPY_CUBLAS = {
    "getrfBatched": "handle n Aarray lda PivotArray infoArray batchSize",
    "getrsBatched": "handle trans n nrhs Aarray lda devIpiv Barray ldb info batchSize",
    "getriBatched": "handle n Aarray lda PivotArray Carray ldc infoArray batchSize",
}
NVMATH_CUBLAS = {"matinv_batched": "handle n a lda ainv lda_inv info batch_size"}
NVMATH = {
    "xgetrf_buffer_size": "handle params m n data_type_a a lda compute_type",
    "xgetrf": "handle params m n data_type_a a lda ipiv compute_type buffer_on_device "
              "workspace_in_bytes_on_device buffer_on_host workspace_in_bytes_on_host info",
    "xgetrs": "handle params trans n nrhs data_type_a a lda ipiv data_type_b b ldb info",
}
# the wrapper's C argument name -> the binding's parameter name, where they differ
C_TO_BINDING = {
    "Workspace": "work", "dataTypeA": "data_type_a", "dataTypeB": "data_type_b", "A": "A",
    "computeType": "compute_type", "bufferOnDevice": "buffer_on_device",
    "workspaceInBytesOnDevice": "workspace_in_bytes_on_device", "bufferOnHost": "buffer_on_host",
    "workspaceInBytesOnHost": "workspace_in_bytes_on_host",
}


class Binding:
    """A module of stand-ins: each records ``{parameter: value}`` of its call."""

    def __init__(self, sigs, prefix_letters=True, fail=None):
        self.seen = []
        self.fail = fail
        for name, params in sigs.items():
            names = [f"{t}{name}" for t in "sdcz"] if prefix_letters else [name]
            for full in names:
                setattr(self, full, self._make(full, params.split()))

    def _make(self, full, params):
        def fn(*args):
            assert len(args) == len(params), (full, args)
            self.seen.append((full, dict(zip(params, args))))
            if self.fail is not None:
                raise self.fail
            return (11, 0) if full.endswith("buffer_size") else 7
        return fn


def _distinct_args(fn, skip=("t",)):
    """A distinct int per parameter of the wrapper (by its C name)."""
    names = [p for p in inspect.signature(fn).parameters if p not in skip]
    return {p: 1000 + i for i, p in enumerate(names)}


def _binding_name(c_name, lower_ptrs):
    if c_name in C_TO_BINDING:
        name = C_TO_BINDING[c_name]
    else:
        name = c_name
    return name.lower() if lower_ptrs and name in ("A", "B") else name


@pytest.mark.parametrize("wrapper", list(CUPY_CUSOLVER))
def test_cupy_cusolver_wrappers(monkeypatch, wrapper):
    fake = Binding(CUPY_CUSOLVER)
    monkeypatch.setattr(_load, "cupy_cusolver", lambda: fake)
    fn = getattr(rcs, wrapper)
    args = _distinct_args(fn)
    out = fn("z", **args)
    ((full, got),) = fake.seen
    assert full == f"z{wrapper}"
    assert got == {_binding_name(k, False): v for k, v in args.items()}
    assert out == (7 if wrapper == "getrf_bufferSize" else None)
    # the typed C names are the same wrapper with the type letter bound
    getattr(rcs, f"D{wrapper}")(**args)
    assert fake.seen[-1][0] == f"d{wrapper}"


@pytest.mark.parametrize("wrapper", list(CUPY_CUBLAS))
def test_cupy_cublas_wrappers(monkeypatch, wrapper):
    fake = Binding(CUPY_CUBLAS)
    monkeypatch.setattr(_load, "cupy_cublas", lambda: fake)
    fn = getattr(rcb, wrapper)
    args = _distinct_args(fn)
    fn("c", **args)
    ((full, got),) = fake.seen
    assert full == f"c{wrapper}"
    assert got == {_binding_name(k, False): v for k, v in args.items()}
    getattr(rcb, f"S{wrapper}")(**args)
    assert fake.seen[-1][0] == f"s{wrapper}"


@pytest.mark.parametrize("wrapper,binding", [("Xgetrf_bufferSize", "xgetrf_buffer_size"),
                                             ("Xgetrf", "xgetrf"), ("Xgetrs", "xgetrs")])
def test_nvmath_wrappers(monkeypatch, wrapper, binding):
    fake = Binding(NVMATH, prefix_letters=False)
    monkeypatch.setattr(_load, "nvmath_cusolverDn", lambda: fake)
    fn = getattr(rcs, wrapper)
    args = _distinct_args(fn, skip=())
    out = fn(**args)
    ((full, got),) = fake.seen
    assert full == binding
    assert got == {_binding_name(k, True): v for k, v in args.items()}
    assert out == ((11, 0) if wrapper.endswith("bufferSize") else None)


class _StatusError(Exception):
    def __init__(self, status):
        super().__init__(status)
        self.status = status


def test_a_status_names_the_routine(monkeypatch):
    monkeypatch.setattr(_load, "cupy_cusolver", lambda: Binding(CUPY_CUSOLVER, fail=_StatusError(7)))
    monkeypatch.setattr(_load, "cupy_cublas", lambda: Binding(CUPY_CUBLAS, fail=_StatusError(13)))
    monkeypatch.setattr(_load, "nvmath_cusolverDn",
                        lambda: Binding(NVMATH, prefix_letters=False, fail=_StatusError(3)))
    with pytest.raises(CuSolverStatusError, match="cusolverDnZgetrs"):
        rcs.getrs("z", *range(10))
    with pytest.raises(CuBlasStatusError, match="cublasDgetrfBatched"):
        rcb.getrfBatched("d", *range(7))
    with pytest.raises(CuSolverStatusError, match="cusolverDnXgetrf"):
        rcs.Xgetrf(*range(14))


def test_nvmath_matinv_batched(monkeypatch):
    fake = Binding(NVMATH_CUBLAS)
    monkeypatch.setattr(_load, "nvmath_cublas", lambda: fake)
    args = _distinct_args(rcb.matinvBatched)
    rcb.matinvBatched("d", **args)
    ((full, got),) = fake.seen
    assert full == "dmatinv_batched"
    names = {"A": "a", "Ainv": "ainv", "batchSize": "batch_size"}
    assert got == {names.get(k, k): v for k, v in args.items()}
    rcb.ZmatinvBatched(**args)
    assert fake.seen[-1][0] == "zmatinv_batched"


def test_inverse_bindings_name_the_routine(monkeypatch):
    monkeypatch.setattr(_load, "cupy_cublas", lambda: Binding(CUPY_CUBLAS, fail=_StatusError(7)))
    monkeypatch.setattr(_load, "nvmath_cublas",
                        lambda: Binding(NVMATH_CUBLAS, fail=_StatusError(7)))
    with pytest.raises(CuBlasStatusError, match="cublasSgetriBatched"):
        rcb.getriBatched("s", *range(9))
    with pytest.raises(CuBlasStatusError, match="cublasCmatinvBatched.*INVALID_VALUE"):
        rcb.matinvBatched("c", *range(8))
