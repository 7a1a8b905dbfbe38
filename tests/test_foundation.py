"""Dtype table, status errors, versions, CLI info — the parts below the routines."""
from __future__ import annotations

import json

import numpy as np
import pytest
import torch

import cusolver_trace as ct
from cusolver_trace import _dtypes
from cusolver_trace.errors import CuBlasStatusError, CuSolverStatusError
from cusolver_trace.raw import _status, cublas, cusolver


def test_dtype_table():
    d = _dtypes.dtype_info(torch.complex64)
    assert (d.prefix, d.cuda_data_type, d.is_complex, d.real_name) == ("c", 4, True, "float32")
    assert _dtypes.dtype_info(np.float64).lapack_eps == np.finfo(np.float64).eps / 2
    assert _dtypes.dtype_info("s").name == "float32"
    assert [_dtypes.dtype_info(n).cuda_data_type for n in ct.SUPPORTED_DTYPES] == [0, 1, 4, 5]
    with pytest.raises(TypeError, match="unsupported dtype float16"):
        _dtypes.dtype_info(torch.float16)


def test_typed_c_names_exist():
    for t in "SDCZ":
        for base in ("potrf", "potrf_bufferSize", "potrs", "potri", "potri_bufferSize",
                     "potrfBatched", "potrsBatched"):
            assert callable(getattr(cusolver, t + base))
        for base in ("trsm", "trsmBatched", "trsm_64"):
            assert callable(getattr(cublas, t + base))
    assert cusolver.Dpotrf.args == ("d",)


class _FakeBindingError(Exception):
    def __init__(self, status):
        super().__init__(f"status {status}")
        self.status = status


def test_status_exception_names_routine_and_status():
    def failing(*args):
        raise _FakeBindingError(3)

    with pytest.raises(CuSolverStatusError, match=r"cusolverDnXpotrf returned CUSOLVER_STATUS_INVALID_VALUE \(3\)"):
        _status.solver("cusolverDnXpotrf", failing, 1, 2)
    with pytest.raises(CuBlasStatusError, match=r"CUBLAS_STATUS_NOT_SUPPORTED \(15\)"):
        _status.blas("cublasDtrsm_v2", lambda: (_ for _ in ()).throw(_FakeBindingError(15)))
    with pytest.raises(TypeError):  # no status: passes through untouched
        _status.solver("x", lambda: (_ for _ in ()).throw(TypeError("bad arg")))


def test_import_does_not_load_gpu_bindings():
    import subprocess
    import sys

    code = ("import sys, cusolver_trace, cusolver_trace.routines, cusolver_trace.compare; "
            "print([m for m in sys.modules if m.startswith(('cupy', 'nvmath'))])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_versions_without_gpu_json_ready():
    from cusolver_trace.versions import loaded_libraries, versions

    v = versions()
    json.dumps(v)
    assert v["packages"]["torch"] == torch.__version__
    assert v["packages"]["scipy"]
    if not torch.cuda.is_available():
        assert v["gpu"]["available"] is False and "no CUDA GPU" in v["gpu"]["note"]
        assert v["shared_libraries"] is None
    assert set(loaded_libraries()) >= {"libcusolver", "libcublas"}


def test_loaded_libraries_parses_maps(tmp_path):
    from cusolver_trace.versions import loaded_libraries

    maps = tmp_path / "maps"
    maps.write_text(
        "7f00-7f01 r--p 00000000 08:01 1 /x/nvidia/cu13/lib/libcusolver.so.12\n"
        "7f01-7f02 r-xp 00001000 08:01 1 /x/nvidia/cu13/lib/libcusolver.so.12\n"
        "7f02-7f03 r--p 00000000 08:01 2 /x/nvidia/cu13/lib/libcublasLt.so.13\n"
        "7f03-7f04 r--p 00000000 08:01 3 /y/libcublas.so.13\n"
        "7f04-7f05 rw-p 00000000 00:00 0 [heap]\n")
    libs = loaded_libraries(str(maps))
    assert libs["libcusolver"] == ["/x/nvidia/cu13/lib/libcusolver.so.12"]
    assert libs["libcublas"] == ["/y/libcublas.so.13"]
    assert libs["libcublasLt"] == ["/x/nvidia/cu13/lib/libcublasLt.so.13"]


def test_cli_info_runs(capsys):
    from cusolver_trace.cli import main

    assert main(["info", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["packages"]["numpy"] == np.__version__


def test_hot_x_wrappers_pass_arguments_and_translate_status(monkeypatch):
    """Xpotrf_bufferSize / Xpotrf / Xpotrs call the binding themselves (the replay's hot
    path): every argument reaches it in the C order, a status exception becomes
    CuSolverStatusError naming the routine, anything else passes through unchanged."""
    calls = []

    class FakeDn:
        def xpotrf_buffer_size(self, *a):
            calls.append(("bs", a))
            return [160, 0]

        def xpotrf(self, *a):
            calls.append(("potrf", a))

        def xpotrs(self, *a):
            calls.append(("potrs", a))
            raise _FakeBindingError(7)

    monkeypatch.setattr(cusolver, "_DN", FakeDn())
    assert cusolver.Xpotrf_bufferSize(1, 2, 0, 64, 3, 0, 64, 3) == (160, 0)
    assert cusolver.Xpotrf(1, 2, 1, 64, 3, 100, 64, 3, 200, 160, 0, 0, 300) is None
    with pytest.raises(CuSolverStatusError, match=r"cusolverDnXpotrs returned .*\(7\)") as err:
        cusolver.Xpotrs(1, 2, 0, 64, 1, 3, 100, 64, 3, 400, 64, 500)
    assert isinstance(err.value.__cause__, _FakeBindingError)
    assert calls == [("bs", (1, 2, 0, 64, 3, 0, 64, 3)),
                     ("potrf", (1, 2, 1, 64, 3, 100, 64, 3, 200, 160, 0, 0, 300)),
                     ("potrs", (1, 2, 0, 64, 1, 3, 100, 64, 3, 400, 64, 500))]

    class Broken:
        def xpotrf(self, *a):
            raise TypeError("bad arg")

    monkeypatch.setattr(cusolver, "_DN", Broken())
    with pytest.raises(TypeError, match="bad arg"):
        cusolver.Xpotrf(*range(13))
